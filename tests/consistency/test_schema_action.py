"""The GitHub Action (action.yml at the repository root): its shell steps run as they are, in order, with
GitHub's expressions (`${{ inputs.x }}`, `${{ github.action_path }}`) filled in as the runner fills them, on a
sample repository. The `uses:` steps (setup-python, the SARIF upload) are GitHub's own and are not run; the
install step installs this checkout into a fresh virtual environment (dependencies from the running
environment's site-packages, as in test_schema_wheel.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sysconfig
import venv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.load.schema_cases import VALID
from tests.shared_inputs import ROOT

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
_EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def _fill(text: str, inputs: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        expression = match.group(1)
        if expression == "github.action_path":
            return str(ROOT)
        if expression.startswith("inputs."):
            return inputs[expression.removeprefix("inputs.")]
        raise AssertionError(f"the test does not know the expression {expression!r}")
    return _EXPRESSION.sub(value, text)


def _run_steps(inputs: dict[str, str], env: dict[str, str], cwd: Path, output: Path,
               only: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str] | None:
    """Each shell step in order; the last one's process. `only`: the step names to run."""
    given = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    given.update(inputs)
    last = None
    for step in ACTION["runs"]["steps"]:
        if "run" not in step or (only and step.get("name") not in only):
            continue
        assert step["shell"] == "bash"
        step_env = {**env, "GITHUB_OUTPUT": str(output),
                    **{k: _fill(str(v), given) for k, v in (step.get("env") or {}).items()}}
        last = subprocess.run(["bash", "-e", "-c", _fill(step["run"], given)] if step.get("id") is None
                              else ["bash", "-c", _fill(step["run"], given)],
                              cwd=cwd, env=step_env, capture_output=True, text=True)
        if step.get("id") is None:
            assert last.returncode == 0, last.stderr
    return last


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """An environment whose `python` and `kubectl-kyrec` are a fresh venv with the action's install step run."""
    where = tmp_path_factory.mktemp("action")
    env_dir = where / "venv"
    venv.create(env_dir, with_pip=True)
    paths = sysconfig.get_paths()
    env = {**os.environ, "PATH": f"{env_dir / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join(dict.fromkeys((paths["purelib"], paths["platlib"]))),
           "PIP_NO_DEPS": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("VIRTUAL_ENV", None)
    # installed with no PYTHONPATH: there pip would find this checkout's own (editable) install and keep it
    install_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    _run_steps({"policies": "x"}, install_env, where, where / "out", only=("Install kubectl-kyrec",))
    where_from = "import kubectl_kyrec; print(kubectl_kyrec.__file__)"
    found = subprocess.run([str(env_dir / "bin" / "python"), "-c", where_from], env=env, cwd=where, capture_output=True,
                           text=True, check=True).stdout
    assert found.startswith(str(env_dir)), found
    yield env


def _repo(tmp_path: Path, policies: list[dict[str, Any]], manifests: list[dict[str, Any]]) -> Path:
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "p.yaml").write_text(yaml.safe_dump_all(policies))
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "pods.yaml").write_text(yaml.safe_dump_all(manifests))
    return tmp_path


def _outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def _sarif_results(path: Path) -> list[dict[str, Any]]:
    return [r for run in json.loads(path.read_text())["runs"] for r in run["results"]]


def test_a_typo_fails_the_step_with_3_and_an_annotation(installed: dict[str, str], tmp_path: Path) -> None:
    typo = {**VALID["ValidatingPolicy"], "spec": {**VALID["ValidatingPolicy"]["spec"], "validation": []}}
    repo = _repo(tmp_path, [typo], [POD])
    done = _run_steps({"policies": "policies", "manifests": "deploy"}, installed, repo, repo / "out")
    assert done is not None and done.returncode == 3, done.stdout + done.stderr
    assert _outputs(repo / "out") == {"exit-code": "3"}
    assert '::error file=policies/p.yaml,line=' in done.stdout
    assert 'unknown field "spec.validation"' in done.stdout
    lint = _sarif_results(repo / "kyrec-sarif" / "lint.sarif")
    assert [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in lint] == ["policies/p.yaml"]


def test_findings_fail_with_1_and_a_clean_run_passes(installed: dict[str, str], tmp_path: Path) -> None:
    deny = {**VALID["ValidatingPolicy"],
            "spec": {**VALID["ValidatingPolicy"]["spec"],
                     "validations": [{"expression": "has(object.metadata.labels)", "message": "needs labels"}]}}
    repo = _repo(tmp_path, [deny], [POD])
    done = _run_steps({"policies": "policies", "manifests": "deploy"}, installed, repo, repo / "out")
    assert done is not None and done.returncode == 1, done.stdout + done.stderr
    assert _outputs(repo / "out") == {"exit-code": "1"}
    assert [r["message"]["text"] for r in _sarif_results(repo / "kyrec-sarif" / "eval.sarif")] == \
        ["Pod default/p: needs labels"]
    assert _sarif_results(repo / "kyrec-sarif" / "lint.sarif") == []
    labelled = {**POD, "metadata": {**POD["metadata"], "labels": {"a": "b"}}}
    (repo / "deploy" / "pods.yaml").write_text(yaml.safe_dump(labelled))
    (repo / "out").unlink()
    done = _run_steps({"policies": "policies", "manifests": "deploy"}, installed, repo, repo / "out")
    assert done is not None and done.returncode == 0, done.stdout + done.stderr
    assert _outputs(repo / "out") == {"exit-code": "0"}
