"""Default tables never cut a name (issue 27, replacing issue 15's 80 columns): at 80 columns they are
fitted with kubectl's short kind names, messages under their rows and fewer columns, every identifier
whole; on a pipe they have no width limit; `-o wide` shows every column. The unified diffs below the
tables are not tables: their lines are what `diff -u` prints."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from tests.reconcile.test_downstreams_impact import POLICY

DATA = Path(__file__).resolve().parents[2] / "testdata"
REPORTS = ["diff", "--now", "2026-11-29T00:00:00Z", "-p", str(DATA / "coverage-cli" / "policy.yaml"),
           "--state", str(DATA / "coverage-cli" / "state.json"), "--reports"]
LONG_REPORT = "PolicyReport shop/11111111-0000-0000-0000-000000000002"


def _table_part(text: str) -> list[str]:
    """The lines before the first unified diff."""
    lines = text.splitlines()
    end = next((i for i, line in enumerate(lines) if line.startswith("--- ")), len(lines))
    return lines[:end]


@pytest.fixture
def columns_80(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")


def test_diff_reports_table_at_80_columns_keeps_every_name_whole(columns_80: None) -> None:
    out = CliRunner().invoke(cli, REPORTS).stdout
    table = _table_part(out)
    text = "\n".join(table)
    assert "..." not in text
    for name in ("shop po/changed", "shop polr/11111111-0000-0000-0000-000000000002", "kube-system po/coredns",
                 "kube-system polr/11111111-0000-0000-0000-000000000006", "shop polr/pod-renamed-report"):
        assert name in text, name
    # the reasons under their rows, the counts continued on an indented line
    assert table[table.index(next(line for line in table if "po/changed" in line)) + 1] == "    reason: outcome-changed"
    assert " ".join(" ".join(table[:2]).split()) == ("Reports (wgpolicyk8s.io/v1alpha2): 1 current, 3 missing, "
                                                     "1 stale, 1 orphan, 0 duplicate, 1 misnamed")


def test_diff_reports_table_on_a_pipe_is_one_line_per_row() -> None:
    table = _table_part(CliRunner().invoke(cli, REPORTS).stdout)
    row = next(line for line in table if LONG_REPORT in line)
    assert row.split()[:4] == ["stale", "outcome-changed", "Pod", "shop/changed"]


def test_diff_reports_wide_shows_names_whole() -> None:
    out = CliRunner().invoke(cli, [*REPORTS, "-o", "wide"]).stdout
    assert LONG_REPORT in "\n".join(_table_part(out))


def test_test_table_at_80_columns_keeps_every_name_whole(columns_80: None) -> None:
    result = CliRunner().invoke(cli, ["test", str(DATA / "testrun")])
    doc = CliRunner().invoke(cli, ["test", str(DATA / "testrun"), "-o", "json"]).stdout
    import json

    rows = json.loads(doc)["rows"]
    lines = [line for line in _table_part(result.stdout) if not line.startswith((" ", "+", "-", "@"))]
    text = "\n".join(lines)
    assert "..." not in text
    for row in rows:
        assert row["policy"] in text and row["resource"].rpartition("/")[2] in text
    # each failing row's message is still there, under the table, beside the row it belongs to
    assert any(line.endswith("kyverno-test.yaml:17: result-mismatch: pods need a team label") for line in lines)
    assert lines[0].split()[:3] == ["STATUS", "ROW", "POLICY"]


def test_test_wide_shows_everything_whole() -> None:
    result = CliRunner().invoke(cli, ["test", str(DATA / "testrun"), "--strict", "-o", "wide"])
    header = result.stdout.splitlines()[0].split()
    assert header == ["STATUS", "ROW", "POLICY", "KIND", "RESOURCE", "EXPECTED", "ACTUAL", "REASON", "MESSAGE"]
    assert "testdata/testrun/generated-mismatch/kyverno-test.yaml:10" in result.stdout
    assert "policy 'configmaps-only' gave no response for Pod dev/web (not matched)" in result.stdout


# the GeneratingPolicy of the impact tests, with long names, beside a ValidatingPolicy whose result flips
VALIDATE = """apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {{name: require-a-team-label-on-every-namespace-for-the-on-call-rota}}
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {{apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [namespaces]}}
  validations:
  - expression: "{check}"
    message: namespaces need a team label so that the on-call rota can be found at three in the morning
"""
NAMESPACE = "payments-production-eu-west-1"
DOWNSTREAM = f"ConfigMap {NAMESPACE}/default-deny-all-ingress-configuration"


def _generating_eval(tmp_path: Path, *extra: str) -> str:
    """eval over a change of policies (`--base-policy`): the results, downstreams and change tables."""
    for name, value, check in (("base", "v", "true"), ("head", "w", "'team' in object.metadata.?labels.orValue({})")):
        (tmp_path / name).mkdir(exist_ok=True)
        generate = POLICY.format(name="generate-default-network-policy-for-every-namespace", sync="true",
                                 orphan="false", cm="default-deny-all-ingress-configuration", value=value)
        (tmp_path / name / "p.yaml").write_text(generate + "---\n" + VALIDATE.format(check=check))
    (tmp_path / "ns.yaml").write_text(f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NAMESPACE}}}\n")
    result = CliRunner().invoke(cli, ["eval", "-p", str(tmp_path / "head"), "-r", str(tmp_path / "ns.yaml"),
                                      "--base-policy", str(tmp_path / "base"), *extra], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    return result.stdout


def test_eval_downstream_and_change_tables_at_80_columns_keep_every_name_whole(tmp_path: Path,
                                                                             columns_80: None) -> None:
    out = _generating_eval(tmp_path)
    table = _table_part(out)
    text = "\n".join(table)
    for title in ("Generated downstreams:", "Downstream changes:", "Result changes:"):
        assert title in table
    assert "..." not in text
    # names whole, with kubectl's short kind names: the namespace, then TYPE/NAME
    assert f"{NAMESPACE} cm/default-deny-all-ingress-configuration" in text
    assert f"ns/{NAMESPACE}" in text
    assert "generate-default-network-policy-for-every-namespace" in text
    # the flip as before -> after, the message under its row, wrapped at spaces, every word whole
    flip = next(i for i, line in enumerate(table) if "pass -> fail" in line and i > table.index("Result changes:"))
    assert table[flip].startswith("require-a-team-label-on-every-namespace-for-the-on-call-rota ")
    under = []
    for line in table[flip + 1:]:
        if not line.startswith("    "):
            break
        under.append(line.strip())
    # LOCATION first (the table's order), whole on its own line: moved under the row, not dropped
    assert under[0] == f"{tmp_path / 'ns.yaml'}:1"
    assert " ".join(under[1:]) == ("namespaces need a team label so that the on-call rota can be found at three "
                                   "in the morning")
    assert all(len(line) <= 80 for line in table[flip + 1:flip + 1 + len(under)])
    # the per-policy counts: a 60-character policy name is printed whole
    assert any(line.startswith("require-a-team-label-on-every-namespace-for-the-on-call-rota ") and
               line.split()[1:] == ["0", "1", "0", "0", "0"] for line in table)
    assert "+  k: w" in out         # the unified diff below the tables is whole


def test_eval_wide_shows_the_change_tables_whole(tmp_path: Path) -> None:
    out = _generating_eval(tmp_path, "-o", "wide")
    table = "\n".join(_table_part(out))
    assert f"Namespace {NAMESPACE}  {DOWNSTREAM}" in table
    assert ("pass-to-fail  require-a-team-label-on-every-namespace-for-the-on-call-rota  -     "
            f"Namespace {NAMESPACE}  pass    fail") in table
    assert "found at three in the morning" in table


COVERAGE = ["coverage", "--now", "2026-11-29T00:00:00Z", "-p", str(DATA / "coverage-cli" / "policy.yaml"),
            "--state", str(DATA / "coverage-cli" / "state.json"), "--exclusions",
            str(DATA / "coverage-cli" / "exclusions.yaml")]


def test_coverage_table_at_80_columns_keeps_every_name_whole_and_wide_shows_every_column(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = CliRunner().invoke(cli, COVERAGE).stdout
    assert LONG_REPORT in pipe and "kind=Pod name=never-matches-*" in pipe
    monkeypatch.setenv("COLUMNS", "80")
    narrow = CliRunner().invoke(cli, COVERAGE).stdout
    assert "..." not in narrow
    assert "shop polr/11111111-0000-0000-0000-000000000002" in narrow and "kube-system po/coredns" in narrow
    assert "kind=Pod name=never-matches-*" in narrow
    assert "    reason: an entry that matches nothing is reported as unused" in narrow.splitlines()
    wide = CliRunner().invoke(cli, [*COVERAGE, "-o", "wide"]).stdout
    assert "PolicyReport shop/11111111-0000-0000-0000-000000000002" in wide
    assert "an entry that matches nothing is reported as unused" in wide
