"""Golden cases for `explain`: testdata/explain/<kind>/ holds the inputs, `args` (the command line after
`explain`, run in the case's directory), and what it prints: expected.txt (the tree) and expected.json
(`-o json`, without kyrecVersion). Written by running the command and reading every line against the
policies by hand; regenerate only for a change of the tree's design, never to make a failure pass."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

CASES = Path(__file__).resolve().parents[2] / "testdata" / "explain"


def _run(case: Path, extra: list[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(case)
    args = shlex.split((case / "args").read_text())
    result = CliRunner().invoke(cli, ["explain", *args, *extra])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("case", sorted(p for p in CASES.iterdir() if p.is_dir()), ids=lambda p: p.name)
def test_explain_text(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run(case, [], monkeypatch) == (case / "expected.txt").read_text()


@pytest.mark.parametrize("case", sorted(p for p in CASES.iterdir() if p.is_dir()), ids=lambda p: p.name)
def test_explain_json(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    document = json.loads(_run(case, ["-o", "json"], monkeypatch))
    document.pop("kyrecVersion")
    assert document == json.loads((case / "expected.json").read_text())


def test_readme_example_is_what_explain_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    """The `explain` example of docs/commands.md shows the command's output as it is."""
    root = CASES.parents[1]
    monkeypatch.chdir(root)
    command = "kubectl kyrec explain -p testdata/examples/policies -r testdata/examples/resources pod/batch -n shop " \
              "--policy-name limit-memory"
    readme = (root / "docs" / "commands.md").read_text(encoding="utf-8")
    assert command in readme
    result = CliRunner().invoke(cli, shlex.split(command)[2:])
    assert result.exit_code == 0, result.output
    assert f"```\n{result.stdout}```\n" in readme
