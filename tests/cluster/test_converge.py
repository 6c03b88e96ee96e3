"""Apply converges (issue 22, docs/architecture.md#writing-corrections): after `apply --yes`, `diff` shows nothing apply
would act on, and a second `apply --yes` sends no write at all (the double's request log).

Each scenario leaves drift of one shape on the loopback API server double; the one the issue reported is a
generated Secret that another field manager annotated: a server-side apply cannot remove a field another
manager owns, so every apply re-sent it and `diff` still showed it. Kyverno corrects a policy without
useServerSideApply by an Update of the whole object, and so does kyrec now; with useServerSideApply the
foreign field is Kyverno's to leave, and it is not drift.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.cluster.test_live_cli import CLASSIC_NETPOL
from tests.kubeapi.server import ApiServer

DATA = Path(__file__).parent / "data"

SECRET_POLICY = """apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: team-secret
  creationTimestamp: "2026-01-01T00:00:00Z"
spec:
  evaluation:
    synchronize:
      enabled: true
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [namespaces]
  matchConditions:
  - name: teams-only
    expression: object.metadata.name.startsWith("team-")
  generate:
  - expression: >-
      generator.Apply(object.metadata.name, [{"apiVersion": dyn("v1"), "kind": dyn("Secret"),
      "metadata": dyn({"name": "pull"}), "type": dyn("Opaque"), "data": dyn({"k": "dg=="})}])
"""


def kyrec(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"KUBECONFIG": str(tmp_path / "kubeconfig"),
                                                    "XDG_CACHE_HOME": str(tmp_path / "cache")})


def _policy(tmp_path: Path, text: str, *, ssa: bool = False, name: str = "policy.yaml") -> str:
    if ssa:
        text = text.replace("spec:\n", "spec:\n  useServerSideApply: true\n", 1)
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _annotate(api: ApiServer, api_version: str, kind: str, namespace: str, name: str) -> None:
    api.store.mutate(api_version, kind, namespace, name,
                     lambda o: o["metadata"].setdefault("annotations", {}).update({"team.io/owner": "alice"}),
                     manager="kubectl-annotate")


def foreign_annotation_on_a_secret(api: ApiServer, tmp_path: Path) -> list[str]:
    policy = _policy(tmp_path, SECRET_POLICY)
    assert kyrec(tmp_path, "apply", "-p", policy, "--yes").exit_code == 0
    _annotate(api, "v1", "Secret", "team-a", "pull")
    return ["-p", policy]


def foreign_annotation_under_server_side_apply(api: ApiServer, tmp_path: Path) -> list[str]:
    policy = _policy(tmp_path, SECRET_POLICY, ssa=True)
    assert kyrec(tmp_path, "apply", "-p", policy, "--yes").exit_code == 0
    _annotate(api, "v1", "Secret", "team-a", "pull")
    return ["-p", policy]


def changed_field_under_server_side_apply(api: ApiServer, tmp_path: Path) -> list[str]:
    policy = _policy(tmp_path, (DATA / "gpol-configmap.yaml").read_text(), ssa=True)
    assert kyrec(tmp_path, "apply", "-p", policy, "--yes").exit_code == 0
    api.store.mutate("v1", "ConfigMap", "team-a", "base", lambda o: o["data"].update(a="edited"))
    return ["-p", policy]


def changed_and_foreign_fields_of_a_classic_rule(api: ApiServer, tmp_path: Path) -> list[str]:
    policy = _policy(tmp_path, CLASSIC_NETPOL)
    assert kyrec(tmp_path, "apply", "-p", policy, "--yes").exit_code == 0
    api.store.mutate("networking.k8s.io/v1", "NetworkPolicy", "team-a", "deny-all",
                     lambda o: o["spec"].update(policyTypes=["Egress"]))
    _annotate(api, "networking.k8s.io/v1", "NetworkPolicy", "team-b", "deny-all")
    return ["-p", policy]


def everything_from_the_cluster_with_prune(api: ApiServer, tmp_path: Path) -> list[str]:
    """The policies are the cluster's; missing, drifted, foreign-annotated and orphaned downstreams at once."""
    # (not SECRET_POLICY: its Secrets would be triggers of secret-index, whose index-pull ConfigMaps of two
    # namespaces are one object, a conflict between triggers that no apply can settle)
    api.seed(yaml.safe_load((DATA / "gpol-configmap.yaml").read_text()),
             yaml.safe_load((DATA / "gpol-secret-trigger.yaml").read_text()), yaml.safe_load(CLASSIC_NETPOL))
    for name in ("s1", "s2"):
        api.seed({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "team-a"},
                  "data": {"k": "dg=="}})
    assert kyrec(tmp_path, "apply", "--yes").exit_code == 0
    api.store.mutate("v1", "ConfigMap", "team-a", "base", lambda o: o["data"].update(a="edited"))
    _annotate(api, "v1", "ConfigMap", "default", "index-s1")
    api.store.delete(api.catalogue.by_kind("v1", "ConfigMap"), "v1", "team-b", "base")  # type: ignore[arg-type]
    api.store.delete(api.catalogue.by_kind("v1", "Secret"), "v1", "team-a", "s2")  # type: ignore[arg-type]
    return ["--prune"]


SCENARIOS: dict[str, Callable[[ApiServer, Path], list[str]]] = {
    f.__name__: f for f in (foreign_annotation_on_a_secret, foreign_annotation_under_server_side_apply,
                            changed_field_under_server_side_apply, changed_and_foreign_fields_of_a_classic_rule,
                            everything_from_the_cluster_with_prune)}


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[ApiServer]:
    with ApiServer() as api:
        for name in ("default", "team-a", "team-b"):
            api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        api.kubeconfig(tmp_path / "kubeconfig")
        yield api


def _acted_on(result: Result) -> list[dict[str, Any]]:
    return [o for o in json.loads(result.stdout)["outcomes"] if o["action"] != "skip"]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_second_apply_writes_nothing(cluster: ApiServer, tmp_path: Path, scenario: str) -> None:
    args = SCENARIOS[scenario](cluster, tmp_path)
    policy_args = [a for a in args if a != "--prune"]
    cluster.clear_log()
    first = kyrec(tmp_path, "apply", *args, "--yes", "-o", "json")
    assert first.exit_code == 0, first.stdout + first.stderr
    if scenario != "foreign_annotation_under_server_side_apply":
        assert cluster.writes(), "the scenario left nothing to correct"
    assert {o["status"] for o in _acted_on(first)} <= {"done"}
    after = kyrec(tmp_path, "diff", *policy_args, "-o", "json")
    acted = [c for c in json.loads(after.stdout)["changes"]
             if c["class"] not in ("in-sync", "current") and c["enforced"]]
    assert acted == [] and after.exit_code == 0, acted
    cluster.clear_log()
    second = kyrec(tmp_path, "apply", *args, "--yes", "-o", "json")
    assert second.exit_code == 0
    assert cluster.writes() == [] and _acted_on(second) == []


def test_a_foreign_field_is_removed_as_kyverno_removes_it(cluster: ApiServer, tmp_path: Path) -> None:
    """Without useServerSideApply: an Update of the whole object, conditional on the read's resourceVersion,
    as Kyverno's generate controller writes it; the annotation goes, and so does its manager's entry."""
    args = foreign_annotation_on_a_secret(cluster, tmp_path)
    diff = kyrec(tmp_path, "diff", *args, "-o", "json")
    [change] = [c for c in json.loads(diff.stdout)["changes"] if c["object"]["namespace"] == "team-a"]
    assert (change["class"], change["reason"]) == ("drifted", "foreign-fields")
    read_rv = cluster.store.get(cluster.catalogue.by_kind("v1", "Secret"), "v1", "team-a",  # type: ignore[arg-type]
                                "pull")["metadata"]["resourceVersion"]
    cluster.clear_log()
    assert kyrec(tmp_path, "apply", *args, "--yes").exit_code == 0
    [write] = cluster.writes()
    assert (write.method, write.query.get("fieldManager")) == ("PUT", "kyverno-generate")
    assert write.json_body()["metadata"]["resourceVersion"] == read_rv
    live = cluster.store.get(cluster.catalogue.by_kind("v1", "Secret"), "v1", "team-a", "pull")  # type: ignore[arg-type]
    assert "team.io/owner" not in (live["metadata"].get("annotations") or {})
    assert "kubectl-annotate" not in {m["manager"] for m in live["metadata"].get("managedFields") or []}


def test_with_server_side_apply_a_foreign_field_is_not_drift(cluster: ApiServer, tmp_path: Path) -> None:
    args = foreign_annotation_under_server_side_apply(cluster, tmp_path)
    diff = kyrec(tmp_path, "diff", *args, "-o", "json")
    assert {c["class"] for c in json.loads(diff.stdout)["changes"]} == {"in-sync"}
    live = cluster.store.get(cluster.catalogue.by_kind("v1", "Secret"), "v1", "team-a", "pull")  # type: ignore[arg-type]
    assert live["metadata"]["annotations"]["team.io/owner"] == "alice"
