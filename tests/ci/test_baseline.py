"""--baseline / --write-baseline: accepted findings do not fail, new ones do, fixed ones are reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.model import Source
from kubectl_kyrec.reconcile.baseline import apply_baseline, baseline_document, parse_baseline
from tests.ci.findings_support import ROOT, finding

EXAMPLES = ROOT / "testdata" / "examples"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def roundtrip(doc: dict) -> list:  # type: ignore[type-arg]
    return parse_baseline(json.loads(json.dumps(doc)), Source("b.json"))


def test_key_ignores_lines_and_messages_but_not_identity() -> None:
    entries = roundtrip(baseline_document([finding("web", line=3, message="old text")]))
    moved = apply_baseline([finding("web", line=90, message="new text")], entries, "eval")
    assert [f.baselined for f in moved.findings] == [True] and moved.fixed == []
    other_ns = apply_baseline([finding("web", namespace="prod")], entries, "eval")
    assert [f.baselined for f in other_ns.findings] == [False]
    assert [e.subject for e in other_ns.fixed] == ["apps/Deployment/shop/web"]
    other_class = apply_baseline([finding("web", outcome="error")], entries, "eval")
    assert [f.baselined for f in other_class.findings] == [False]


def test_entries_of_another_command_neither_match_nor_count_as_fixed() -> None:
    entries = roundtrip(baseline_document([finding("web", command="diff")]))
    outcome = apply_baseline([finding("web")], entries, "eval")
    assert [f.baselined for f in outcome.findings] == [False] and outcome.fixed == []


def test_passes_are_not_recorded() -> None:
    doc = baseline_document([finding("a", outcome="pass"), finding("b"), finding("c", outcome="skip")])
    assert [e["subject"] for e in doc["entries"]] == ["apps/Deployment/shop/b"]


def test_a_file_that_is_not_a_baseline_is_an_input_error() -> None:
    with pytest.raises(InputError, match="not a kyrec baseline"):
        parse_baseline({"kind": "List"}, Source("b.json"))
    with pytest.raises(InputError, match=r"entries\[0\]"):
        parse_baseline({"apiVersion": "kyrec/v1", "kind": "Baseline", "entries": [{"policy": "p"}]}, Source("b"))


PODS = """---
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: shop}
spec: {containers: [{name: c, image: nginx, resources: {limits: {memory: 4Gi}}}]}
"""


def test_eval_with_a_manifest_edited_between_runs(tmp_path: Path) -> None:
    manifests = tmp_path / "pods.yaml"
    baseline = tmp_path / "baseline.json"
    manifests.write_text(PODS % "old-a" + PODS % "old-b")
    policies = str(EXAMPLES / "policies")
    code, _, _ = run("eval", "-p", policies, "-r", str(manifests), "--write-baseline", str(baseline))
    assert code == 1                                   # writing a baseline does not accept anything yet
    recorded = json.loads(baseline.read_text())
    assert recorded["kind"] == "Baseline" and len(recorded["entries"]) == 4     # 2 pods x 2 policies

    # edit: a comment block on top moves every line; nothing new fails
    manifests.write_text("# owners: team shop\n# reviewed\n\n" + PODS % "old-a" + PODS % "old-b")
    code, out, err = run("eval", "-p", policies, "-r", str(manifests), "--baseline", str(baseline), "-o", "sarif")
    assert code == 0, err
    assert "baseline: 4 finding(s) baselined, 0 new, 0 baseline entries fixed" in err
    states = {r["baselineState"] for r in json.loads(out)["runs"][0]["results"]}
    assert states == {"unchanged"}

    # edit: a new pod fails; old-b is fixed (removed)
    manifests.write_text(PODS % "old-a" + PODS % "new-c")
    code, out, err = run("eval", "-p", policies, "-r", str(manifests), "--baseline", str(baseline), "-o", "github")
    assert code == 1
    assert "2 finding(s) baselined, 2 new, 2 baseline entries fixed" in err
    assert "baseline: fixed (no longer found): limit-memory /Pod/shop/old-b (fail)" in err
    errors = [line for line in out.splitlines() if line.startswith("::error ")]
    assert len(errors) == 1 and "new-c" in errors[0]
    assert sum("(baselined)" in line for line in out.splitlines()) == 2

    # the table still shows every result; --write-baseline over the old file shrinks it to what is found now
    code, _, _ = run("eval", "-p", policies, "-r", str(manifests), "--baseline", str(baseline),
                     "--write-baseline", str(baseline))
    assert code == 1
    subjects = sorted(e["subject"] for e in json.loads(baseline.read_text())["entries"])
    assert subjects == ["/Pod/shop/new-c", "/Pod/shop/new-c", "/Pod/shop/old-a", "/Pod/shop/old-a"]


def test_missing_baseline_file_is_an_input_error(tmp_path: Path) -> None:
    code, _, err = run("eval", "-p", str(EXAMPLES / "policies"), "-r", str(EXAMPLES / "resources"),
                       "--baseline", str(tmp_path / "nope.json"))
    assert code == 3 and err.startswith(f"error: {tmp_path / 'nope.json'}: cannot read baseline")


DIFF_CASE = ROOT / "testdata" / "diff" / "trigger-gone"


def test_diff_with_a_state_edited_between_runs(tmp_path: Path) -> None:
    state = tmp_path / "state.yaml"
    baseline = tmp_path / "baseline.json"
    original = (DIFF_CASE / "state.yaml").read_text()
    state.write_text(original)
    args = ["diff", "--now", "2026-09-01T12:00:00Z", "-p", str(DIFF_CASE / "policy.yaml"), "--state", str(state)]
    assert run(*args, "--write-baseline", str(baseline))[0] == 1
    assert [e["class"] for e in json.loads(baseline.read_text())["entries"]] == ["downstream-orphan-trigger-gone"]

    # edit: lines move (a leading comment), the orphan is still there: accepted
    state.write_text("# captured again\n" + original)
    code, out, err = run(*args, "--baseline", str(baseline), "-o", "junit")
    assert code == 0, err
    assert "baselined" in out and "<failure" not in out

    # edit: team-a's ConfigMap drifts: a new finding fails the run
    state.write_text(original.replace("tier: standard", "tier: gold", 1))
    code, out, err = run(*args, "--baseline", str(baseline), "-o", "sarif")
    assert code == 1
    results = json.loads(out)["runs"][0]["results"]
    assert sorted((r["properties"]["subject"]["namespace"], r["baselineState"]) for r in results) == \
        [("team-a", "new"), ("team-b", "unchanged")]


COVERAGE = ROOT / "testdata" / "coverage-cli"


def test_coverage_baseline_and_fixed_gaps(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    args = ["coverage", "-p", str(COVERAGE / "policy.yaml"), "--state", str(COVERAGE / "state.json"),
            "--now", "2026-11-29T00:00:00Z"]
    assert run(*args, "--write-baseline", str(baseline))[0] == 1
    classes = sorted(e["class"] for e in json.loads(baseline.read_text())["entries"])
    # the kube-system Pod is in scope: a default install writes its report (--skipResourceFilters=true)
    assert classes == ["misnamed", "missing", "missing", "missing", "stale"]
    code, _, err = run(*args, "--baseline", str(baseline))
    assert code == 0 and "5 finding(s) baselined, 0 new" in err
    # the exclusions file accepts one gap another way: its baseline entry is now reported fixed
    code, _, err = run(*args, "--baseline", str(baseline), "--exclusions", str(COVERAGE / "exclusions.yaml"))
    assert code == 0 and "1 baseline entry fixed" in err


def test_one_file_serves_several_commands(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    run("coverage", "-p", str(COVERAGE / "policy.yaml"), "--state", str(COVERAGE / "state.json"),
        "--now", "2026-11-29T00:00:00Z", "--write-baseline", str(baseline))
    run("eval", "-p", str(EXAMPLES / "policies"), "-r", str(EXAMPLES / "resources"), "--write-baseline", str(baseline))
    commands = sorted({e["command"] for e in json.loads(baseline.read_text())["entries"]})
    assert commands == ["coverage", "eval"]


def _subjects(entries: list[dict[str, str]]) -> list[str]:
    return sorted(f"{e['policy']} {e['subject']}" for e in entries)


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_machine_output_says_what_is_baselined_and_what_is_fixed(tmp_path: Path, output: str) -> None:
    import yaml

    manifests = tmp_path / "pods.yaml"
    baseline = tmp_path / "baseline.json"
    manifests.write_text(PODS % "old-a" + PODS % "old-b")
    policies = str(EXAMPLES / "policies")
    run("eval", "-p", policies, "-r", str(manifests), "--write-baseline", str(baseline))
    # old-b fixed, new-c added: 2 findings baselined, 2 new, 2 entries fixed
    manifests.write_text(PODS % "old-a" + PODS % "new-c")
    code, out, err = run("eval", "-p", policies, "-r", str(manifests), "--baseline", str(baseline), "-o", output)
    assert code == 1
    doc = json.loads(out) if output == "json" else yaml.safe_load(out)
    state = doc["baseline"]
    assert state["file"] == str(baseline)
    assert state["summary"] == {"baselined": 2, "new": 2, "fixed": 2}
    assert "baseline: 2 finding(s) baselined, 2 new, 2 baseline entries fixed" in err    # the same counts
    assert _subjects(state["baselined"]) == ["limit-memory /Pod/shop/old-a", "require-owner-label /Pod/shop/old-a"]
    assert _subjects(state["fixed"]) == ["limit-memory /Pod/shop/old-b", "require-owner-label /Pod/shop/old-b"]
    assert {e["class"] for e in state["baselined"]} == {"fail"}
    # without --baseline there is no baseline to speak of
    _, out, _ = run("eval", "-p", policies, "-r", str(manifests), "-o", "json")
    assert "baseline" not in json.loads(out)


def test_diff_and_coverage_documents_carry_it_too(tmp_path: Path) -> None:
    data = ROOT / "testdata" / "coverage-cli"
    args = ["--now", "2026-11-29T00:00:00Z", "-p", str(data / "policy.yaml"), "--state", str(data / "state.json")]
    for command in ("diff", "coverage"):
        baseline = tmp_path / f"{command}.json"
        run(command, *args, "--write-baseline", str(baseline))
        code, out, _ = run(command, *args, "--baseline", str(baseline), "-o", "json")
        state = json.loads(out)["baseline"]
        assert code == 0, command
        assert state["summary"]["new"] == 0 and state["summary"]["fixed"] == 0
        assert state["summary"]["baselined"] == len(state["baselined"]) > 0
        assert {e["command"] for e in state["baselined"]} == {command}


# --- the tables say it too: a baselined finding reads `fail (baselined)`, a new one as it is --------------

def _rows_with(text: str, name: str) -> list[str]:
    return [line for line in text.splitlines() if name in line]


def test_eval_table_shows_baselined_results(tmp_path: Path) -> None:
    manifests = tmp_path / "pods.yaml"
    baseline = tmp_path / "baseline.json"
    manifests.write_text(PODS % "old-a")
    policies = str(EXAMPLES / "policies")
    run("eval", "-p", policies, "-r", str(manifests), "--write-baseline", str(baseline))
    manifests.write_text(PODS % "old-a" + PODS % "new-c")
    for output in ("table", "wide"):
        code, out, _ = run("eval", "-p", policies, "-r", str(manifests), "--baseline", str(baseline), "-o", output)
        assert code == 1
        old, new = _rows_with(out, "shop/old-a"), _rows_with(out, "shop/new-c")
        assert len(old) == 2 and all(" fail (baselined) " in line for line in old), out
        assert len(new) == 2 and not any("baselined" in line for line in new), out
        assert out.rstrip().splitlines()[-1].endswith("; baselined: 2")
    # without --baseline nothing is marked
    _, out, _ = run("eval", "-p", policies, "-r", str(manifests))
    assert "baselined" not in out


def test_diff_table_shows_baselined_changes(tmp_path: Path) -> None:
    state = tmp_path / "state.yaml"
    baseline = tmp_path / "baseline.json"
    original = (DIFF_CASE / "state.yaml").read_text()
    state.write_text(original)
    args = ["diff", "--now", "2026-09-01T12:00:00Z", "-p", str(DIFF_CASE / "policy.yaml"), "--state", str(state)]
    run(*args, "--write-baseline", str(baseline))
    state.write_text(original.replace("tier: standard", "tier: gold", 1))
    code, out, _ = run(*args, "--baseline", str(baseline))
    assert code == 1
    rows = [line.split() for line in out.splitlines() if line.startswith(("drifted", "orphan"))]
    # the accepted orphan is marked, the new drift is not
    assert [row[:3] for row in rows] == [["drifted", "changed-fields", "team-config"],
                                         ["orphan", "(baselined)", "trigger-gone"]], out


def test_coverage_and_report_tables_show_baselined_gaps(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    args = ["--now", "2026-11-29T00:00:00Z", "-p", str(COVERAGE / "policy.yaml"), "--state",
            str(COVERAGE / "state.json")]
    for command in ("coverage", "diff"):
        run(command, *args, "--write-baseline", str(baseline))
        code, out, _ = run(command, *args, "--baseline", str(baseline))
        assert code == 0
        gaps = [line for line in out.splitlines() if line.startswith(("missing", "stale", "misnamed"))
                and " Pod " in line]
        assert len(gaps) == 5 and all("(baselined)" in line for line in gaps), out
        assert not any("(baselined)" in line for line in out.splitlines() if line.startswith("current"))


def test_a_lone_surrogate_escape_in_a_baseline_reads_as_the_replacement_character(tmp_path: Path) -> None:
    # as Go's encoding/json reads it (golang/json.py as_go_decodes): an entry kept is written back as UTF-8
    from kubectl_kyrec.cli.ci_outputs import read_baseline

    path = tmp_path / "b.json"
    path.write_text('{"apiVersion": "kyrec/v1", "kind": "Baseline", "entries": [{"command": "eval", '
                    '"class": "fail", "policy": "p\\ud800", "message": "m\\udc00\\ud83d\\ude00"}]}')
    (entry,) = read_baseline(str(path))
    assert (entry.policy, entry.message) == ("p\ufffd", "m\ufffd\U0001f600")
