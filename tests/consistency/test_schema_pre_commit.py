"""The pre-commit hooks (.pre-commit-hooks.yaml) through `pre-commit try-repo` on a sample repository:
kyrec-lint refuses a policy with a typo, kyrec-eval fails a manifest a policy denies, and both pass once the
files are fixed. pre-commit installs the hooks' environment from this checkout as its users' machines would
(pip, from the package index), so the test needs the network or a pip cache that holds kyrec's dependencies."""

from __future__ import annotations

import os
import re
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


def _try(repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """Both hooks, on every file of the sample repository (each call installs the hooks' environment anew)."""
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run([_pre_commit(), "try-repo", str(ROOT), "--all-files"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=900)


def _hook(output: str, hook: str) -> str:
    """The part of pre-commit's output that is one hook's: from its line to the next hook's."""
    found = re.search(rf"^kyrec {hook}\.+(Passed|Failed)$(.*?)(?=^kyrec |\Z)", output, re.S | re.M)
    assert found is not None, output
    return found.group(1) + found.group(2)


def test_hooks_through_try_repo(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "policies").mkdir(parents=True)
    (repo / "deploy").mkdir()
    typo = {**DENY, "spec": {**DENY["spec"], "validation": []}}
    (repo / "policies" / "p.yaml").write_text(yaml.safe_dump(typo))
    (repo / "deploy" / "pod.yaml").write_text(yaml.safe_dump(POD))
    (repo / ".pre-commit-config.yaml").write_text("repos: []\n")     # the hooks exclude it
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    home = tmp_path / "pre-commit-home"

    run = _try(repo, home)
    assert run.returncode == 1, run.stdout + run.stderr           # pre-commit: 1 when a hook fails
    lint, evaluated = _hook(run.stdout, "lint"), _hook(run.stdout, "eval")
    assert lint.startswith("Failed") and "exit code: 3" in lint
    assert re.search(r'^policies/p\.yaml:\d+: ValidatingPolicy "case": strict decoding error: unknown field '
                     r'"spec\.validation"; did you mean "validations"\?$', lint, re.M), lint
    assert "notice: passed over 1 document(s) of the files that are not policies: v1/Pod" in lint
    assert evaluated.startswith("Failed") and "exit code: 3" in evaluated     # eval refuses the policy too

    (repo / "policies" / "p.yaml").write_text(yaml.safe_dump(DENY))
    run = _try(repo, home)
    lint, evaluated = _hook(run.stdout, "lint"), _hook(run.stdout, "eval")
    assert lint.startswith("Passed"), run.stdout                  # the Pod is passed over
    assert evaluated.startswith("Failed") and "exit code: 1" in evaluated and "needs labels" in evaluated

    labelled = {**POD, "metadata": {**POD["metadata"], "labels": {"a": "b"}}}
    (repo / "deploy" / "pod.yaml").write_text(yaml.safe_dump(labelled))
    run = _try(repo, home)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_files_pre_commit_appends_become_resources() -> None:
    from kubectl_kyrec.cli.pre_commit import eval_argv

    assert eval_argv(["-p", "policies/", "--no-mutate", "-o", "json", "--fail-on=fail", "a.yaml", "b.yaml"]) == \
        ["eval", "-p", "policies/", "--no-mutate", "-o", "json", "--fail-on=fail", "-r", "a.yaml", "-r", "b.yaml"]
    assert eval_argv(["-p", "p/", "--", "-odd.yaml"]) == ["eval", "-p", "p/", "-r", "-odd.yaml"]
