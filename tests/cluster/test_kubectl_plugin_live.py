"""`kubectl kyrec diff --live` through the real kubectl's plugin mechanism, against the API double.

kubectl is the one on PATH, else one built from the pinned k8s.io/kubectl (tests/realapi, fixture
`kubectl_path`): skipped only where neither can be had, and with CI=true that fails instead, so CI cannot
silently skip the plugin path. tests/realapi/test_real_only.py runs the plugin against the real server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kubeapi.server import ApiServer

ROOT = Path(__file__).resolve().parents[2]
POLICY = str(Path(__file__).parent / "data" / "gpol-configmap.yaml")


@pytest.fixture()
def plugin_env(tmp_path: Path, kubectl_path: str) -> Iterator[tuple[ApiServer, dict[str, str]]]:
    shim = tmp_path / "bin" / "kubectl-kyrec"
    shim.parent.mkdir()
    shim.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                    "from kubectl_kyrec.cli.console import main\nmain()\n")
    shim.chmod(0o755)
    with ApiServer() as api:
        for name in ("default", "team-a"):
            api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        kubeconfig = api.kubeconfig(tmp_path / "kubeconfig", context="double")
        env = dict(os.environ)
        env.update({"PATH": f"{shim.parent}{os.pathsep}{Path(kubectl_path).parent}", "KUBECONFIG": str(kubeconfig),
                    "XDG_CACHE_HOME": str(tmp_path / "cache"), "KUBECTL": kubectl_path})
        api.clear_log()
        yield api, env


def test_kubectl_kyrec_diff_live(plugin_env: tuple[ApiServer, dict[str, str]]) -> None:
    api, env = plugin_env
    run = subprocess.run([env["KUBECTL"], "kyrec", "diff", "--live", "-p", POLICY, "-o", "json"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 1, run.stderr
    doc = json.loads(run.stdout)
    assert [(c["class"], c["object"]["namespace"]) for c in doc["changes"]] == [("missing", "team-a")]
    assert api.requests() and api.writes() == []


def test_kubectl_kyrec_apply_dry_run_through_kubectl(plugin_env: tuple[ApiServer, dict[str, str]]) -> None:
    api, env = plugin_env
    run = subprocess.run([env["KUBECTL"], "kyrec", "apply", "-p", POLICY, "--dry-run=server", "--context",
                          "double", "-o", "json"], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["summary"]["dry-run"] == 1
    assert [r.query.get("dryRun") for r in api.writes()] == ["All"]
