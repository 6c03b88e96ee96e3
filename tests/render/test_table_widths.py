"""Default tables fit 80 columns on realistic inputs, long names cut in the middle; `-o wide` shows them whole
(issue 15). The unified diffs below the tables are not tables: their lines are what `diff -u` prints."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

DATA = Path(__file__).resolve().parents[2] / "testdata"
REPORTS = ["diff", "--now", "2026-11-29T00:00:00Z", "-p", str(DATA / "coverage-cli" / "policy.yaml"),
           "--state", str(DATA / "coverage-cli" / "state.json"), "--reports"]
LONG_REPORT = "PolicyReport shop/11111111-0000-0000-0000-000000000002"


def _table_part(text: str) -> list[str]:
    """The lines before the first unified diff."""
    lines = text.splitlines()
    end = next((i for i, line in enumerate(lines) if line.startswith("--- ")), len(lines))
    return lines[:end]


def test_diff_reports_table_fits_80_columns() -> None:
    out = CliRunner().invoke(cli, REPORTS).stdout
    table = _table_part(out)
    assert max(len(line) for line in table) <= 80, "\n".join(table)
    assert LONG_REPORT not in out.split("--- ")[0]
    # cut in the middle: the start and the end of the name stay
    assert any("PolicyRep" in line and "0002" in line for line in table)
    assert table[0].startswith("Reports (wgpolicyk8s.io/v1alpha2): 1 current, 3 missing, 1 stale")


def test_diff_reports_wide_shows_names_whole() -> None:
    out = CliRunner().invoke(cli, [*REPORTS, "-o", "wide"]).stdout
    assert LONG_REPORT in "\n".join(_table_part(out))


def test_test_table_fits_80_columns() -> None:
    result = CliRunner().invoke(cli, ["test", str(DATA / "testrun")])
    lines = [line for line in _table_part(result.stdout) if not line.startswith((" ", "+", "-", "@"))]
    assert max(len(line) for line in lines) <= 80, "\n".join(line for line in lines if len(line) > 80)
    # each failing row's message is still there, under the table, beside the row it belongs to
    assert any(line.endswith("kyverno-test.yaml:17: result-mismatch: pods need a team label") for line in lines)
    assert lines[0].split()[:3] == ["STATUS", "ROW", "POLICY"]


def test_test_wide_shows_everything_whole() -> None:
    result = CliRunner().invoke(cli, ["test", str(DATA / "testrun"), "-o", "wide"])
    header = result.stdout.splitlines()[0].split()
    assert header == ["STATUS", "ROW", "POLICY", "KIND", "RESOURCE", "EXPECTED", "ACTUAL", "REASON", "MESSAGE"]
    assert "testdata/testrun/generated-mismatch/kyverno-test.yaml:10" in result.stdout
    assert "policy 'configmaps-only' gave no response for Pod dev/web (not matched)" in result.stdout
