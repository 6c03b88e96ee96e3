"""The README's quick start (Set-up and the three uses), run as written: every `kubectl-kyrec` command it shows,
with the exit code it states and the output it prints, so a newcomer's first commands stay true.

The commands are read from the README itself (its ```sh blocks), so one added there without an entry in
EXPECTED fails here; an output block right after a command's block must be the start of what it prints
(CliRunner is no terminal: tables are not fitted to a width, as on a pipe). The test-suite command is the
run this test is part of."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
EXAMPLES = ROOT / "testdata" / "examples"

# command as the README spells it -> (exit code, lines its stdout must hold)
EXPECTED: dict[str, tuple[int, tuple[str, ...]]] = {
    "kubectl-kyrec eval -p testdata/examples/policies -r testdata/examples/resources": (
        1, ("pass: 4, fail: 2, warn: 0, error: 0, skip: 0",)),
    "kubectl-kyrec diff --state testdata/examples/cluster.yaml": (
        1, ("Downstreams: 1 missing, 1 drifted, 1 in-sync, 0 conflict, 0 orphan, 0 undetermined",
            "Reports (wgpolicyk8s.io/v1alpha2): 4 current, 1 missing, 1 stale, 0 orphan, 0 duplicate, 0 misnamed",
            "-  result: pass", "+  result: fail")),
    "kubectl-kyrec eval -p testdata/examples/policies -p testdata/examples/admission -r testdata/examples/resources": (
        1, ("pass: 6, fail: 1, warn: 0, error: 0, skip: 1", "Pod shop/batch  default-owner  add /metadata/labels")),
    "kubectl-kyrec convert -p testdata/examples/legacy -o cel-policies --verify --state "
    "testdata/examples/cluster.yaml": (
        0, ("ClusterPolicy 'add-networkpolicy': converted exactly",)),
    "kubectl-kyrec diff --state testdata/examples/cluster.yaml -p cel-policies -p testdata/examples/policies "
    "--downstreams": (
        1, ("-    generate.kyverno.io/rule-name: default-deny", "+    generate.kyverno.io/trigger-name: shop")),
}

# a command -> the README command it reads the output of (run first, in the same directory)
NEEDS = {
    "kubectl-kyrec diff --state testdata/examples/cluster.yaml -p cel-policies -p testdata/examples/policies "
    "--downstreams": "kubectl-kyrec convert -p testdata/examples/legacy -o cel-policies --verify --state "
    "testdata/examples/cluster.yaml",
}
# what a command may say on stderr (the README says it); any other command says nothing there
NOTICES = {
    "kubectl-kyrec diff --state testdata/examples/cluster.yaml -p cel-policies -p testdata/examples/policies "
    "--downstreams": "notice: add-networkpolicy: the policy has no creationTimestamp and the state holds no copy of it",
}


def _setup_section() -> str:
    """The quick start: from Set-up to Testing (the three uses run the bundled examples too; `apply` needs a
    live cluster and is shown as `kubectl kyrec`, which this test does not run)."""
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Set-up\n")
    return text[start:text.index("\n## Testing\n", start)]


def _shown() -> list[tuple[str, str | None]]:
    """(command, the output block shown right after its block, if any), in README order."""
    blocks = re.findall(r"```(\w*)\n(.*?)```", _setup_section(), flags=re.S)
    shown: list[tuple[str, str | None]] = []
    for i, (lang, body) in enumerate(blocks):
        if lang != "sh":
            continue
        commands = []
        for line in body.splitlines():
            # `pip install . && kubectl-kyrec ...`: the install is the test environment's own
            command = line.split(" && ")[-1].strip()
            if command.startswith("kubectl-kyrec "):
                commands.append(command)
        after = blocks[i + 1] if i + 1 < len(blocks) and blocks[i + 1][0] == "" else None
        for j, command in enumerate(commands):
            shown.append((command, after[1] if after is not None and j == len(commands) - 1 else None))
    return shown


def test_every_command_of_the_setup_section_is_checked() -> None:
    assert [c for c, _ in _shown()] == list(EXPECTED)


@pytest.mark.parametrize("command", list(EXPECTED))
def test_a_setup_command_prints_what_the_readme_shows(command: str, monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    # the README's paths are relative to a checkout; what a command writes (convert's -o) lands in tmp_path
    (tmp_path / "testdata").symlink_to(ROOT / "testdata")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KUBECTL_EXTERNAL_DIFF", raising=False)
    if command in NEEDS:
        first = CliRunner().invoke(cli, shlex.split(NEEDS[command])[1:])
        assert first.exit_code == EXPECTED[NEEDS[command]][0], first.output
    result = CliRunner().invoke(cli, shlex.split(command)[1:])
    code, lines = EXPECTED[command]
    assert result.exit_code == code, result.stdout + result.stderr
    # the example state is a complete capture: no notice about kinds it lacks or managedFields
    if command in NOTICES:
        assert result.stderr.startswith(NOTICES[command]) and result.stderr.count("\n") == 1, result.stderr
    else:
        assert result.stderr == ""
    for line in lines:
        assert line in result.stdout.splitlines(), (line, result.stdout)
    output = dict(_shown())[command]
    if output is not None:
        assert result.stdout.startswith(output), result.stdout


def test_the_example_state_holds_the_example_policies_as_they_are() -> None:
    """The cluster's ValidatingPolicies are copies of testdata/examples/policies: edit both or neither."""
    state = yaml.safe_load((EXAMPLES / "cluster.yaml").read_text())
    in_state = {o["metadata"]["name"]: o for o in state["items"] if o["kind"] == "ValidatingPolicy"}
    files = [yaml.safe_load(p.read_text()) for p in sorted((EXAMPLES / "policies").glob("*.yaml"))]
    assert sorted(in_state) == sorted(p["metadata"]["name"] for p in files)
    for policy in files:
        copy = in_state[policy["metadata"]["name"]]
        assert copy["spec"] == policy["spec"]
        assert copy["metadata"]["annotations"] == policy["metadata"]["annotations"]


def test_the_layout_names_every_package_in_layer_order() -> None:
    """docs/architecture.md's Layout lists each unit of kubectl_kyrec/ once, bottom layer first, as
    tests/shape/test_layers.py orders them."""
    from tests.shape.test_layers import LAYERS

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text[text.index("```\nkubectl_kyrec/\n", text.index("\n## Layout\n")):]
    block = block[:block.index("\n```")]
    listed = [m.group(1) for m in re.finditer(r"^  (\w+)(?:/|\.py) ", block, flags=re.M)]
    assert listed == [unit for group in LAYERS for unit in group]


def test_the_quick_start_fits_200_lines() -> None:
    """The README is a quick start: what it is, set-up, the uses with their examples, performance, testing, in
    at most 200 lines before the command reference (the reference itself lives in docs/)."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert lines.index("## Reference") <= 200


def test_the_legacy_example_is_the_clusters_clusterpolicy() -> None:
    """testdata/examples/legacy holds the cluster's ClusterPolicy as the cluster has it, less the server's
    metadata: the migration example converts what the example cluster runs."""
    state = yaml.safe_load((EXAMPLES / "cluster.yaml").read_text())
    in_state = [o for o in state["items"] if o["kind"] == "ClusterPolicy"]
    files = [yaml.safe_load(p.read_text()) for p in sorted((EXAMPLES / "legacy").glob("*.yaml"))]
    assert [p["metadata"]["name"] for p in files] == [o["metadata"]["name"] for o in in_state]
    assert [p["spec"] for p in files] == [o["spec"] for o in in_state]
