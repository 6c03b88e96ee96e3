"""Consistency matrix (issue 37): files and live give one answer for the same admitted trigger.

`eval -r` admits a manifest through the mutating policies and generates from the admitted object
(evaluate/generating/admitted.py). A cluster holds that admitted object, and a live run reads it as stored (no
chain: it was admitted already). On the real API server (tests/realapi): the object `eval -r` says admission
stores is created, then `eval --live` must list the same downstreams (GeneratingPolicy and classic generate
rule, both selecting the trigger by a label only the mutation adds and copying it into their data), `apply`
writes them and `diff --live` finds every one in sync. Before, `eval -r` generated from the manifest as written
and listed none.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.realapi.fixture import RealServer

NOW = ["--now", "2026-12-01T00:00:00Z"]
CREATED = "2026-01-01T00:00:00Z"
TRIGGER_UID = "generate.kyverno.io/trigger-uid"


def _policies(selector: str) -> list[dict[str, Any]]:
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
              "resources": ["configmaps"]}]
    return [
        {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy",
         "metadata": {"name": f"{selector}-tier", "creationTimestamp": CREATED},
         "spec": {"matchConstraints": {"resourceRules": rules, "objectSelector": {"matchLabels": {selector: "yes"}}},
                  "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                      "expression": 'Object{metadata: Object.metadata{labels: {"tier": "gold"}}}'}}]}},
        {"apiVersion": "policies.kyverno.io/v1", "kind": "GeneratingPolicy",
         "metadata": {"name": f"{selector}-gpol", "creationTimestamp": CREATED},
         "spec": {"evaluation": {"generateExisting": {"enabled": True}},
                  "matchConstraints": {"resourceRules": rules,
                                       "objectSelector": {"matchLabels": {selector: "yes", "tier": "gold"}}},
                  "generate": [{"expression": (
                      'generator.Apply(object.metadata.namespace, [{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"), '
                      '"metadata": dyn({"name": object.metadata.name + "-gpol"}), '
                      '"data": dyn({"tier": object.metadata.labels["tier"]})}])')}]}},
        {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
         "metadata": {"name": f"{selector}-cpol", "creationTimestamp": CREATED},
         "spec": {"generateExisting": True, "rules": [{"name": "copy", "match": {"any": [{"resources": {
             "kinds": ["ConfigMap"], "selector": {"matchLabels": {selector: "yes", "tier": "gold"}}}}]},
             "generate": {"apiVersion": "v1", "kind": "ConfigMap", "name": "{{request.object.metadata.name}}-cpol",
                          "namespace": "{{request.object.metadata.namespace}}",
                          "data": {"data": {"tier": "{{request.object.metadata.labels.tier}}"}}}}]}},
    ]


def _kyrec(server: RealServer | None, tmp_path: Path, *args: str) -> Result:
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    extra: list[str] = []
    if server is not None:
        env["KUBECONFIG"] = str(server.kubeconfig)
        extra = ["--context", "admin"]
    return CliRunner().invoke(cli, [*args, *extra], env=env)


def _downstreams(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(policy, downstream name) -> object, the trigger's uid left out (a manifest's is a stand-in)."""
    out = {}
    for d in doc["downstreams"]:
        obj = d["object"]
        labels = {k: v for k, v in obj["metadata"]["labels"].items() if k != TRIGGER_UID}
        out[(d["policy"], obj["metadata"]["name"])] = {**obj, "metadata": {**obj["metadata"], "labels": labels}}
    return out


def test_files_and_live_generate_the_same_from_the_admitted_trigger(realapi: RealServer, tmp_path: Path) -> None:
    selector = realapi.unique("gentrig")
    ns = realapi.namespace("gentrig")
    policies = tmp_path / "policies.yaml"
    policies.write_text(yaml.safe_dump_all(_policies(selector)))
    manifest = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "trigger", "namespace": ns, "labels": {selector: "yes"}}, "data": {"a": "1"}}
    (tmp_path / "cm.yaml").write_text(yaml.safe_dump(manifest))

    files = _kyrec(None, tmp_path, "eval", "-p", str(policies), "-r", str(tmp_path / "cm.yaml"), "-o", "json", *NOW)
    assert files.exit_code == 0, files.stderr
    from_files = json.loads(files.stdout)
    [admission] = from_files["admission"]
    admitted = admission["object"]
    assert admitted["metadata"]["labels"] == {selector: "yes", "tier": "gold"}
    expected = _downstreams(from_files)
    assert set(expected) == {(f"{selector}-gpol", "trigger-gpol"), (f"{selector}-cpol", "trigger-cpol")}
    assert {o["data"]["tier"] for o in expected.values()} == {"gold"}

    # the cluster stores the admitted object; read live it is not admitted again
    realapi.seed(admitted)
    live = _kyrec(realapi, tmp_path, "eval", "--live", "-p", str(policies), "-n", ns, "-o", "json", *NOW)
    assert live.exit_code == 0, live.stderr
    from_live = json.loads(live.stdout)
    assert from_live["admission"] == []
    assert _downstreams(from_live) == expected

    applied = _kyrec(realapi, tmp_path, "apply", "--downstreams", "--yes", "-p", str(policies), "-n", ns, *NOW)
    assert applied.exit_code == 0, applied.output
    diff = _kyrec(realapi, tmp_path, "diff", "--live", "-p", str(policies), "-n", ns, "--downstreams", "-o", "json",
                  *NOW)
    assert diff.exit_code == 0, diff.output
    found = json.loads(diff.stdout)
    changes = {c["object"]["name"]: c["class"] for c in found["changes"] if c["domain"] == "downstream"}
    assert changes == {"trigger-gpol": "in-sync", "trigger-cpol": "in-sync"}
