"""SARIF 2.1.0 for code scanning: a rule per policy, a result per finding.

What code scanning needs and why each field is here:
- `partialFingerprints`: GitHub matches a result across commits by it; it is a hash of (command, policy,
  rule, object identity, kind of finding), never of a line number, so an edit above a manifest does not
  turn an old finding into a new one.
- `physicalLocation` relative to `--sarif-root` (the repository root) with `uriBaseId` `%SRCROOT%`:
  code scanning resolves paths from the repository root, not from where kyrec ran.
- objects read from a cluster have no file: a `logicalLocation` names them instead.
- `baselineState` says which findings a `--baseline` file already held (`unchanged`) and which are `new`.
- `invocations[0].executionSuccessful` is false when a read the run needed failed, with a
  `toolExecutionNotifications` entry per read: the results cover only what was read, and a code-scanning
  view must not take the run for a clean one.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import pathlib
import urllib.parse
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from hashlib import sha256
from itertools import compress
from operator import itemgetter, methodcaller
from typing import IO, TYPE_CHECKING, Any

from kubectl_kyrec import __version__
from kubectl_kyrec.errors import FailedRead
from kubectl_kyrec.load.policy.policies import split_policy_label
from kubectl_kyrec.model import UNDETERMINED, Ref, Result, Source
from kubectl_kyrec.reconcile.findings import FINDING_OUTCOMES, FINGERPRINT_SEPARATOR, Finding, subject_key
from kubectl_kyrec.reconcile.findings import summary as count_findings
from kubectl_kyrec.render.envelope import write_array_items

if TYPE_CHECKING:
    from kubectl_kyrec.evaluate.pipeline import PairsColumns
    from kubectl_kyrec.render.result_spill import SpilledFindings

_F = {name: i for i, name in enumerate(Result._fields)}
_POLICY, _SOURCE, _RULE_COLUMN, _RESULT, _MESSAGE, _SUBJECT, _ACTIONS, _LOCATION = (_F[n] for n in (
    "policy", "source", "rule", "result", "message", "subject", "validation_actions", "location"))

orjson: Any
try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; the standard library writes the same text
    orjson = None

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
FINGERPRINT_KEY = "kyrecFinding/v1"

# where each policy kind is documented: SARIF's helpUri must be an absolute URI
HELP_URI = {
    "KyvernoValidatingPolicy": "https://kyverno.io/docs/policy-types/validating-policy/",
    "KyvernoGeneratingPolicy": "https://kyverno.io/docs/policy-types/generating-policy/",
    "ValidatingAdmissionPolicy":
        "https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/",
    "kyverno": "https://kyverno.io/docs/policy-types/cluster-policy/",
}
DEFAULT_HELP_URI = "https://kyverno.io/docs/"
# GitHub ranks security findings by a CVSS-like number in `security-severity`
SECURITY_SEVERITY = {"critical": "9.5", "high": "8.0", "medium": "5.5", "low": "3.0", "info": "0.0"}

# rules of findings that belong to no policy (report and coverage gaps), by message class prefix
COMMAND_RULES = {
    "coverage": "A subject in scope must have exactly one current policy report.",
    "report": "A policy report must hold what Kyverno's background scan would write.",
    "downstream": "Generated objects must be what the generating policy would create.",
    "test": "A Kyverno CLI test row must hold.",
    "lint": "A policy must be one the cluster admits: its schema (Kyverno's CRDs, Kubernetes' types) and Kyverno's "
            "own checks.",
}


@functools.lru_cache(maxsize=4096)
def artifact_uri(path: str, root: str | None) -> tuple[str, str | None]:
    """(uri, uriBaseId): relative to `root` when the file lies below it, else an absolute file URI.
    Cached: thousands of findings share a few files, and path arithmetic was a third of the writer's time."""
    absolute = os.path.abspath(path)
    if root is not None:
        base = os.path.abspath(root)
        if absolute == base or absolute.startswith(base.rstrip(os.sep) + os.sep):
            return urllib.parse.quote(pathlib.PurePath(os.path.relpath(absolute, base)).as_posix()), SRCROOT
        return pathlib.Path(absolute).as_uri(), None
    if os.path.isabs(path):
        return pathlib.Path(path).as_uri(), None
    return urllib.parse.quote(pathlib.PurePath(path).as_posix()), None


def rule_id(f: Finding) -> str:
    if f.policy:
        return f.policy
    return f"kyrec/{f.command}/{f.message_class}"


def _rule(f: Finding) -> dict[str, Any]:
    if f.policy:
        if f.policy_kind:
            # a policy of a name another kind shares is labelled `Kind/name` (load/policy/policies.policy_labels)
            what = " ".join(split_policy_label(f.policy_kind, f.policy))
        else:
            what = f"Kyverno policy {f.policy}"
        text = what + (f", defined at {f.policy_location}." if f.policy_location else ".")
        if f.category:
            text += f" Category: {f.category}."
        if f.severity:
            text += f" Severity: {f.severity}."
        help_uri = HELP_URI.get(f.policy_kind, HELP_URI["kyverno"] if f.policy_kind.startswith("kyverno")
                                else DEFAULT_HELP_URI)
    else:
        prefix = f.message_class.split("-")[0] if f.command == "diff" else f.command
        what = f"kyrec {f.command}: {f.message_class}"
        text = COMMAND_RULES.get(prefix, what)
        help_uri = DEFAULT_HELP_URI
    properties: dict[str, Any] = {"tags": [t for t in ("kyverno", f.category) if t]}
    if f.category:
        properties["category"] = f.category
    if f.severity:
        properties["severity"] = f.severity
        if f.severity.lower() in SECURITY_SEVERITY:
            properties["security-severity"] = SECURITY_SEVERITY[f.severity.lower()]
    if f.policy_kind:
        properties["policyKind"] = f.policy_kind
    rule: dict[str, Any] = {
        "id": rule_id(f), "name": rule_id(f).replace("/", "-"),
        "shortDescription": {"text": what},
        "fullDescription": {"text": text},
        "help": {"text": text, "markdown": text},
        "helpUri": help_uri,
        "defaultConfiguration": {"level": "warning" if f.audit_only else "error"},
        "properties": properties,
    }
    return rule


def _logical(s: Ref | None) -> list[dict[str, Any]]:
    if s is None:
        return []
    qualified = "/".join(p for p in (s.api_version, s.kind, s.namespace, s.name) if p)
    return [{"name": s.name, "fullyQualifiedName": qualified, "kind": "object",
             **({"decoratedName": s.display()} if s.kind else {})}]


def _location(where: Source | None, subject: Ref | None, root: str | None) -> dict[str, Any]:
    """A result's location: the file it was read from, the object it is about (empty: neither)."""
    location: dict[str, Any] = {}
    if where is not None:
        uri, base = artifact_uri(where.file, root)
        artifact: dict[str, Any] = {"uri": uri}
        if base:
            artifact["uriBaseId"] = base
        physical: dict[str, Any] = {"artifactLocation": artifact}
        if where.line:
            physical["region"] = {"startLine": where.line}
        location["physicalLocation"] = physical
    logical = _logical(subject)
    if logical:
        location["logicalLocations"] = logical
    return location


def _result(f: Finding, index: int, root: str | None, baseline_used: bool) -> dict[str, Any]:
    text = f"{f.subject_display()}: {f.message}" if f.subject else f.message
    entry: dict[str, Any] = {
        "ruleId": rule_id(f), "ruleIndex": index,
        # an undetermined result is neither pass nor fail: SARIF's `review` kind, which requires level none
        # the level `-o github` gives it too: an Audit-only failure is a warning in both
        **({"kind": "review", "level": "none"} if f.undetermined else {"level": f.level}),
        "message": {"text": text or f.message_class},
        "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint},
    }
    location = _location(f.location, f.subject, root)
    if location:
        entry["locations"] = [location]
    if baseline_used:
        entry["baselineState"] = "unchanged" if f.baselined else "new"
    properties: dict[str, Any] = {"result": f.outcome, "command": f.command}
    if f.subject is not None:
        properties["subject"] = f.subject.to_json()
    if f.rule:
        properties["rule"] = f.rule
    if f.validation_actions:
        properties["validationActions"] = list(f.validation_actions)
    entry["properties"] = properties
    return entry


def _rules_and_summary(findings: Iterable[Finding]) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    """The rules in document order and the summary counts: one pass, before any result is written."""
    rules = _Rules()
    counts = count_findings(())
    for f in findings:
        outcome = f.outcome
        counts[outcome] = counts.get(outcome, 0) + 1
        if f.baselined:
            counts["baselined"] += 1
        rules.add(f)
    return rules.done(), counts


class _Rules:
    """The rules of findings seen in order (`add`), in document order (`done`)."""

    def __init__(self) -> None:
        self.rules: dict[str, dict[str, Any]] = {}
        # every policy that ran is a rule, also those that found nothing: code scanning then knows a rule
        # that stops reporting was fixed, not dropped; rules of findings without a policy follow
        self.later: dict[str, Finding] = {}

    def add(self, f: Finding) -> None:
        if f.policy:
            if f.policy not in self.rules:
                self.rules[f.policy] = _rule(f)
        elif f.outcome in SHOWN:
            self.later.setdefault(rule_id(f), f)

    def done(self) -> dict[str, dict[str, Any]]:
        rules = self.rules
        for name, f in self.later.items():
            if name not in rules:
                rules[name] = _rule(f)
        return rules


SHOWN = frozenset((*FINDING_OUTCOMES, UNDETERMINED))


def _notification(read: FailedRead) -> dict[str, Any]:
    """A read that failed as a tool execution notification (SARIF 2.1.0 section 3.58)."""
    entry = read.to_json()
    return {"level": "error", "message": {"text": f"{read.short()}: {entry['message']}"},
            "descriptor": {"id": "kyrec/read-failed"},
            "properties": {"read": entry["read"], "status": entry["status"]}}


def _run(rules: dict[str, dict[str, Any]], results: Any, counts: dict[str, int], root: str | None,
         failed_reads: Sequence[FailedRead] = ()) -> dict[str, Any]:
    invocation: dict[str, Any] = {"executionSuccessful": not failed_reads}
    if failed_reads:
        invocation["toolExecutionNotifications"] = [_notification(r) for r in failed_reads]
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "kyrec", "version": __version__, "semanticVersion": __version__,
                            "informationUri": "https://kyverno.io/", "rules": list(rules.values())}},
        "invocations": [invocation],
        "results": results,
        "columnKind": "unicodeCodePoints",
        "properties": {"summary": counts},
    }
    if root is not None:
        base_uri = pathlib.Path(os.path.abspath(root)).as_uri()
        run["originalUriBaseIds"] = {SRCROOT: {"uri": base_uri if base_uri.endswith("/") else base_uri + "/"}}
    return run


def sarif_document(findings: Sequence[Finding], *, root: str | None = None, baseline_used: bool = False,
                   failed_reads: Sequence[FailedRead] = ()) -> dict[str, Any]:
    """The whole document as data (what `write` streams)."""
    rules, counts = _rules_and_summary(findings)
    order = {name: i for i, name in enumerate(rules)}
    results = [_result(f, order[rule_id(f)], root, baseline_used) for f in findings if f.outcome in SHOWN]
    return {"$schema": SCHEMA_URI, "version": "2.1.0",
            "runs": [_run(rules, results, counts, root, failed_reads)]}


# stands for the results array in the document skeleton, which is encoded whole; the results are then
# written one by one where it stood
_RESULTS_MARK = "kyrec-sarif-results-7c1e0f"
_RESULTS_INDENT = " " * 6         # $.runs[0].results: three levels of two spaces


def _encode(value: Any) -> str:
    """`json.dumps(value, indent=2)` (ASCII-escaped, as the standard library writes it). orjson writes the
    same text ten times faster except for characters above `~` (it writes them as they are): for those the
    standard library encodes the value."""
    if orjson is not None:
        try:
            data = orjson.dumps(value, option=orjson.OPT_INDENT_2)
        except (TypeError, orjson.JSONEncodeError):
            data = b"\x7f"             # a lone surrogate or an integer beyond 64 bits: the stdlib decides
        if data.isascii() and b"\x7f" not in data:
            return data.decode("ascii")
    return json.dumps(value, indent=2)


def write(findings: Collection[Finding], stream: IO[str], *, root: str | None = None,
          baseline_used: bool = False, chunk: int = 500, failed_reads: Sequence[FailedRead] = ()) -> None:
    """The document, written as the results come: the rules and counts come from a first pass over the
    findings, the results are encoded `chunk` at a time in a second one and never held together. The text is the one
    `json.dump(sarif_document(...), indent=2)` writes."""
    from kubectl_kyrec.render.result_spill import SpilledFindings

    # spilled results (never baselined: a baseline holds a run's results) are written from their records' columns
    spilled = findings if isinstance(findings, SpilledFindings) and not baseline_used else None
    rules, counts = _rules_and_summary(findings) if spilled is None else _spilled_rules_and_summary(spilled)
    order = {name: i for i, name in enumerate(rules)}
    skeleton = json.dumps({"$schema": SCHEMA_URI, "version": "2.1.0",
                           "runs": [_run(rules, _RESULTS_MARK, counts, root, failed_reads)]}, indent=2)
    head, mark, tail = skeleton.partition(json.dumps(_RESULTS_MARK))
    assert mark and _RESULTS_MARK not in tail, "the results mark occurs once in the skeleton"
    stream.write(head)
    stream.write("[")
    if spilled is None:
        shown = (f for f in findings if f.outcome in SHOWN)
        written = _write_results(shown, stream.write, order=order, root=root, baseline_used=baseline_used,
                                 chunk=chunk, first="\n")
    else:
        # a second pass over the spill's records
        written = 0
        for text in _SpilledResults(spilled, order, root).texts():
            stream.write(",\n" if written else "\n")
            stream.write(text)
            written += 1
    stream.write(f"\n{_RESULTS_INDENT}]" if written else "]")
    stream.write(tail)
    stream.write("\n")


def _write_results(findings: Iterable[Finding], write: Callable[[str], object], *, order: dict[str, int],
                   root: str | None, baseline_used: bool, chunk: int, first: str = "") -> int:
    """The results array's items (envelope.write_array_items). A chunk with a character above `~` goes
    through the standard library whole, which writes each of its results as it would alone."""
    return write_array_items((_result(f, order[rule_id(f)], root, baseline_used) for f in findings), write,
                             _RESULTS_INDENT, chunk, first, _encode)


def render(findings: Collection[Finding], *, root: str | None = None, baseline_used: bool = False,
           failed_reads: Sequence[FailedRead] = ()) -> str:
    out = io.StringIO()
    write(findings, out, root=root, baseline_used=baseline_used, failed_reads=failed_reads)
    return out.getvalue()


def _spilled_rules_and_summary(findings: SpilledFindings) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    """`_rules_and_summary` of spilled findings, without a pass over them: the spill counted their outcomes
    and kept the first result of each (policy, outcome), all a rule can be made of."""
    rules = _Rules()
    for f in findings.first_findings():
        rules.add(f)
    counts = count_findings(())
    counts.update(findings.spill.counts)
    return rules.done(), counts


# stands for a value in a part's text, which is then split around it
_MARK = "kyrec-sarif-part-7c1e0f"
_ITEM = _RESULTS_INDENT + "  "      # the results array's items
_CUT = len(_ITEM) + 2                   # what closes a part's text: a new line, the item's indent, `}`
_PARTS_MAX = 20_000                     # the parts' texts kept across records, up to this many of each kind
_FINGERPRINT = itemgetter(slice(32))


def _inner(part: dict[str, Any]) -> str:
    """A part's keys as they stand in a result entry (indented as an item of the results array), then `,`."""
    return _encode(part).replace("\n", "\n" + _ITEM)[1:-_CUT] + ","


def _around(text: str) -> tuple[str, str]:
    """A part's text before and after `_MARK`'s place, the quotes of a string there on either side."""
    before, mark, after = text.partition(json.dumps(_MARK))
    assert mark, "the part holds the mark"
    return before + '"', '"' + after


def _escaped(text: str) -> str:
    """A string's text inside a JSON string as `_encode` writes it (ASCII, as the standard library)."""
    return json.dumps(text)[1:-1]


def _looked_up(table: dict[Any, Any], keys: Sequence[Any], make: Callable[[Any], Any],
               forget: Callable[[], None]) -> list[Any]:
    """What `table` holds for each of `keys`, made by `make` for those it lacked; `forget()` empties it (and
    what its values index) first when it would grow too large, and then every key's is made again. A record's
    keys are most often all known: looked up first, the set of the missing made only when one is not."""
    with contextlib.suppress(KeyError):
        return list(map(table.__getitem__, keys))
    new = set(keys).difference(table)
    if len(table) + len(new) > _PARTS_MAX:
        forget()
        new = set(keys)
    for key in new:
        table[key] = make(key)
    return list(map(table.__getitem__, keys))


class _SpilledResults:
    """The results array's items of spilled findings (render/result_spill.py SpilledFindings), a record's
    at a time, made from its columns without a Finding or a mapping per result: an entry is `_result`'s,
    cut into the parts its results share, each encoded once by `_encode`, and the parts of each result that
    are its own (the fingerprint) put between them; the record's texts joined at C speed. Byte for byte
    `_write_results`'s text (tests/consistency/test_fmttail.py).

    An entry's parts, by what they depend on: its kind's (policy, rule, outcome, validation actions: the
    head with the rule and level, the properties before and after the subject), its message's, its
    subject's (the name in the message, the locations, the subject in the properties). A result's kind is
    looked up once, as an index into the kinds' texts, and the subject's parts by the subject's index in the
    record: per result, one tuple (its kind's key) and one lookup by it, every other part found by a number."""

    def __init__(self, findings: SpilledFindings, order: dict[str, int], root: str | None) -> None:
        self.findings = findings
        self.order = order
        self.root = root
        self.command = findings.command
        # each kind's index in the lists after it: (head, properties before and after the subject, the
        # fingerprint's text before and after the subject's key)
        self.kinds: dict[tuple[str, str, str, str, tuple[str, ...]], int] = {}
        self.heads: list[str] = []
        self.befores: list[str] = []
        self.afters: list[str] = []
        self.prefixes: list[bytes] = []
        self.suffixes: list[bytes] = []
        self.messages: dict[str, str] = {}
        message_before, message_after = _around(_inner({"message": {"text": _MARK}}))
        fingerprint_before, self.fingerprint_after = _around(_inner({"partialFingerprints": {FINGERPRINT_KEY: _MARK}}))
        self.message_before = message_before
        self.message_after = message_after + fingerprint_before

    def texts(self) -> Iterator[str]:
        for record in self.findings.records():
            columns = record.columns
            shown = list(map(SHOWN.__contains__, columns[_RESULT]))
            if not any(shown):
                continue
            messages, subjects, locations = (list(compress(columns[i], shown)) for i in (_MESSAGE, _SUBJECT, _LOCATION))
            kinds = self._kinds(list(compress(zip(*(columns[i] for i in (
                _SOURCE, _POLICY, _RULE_COLUMN, _RESULT, _ACTIONS))), shown)))
            yield self._record(record, kinds, messages, subjects, locations)

    def _kinds(self, keys: list[tuple[str, str, str, str, tuple[str, ...]]]) -> list[int]:
        """Each key's kind index, the texts of the kinds not met before made."""
        def forget() -> None:
            for kept in (self.kinds, self.heads, self.befores, self.afters, self.prefixes, self.suffixes):
                kept.clear()

        return _looked_up(self.kinds, keys, self._kind, forget)

    def _kind(self, key: tuple[str, str, str, str, tuple[str, ...]]) -> int:
        """A kind's texts, and its index among them: the entry's start (its rule and level as `_result` gives
        them, the message's text opened), the properties part around its subject (then the entry's end and the
        separator after it), and the fingerprint's text (Finding.fingerprint's) before and after the subject's
        key."""
        source, policy, rule, outcome, actions = key
        name = self.findings.labels.get((source, policy), policy)
        # the level is the finding's: one made of what it depends on
        f = Finding(self.command, name, name, "", None, outcome, "", outcome, validation_actions=tuple(actions))
        head = {"ruleId": rule_id(f), "ruleIndex": self.order[rule_id(f)],
                **({"kind": "review", "level": "none"} if f.undetermined else {"level": f.level})}
        self.heads.append(_ITEM + "{" + _inner(head) + self.message_before)
        properties: dict[str, Any] = {"result": outcome, "command": self.command, "subject": _MARK}
        if rule:
            properties["rule"] = rule
        if actions:
            properties["validationActions"] = list(actions)
        before, _, after = _encode({"properties": properties}).replace("\n", "\n" + _ITEM)[1:].partition(
            json.dumps(_MARK))
        self.befores.append(before)
        self.afters.append(after + ",\n")
        key_before, _, key_after = FINGERPRINT_SEPARATOR.join((self.command, name, rule, _MARK, outcome)).partition(
            _MARK)
        self.prefixes.append(key_before.encode())
        self.suffixes.append(key_after.encode())
        return len(self.heads) - 1

    def _record(self, record: PairsColumns, kinds: list[int], messages: Sequence[str], subjects: list[int],
                locations: list[int]) -> str:
        after = self.message_after
        message_texts = _looked_up(self.messages, messages, lambda message: _escaped(message) + after,
                                   self.messages.clear)
        refs = record.refs
        # the record's own tables, by the subject's index: its name in the message, its key in the fingerprint,
        # its text in the properties, and its locations part
        displays = {i: _escaped(refs[i].display()) + ": " for i in set(subjects)}
        keys = {i: subject_key(refs[i]).encode() for i in displays}
        subject_texts = {i: _encode(refs[i].to_json()).replace("\n", "\n" + _ITEM + "    ") for i in displays}
        sources = record.sources
        root = self.root
        after = self.fingerprint_after
        def placed(at: int, i: int) -> str:
            return after + _inner({"locations": [_location(sources[at], refs[i], root)]})

        # a subject's results are all read from where it was (one location a subject): its locations part is
        # the subject's, else each (location, subject)'s
        where: dict[int, int] = dict(zip(subjects, locations))
        where_keys: list[Any]
        if list(map(where.__getitem__, subjects)) == locations:
            where_keys = subjects
            wheres = {i: placed(at, i) for i, at in where.items()}
        else:
            where_keys = list(zip(locations, subjects))
            wheres = {key: placed(*key) for key in set(where_keys)}
        fingerprints = map(_FINGERPRINT, map(methodcaller("hexdigest"), map(sha256, map(b"".join, zip(
            map(self.prefixes.__getitem__, kinds), map(keys.__getitem__, subjects),
            map(self.suffixes.__getitem__, kinds))))))
        # each entry's parts in their places, a column of them at a time (no tuple per entry)
        columns = (map(self.heads.__getitem__, kinds), map(displays.__getitem__, subjects),
                   message_texts, fingerprints, map(wheres.__getitem__, where_keys),
                   map(self.befores.__getitem__, kinds), map(subject_texts.__getitem__, subjects),
                   map(self.afters.__getitem__, kinds))
        parts = [""] * (len(columns) * len(kinds))
        for place, column in enumerate(columns):
            parts[place::len(columns)] = list(column)
        parts[-1] = parts[-1][:-2]      # no separator after the record's last entry
        return "".join(parts)
