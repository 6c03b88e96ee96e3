"""`--registry` on diff and coverage, the commands whose expected reports come from evaluating policies that
read images: with the switch an ImageValidatingPolicy's signature check is decided against the test
registry (so the subjects owe reports, here missing), without it nothing is contacted and the pairs stay
undetermined (left out), as for eval (kk: pkg/controllers/report/utils/scanner.go runs the ImageValidatingPolicy
engine and VerifyAndPatchImages in the background scan)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.registry.fixture import OciRegistry
from tests.registry.keys import make_key


def _policy(public: str) -> dict[str, Any]:
    return {"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ImageValidatingPolicy",
            "metadata": {"name": "signed"},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                             "operations": ["CREATE"], "resources": ["pods"]}]},
                     "matchImageReferences": [{"glob": "127.0.0.1:*"}],
                     "attestors": [{"name": "signer", "cosign": {"key": {"data": public}, "ctlog": {
                         "insecureIgnoreTlog": True, "insecureIgnoreSCT": True}}}],
                     "validations": [{"expression": "images.containers.map(i, verifyImageSignatures(i, "
                                                    "[attestors.signer])).all(e, e > 0)", "message": "not signed"}]}}


def _files(tmp_path: Path, public: str, images: dict[str, str]) -> tuple[Path, Path]:
    policy, state = tmp_path / "policy.yaml", tmp_path / "state.yaml"
    policy.write_text(yaml.safe_dump(_policy(public)))
    objects: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": {"name": "default", "uid": "uid-ns"}}]
    objects += [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                                                 "uid": f"uid-{name}"},
                 "spec": {"containers": [{"name": "c", "image": image}]}} for name, image in images.items()]
    state.write_text(yaml.safe_dump_all(objects))
    return policy, state


def _kyrec(*args: str | Path) -> tuple[int, Any]:
    done = subprocess.run([sys.executable, "-m", "kubectl_kyrec", *map(str, args), "-o", "json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.fixture
def pushed(oci_registry: OciRegistry, tmp_path: Path) -> tuple[Path, Path]:
    key = make_key(tmp_path / "keys")
    repo = oci_registry.repo()
    oci_registry.push(f"{repo}:signed", "--sign", key.private)
    oci_registry.push(f"{repo}:unsigned")
    return _files(tmp_path, key.public, {"signed": f"{repo}:signed", "unsigned": f"{repo}:unsigned"})


def test_diff_decides_the_reports_with_the_switch(pushed: tuple[Path, Path]) -> None:
    policy, state = pushed
    code, doc = _kyrec("diff", "-p", policy, "--state", state, "--reports", "--registry")
    assert code == 1 and doc["summary"]["report"]["missing"] == 2
    assert {c["subject"]["name"] for c in doc["changes"] if c["class"] == "missing"} == {"signed", "unsigned"}
    code, doc = _kyrec("diff", "-p", policy, "--state", state, "--reports")
    assert code == 0 and doc["summary"]["report"]["missing"] == 0


def test_coverage_decides_the_reports_with_the_switch(pushed: tuple[Path, Path]) -> None:
    policy, state = pushed
    code, doc = _kyrec("coverage", "-p", policy, "--state", state, "--registry")
    assert code == 1 and (doc["counts"]["inScope"], doc["counts"]["missing"]) == (2, 2)
    code, doc = _kyrec("coverage", "-p", policy, "--state", state)
    assert code == 0 and doc["counts"]["inScope"] == 0


def test_without_the_switch_nothing_is_contacted(tmp_path: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.settimeout(0.2)
    contacted: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                contacted.append(listener.accept()[0])
            except OSError:
                continue
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        image = f"127.0.0.1:{listener.getsockname()[1]}/app:v1"
        policy, state = _files(tmp_path, make_key(tmp_path / "keys").public, {"p": image})
        _kyrec("diff", "-p", policy, "--state", state, "--reports")
        _kyrec("coverage", "-p", policy, "--state", state)
    finally:
        stop.set()
        thread.join(timeout=2)
        listener.close()
    assert contacted == []


def test_registry_flags_are_for_kyvernos_reports(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "kubectl_kyrec", "coverage", "--producer", "kubescape",
                           "--registry", "--state", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--registry is for --producer kyverno" in done.stderr
    done = subprocess.run([sys.executable, "-m", "kubectl_kyrec", "diff", "-p", str(tmp_path), "--state",
                           str(tmp_path), "--insecure-registry", "example.com"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--insecure-registry needs --registry" in done.stderr
