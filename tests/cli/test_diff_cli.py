"""`kyrec diff` as a command: flags, formats, exit codes, the report domain."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "testdata" / "diff"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["diff", "--now", "2026-09-01T12:00:00Z", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def case(name: str) -> list[str]:
    d = CASES / name
    return ["-p", str(d / "policy.yaml"), "--state", str(d / ("state.json" if (d / "state.json").exists()
                                                                else "state.yaml"))]


def test_without_a_state_diff_reads_the_cluster(tmp_path: Path) -> None:
    # as kubectl does: no --state means the current context (here: no kubeconfig at all, exit 5)
    result = CliRunner().invoke(cli, ["diff", "-p", str(CASES / "trigger-gone" / "policy.yaml")],
                                env={"KUBECONFIG": str(tmp_path / "none")})
    assert result.exit_code == 5 and result.stderr.startswith("error: no kubeconfig found")
    code, _, err = invoke("--state", str(CASES / "trigger-gone" / "state.yaml"))
    assert code == 2 and "diff needs policies" in err


def test_live_and_state_exclude_each_other() -> None:
    code, _, err = invoke("--live", *case("trigger-gone"))
    assert code == 2 and "--live and --state exclude each other" in err


def test_findings_exit_1_unless_exit_code_false() -> None:
    assert invoke(*case("trigger-gone"))[0] == 1
    assert invoke(*case("trigger-gone"), "--exit-code=false")[0] == 0


def test_a_policy_that_does_not_compile_is_an_input_error(tmp_path: Path) -> None:
    bad = (CASES / "trigger-gone" / "policy.yaml").read_text().replace("generator.apply(", "generator.nope(")
    (tmp_path / "bad.yaml").write_text(bad)
    code, out, err = invoke("-p", str(tmp_path / "bad.yaml"), "--state", str(CASES / "trigger-gone" / "state.yaml"),
                            "-o", "json")
    assert code == 3
    # the line of the field, as for every policy kind
    assert err.startswith(f"error: {tmp_path / 'bad.yaml'}:17: GeneratingPolicy \"team-config\": spec.generate[0]")
    doc = json.loads(out)
    assert doc["errors"] and doc["errors"][0]["location"] == {"file": str(tmp_path / "bad.yaml"), "line": 17}
    # the broken policy's downstreams are not mistaken for a deleted policy's
    assert not [c for c in doc["changes"] if c["reason"] == "policy-gone"]


def test_table_marks_what_kyverno_would_not_enforce() -> None:
    code, out, _ = invoke(*case("sync-off-edited-downstream"))
    assert code == 0
    assert "drifted*  changed-fields  team-config" in out
    assert "\n* not enforced: Kyverno would not act on it" in out
    assert out.startswith("Downstreams: 0 missing, 1 drifted, 0 in-sync")
    assert "--- live/v1.ConfigMap.team-a.team-config\n+++ merged/v1.ConfigMap.team-a.team-config\n" in out
    assert "-  tier: premium\n+  tier: standard\n" in out


def test_diff_format_and_colour() -> None:
    _, plain, _ = invoke(*case("sync-off-edited-downstream"), "-o", "diff")
    assert plain.startswith("--- live/v1.ConfigMap.team-a.team-config") and "\x1b[" not in plain
    _, coloured, _ = invoke(*case("sync-off-edited-downstream"), "-o", "diff", "--color", "always")
    assert "\x1b[31m-  tier: premium\x1b[0m" in coloured and "\x1b[32m+  tier: standard\x1b[0m" in coloured
    _, none, _ = invoke(*case("trigger-gone"), "-o", "diff")
    assert none.strip() == ""


def test_json_and_yaml_are_the_same_document() -> None:
    _, out_json, _ = invoke(*case("foreign-field-added"), "-o", "json")
    _, out_yaml, _ = invoke(*case("foreign-field-added"), "-o", "yaml")
    doc = json.loads(out_json)
    assert yaml.safe_load(out_yaml) == doc
    assert (doc["apiVersion"], doc["kind"]) == ("kyrec/v1", "DiffResult")
    (change,) = doc["changes"]
    assert set(change) >= {"domain", "class", "reason", "enforced", "policy", "trigger", "subject", "object",
                           "fields", "diff"}
    assert change["diff"].startswith("--- live/v1.ConfigMap.team-a.team-config")
    assert doc["summary"]["downstream"]["drifted"] == 1 and set(doc["summary"]["report"]) == {
        "current", "missing", "stale", "orphan", "duplicate", "misnamed", "undetermined"}


def test_output_to_a_file(tmp_path: Path) -> None:
    target = tmp_path / "diff.json"
    code, out, _ = invoke(*case("trigger-gone"), "-o", f"json={target}", "-o", "table")
    assert code == 1 and out.startswith("Downstreams:")
    assert json.loads(target.read_text())["summary"]["downstream"]["orphan"] == 1


def test_namespace_flag(tmp_path: Path) -> None:
    _, out, _ = invoke(*case("two-triggers-one-set-empties"), "-n", "team-b", "-o", "json")
    assert [c["object"]["namespace"] for c in json.loads(out)["changes"]] == ["team-b"]


VPOL = """apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: require-team}
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    message: a team label is required
"""


# the state holds no reports: the default diff leaves the report domain out (and says so), --reports runs it
@pytest.mark.parametrize("flags, domains", [([], {"downstream"}), (["--reports"], {"report"}),
                                            (["--downstreams"], {"downstream"})])
def test_report_domain(tmp_path: Path, flags: list[str], domains: set[str]) -> None:
    (tmp_path / "vpol.yaml").write_text(VPOL)
    d = CASES / "trigger-gone"
    code, out, err = invoke("-p", str(d / "policy.yaml"), "-p", str(tmp_path / "vpol.yaml"), "--state",
                            str(d / "state.yaml"), "-o", "json", *flags)
    doc = json.loads(out)
    assert {c["domain"] for c in doc["changes"]} == domains, err
    assert ("report checks skipped" in err) == (flags == [])
    if "report" in domains:
        # the ConfigMaps have no team label and no report: their reports are missing; so is the report of
        # Namespace team-a, which Kyverno writes for the GeneratingPolicy's result when it generates
        missing = [c for c in doc["changes"] if c["domain"] == "report" and c["class"] == "missing"]
        assert {c["subject"]["name"] for c in missing} == {"team-config", "team-a"}
        assert doc["summary"]["report"]["missing"] == 3
    assert code == 1


def test_triggers_that_cannot_be_evaluated_are_noticed() -> None:
    _, out, err = invoke(*case("evaluation-error"), "-o", "json")
    assert "notice: quota-config: Namespace team-b: failed to evaluate policy: no such key: annotations" in err
    notices = json.loads(out)["notices"]
    assert notices[0] == "quota-config: Namespace team-b: failed to evaluate policy: no such key: annotations"
    # the case's state was written without managedFields: said once, after the evaluation notices
    assert len(notices) == 2 and "no managedFields" in notices[1]
    _, _, err = invoke(*case("needs-request"))
    assert "creator-binding: the downstreams of 1 trigger(s) depend on request.userInfo" in err


def test_in_sync_and_current_are_counted_not_listed_unless_asked() -> None:
    from tests.render.test_diff_direction import ARGS

    default = CliRunner().invoke(cli, [*ARGS]).stdout
    shown = CliRunner().invoke(cli, [*ARGS, "--show-all"]).stdout

    def rows(text: str, klass: str) -> list[str]:
        return [line for line in text.split("\n--- ")[0].splitlines() if line.startswith(klass + " ")]

    assert "1 in-sync" in default and rows(default, "in-sync") == []
    assert "1 current" in default and rows(default, "current") == []
    assert len(rows(shown, "in-sync")) == 1 and len(rows(shown, "current")) == 1
    # the counts stay as they were; the rest of the table too
    assert default.splitlines()[:2] == shown.splitlines()[:2]
    assert rows(default, "drifted") == rows(shown, "drifted")
