"""Every command's outcome as one list of `Finding`s, the shape the CI formats and the baseline read.

eval results, diff changes, coverage subjects and test rows differ in what they say, but a pull-request
check needs the same few things from each: which policy, which object, how bad, what message, where.
One type for all four lets `-o junit|sarif|github` and `--baseline` be written once.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple, overload

from kubectl_kyrec.load.policy.policies import policy_labels
from kubectl_kyrec.model import UNDETERMINED, Document, Ref, Result, Source, group_version

if TYPE_CHECKING:
    from kubectl_kyrec.reconcile.coverage import Coverage
    from kubectl_kyrec.reconcile.deletions import DeletionDiff
    from kubectl_kyrec.reconcile.downstreams import DownstreamDiff
    from kubectl_kyrec.reconcile.reports import ReportDiff

# what each outcome is in CI terms; `pass` and `skip` are test cases, not findings, and an undetermined
# result (kyrec cannot decide it offline) asks for review without failing
FINDING_OUTCOMES = ("fail", "error", "warn")
Locate = Callable[[Ref], Source | None]


# a named tuple: eval makes one per result when a CI format or a baseline asks (230,000 on the 10,000-Pod
# bench), and a frozen dataclass's __init__ sets its 15 fields one object.__setattr__ at a time
class Finding(NamedTuple):
    """One row of a command's outcome. `outcome` is pass | fail | warn | error | skip | undetermined."""

    command: str                 # eval | diff | coverage | test
    suite: str                   # the JUnit test suite: the policy, or the domain when there is none
    policy: str
    rule: str
    subject: Ref | None
    outcome: str
    message: str
    # what kind of finding it is, stable across runs and edits: a result status, a change class, a
    # coverage status. Messages are not used: they carry values (counts, field paths) that drift.
    message_class: str
    location: Source | None = None          # where the object was read; None for cluster objects
    policy_location: Source | None = None
    policy_kind: str = ""                  # KyvernoValidatingPolicy, ValidatingAdmissionPolicy, ...
    category: str = ""
    severity: str = ""
    validation_actions: tuple[str, ...] = ()
    baselined: bool = False

    @property
    def is_finding(self) -> bool:
        return self.outcome in FINDING_OUTCOMES

    @property
    def undetermined(self) -> bool:
        return self.outcome == UNDETERMINED

    @property
    def counts(self) -> bool:
        """A finding that makes the exit code 1 (baselined ones are shown, and do not)."""
        return self.is_finding and not self.baselined

    @property
    def audit_only(self) -> bool:
        """Kyverno admits the request: the policy records (Audit) or warns (Warn), it does not deny."""
        return bool(self.validation_actions) and "Deny" not in self.validation_actions

    @property
    def level(self) -> str:
        """`error` or `warning`, what the finding is at admission, for every CI format: a `fail` of an
        Audit- or Warn-only policy and a `warn` are warnings (Kyverno admits the request), the rest errors."""
        outcome = self.outcome
        if outcome == "warn" or (outcome != "error" and self.audit_only):
            return "warning"
        return "error"

    @property
    def subject_key(self) -> str:
        """The object's identity without version or uid: both change when nothing about the finding did."""
        return subject_key(self.subject)

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        """(command, policy, rule, subject identity, message class): the baseline key, and the fingerprint's."""
        return (self.command, self.policy, self.rule, self.subject_key, self.message_class)

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(FINGERPRINT_SEPARATOR.join(self.key).encode()).hexdigest()[:32]

    @property
    def where(self) -> str:
        return str(self.location) if self.location else ""

    def subject_display(self) -> str:
        return self.subject.display() if self.subject else ""


# a fingerprint hashes the baseline key's parts joined by this (render/sarif.py hashes spilled results' so too)
FINGERPRINT_SEPARATOR = "\x1f"


def subject_key(subject: Ref | None) -> str:
    """Finding.subject_key of a finding about `subject`."""
    if subject is None:
        return ""
    group, _ = group_version(subject.api_version)
    return "/".join((group, subject.kind, subject.namespace, subject.name))


def from_results(results: Sequence[Result], command: str = "eval") -> ResultFindings:
    return ResultFindings(results, command)


class DeferredFindings(Sequence[Finding]):
    """Findings made on first use and then kept: a run whose outputs and flags never read them does not
    pay for them, and the CI formats read them twice (SARIF: rules, then results)."""

    def __init__(self, make: Callable[[], list[Finding]]) -> None:
        self._make = make
        self._made: list[Finding] | None = None

    def _findings(self) -> list[Finding]:
        if self._made is None:
            self._made = self._make()
        return self._made

    def __len__(self) -> int:
        return len(self._findings())

    @overload
    def __getitem__(self, index: int) -> Finding: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Finding]: ...

    def __getitem__(self, index: int | slice) -> Finding | Sequence[Finding]:
        return self._findings()[index]

    def __iter__(self) -> Iterator[Finding]:
        return iter(self._findings())


class ResultFindings(DeferredFindings):
    """eval's results as findings: `-o json` or `-o table` never need them (and a run of 240,000 results
    paid a second per run building them)."""

    def __init__(self, results: Sequence[Result], command: str = "eval") -> None:
        super().__init__(self._from_results)
        self._results = results
        self._command = command

    def _from_results(self) -> list[Finding]:
        # two policies of one name and different kinds are two suites, rules and baseline keys
        labels = policy_labels({(r.source, r.policy) for r in self._results})
        return result_findings(self._results, self._command, labels)

    def __len__(self) -> int:
        return len(self._results)


def result_findings(results: Iterable[Result], command: str, labels: Mapping[tuple[str, str], str]) -> list[Finding]:
    """Results as findings, each policy named by its label among the run's (load/policy/policies.policy_labels
    of every (source, policy) of the run: `labels`)."""
    if labels:
        return [Finding(command, label, label, r.rule, r.subject, r.result, r.message, r.result,
                        r.location, r.policy_location, r.source, r.category, r.severity,
                        tuple(r.validation_actions))
                for r in results for label in (labels.get((r.source, r.policy), r.policy),)]
    # positional, in field order: the keyword form costs a fifth more on 240,000 findings
    return [Finding(command, r.policy, r.policy, r.rule, r.subject, r.result, r.message, r.result,
                    r.location, r.policy_location, r.source, r.category, r.severity,
                    tuple(r.validation_actions))
            for r in results]


def _no_location(_: Ref) -> Source | None:
    return None


def from_downstreams(diff: DownstreamDiff, locate: Locate = _no_location) -> list[Finding]:
    """A downstream change is a failure when Kyverno would act on it, a warning when it would not (sync off)."""
    out = []
    for c in diff.changes:
        klass = str(c.klass)
        # as DiffResult.exit_code counts them: enforced changes fail; sync-off ones are shown as warnings
        outcome = "fail" if c.finding else ("pass" if klass == "in-sync" else "warn")
        reason = f" ({c.reason})" if c.reason else ""
        message = c.message or f"downstream {klass}{reason}"
        if c.fields:
            message += ": " + ", ".join(c.fields)
        where = locate(c.trigger) if c.trigger else None
        out.append(Finding(command="diff", suite=c.policy or "downstreams", policy=c.policy, rule="",
                           subject=c.object, outcome=outcome, message=message,
                           message_class=f"downstream-{klass}{'-' + str(c.reason) if c.reason else ''}",
                           location=where or locate(c.object)))
    return out


def from_deletions(diff: DeletionDiff, locate: Locate = _no_location) -> list[Finding]:
    """A scheduled deletion is a failure (Kyverno will delete the object); what kyrec cannot tell is shown as
    a warning, as an undetermined downstream is."""
    out = []
    for c in diff.changes:
        klass = str(c.klass)
        reason = f" ({c.reason})" if c.reason else ""
        message = c.message or f"{klass}{reason}: {c.cause.message}"
        out.append(Finding(command="diff", suite=c.policy, policy=c.policy, rule="", subject=c.object,
                           outcome="fail" if c.finding else "warn", message=message,
                           message_class=f"deletion-{klass}{'-' + str(c.reason) if c.reason else ''}",
                           location=locate(c.object) if c.object.name else None))
    return out


def from_reports(diff: ReportDiff, locate: Locate = _no_location) -> list[Finding]:
    """A report that is not current is a failure of its subject (or of the report itself when orphaned)."""
    out = []
    for c in diff.changes:
        if not c.in_scope:
            continue
        klass = str(c.klass)
        subject = c.subject or c.report
        reason = f" ({c.reason})" if c.reason else ""
        message = f"policy report {klass}{reason}"
        if c.fields:
            message += ": " + ", ".join(c.fields)
        # an orphan report describes nothing in scope: shown, not failing (as DiffResult.exit_code)
        outcome = "pass" if klass == "current" else ("warn" if klass == "orphan" else "fail")
        out.append(Finding(command="diff", suite="reports", policy="", rule="", subject=subject,
                           outcome=outcome, message=message,
                           message_class=f"report-{klass}{'-' + str(c.reason) if c.reason else ''}",
                           location=locate(subject)))
    return out


def from_coverage(cov: Coverage, locate: Locate = _no_location) -> list[Finding]:
    """Every in-scope subject: current passes, excluded is skipped, anything else is a gap."""
    out = []
    for s in cov.subjects:
        if s.status == "current":
            outcome, message = "pass", "one current report"
        elif s.status == "excluded":
            outcome, message = "skip", f"excluded ({s.gap or 'gap'}): {s.reason or ''}".rstrip(": ")
        else:
            outcome = "fail"
            message = f"report {s.status}" + (f" ({s.reason})" if s.reason else "")
        out.append(Finding(command="coverage", suite="coverage", policy="", rule="", subject=s.subject,
                           outcome=outcome, message=message, message_class=s.status, location=locate(s.subject)))
    return out


def locator(documents: Iterable[Document]) -> Locate:
    """Where each object was read (kind, namespace, name -> file:line), indexed on first use only: most
    runs never ask."""
    index: dict[tuple[str, str, str], Source] = {}
    pending = [documents]

    def locate(ref: Ref) -> Source | None:
        if pending:
            docs = list(pending.pop())
            # items of a JSON List loaded on the fast path all carry the List's line, not their own:
            # a line shared by several objects is dropped, the file still says where
            shared = Counter(d.source for d in docs)
            for doc in docs:
                where = doc.source if shared[doc.source] == 1 or not doc.source.line else Source(doc.source.file)
                index.setdefault((doc.kind, doc.namespace, doc.name), where)
        return index.get((ref.kind, ref.namespace, ref.name))

    return locate


def locator_for(resources: Sequence[Document], state: Sequence[Document], state_from_files: bool) -> Locate:
    """Manifests first (a -r file is where a reviewer edits), then the state when it was read from files:
    objects read from a cluster have no file, and SARIF names them by a logical location instead."""
    return locator([*resources, *(state if state_from_files else [])])


def summary(findings: Iterable[Finding]) -> dict[str, int]:
    counts = dict.fromkeys(("pass", "fail", "warn", "error", "skip", UNDETERMINED, "baselined"), 0)
    for f in findings:
        counts[f.outcome] = counts.get(f.outcome, 0) + 1
        if f.baselined:
            counts["baselined"] += 1
    return counts
