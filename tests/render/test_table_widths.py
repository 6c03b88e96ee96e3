"""Default tables fit 80 columns on realistic inputs, long names cut in the middle; `-o wide` shows them whole
(issue 15). The unified diffs below the tables are not tables: their lines are what `diff -u` prints."""

from __future__ import annotations

from pathlib import Path

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
    for name, value, check in (("base", "v", "true"), ("head", "w", "has(object.metadata.labels)")):
        (tmp_path / name).mkdir(exist_ok=True)
        generate = POLICY.format(name="generate-default-network-policy-for-every-namespace", sync="true",
                                 orphan="false", cm="default-deny-all-ingress-configuration", value=value)
        (tmp_path / name / "p.yaml").write_text(generate + "---\n" + VALIDATE.format(check=check))
    (tmp_path / "ns.yaml").write_text(f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NAMESPACE}}}\n")
    result = CliRunner().invoke(cli, ["eval", "-p", str(tmp_path / "head"), "-r", str(tmp_path / "ns.yaml"),
                                      "--base-policy", str(tmp_path / "base"), *extra], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    return result.stdout


def test_eval_downstream_and_change_tables_fit_80_columns(tmp_path: Path) -> None:
    out = _generating_eval(tmp_path)
    table = _table_part(out)
    assert max(len(line) for line in table) <= 80, "\n".join(line for line in table if len(line) > 80)
    for title in ("Generated downstreams:", "Downstream changes:", "Result changes:"):
        assert title in table
    assert DOWNSTREAM not in "\n".join(table)
    # names cut in the middle (start and end kept), the flip as before -> after, the message cut at its end
    assert any(line.startswith("generate-de") and "ConfigMap p" in line and line.endswith("nfiguration")
               for line in table)
    flip = next(line for line in table[table.index("Result changes:"):] if "pass -> fail" in line)
    assert flip.startswith("requir") and "-rota  " in flip and flip.endswith("...") and "ns.yaml:1" in flip
    # the per-policy counts too: a 60-character policy name is cut to leave room for the counts
    counts = next(line for line in table if line.startswith("POLICY") and line.rstrip().endswith("SKIP"))
    assert len(counts) <= 80
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


def test_coverage_table_fits_80_columns_and_wide_shows_it_whole() -> None:
    narrow = CliRunner().invoke(cli, COVERAGE).stdout
    assert max(len(line) for line in narrow.splitlines()) <= 80
    assert LONG_REPORT not in narrow and "kind=Pod name=never-..." in narrow
    wide = CliRunner().invoke(cli, [*COVERAGE, "-o", "wide"]).stdout
    assert "PolicyReport shop/11111111-0000-0000-0000-000000000002" in wide
    assert "an entry that matches nothing is reported as unused" in wide
