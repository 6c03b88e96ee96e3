"""JUnit XML: a test suite per policy (or per test file, or per domain), a test case per finding row.

The shape is the one the Jenkins xUnit plugin's `junit-10.xsd` accepts (shipped under testdata/schemas/
and checked by the tests): test cases take only `name`, `classname` and `time`, so the file:line of the
object goes at the start of the failure message, where CI report viewers show it.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from itertools import groupby, repeat
from operator import is_, itemgetter
from typing import IO, TYPE_CHECKING

from kubectl_kyrec.errors import FailedRead
from kubectl_kyrec.model import UNDETERMINED, Result, Source
from kubectl_kyrec.reconcile.findings import Finding

if TYPE_CHECKING:
    from kubectl_kyrec.render.result_spill import SpilledFindings

# characters XML 1.0 cannot carry at all; a message from a policy may hold them
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _clean(text: str) -> str:
    # a regular expression, not str.translate with a table: translate looks every character up in
    # Python (a tenth of an -o junit run of 230,000 results), and nearly no text holds one
    return _XML_INVALID.sub("", text) if _XML_INVALID.search(text) else text


def _case_name(f: Finding) -> str:
    name = f.subject_display() or f.message_class
    if f.command == "test" and f.policy:
        # a test row is named as its results entry names it: policy/rule, then the resource it checks
        return f"{f.policy}/{f.rule} {name}" if f.rule else f"{f.policy} {name}"
    return f"{name} [{f.rule}]" if f.rule and f.rule != f.policy else name


def _message(f: Finding) -> str:
    text = f"{f.location}: {f.message}" if f.location is not None else f.message
    return _clean(text + (" (baselined)" if f.baselined else ""))


def _attr(text: str) -> str:
    """An attribute value as ElementTree escapes it (so the text stays the one the tree-built file had)."""
    text = _text(text)
    if '"' in text:
        text = text.replace('"', "&quot;")
    if "\r" in text:
        text = text.replace("\r", "&#13;")
    if "\n" in text:
        text = text.replace("\n", "&#10;")
    if "\t" in text:
        text = text.replace("\t", "&#09;")
    return text


def _text(text: str) -> str:
    """Element text as ElementTree escapes it."""
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def _counts(cases: Sequence[Finding]) -> tuple[int, int, int, int]:
    """tests, failures, errors, skipped; a baselined finding is shown as passing: the check accepted it."""
    failures = errors = skipped = 0
    for f in cases:
        outcome = f.outcome
        if outcome in ("fail", "warn"):
            failures += not f.baselined
        elif outcome == "error":
            errors += not f.baselined
        elif outcome == "skip" or outcome == UNDETERMINED:
            skipped += 1
    return len(cases), failures, errors, skipped


_CASE_CHILD = "\n      "
_CASE_END = "\n    "


def _case(f: Finding) -> str:
    """One `<testcase>` element, laid out as `ET.indent` lays it out at depth 2 (no tail)."""
    head = f'<testcase name="{_attr(_clean(_case_name(f)))}" classname="{_attr(_clean(f.suite or f.command))}" time="0"'
    outcome = f.outcome
    if f.baselined and f.is_finding:
        child = f"<system-out>{_text('baselined: ' + _message(f))}</system-out>"
    elif outcome in ("fail", "warn", "error"):
        tag = "error" if outcome == "error" else "failure"
        message = _message(f)
        attrs = f'<{tag} message="{_attr(message)}" type="{_attr(f.message_class)}"'
        child = f"{attrs}>{_text(message)}</{tag}>" if message else attrs + " />"
    elif outcome == "skip":
        child = f'<skipped message="{_attr(_message(f))}" />'
    elif outcome == UNDETERMINED:
        # JUnit has no "unknown": skipped, typed, so a CI view shows it was not decided
        child = f'<skipped message="{_attr(f"{outcome}: {_message(f)}")}" type="{_attr(outcome)}" />'
    else:
        return head + " />"
    return f"{head}>{_CASE_CHILD}{child}{_CASE_END}</testcase>"


# the suite of the reads that failed, before every other: the run's results cover only what was read
READS_SUITE = "kyrec: failed reads"


def _read_case(read: FailedRead) -> str:
    """A read that failed as an `<error>` test case (type `read-failed`), named by the read."""
    message = _clean(f"{read.short()}: {read.line().removeprefix('error: ')}")
    return (f'<testcase name="{_attr(_clean(read.what()))}" classname="{_attr(READS_SUITE)}" time="0">'
            f'{_CASE_CHILD}<error message="{_attr(message)}" type="read-failed">{_text(message)}</error>'
            f"{_CASE_END}</testcase>")


def write(findings: Collection[Finding], stream: IO[str], *, name: str, chunk: int = 500,
          failed_reads: Sequence[FailedRead] = ()) -> None:
    """A test suite per `Finding.suite` (sorted), its cases in the findings' order. The counts of the
    `<testsuites>` and `<testsuite>` elements precede their cases, so the findings are grouped and counted in
    one pass first (references only); the cases are then written as text, a chunk at a time, never built
    as a tree. The text is the one `ET.indent` + `ET.tostring` of the whole tree wrote. `failed_reads`: a
    suite of their own first, an error case each.

    Findings that are not held (render/result_spill.py SpilledFindings, made anew each time they are
    iterated) are read once: counted as their cases' text is made, which waits for its suite in a temporary
    file (_SpooledSuites): nothing holds them all."""
    if isinstance(findings, Sequence):
        suites: dict[str, list[Finding]] = {}
        for f in findings:
            cases = suites.get(f.suite)
            if cases is None:
                cases = suites[f.suite] = []
            cases.append(f)
        counts = {suite: _counts(cases) for suite, cases in suites.items()}
        files = {suite: next((f.policy_location.file for f in cases if f.policy_location), None)
                 for suite, cases in suites.items()}
        spooled = None
    else:
        spooled = _SpooledSuites(findings)
        counts, files = spooled.counts, spooled.files
    totals = [sum(c[i] for c in counts.values()) for i in range(3)]
    totals[0] += len(failed_reads)
    totals[2] += len(failed_reads)
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = (f'<testsuites name="{_attr(name)}" tests="{totals[0]}" failures="{totals[1]}" errors="{totals[2]}" '
            'time="0"')
    try:
        if not counts and not failed_reads:
            stream.write(root + " />\n")
            return
        stream.write(root + ">")
        # the document's body as one sequence: each suite's opening tag (text), its cases, its closing tag
        body: list[str | Finding | Iterable[str]] = []
        if failed_reads:
            body.append(f'\n  <testsuite name="{_attr(READS_SUITE)}" tests="{len(failed_reads)}" failures="0" '
                        f'errors="{len(failed_reads)}" skipped="0" time="0">')
            body.extend("\n    " + _read_case(read) for read in failed_reads)
            body.append("\n  </testsuite>")
        for suite_name in sorted(counts):
            tests, failures, errors, skipped = counts[suite_name]
            policy_file = files[suite_name]
            body.append(f'\n  <testsuite name="{_attr(_clean(suite_name) or "kyrec")}" tests="{tests}" '
                        f'failures="{failures}" errors="{errors}" skipped="{skipped}" time="0"'
                        + (f' file="{_attr(policy_file)}"' if policy_file else "") + ">")
            if spooled is None:
                body.extend(suites[suite_name])
            else:
                body.append(spooled.texts(suite_name))
            body.append("\n  </testsuite>")
        _write_body(body, stream.write, chunk=chunk)
        stream.write("\n</testsuites>\n")
    finally:
        if spooled is not None:
            spooled.close()


# a suite's cases wait in memory up to this many characters, then go to the temporary file as one piece
_SPOOL_PIECE = 1 << 16


class _SpooledSuites:
    """The cases' text, each suite's in pieces of a temporary file in the findings' order, read back a piece
    at a time when its suite is written; made in one pass over the findings, which counts each suite's cases
    as `_counts` does (`counts`) and finds the policy file of its first case that has one (`files`)."""

    def __init__(self, findings: Iterable[Finding]) -> None:
        from kubectl_kyrec.render.result_spill import SpilledFindings
        from kubectl_kyrec.render.spill_file import SpillFile

        self.file = SpillFile()
        self.pieces: dict[str, list[tuple[int, int]]] = {}
        if isinstance(findings, SpilledFindings):
            self._spilled(findings)
            return
        waiting: dict[str, list[str]] = {}
        sizes: dict[str, int] = {}
        tallies: dict[str, list[int]] = {}
        files: dict[str, str | None] = {}
        for f in findings:
            suite = f.suite
            text = "\n    " + _case(f)
            held = waiting.get(suite)
            if held is None:
                held = waiting[suite] = []
                sizes[suite] = 0
                tallies[suite] = [0, 0, 0, 0]
                files[suite] = None
            tally = tallies[suite]
            tally[0] += 1
            outcome = f.outcome
            if outcome in ("fail", "warn"):
                tally[1] += not f.baselined
            elif outcome == "error":
                tally[2] += not f.baselined
            elif outcome == "skip" or outcome == UNDETERMINED:
                tally[3] += 1
            if files[suite] is None and f.policy_location:
                files[suite] = f.policy_location.file
            self._hold(suite, text, held, sizes)
        self._done(waiting, tallies, files)

    def _spilled(self, findings: SpilledFindings) -> None:
        """The same of spilled findings (never baselined), from their records' columns: a case's text is
        `_case`'s cut into parts results share (the subject's name; the rest of the head and what opens
        the child by suite, rule and outcome; the location; the message, with what closes the child), each
        made once a record (or once a run), and a record's cases joined, each suite's, at C speed."""
        labels = findings.labels
        command = findings.command
        waiting: dict[str, list[str]] = {}
        sizes: dict[str, int] = {}
        tallies: dict[str, list[int]] = {}
        files: dict[str, str | None] = {}
        heads: dict[tuple[str, str, str], str] = {}
        messages: dict[tuple[str, str, bool], tuple[str, str]] = {}
        for record in findings.records():
            columns = record.columns
            outcomes = columns[_RESULT]
            if not len(outcomes):
                continue
            suites: list[str] = list(map(labels.get, zip(columns[_SOURCE], columns[_POLICY]),  # type: ignore[arg-type]
                                         columns[_POLICY]))
            refs, sources = record.refs, record.sources
            names = {i: '\n    <testcase name="' + _attr(_clean(refs[i].display())) for i in set(columns[_SUBJECT])}
            head_keys = list(zip(suites, columns[_RULE], outcomes))
            for key in set(head_keys).difference(heads):
                heads[key] = _spilled_head(command, *key)
            places = list(zip(columns[_LOCATION], map(_CHILD.get, outcomes)))
            where = {key: _spilled_location(sources[key[0]], key[1]) for key in set(places)}
            message_keys = list(zip(outcomes, columns[_MESSAGE], map(is_, repeat(None), map(sources.__getitem__,
                                                                                             columns[_LOCATION]))))
            new = set(message_keys).difference(messages)
            if len(messages) + len(new) > _MESSAGES_MAX:
                messages.clear()
                new = set(message_keys)
            for key in new:
                messages[key] = _spilled_message(*key)
            around = list(map(messages.__getitem__, message_keys))
            wheres = list(map(where.__getitem__, places))
            texts = list(map("".join, zip(
                map(names.__getitem__, columns[_SUBJECT]), map(heads.__getitem__, head_keys),
                map(itemgetter(0), wheres), map(itemgetter(0), around), map(itemgetter(1), wheres),
                map(itemgetter(1), around))))
            # each suite's cases of the record in their order (a stable sort by suite), counted as _counts
            for suite, outcome_counts in _by_suite(suites, outcomes).items():
                tally = tallies.get(suite)
                if tally is None:
                    tally = tallies[suite] = [0, 0, 0, 0]
                    waiting[suite] = []
                    sizes[suite] = 0
                    files[suite] = None
                tally[0] += sum(outcome_counts.values())
                tally[1] += outcome_counts["fail"] + outcome_counts["warn"]
                tally[2] += outcome_counts["error"]
                tally[3] += outcome_counts["skip"] + outcome_counts[UNDETERMINED]
            if any(f is None for f in files.values()):
                firsts = dict(zip(reversed(list(zip(suites, columns[_POLICY_LOCATION]))),
                                  range(len(suites) - 1, -1, -1)))
                for (suite, at), _ in sorted(firsts.items(), key=itemgetter(1)):
                    policy_location = sources[at]
                    if files[suite] is None and policy_location:
                        files[suite] = policy_location.file
            order = sorted(range(len(suites)), key=suites.__getitem__)
            for suite, cases in groupby(zip(map(suites.__getitem__, order), map(texts.__getitem__, order)),
                                        itemgetter(0)):
                self._hold(suite, "".join(map(itemgetter(1), cases)), waiting[suite], sizes)
        self._done(waiting, tallies, files)

    def _hold(self, suite: str, text: str, held: list[str], sizes: dict[str, int]) -> None:
        """`text` held with its suite's waiting cases (`held`), which go to the file once they reach a piece."""
        held.append(text)
        sizes[suite] += len(text)
        if sizes[suite] >= _SPOOL_PIECE:
            self._put(suite, held)
            held.clear()
            sizes[suite] = 0

    def _done(self, waiting: dict[str, list[str]], tallies: dict[str, list[int]],
              files: dict[str, str | None]) -> None:
        """The cases still waiting put in the file; the suites' counts and policy files kept."""
        for suite, held in waiting.items():
            if held:
                self._put(suite, held)
        self.counts = {suite: (t[0], t[1], t[2], t[3]) for suite, t in tallies.items()}
        self.files = files

    def _put(self, suite: str, texts: list[str]) -> None:
        data = "".join(texts).encode("utf-8", "surrogatepass")
        self.pieces.setdefault(suite, []).append((self.file.tell_end(), len(data)))
        self.file.write(data)

    def texts(self, suite: str) -> Iterator[str]:
        for offset, size in self.pieces.get(suite, ()):
            file = self.file.file
            file.seek(offset)
            yield file.read(size).decode("utf-8", "surrogatepass")

    def close(self) -> None:
        self.file.close()


_F = {name: i for i, name in enumerate(Result._fields)}
_POLICY, _SOURCE, _RULE, _RESULT, _MESSAGE, _SUBJECT, _LOCATION, _POLICY_LOCATION = (_F[n] for n in (
    "policy", "source", "rule", "result", "message", "subject", "location", "policy_location"))
# the child element of a case by outcome (_case's): its tag, with a text (`failure`, `error`) or without
_CHILD = {"fail": "failure", "warn": "failure", "error": "error", "skip": "skipped", UNDETERMINED: "skipped"}
_TEXT_CHILDREN = ("failure", "error")
_MESSAGES_MAX = 20_000      # the messages' texts kept across records (a run whose messages all differ)
_END = _CASE_END + "</testcase>"


def _by_suite(suites: list[str], outcomes: Sequence[str]) -> dict[str, Counter[str]]:
    """Each suite's cases of a record counted by outcome, the suites in their first case's order."""
    counts: dict[str, Counter[str]] = {}
    for (suite, outcome), n in Counter(zip(suites, outcomes)).items():
        counted = counts.get(suite)
        if counted is None:
            counted = counts[suite] = Counter()
        counted[outcome] += n
    return counts


def _spilled_head(command: str, suite: str, rule: str, outcome: str) -> str:
    """A spilled finding's case after the subject's name (`_case`): the rest of its name and its class,
    then what opens its child up to the message."""
    name = f" [{rule}]" if rule and rule != suite else ""
    head = f'{_attr(_clean(name))}" classname="{_attr(_clean(suite or command))}" time="0"'
    tag = _CHILD.get(outcome)
    if tag is None:
        return head + " />"
    opened = f'{head}>{_CASE_CHILD}<{tag} message="'
    return opened + _attr(f"{outcome}: ") if outcome == UNDETERMINED else opened


def _spilled_location(where: Source | None, tag: str | None) -> tuple[str, str]:
    """What a location puts before the message: in the child's message attribute, and in its text."""
    if where is None or tag is None:
        return "", ""
    text = _clean(f"{where}: ")
    return _attr(text), _text(text) if tag in _TEXT_CHILDREN else ""


def _spilled_message(outcome: str, message: str, unplaced: bool) -> tuple[str, str]:
    """What a message puts in the child's message attribute with what closes it, and in its text with
    what closes the child and the case; `unplaced`: the finding has no location."""
    tag = _CHILD.get(outcome)
    if tag is None:
        return "", ""
    cleaned = _clean(message)
    kind = f' type="{_attr(outcome)}"'
    if tag not in _TEXT_CHILDREN:
        return _attr(cleaned) + '"' + (kind if outcome == UNDETERMINED else "") + " />" + _END, ""
    if unplaced and not cleaned:
        # no message at all: the element without a text (`_case`)
        return '"' + kind + " />" + _END, ""
    return _attr(cleaned) + '"' + kind + ">", _text(cleaned) + f"</{tag}>" + _END


def _write_body(items: Iterable[str | Finding | Iterable[str]], write: Callable[[str], object], *,
                chunk: int) -> int:
    out: list[str] = []
    count = 0
    for item in items:
        if type(item) is str:
            out.append(item)
        elif type(item) is Finding:
            out.append("\n    " + _case(item))
        else:
            # a spooled suite's cases, a piece of text at a time
            write("".join(out))
            out.clear()
            pieces: Iterable[str] = item        # type: ignore[assignment]
            for piece in pieces:
                write(piece)
            continue
        count += 1
        if len(out) >= chunk:
            write("".join(out))
            out.clear()
    write("".join(out))
    return count


def render(findings: Collection[Finding], *, name: str, failed_reads: Sequence[FailedRead] = ()) -> str:
    out = io.StringIO()
    write(findings, out, name=name, failed_reads=failed_reads)
    return out.getvalue()
