"""kyrec's own advice, run as printed against the real API server (issue 33 item 5, "advice that works").

A state that lacks a kind a finding depends on gets a notice ending "Capture them with: COMMAND, and pass it
with another --state". COMMAND is run here exactly as printed, through a shell, as `kubectl kyrec` (kubectl
finds the plugin on PATH), and the finding must then be decided. The kind has no objects in the cluster,
the case `kubectl get -o json` cannot record: its empty List names no kind."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.realapi.fixture import RealServer, kubectl_env
from tests.realapi.test_causes import background_controller  # noqa: F401  (a fixture)
from tests.realapi.test_real_only import DATA, ROOT, gpol

ADVICE = re.compile(r"Capture them with: (.+), and pass it with another --state")


def limitrange_policy(server: RealServer, tmp_path: Path) -> tuple[Path, list[str]]:
    """A GeneratingPolicy that puts a LimitRange into each of two fresh namespaces; no LimitRange exists."""
    name, pre = server.unique("limits"), server.unique("advice")
    text = (DATA / "gpol-configmap.yaml").read_text().replace("name: base-config", f"name: {name}")
    text = text.replace('startsWith("team-")', f'startsWith("{pre}-")').replace(
        '"kind": dyn("ConfigMap"),\n      "metadata": dyn({"name": "base"}), "data": dyn({"a": "1"})}',
        '"kind": dyn("LimitRange"),\n      "metadata": dyn({"name": "limits"}), '
        '"spec": dyn({"limits": [{"type": "Container", "max": {"memory": "1Gi"}}]})}')
    assert "LimitRange" in text
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    namespaces = [f"{pre}-a", f"{pre}-b"]
    server.seed(*({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in namespaces))
    return path, namespaces


def shell_env(server: RealServer, tmp_path: Path, kubectl_path: str) -> dict[str, str]:
    """kubectl and this tree's kyrec (as the plugin `kubectl-kyrec`) on PATH, against the real server."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    plugin = bin_dir / "kubectl-kyrec"
    plugin.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kubectl_kyrec "$@"\n')
    plugin.chmod(0o755)
    env = kubectl_env(server.kubeconfig, tmp_path / "home")
    env["PATH"] = os.pathsep.join([str(bin_dir), str(Path(kubectl_path).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = str(ROOT)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    return env


def offline(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_the_advised_capture_decides_a_downstream_of_a_kind_with_no_objects(
        realapi: RealServer, kubectl_path: str, tmp_path: Path) -> None:
    policy, namespaces = limitrange_policy(realapi, tmp_path)
    env = shell_env(realapi, tmp_path, kubectl_path)
    # a plain dump of the triggers, as a user makes one
    dump = subprocess.run("kubectl get namespaces -o json > dump.json", shell=True, cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert dump.returncode == 0, dump.stderr
    before = offline("diff", "--downstreams", "-p", str(policy), "--state", str(tmp_path / "dump.json"), "-o", "json")
    ours = [c for c in json.loads(before.stdout)["changes"] if c["object"]["namespace"] in namespaces]
    assert {(c["class"], c["reason"]) for c in ours} == {("undetermined", "kind-not-captured")}, ours
    [advice] = [m.group(1) for m in map(ADVICE.search, before.stderr.splitlines()) if m]
    assert advice == "kubectl kyrec capture --kind limitranges -A -o more-state.json"

    # kubectl's own answer for a kind with no objects is an empty List that names no kind: refused, and the
    # refusal points at the command above
    empty = subprocess.run("kubectl get limitranges -A -o json > kubectl-empty.json", shell=True, cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=120)
    assert empty.returncode == 0 and json.loads((tmp_path / "kubectl-empty.json").read_text())["items"] == []
    refused = offline("diff", "--downstreams", "-p", str(policy), "--state", str(tmp_path / "dump.json"),
                      "--state", str(tmp_path / "kubectl-empty.json"))
    assert refused.exit_code == 3 and "kubectl kyrec capture --kind" in refused.stderr, refused.stderr

    ran = subprocess.run(advice, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    after = offline("diff", "--downstreams", "-p", str(policy), "--state", str(tmp_path / "dump.json"),
                    "--state", str(tmp_path / "more-state.json"), "-o", "json")
    assert after.exit_code == 1, after.output
    ours = [c for c in json.loads(after.stdout)["changes"] if c["object"]["namespace"] in namespaces]
    assert {(c["class"], c["object"]["kind"]) for c in ours} == {("missing", "LimitRange")}, ours
    assert not ADVICE.search(after.stderr), after.stderr


def test_capture_kind_resolves_kubectl_s_names_and_refuses_an_unknown_one(realapi: RealServer, kubectl_path: str,
                                                                          tmp_path: Path) -> None:
    env = shell_env(realapi, tmp_path, kubectl_path)
    # singular, short names, Kind.group, plural.group, comma-separated and repeated: one LIST per kind
    ran = subprocess.run("kubectl kyrec capture --kind limitrange,quota --kind Deployment.apps,deployments.apps "
                         "--kind gpol "
                         "-n kube-system -o kinds.json", shell=True, cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    doc = json.loads((tmp_path / "kinds.json").read_text())
    listed = json.loads(doc["metadata"]["annotations"]["kyrec.io/listed"])
    assert sorted((e["apiVersion"], e["kind"], e["namespace"]) for e in listed) == [
        ("apps/v1", "Deployment", "kube-system"), ("policies.kyverno.io/v1", "GeneratingPolicy", ""),
        ("v1", "LimitRange", "kube-system"), ("v1", "ResourceQuota", "kube-system")]
    unknown = subprocess.run("kubectl kyrec capture --kind limitranges,nosuchthings", shell=True, cwd=tmp_path,
                             env=env, capture_output=True, text=True, timeout=300)
    assert unknown.returncode == 3, unknown.stderr
    assert unknown.stderr.strip() == ("error: --kind nosuchthings: the server doesn't have a resource type "
                                      '"nosuchthings"')


@pytest.mark.usefixtures("background_controller")
def test_the_advice_of_an_unknown_cause_decides_it(realapi: RealServer, kubectl_path: str, tmp_path: Path) -> None:
    """Issue 33 item 9: a plain dump holds the downstream kind, Kyverno's Deployment and the cluster-wide RBAC,
    but no RoleBinding and no UpdateRequest: a grant in the downstream's namespace cannot be ruled out, and
    the cause says so with a capture command. Run as printed, that command makes the cause decided."""
    policy, namespaces = gpol(realapi, tmp_path, "advice-rbac")
    env = shell_env(realapi, tmp_path, kubectl_path)
    dump = subprocess.run("kubectl get namespaces,configmaps,deployments,clusterroles,clusterrolebindings -A -o json "
                          "--show-managed-fields > dump.json", shell=True, cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert dump.returncode == 0, dump.stderr
    before = offline("diff", "--downstreams", "-p", policy, "--state", str(tmp_path / "dump.json"), "-o", "json")
    causes = {c["object"]["namespace"]: c["cause"] for c in json.loads(before.stdout)["changes"]
              if c["object"]["namespace"] in namespaces}
    assert set(causes) == set(namespaces)
    advised = set()
    for ns, cause in causes.items():
        assert cause["kind"] == "unknown", cause
        assert (f"lacks evidence that could: UpdateRequests in namespace kyverno, RoleBindings in namespace {ns}, "
                f"Roles in namespace {ns}; capture them with: ") in cause["message"]
        advised.add(ADVICE.search(cause["message"].replace("capture them with", "Capture them with")).group(1))
    # one command for all of them: it captures the kinds in every namespace
    [advice] = advised
    assert advice == ("kubectl kyrec capture --kind updaterequests.kyverno.io,"
                      "rolebindings.rbac.authorization.k8s.io,roles.rbac.authorization.k8s.io -A -o more-state.json")
    ran = subprocess.run(advice, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    after = offline("diff", "--downstreams", "-p", policy, "--state", str(tmp_path / "dump.json"),
                    "--state", str(tmp_path / "more-state.json"), "-o", "json")
    decided = {c["object"]["namespace"]: c["cause"] for c in json.loads(after.stdout)["changes"]
               if c["object"]["namespace"] in namespaces}
    for ns, cause in decided.items():
        # nothing in the session grants Kyverno's background controller ConfigMaps
        assert cause["kind"] == "rbac" and f"may not get/create configmaps in namespace {ns}" in cause["message"], \
            cause
