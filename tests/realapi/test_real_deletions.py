"""A DeletingPolicy's scheduled deletions against the real kube-apiserver (issue 26): what `diff` lists,
`apply --deletions` carries out with the uid and resourceVersion read as preconditions and the policy's
propagation policy, as the API server takes them (a bare server runs no garbage collector: a Foreground
delete leaves the object with its deletionTimestamp and the `foregroundDeletion` finalizer, which shows the
propagation policy reached the server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.realapi.fixture import RealServer, plural_path


def kyrec(server: RealServer, tmp_path: Path, *args: str) -> Result:
    env = {"KUBECONFIG": str(server.kubeconfig), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    # the server is shared by the session: --downstreams keeps other tests' reports out of apply's plan
    return CliRunner().invoke(cli, [*args, "--downstreams", "--now", "2026-12-01T00:00:00Z", "--context", "admin"],
                              env=env)


def _policy(tmp_path: Path, name: str, label: str, propagation: str) -> str:
    doc = {"apiVersion": "policies.kyverno.io/v1", "kind": "DeletingPolicy", "metadata": {"name": name},
           "spec": {"schedule": "0 3 * * *", "deletionPropagationPolicy": propagation,
                    "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                            "resources": ["configmaps"]}],
                                         "objectSelector": {"matchLabels": {"dpol-test": label}}},
                    "conditions": [{"name": "expired", "expression": "object.data.expired == 'yes'"}]}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(json.dumps(doc))
    return str(path)


def _cm(namespace: str, name: str, label: str, expired: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": {"dpol-test": label}},
            "data": {"expired": expired}}


def test_scheduled_deletions_are_carried_out_only_when_asked(realapi: RealServer, tmp_path: Path) -> None:
    ns, label = realapi.namespace("dpol"), realapi.unique("dpol")
    realapi.seed(_cm(ns, "old", label, "yes"), _cm(ns, "new", label, "no"), _cm(ns, "gone-fg", label, "yes"))
    background = _policy(tmp_path, realapi.unique("expire-bg"), label, "Background")
    diff = kyrec(realapi, tmp_path, "diff", "-p", background, "-n", ns, "-o", "json")
    assert diff.exit_code == 1, diff.stderr
    found = sorted(c["object"]["name"] for c in json.loads(diff.stdout)["changes"]
                   if c["domain"] == "deletion" and c["class"] == "scheduled-deletion")
    assert found == ["gone-fg", "old"]
    without = kyrec(realapi, tmp_path, "apply", "-p", background, "-n", ns, "--yes")
    assert without.exit_code == 0 and realapi.kube.get(plural_path("v1", "configmaps", ns, "old"))
    done = kyrec(realapi, tmp_path, "apply", "-p", background, "-n", ns, "--yes", "--deletions", "-o", "json")
    assert done.exit_code == 0, done.stdout
    statuses = {o["object"]["name"]: o["status"] for o in json.loads(done.stdout)["outcomes"]}
    assert statuses == {"old": "done", "gone-fg": "done"}
    assert realapi.kube.request("GET", plural_path("v1", "configmaps", ns, "old")).status == 404
    assert realapi.kube.get(plural_path("v1", "configmaps", ns, "new"))["data"] == {"expired": "no"}


def test_the_propagation_policy_reaches_the_server(realapi: RealServer, tmp_path: Path) -> None:
    ns, label = realapi.namespace("dpol-fg"), realapi.unique("dpol-fg")
    realapi.seed(_cm(ns, "old", label, "yes"))
    foreground = _policy(tmp_path, realapi.unique("expire-fg"), label, "Foreground")
    done = kyrec(realapi, tmp_path, "apply", "-p", foreground, "-n", ns, "--yes", "--deletions")
    assert done.exit_code == 0, done.stdout
    left = realapi.kube.get(plural_path("v1", "configmaps", ns, "old"))
    assert left["metadata"]["deletionTimestamp"] and left["metadata"]["finalizers"] == ["foregroundDeletion"]

