"""The real kubectl finds and runs the plugin (skipped where kubectl is not on PATH)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH")


@pytest.fixture()
def plugin_path(tmp_path: Path) -> dict[str, str]:
    """A PATH holding only shims that run this checkout's kyrec (so the test does not need an install)."""
    root = Path(__file__).resolve().parents[2]
    for name, entry in (("kubectl-kyrec", "main"), ("kubectl_complete-kyrec", "complete")):
        shim = tmp_path / name
        shim.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(root)!r})\n"
                        f"from kubectl_kyrec.cli.main import {entry}\n{entry}()\n")
        shim.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{tmp_path}{os.pathsep}{Path(KUBECTL or '').parent}"
    env["KUBECONFIG"] = str(tmp_path / "no-kubeconfig")
    return env


def test_plugin_list_finds_kyrec(plugin_path: dict[str, str]) -> None:
    out = subprocess.run([KUBECTL or "kubectl", "plugin", "list"], capture_output=True, text=True, env=plugin_path)
    assert "kubectl-kyrec" in out.stdout


def test_kubectl_kyrec_help_and_eval(plugin_path: dict[str, str]) -> None:
    root = Path(__file__).resolve().parents[2]
    help_out = subprocess.run([KUBECTL or "kubectl", "kyrec", "--help"], capture_output=True, text=True,
                              env=plugin_path, check=True)
    assert "eval" in help_out.stdout and "coverage" in help_out.stdout
    run = subprocess.run([KUBECTL or "kubectl", "kyrec", "eval", "-p", str(root / "testdata/examples/policies"),
                          "-r", str(root / "testdata/examples/resources")], capture_output=True, text=True,
                         env=plugin_path)
    assert run.returncode == 1
    assert "pass: 4, fail: 2" in run.stdout


def test_kubectl_completes_through_the_plugin(plugin_path: dict[str, str]) -> None:
    out = subprocess.run([KUBECTL or "kubectl", "__complete", "kyrec", "ev"], capture_output=True, text=True,
                         env=plugin_path)
    lines = out.stdout.splitlines()
    assert any(line.startswith("eval") for line in lines), out.stdout + out.stderr
    out = subprocess.run([KUBECTL or "kubectl", "__complete", "kyrec", "eval", "--fail"], capture_output=True,
                         text=True, env=plugin_path)
    assert any(line.startswith("--fail-on") for line in out.stdout.splitlines()), out.stdout + out.stderr
