"""`-k DIR` renders a kustomization and evaluates what it renders; `helm template ... | kyrec eval -r -`
reads a Helm render from stdin. A -k object is located at its source file and line in the repository (by
kustomize's origin annotations, load/kustomize.py); `<stdin>:N` is line N of standard input.

Rendering needs kubectl (or kustomize): `kubectl_path` is the one on PATH or one built from the pinned
k8s.io/kubectl (a visible skip without Go, a failure under CI=true: tests/realapi/fixture.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.kustomize import render_command

ROOT = Path(__file__).resolve().parents[2]
POLICIES = str(ROOT / "testdata" / "examples" / "policies")
POD = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  a: b
---
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
    - name: c
      image: nginx
"""


@pytest.fixture
def with_kubectl(kubectl_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """PATH with the session's kubectl first, under its own name (a built one is named by its hash)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubectl").symlink_to(kubectl_path)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return str(bin_dir / "kubectl")


def _repo(tmp_path: Path) -> Path:
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "kustomization.yaml").write_text("resources: [app.yaml]\n")
    (tmp_path / "base" / "app.yaml").write_text(POD)
    for overlay in ("prod", "staging"):
        (tmp_path / "overlays" / overlay).mkdir(parents=True)
        (tmp_path / "overlays" / overlay / "kustomization.yaml").write_text(
            f"namespace: {overlay}\nresources: [../../base]\n")
    return tmp_path


def test_kustomize_build_is_preferred_to_kubectl() -> None:
    assert render_command("d", {"kustomize": "/k", "kubectl": "/c"}.get) == ["/k", "build", "d"]
    assert render_command("d", {"kubectl": "/c"}.get) == ["/c", "kustomize", "d"]
    with pytest.raises(InputError, match="needs kustomize or kubectl"):
        render_command("d", {}.get)


def test_each_result_is_located_at_its_source_file_and_line(with_kubectl: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 33 item 7: a file of the repository (the base's app.yaml), at the line its document starts,
    # for each overlay that renders it (the subject says which: its namespace)
    monkeypatch.chdir(_repo(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    result = CliRunner().invoke(cli, ["eval", "-p", POLICIES, "-k", "overlays/prod", "-k", "overlays/staging",
                                      "-o", "json"])
    assert result.exit_code == 1, result.output
    results = json.loads(result.stdout)["results"]
    pod_line = POD.splitlines().index("kind: Pod")           # 1-based: the apiVersion line before it
    assert POD.splitlines()[pod_line - 1] == "apiVersion: v1"
    where = {(r["subject"]["namespace"], r["policy"]): (r["location"]["file"], r["location"]["line"])
             for r in results}
    assert where[("prod", "limit-memory")] == (os.path.join("base", "app.yaml"), pod_line)
    assert where[("staging", "limit-memory")] == (os.path.join("base", "app.yaml"), pod_line)
    # the kustomization file itself is no resource: only what it renders is evaluated
    assert {r["subject"]["kind"] for r in results} == {"Pod"}
    # the objects evaluated are the overlay's render as it is: no annotation of kyrec's asking
    rendered = subprocess.run([with_kubectl, "kustomize", "overlays/prod"], capture_output=True, text=True,
                              check=True).stdout
    assert "config.kubernetes.io/origin" not in rendered


def test_a_kustomization_that_does_not_render_is_an_input_error(with_kubectl: str, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(cli, ["eval", "-p", POLICIES, "-k", str(tmp_path / "empty")])
    assert result.exit_code == 3
    assert result.stderr.startswith(f"error: {tmp_path / 'empty'}: kubectl kustomize ") or \
        result.stderr.startswith(f"error: {tmp_path / 'empty'}: kustomize build ")
    assert "failed: " in result.stderr and len(result.stderr.splitlines()) == 1


def test_a_missing_directory_is_an_input_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["eval", "-p", POLICIES, "-k", str(tmp_path / "absent")])
    assert result.exit_code == 3 and "-k: not a directory" in result.stderr


def test_helm_template_on_stdin_is_located_by_line_of_stdin() -> None:
    # what `helm template my-release chart/ | kubectl kyrec eval -p policies/ -r -` reads
    helm = "---\n# Source: chart/templates/configmap.yaml\n" + POD.replace(
        "---\n", "---\n# Source: chart/templates/pod.yaml\n")
    result = CliRunner().invoke(cli, ["eval", "-p", POLICIES, "-r", "-", "-o", "json"], input=helm)
    assert result.exit_code == 1, result.output
    lines = helm.splitlines()
    pod_line = lines.index("kind: Pod")            # 1-based: the apiVersion line before it
    assert lines[pod_line - 1] == "apiVersion: v1"
    assert {(r["location"]["file"], r["location"]["line"]) for r in json.loads(result.stdout)["results"]} == {
        ("<stdin>", pod_line)}
