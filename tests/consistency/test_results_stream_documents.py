"""Issue 36's results stream for the documents: `-o json`, `-o yaml`, `-o reports`, `-o junit`, `-o sarif` and
`-o github` take a run's results as they are decided, spilled to a temporary file a record at a time
(render/result_spill.py), and write the same bytes, with the same exit code, as the document made of every
result the run kept (the run forced to keep them: the command's `_streams` answering no). They read `-r` as it
is evaluated too, where the table would (every case but those in WHOLE_INPUTS), with the `admission` entries
spilled beside the results; the run that keeps everything reads its inputs whole."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import kubectl_kyrec.cli.eval_cmd as eval_cmd
import kubectl_kyrec.evaluate.pipeline as pipeline
from kubectl_kyrec.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
T = ROOT / "testdata"
NOW = ["--now", "2026-01-02T03:04:05Z"]


def _pr(case: str) -> list[str]:
    return ["-p", str(T / case / "policies.yaml"), "-r", str(T / case / "resources.yaml")]


CASES = {
    "vpol-errors": _pr("eval/runtime-errors"),
    "match-rules": _pr("eval/match-rules"),
    "background-and-scoring": _pr("eval/background-and-scoring"),
    "exceptions": [*_pr("eval/exceptions"), "-e", str(T / "eval/exceptions/exceptions.yaml")],
    "namespaced": _pr("eval/namespaced"),
    "ivpol-offline": [*_pr("eval/ivpol-offline"), "-e", str(T / "eval/ivpol-offline/exceptions.yaml")],
    "verify-images": _pr("classic/verify-images-offline"),
    "examples": ["-p", str(T / "examples/policies"), "-r", str(T / "examples/resources")],
    "examples-admission": ["-p", str(T / "examples/policies"), "-p", str(T / "examples/admission"),
                           "-r", str(T / "examples/resources")],
    "examples-state": ["--state", str(T / "examples/cluster.yaml")],
    "classic-rules": ["-p", str(T / "classic/manifests/policies.yaml"),
                      "-r", str(T / "classic/manifests/resources.yaml")],
    "mutating-chain": ["-p", str(T / "mutating/chain/policy.yaml"), "-r", str(T / "mutating/chain/resource.yaml")],
    "generating": ["-p", str(T / "generating/clone-owner-references/policy.yaml"),
                   "-r", str(T / "generating/clone-owner-references/resources.yaml"),
                   "--state", str(T / "generating/clone-owner-references/state.yaml")],
    "old": ["-p", str(T / "admission/old/policy.yaml"), "-r", str(T / "admission/old/after"),
            "--old", str(T / "admission/old/before")],
}
# the cases whose inputs are read whole by any output: a Namespace among the manifests (match-rules), a YAML
# state (examples-state), generation, --old
WHOLE_INPUTS = frozenset(("match-rules", "examples-state", "generating", "old"))
FORMATS = {"json": ["-o", "json"], "yaml": ["-o", "yaml"], "reports": ["-o", "reports"],
           "openreports-json": ["-o", "json", "--report-api", "openreports.io/v1alpha1"],
           "junit": ["-o", "junit"], "sarif": ["-o", "sarif", "--sarif-root", str(ROOT)], "github": ["-o", "github"],
           # the table on stdout, the documents in files (`{dir}`: each run's own directory)
           "table+yaml+json": ["-o", "table", "-o", "yaml={dir}/out.yaml", "-o", "json={dir}/out.json"],
           "github+junit+sarif": ["-o", "github", "-o", "junit={dir}/out.xml", "-o", "sarif={dir}/out.sarif"]}


def _whole(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> Any:
    """The run forced to keep every result, as before the stream."""
    with monkeypatch.context() as patched:
        patched.setattr(eval_cmd, "_streams", lambda *_: False)
        return CliRunner().invoke(cli, args)


@pytest.mark.parametrize("record", [None, 1], ids=["one-record", "record-per-subject"])
@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_the_streamed_document_is_the_whole_runs(case: list[str], fmt: list[str], record: int | None,
                                                 kept: list[Any], streamed_inputs: list[bool],
                                                 monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if record is not None:
        # a record ends with a subject once it holds this many results: 1 makes each subject a record, so
        # reports are grouped, and results written, across records
        monkeypatch.setattr(pipeline, "_CHUNK", record)
    dirs = tmp_path / "streamed", tmp_path / "whole"
    for d in dirs:
        d.mkdir()
    streamed = CliRunner().invoke(cli, ["eval", *case, *(f.format(dir=dirs[0]) for f in fmt), *NOW])
    whole = _whole(monkeypatch, ["eval", *case, *(f.format(dir=dirs[1]) for f in fmt), *NOW])
    assert streamed.exit_code == whole.exit_code, streamed.stderr
    assert streamed.exit_code in (0, 1, 3), streamed.output
    assert streamed.stdout == whole.stdout
    assert streamed.stderr == whole.stderr
    files = sorted(p.name for p in dirs[0].iterdir())
    assert files == sorted(p.name for p in dirs[1].iterdir())
    for name in files:
        assert (dirs[0] / name).read_bytes() == (dirs[1] / name).read_bytes()
    # a run none of whose results a report carries (a mutation's alone) prints no report, one without a
    # finding no annotation
    assert streamed.stdout.strip() or fmt[1] in ("reports", "github")
    first, second = kept
    assert first.results == [] and first.handed is not None and first.handed.count
    assert second.results and second.handed is None
    name = next(name for name, args in CASES.items() if args is case)
    assert streamed_inputs == [name not in WHOLE_INPUTS, False]


def test_files_get_the_streamed_documents_and_the_summary_line_counts_them(
        tmp_path: Path, kept: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # every output in a file: the line on stderr counts the results the spill counted
    args = ["eval", *CASES["examples"], *NOW, "-o", f"json={tmp_path / 'a.json'}", "-o", f"yaml={tmp_path / 'a.yaml'}"]
    streamed = CliRunner().invoke(cli, args)
    written = {name: (tmp_path / name).read_text() for name in ("a.json", "a.yaml")}
    whole = _whole(monkeypatch, args)
    assert streamed.exit_code == whole.exit_code == 1
    assert streamed.stderr == whole.stderr
    assert "kyrec eval: 4 pass, 2 fail; wrote" in streamed.stderr
    assert written == {name: (tmp_path / name).read_text() for name in ("a.json", "a.yaml")}
    assert kept[0].results == [] and kept[0].handed is not None


def test_the_step_summary_of_streamed_findings_is_the_whole_runs(tmp_path: Path, kept: list[Any],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    summaries = tmp_path / "streamed.md", tmp_path / "whole.md"
    args = ["eval", *CASES["vpol-errors"], *NOW, "-o", "github"]
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summaries[0]))
    streamed = CliRunner().invoke(cli, args)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summaries[1]))
    whole = _whole(monkeypatch, args)
    assert streamed.exit_code == whole.exit_code == 1
    assert streamed.stdout == whole.stdout
    assert summaries[0].read_text() == summaries[1].read_text()
    assert "| fail |" in summaries[0].read_text()
    assert kept[0].results == [] and kept[0].handed is not None


def test_reports_of_a_subject_whose_results_come_apart_are_grouped_as_before() -> None:
    # two manifests of one uid: their results are not one after another, so the spill cannot group them as
    # they pass; the reports are then made of them all, as ExpectedReports makes them
    from kubectl_kyrec.expect.reports import ExpectedReports
    from kubectl_kyrec.model import Ref, Result, ResultPairs
    from kubectl_kyrec.render.result_spill import ResultSpill, spilled_report_items

    now = datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc)
    a, b = Ref("v1", "Pod", "ns", "a", "uid-a"), Ref("v1", "Pod", "ns", "b", "uid-b")
    later = [(Result("gen", "KyvernoGeneratingPolicy", "", "pass", "generated", b), True),
             (Result("gen", "KyvernoGeneratingPolicy", "", "pass", "generated",
                     Ref("v1", "Namespace", "", "c", "uid-c")), True)]
    chunks = [[("p1", a, True), ("p2", a, False)], [("p1", b, True)], [("p2", a, True), ("p3", b, True)]]
    every = ResultPairs()
    spill = ResultSpill()
    for chunk in chunks:
        pairs = ResultPairs()
        for policy, ref, ok in chunk:
            pairs.append(Result(policy, "ValidatingPolicy", "", "fail", f"{policy} on {ref.name}", ref), ok)
        spill.add(pairs)
        every.extend(pairs)
    every.extend(later)
    assert spill.scattered and spill.count == 5
    expected = list(ExpectedReports(every, now))
    assert [r["metadata"]["name"] for r in expected] == ["uid-a", "uid-b", "uid-c"]
    assert list(spilled_report_items(spill, later, now, "wgpolicyk8s.io/v1alpha2")) == expected
    spill.close()


def test_reports_joined_across_records_and_with_the_generating_results() -> None:
    # one subject's results in two records, a generating result for it and one for a subject of its own
    from kubectl_kyrec.expect.reports import ExpectedReports
    from kubectl_kyrec.model import Ref, Result, ResultPairs
    from kubectl_kyrec.render.result_spill import ResultSpill, spilled_report_items

    now = datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc)
    a, b, c = (Ref("v1", "Pod", "ns", n, f"uid-{n}") for n in "abc")
    later = [(Result("gen", "KyvernoGeneratingPolicy", "", "pass", "generated", c), True),
             (Result("gen", "KyvernoGeneratingPolicy", "", "error", "failed", a), True),
             (Result("gen", "KyvernoGeneratingPolicy", "", "pass", "generated", b), False)]
    every = ResultPairs()
    spill = ResultSpill()
    for chunk in ([("z", a, True)], [("y", a, True), ("x", b, False)], [("w", b, True)]):
        pairs = ResultPairs()
        for policy, ref, ok in chunk:
            pairs.append(Result(policy, "ValidatingPolicy", "", "pass", "ok", ref), ok)
        spill.add(pairs)
        every.extend(pairs)
    every.extend(later)
    assert not spill.scattered
    expected = list(ExpectedReports(every, now))
    items = spilled_report_items(spill, later, now, "wgpolicyk8s.io/v1alpha2")
    assert items.count == len(expected) == 3
    assert list(items) == expected
    assert [[e["policy"] for e in r["results"]] for r in expected] == [["gen", "y", "z"], ["w"], ["gen"]]
    spill.close()
