"""`eval --write-mutated DIR`: the admitted objects, one file per input file under DIR; a second run
replaces its own files, and a file it did not write is never overwritten (nothing is written then)."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.errors import ExitCode
from kubectl_kyrec.render.mutated_manifests import HEADER, target_name

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "testdata" / "admission" / "old"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_writes_each_input_file_again_and_replaces_only_its_own(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    out = tmp_path / "admitted"
    args = ("eval", "-p", str(CASE / "policy.yaml"), "-r", "testdata/admission/old/after", "--write-mutated",
            str(out))
    code, _, err = run(*args)
    assert code == ExitCode.CLEAN, err
    written = out / "testdata" / "admission" / "old" / "after" / "app.yaml"
    text = written.read_text()
    assert text.startswith(HEADER)
    docs = list(yaml.safe_load_all(text))
    assert [d["metadata"]["name"] for d in docs] == ["web", "worker", "new-api"]
    # a second run replaces the file it wrote
    written.write_text(HEADER + "stale: true\n")
    assert run(*args)[0] == ExitCode.CLEAN
    assert "stale" not in written.read_text()
    # a file it did not write is left alone, and nothing else is written
    written.write_text("mine: true\n")
    code, _, err = run(*args)
    assert code == ExitCode.OUTPUT and "not overwritten" in err and "Traceback" not in err
    assert written.read_text() == "mine: true\n"


def test_target_names_stay_under_the_directory(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    assert target_name("<stdin>") == "stdin.yaml"
    assert target_name("<kustomize overlays/prod>") == "kustomize-overlays-prod.yaml"
    assert target_name(str(ROOT / "deploy" / "app.yaml")) == "deploy/app.yaml"
    assert target_name("/elsewhere/app.yaml") == "app.yaml"
    assert target_name("../up/app.yaml") == "app.yaml"
