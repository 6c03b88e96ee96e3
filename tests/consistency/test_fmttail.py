"""Issue 36, the CI formats of a streamed run written from the spill's columns (render/sarif.py
_SpilledResults, junit.py, github.py): the same bytes as the findings made one by one (the path of a run
that holds its results, and of these writers before), on results chosen to make the column path diverge
if it could: characters JSON and XML escape or cannot carry, text beyond ASCII, a policy name two kinds
share, results without a rule, location or validation actions, every outcome, records that show nothing,
an empty run. And what makes it worth having: no Finding per result."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

import kubectl_kyrec.reconcile.findings as findings_module
from kubectl_kyrec.model import Ref, Result, ResultPairs, Source
from kubectl_kyrec.render import github, junit, sarif
from kubectl_kyrec.render.result_spill import ResultSpill, SpilledFindings

ODD_MESSAGES = [
    "plain",
    'quotes " and \\ backslash, <tags> & ampersands',
    "new\nline\ttab\rreturn",
    "control \x01\x07\x1f and delete \x7f",
    "beyond ASCII: é ü ñ 日本語 \u2028 emoji 🚀",
    "",
    "\x02",             # nothing XML can carry: an empty message once cleaned
]


def _results(chunk: int, count: int) -> Iterator[tuple[Result, bool]]:
    outcomes = ("pass", "fail", "warn", "error", "skip", "undetermined")
    here = Source("manifests/pods é.yaml", 7)
    policy_file = Source("policies/p.yaml", 1)
    for i in range(count):
        n = chunk * count + i
        name = f"pod-{n % 7}" + ("-ü" if n % 5 == 0 else "")
        ref = Ref("apps/v1" if n % 4 else "v1", "Pod" if n % 3 else "Deployment", "" if n % 6 == 0 else "ns",
                  name, f"uid-{n % 7}", synthetic=n % 2 == 0)
        policy, source = (("shared", "kyverno") if n % 3 == 0 else ("shared", "ValidatingPolicy")) if n % 2 \
            else (f"p{n % 4}", "ValidatingAdmissionPolicy")
        actions: tuple[str, ...] = (("Audit",), ("Deny",), (), ("Warn", "Audit"))[n % 4]
        yield (Result(policy, source, "" if n % 5 == 1 else f"rule-{n % 3}", outcomes[n % 6],
                      ODD_MESSAGES[n % len(ODD_MESSAGES)], ref, category="Cat ñ" if n % 2 else "",
                      severity=("high", "", "Medium", "odd")[n % 4], validation_actions=actions,
                      location=None if n % 8 == 3 else (here if n % 2 else Source("/abs/out side.json", 0)),
                      policy_location=policy_file if n % 3 else None), n % 2 == 0)


def _spill(chunks: list[int]) -> ResultSpill:
    spill = ResultSpill()
    for c, count in enumerate(chunks):
        pairs = ResultPairs()
        for result, reportable in _results(c, count):
            pairs.append(result, reportable)
        spill.add(pairs)
    return spill


def _edges() -> ResultSpill:
    """Every outcome with an empty message (or one that cleans to nothing), with and without a location."""
    spill = ResultSpill()
    pairs = ResultPairs()
    ref = Ref("v1", "Pod", "ns", "p", "u")
    for outcome in ("pass", "fail", "warn", "error", "skip", "undetermined", "odd"):
        for message in ("", "\x02", "m"):
            for location in (None, Source("f.yaml", 0), Source("g.yaml", 3)):
                pairs.append(Result("edge", "ValidatingPolicy", "edge", outcome, message, ref,
                                    validation_actions=("Deny",), location=location), False)
    spill.add(pairs)
    return spill


def _sarif(findings: object, root: str | None) -> str:
    out = io.StringIO()
    sarif.write(findings, out, root=root)       # type: ignore[arg-type]
    return out.getvalue()


@pytest.mark.parametrize("chunks", [[0], [1], [40], [13, 0, 29, 1, 60]], ids=["empty", "one", "one-record", "records"])
@pytest.mark.parametrize("root", [None, "manifests", "/"])
def test_sarif_of_spilled_results_is_the_findings_one(chunks: list[int], root: str | None) -> None:
    spill = _spill(chunks)
    try:
        spilled = SpilledFindings(spill)
        assert _sarif(spilled, root) == _sarif(list(spilled), root)
    finally:
        spill.close()


def _junit(findings: object) -> str:
    out = io.StringIO()
    junit.write(findings, out, name="kyrec eval")       # type: ignore[arg-type]
    return out.getvalue()


@pytest.mark.parametrize("chunks", [[0], [1], [40], [13, 0, 29, 1, 60], [2000, 700]],
                         ids=["empty", "one", "one-record", "records", "spooled"])
def test_junit_of_spilled_results_is_the_findings_one(chunks: list[int]) -> None:
    spill = _spill(chunks)
    try:
        spilled = SpilledFindings(spill)
        assert _junit(spilled) == _junit(list(spilled))
    finally:
        spill.close()


@pytest.mark.parametrize("limit", [1, 3, 10, 1000])
@pytest.mark.parametrize("chunks", [[0], [1], [13, 0, 29, 1, 60], [700, 700]], ids=["empty", "one", "records", "big"])
def test_github_of_spilled_results_is_the_findings_one(chunks: list[int], limit: int) -> None:
    spill = _spill(chunks)
    try:
        spilled = SpilledFindings(spill)
        assert github.annotation_lines(spilled, limit) == github.annotation_lines(list(spilled), limit)
    finally:
        spill.close()


def test_edges_of_every_format() -> None:
    spill = _edges()
    try:
        spilled = SpilledFindings(spill)
        assert _sarif(spilled, None) == _sarif(list(spilled), None)
        assert _junit(spilled) == _junit(list(spilled))
        assert github.annotation_lines(spilled, 100) == github.annotation_lines(list(spilled), 100)
    finally:
        spill.close()


def test_sarif_of_records_that_show_nothing() -> None:
    spill = ResultSpill()
    try:
        for c in range(3):
            pairs = ResultPairs()
            for result, _ in _results(c, 12):
                pairs.append(result._replace(result="pass" if c != 1 else "fail"), True)
            spill.add(pairs)
        spilled = SpilledFindings(spill)
        text = _sarif(spilled, None)
        assert text == _sarif(list(spilled), None)
        assert text.count('"ruleId"') == 12
    finally:
        spill.close()


@pytest.mark.parametrize("fmt", ["sarif", "junit", "github"])
def test_no_finding_per_spilled_result(monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    made = 0
    real = findings_module.result_findings

    def counting(*args: object) -> list[findings_module.Finding]:
        nonlocal made
        out = real(*args)       # type: ignore[arg-type]
        made += len(out)
        return out

    monkeypatch.setattr(findings_module, "result_findings", counting)
    spill = _spill([300, 300, 300])
    try:
        if fmt == "github":
            lines = github.annotation_lines(SpilledFindings(spill))
            assert len(lines) == 3 * 10 and lines[-1].startswith("::notice title=kyrec::571 more findings")
        else:
            text = _sarif(SpilledFindings(spill), None) if fmt == "sarif" else _junit(SpilledFindings(spill))
            assert text.count("ruleId" if fmt == "sarif" else "<testcase ") == (600 if fmt == "sarif" else 900)
    finally:
        spill.close()
    # SARIF: a rule's first result of each (policy, outcome) of a record not seen before (6 outcomes x 6);
    # GitHub: a record's first 10 of each of its 3 levels in their order
    assert made <= (6 * 6 if fmt != "github" else 3 * 3 * 10)
