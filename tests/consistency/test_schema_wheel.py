"""The wheel carries the schema data: built from this checkout, installed into a fresh virtual environment
outside the source tree, `kubectl-kyrec lint` refuses a typo with exit 3 (package data left out of the wheel
would make it fail). Its dependencies come from the running environment's site-packages on PYTHONPATH (no
network), which processes no .pth file, so an editable install of the checkout cannot stand in for the wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

from tests.shared_inputs import ROOT

TYPO = """apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: check-labels
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  validation:
  - expression: "true"
"""


def test_the_installed_wheel_lints_a_typo(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist),
                    str(ROOT)], check=True, cwd=tmp_path)
    wheel = next(dist.glob("kubectl_kyrec-*.whl"))
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True,
                   cwd=tmp_path)
    (tmp_path / "policy.yaml").write_text(TYPO)
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]}
    if sysconfig.get_paths()["platlib"] != sysconfig.get_paths()["purelib"]:
        env["PYTHONPATH"] += os.pathsep + sysconfig.get_paths()["platlib"]
    where = subprocess.run([str(python), "-c", "import kubectl_kyrec; print(kubectl_kyrec.__file__)"], env=env,
                           cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(env_dir)), where
    result = subprocess.run([str(env_dir / "bin" / "kubectl-kyrec"), "lint", "-p", "policy.yaml"], env=env,
                            cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 3, result.stdout + result.stderr
    assert 'policy.yaml:12: ValidatingPolicy "check-labels": strict decoding error: unknown field ' \
           '"spec.validation"; did you mean "validations"?' in result.stdout
