"""The pre-commit hooks (.pre-commit-hooks.yaml) through `pre-commit try-repo` on a sample repository:
kyrec-lint refuses a policy with a typo, kyrec-eval fails a manifest a policy denies, and both pass once the
files are fixed. pre-commit installs the hooks' environment from this checkout as its users' machines would
(pip, from the package index), so the test needs the network or a pip cache that holds kyrec's dependencies."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.load.schema_cases import VALID
from tests.shared_inputs import ROOT, in_ci

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
DENY = {**VALID["ValidatingPolicy"],
        "spec": {**VALID["ValidatingPolicy"]["spec"],
                 "validations": [{"expression": "has(object.metadata.labels)", "message": "needs labels"}]}}


def _pre_commit() -> str:
    found = shutil.which("pre-commit")
    if found is None:
        if in_ci():
            pytest.fail("pre-commit is not installed (pip install -e '.[test]')")
        pytest.skip("pre-commit is not installed (pip install -e '.[test]')")
    return found


def _try(repo: Path, hook: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run([_pre_commit(), "try-repo", str(ROOT), hook, "--all-files"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=900)


def test_hooks_through_try_repo(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "policies").mkdir(parents=True)
    (repo / "deploy").mkdir()
    typo = {**DENY, "spec": {**DENY["spec"], "validation": []}}
    (repo / "policies" / "p.yaml").write_text(yaml.safe_dump(typo))
    (repo / "deploy" / "pod.yaml").write_text(yaml.safe_dump(POD))
    (repo / ".pre-commit-config.yaml").write_text("repos: []\n")     # the hooks exclude it
    for args in (["init", "-q"], ["add", "."]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    home = tmp_path / "pre-commit-home"

    lint = _try(repo, "kyrec-lint", home)
    assert lint.returncode == 1, lint.stdout + lint.stderr           # pre-commit: 1 when a hook fails
    assert 'unknown field "spec.validation"; did you mean "validations"?' in lint.stdout
    assert "policies/p.yaml:" in lint.stdout

    (repo / "policies" / "p.yaml").write_text(yaml.safe_dump(DENY))
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    lint = _try(repo, "kyrec-lint", home)
    assert lint.returncode == 0, lint.stdout + lint.stderr           # the Pod is passed over
    evaluated = _try(repo, "kyrec-eval", home)
    assert evaluated.returncode == 1, evaluated.stdout + evaluated.stderr
    assert "needs labels" in evaluated.stdout

    (repo / "deploy" / "pod.yaml").write_text(yaml.safe_dump({**POD, "metadata": {**POD["metadata"],
                                                                                  "labels": {"a": "b"}}}))
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    evaluated = _try(repo, "kyrec-eval", home)
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
