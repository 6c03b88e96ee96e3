"""`-o github`: escaping, GitHub's 10-per-level limit, and the step summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.ci_outputs import append_step_summary
from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.render import github
from tests.ci.findings_support import ROOT, finding

EXAMPLES = ROOT / "testdata" / "examples"


def test_escaping_of_data_and_properties() -> None:
    f = finding("web", file="dir,with:odd/x.yaml", message="100% bad\r\nsecond line")
    line = github.annotation_lines([f])[0]
    assert line == ("::error file=dir%2Cwith%3Aodd/x.yaml,line=3,title=require-labels%3A Deployment shop/web"
                    "::100%25 bad%0D%0Asecond line")


def test_levels_audit_only_is_a_warning() -> None:
    lines = github.annotation_lines([finding("deny"), finding("audit", actions=("Audit",)),
                                finding("warn-action", actions=("Warn",)), finding("none", actions=()),
                                finding("warned", outcome="warn"), finding("errored", outcome="error"),
                                finding("accepted", baselined=True), finding("ok", outcome="pass")])
    level = {line.split("title=")[1].split("::")[0].split("/")[-1].replace(" (baselined)", ""): line.split(" ")[0]
             for line in lines}
    assert level == {"deny": "::error", "none": "::error", "errored": "::error", "audit": "::warning",
                     "warn-action": "::warning", "warned": "::warning", "accepted": "::notice"}


def test_cluster_object_has_no_file_property() -> None:
    assert github.annotation_lines([finding(file=None)])[0].startswith("::error title=")


def test_more_than_ten_per_level_are_cut_with_a_closing_line(tmp_path: Path) -> None:
    findings = [finding(f"e{i:02}") for i in range(13)] + [finding(f"w{i}", outcome="warn") for i in range(4)]
    summary = tmp_path / "summary.md"
    text = github.render(findings)
    append_step_summary(findings, title="kyrec eval", environ={"GITHUB_STEP_SUMMARY": str(summary)})
    lines = text.splitlines()
    assert sum(line.startswith("::error ") for line in lines) == 10
    assert sum(line.startswith("::warning ") for line in lines) == 4
    assert "e12" not in text and "e09" in text
    assert lines[-1].startswith("::notice title=kyrec::3 more findings not annotated (3 errors)")
    md = summary.read_text()
    assert "| fail | 13 |" in md and "| warn | 4 |" in md
    rows = [row for row in md.splitlines() if row.count(" | ") == 4]     # the findings table has 5 columns
    assert len(rows) == 1 + 17
    assert "| error | require-labels | Deployment shop/e12 | m.yaml:3 | label 'team' is required |" in md


def test_summary_appends_and_escapes_pipes(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    append_step_summary([finding(message="a | b")], title="kyrec eval",
                        environ={"GITHUB_STEP_SUMMARY": str(summary)}, fixed=["require-labels Deployment shop/gone"])
    md = summary.read_text()
    assert md.startswith("earlier step\n### kyrec eval")
    assert "a \\| b" in md and "- require-labels Deployment shop/gone" in md


def test_notices_keep_room_for_the_closing_line() -> None:
    lines = github.annotation_lines([finding(f"b{i:02}", baselined=True) for i in range(12)])
    assert sum(line.startswith("::notice file=") for line in lines) == 9
    assert lines[-1].startswith("::notice title=kyrec::3 more findings not annotated (3 notices)")


def test_eval_github_over_ten_findings_writes_the_summary(tmp_path: Path) -> None:
    manifests = tmp_path / "pods.yaml"
    manifests.write_text("".join(
        f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{i:02}, namespace: shop}}\n"
        "spec: {containers: [{name: c, image: nginx}]}\n" for i in range(12)))
    summary = tmp_path / "summary.md"
    result = CliRunner().invoke(cli, ["eval", "-p", str(EXAMPLES / "policies"), "-r", str(manifests), "-o", "github"],
                                env={"GITHUB_STEP_SUMMARY": str(summary)})
    lines = result.stdout.splitlines()
    assert result.exit_code == 1
    assert sum(line.startswith("::error ") for line in lines) == 10
    assert lines[-1].startswith("::notice title=kyrec::")
    rows = [row.split(" | ")[0:2] for row in summary.read_text().splitlines() if row.count(" | ") == 4][1:]
    # each Pod fails both example policies; require-owner-label is Audit-only, so those are warnings
    assert sorted(rows) == [["| error", "limit-memory"]] * 12 + [["| warning", "require-owner-label"]] * 12
    assert sum(line.startswith("::warning ") for line in lines) == 10
    assert "(2 errors, 2 warnings)" in lines[-1]


def test_summary_stays_below_githubs_limit_and_says_what_it_left_out(tmp_path: Path) -> None:
    # 20,000 findings with long messages make several MiB of table: GitHub would refuse the whole summary
    findings = [finding(f"pod-{i:05}", message="x" * 300) for i in range(20_000)]
    summary = tmp_path / "summary.md"
    summary.write_text("e" * 100_000 + "\n")        # an earlier command of the step: its bytes count too
    append_step_summary(findings, title="kyrec eval", environ={"GITHUB_STEP_SUMMARY": str(summary)},
                        fixed=["require-labels Deployment shop/gone"])
    size = summary.stat().st_size
    assert 900_000 < size < github.STEP_SUMMARY_BYTES <= 1024 * 1024
    md = summary.read_text()
    rows = sum(1 for row in md.splitlines() if row.startswith("| error | require-labels | "))
    last = md.splitlines()[-1]
    assert last == (f"{20_001 - rows} of 20001 rows left out: GitHub takes at most 1 MiB of step summary "
                    "(-o sarif or -o junit to a file holds them all).")
    assert "| fail | 20000 |" in md        # the counts are whole


def test_summary_within_the_limit_is_whole() -> None:
    md = github.step_summary([finding(f"p{i}") for i in range(3)], title="kyrec eval", fixed=["a"])
    assert "left out" not in md and md.endswith("- a\n")


def _rows_of_all_sorted(findings: list[Any]) -> str:
    """The step summary's rows as a sort of every failing finding makes them: the reference for the bounded pass."""
    shown = sorted((f for f in findings if f.is_finding or f.undetermined), key=github._sort_key)
    return "".join(
        f"| {github.level_of(f)} | {f.policy} | {f.subject_display()} | {f.where} | {f.message} |\n"
        for f in shown)


@pytest.mark.parametrize(("limit", "count"), [(3_000, 6_000), (40_000, 6_000), (400_000, 6_000), (3_000, 60_000)])
def test_the_summarys_rows_are_the_first_that_fit_of_all_sorted(limit: int, count: int,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # arriving out of order, with ties (same policy, subject and place) that must keep their arrival order
    # and rows of different sizes: what fits is the sorted prefix, whatever the pass kept along the way
    import random

    rng = random.Random(7)
    findings = [finding(f"pod-{rng.randrange(400):03}", policy=rng.choice(["b-pol", "a-pol", "c-pol"]),
                        actions=rng.choice([("Deny",), ("Audit",)]), message=f"m{i} " + "x" * rng.randrange(200),
                        outcome=rng.choice(["fail", "fail", "pass"]))
               for i in range(count)]
    held: list[int] = []
    original_cut = github._Fitting._cut

    def watched(self: Any) -> None:
        held.append(len(self.kept))
        original_cut(self)

    monkeypatch.setattr(github._Fitting, "_cut", watched)
    md = github.step_summary(findings, title="kyrec eval", limit=limit, fixed=["a"])
    lines = md.splitlines()
    table = lines[lines.index("|---|---|---|---|---|") + 1:]
    rows = [line + "\n" for line in table[:table.index("")]]
    reference = _rows_of_all_sorted(findings)
    assert "".join(rows) == reference[:len("".join(rows))]          # a prefix of all of them sorted
    failing = sum(f.outcome == "fail" for f in findings)
    assert 0 < len(rows) < failing                                   # and not all of them: the limit cut
    assert lines[-1].startswith(f"{failing + 1 - len(rows)} of {failing + 1} rows left out")
    # the findings held at once are bounded by what `limit` can show (a row is over 40 bytes), not by the
    # run's size: 60,000 findings with 3,000 bytes of room hold no more than 6,000 do
    assert held and max(held) <= 4096 + 2 * (limit // 40 + 1) + 1
