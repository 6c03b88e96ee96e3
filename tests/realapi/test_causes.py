"""Causes of findings (issue 28) on the real API server. Kyverno's own permissions as the cause of a missing
downstream, answered by the real API server's
RBAC authorizer through SubjectAccessReviews (the server runs --authorization-mode=Node,RBAC): a live diff
names the verb the background controller's service account lacks, and says so no more once it is granted.
A user without `create subjectaccessreviews` gets a notice, and the RBAC objects the run read decide (as they do
offline for a capture); docs/rbac.yaml's kyrec-review-kyverno-permissions is the role that grants the reviews.

The bare server runs no controller-manager, so no ClusterRole is aggregated here: the roles below carry their
rules themselves (aggregation is decided offline, tests/k8s/test_rbac.py and the cause-rbac-* diff goldens).

And the managedFields a real server keeps when someone edits Kyverno's labels off a downstream: named when
Kyverno's manager still owns a field, `unknown` when the edit took every field it wrote (the server then
drops its entry, and nothing records that Kyverno wrote the object)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from tests.realapi.fixture import RealServer, plural_path
from tests.realapi.test_real_only import ROOT, gpol, kyrec

RBAC = "rbac.authorization.k8s.io/v1"
SA = "kyverno-background-controller"


@pytest.fixture()
def cluster_scoped(realapi: RealServer) -> Iterator[list[tuple[str, str]]]:
    """ClusterRoles and ClusterRoleBindings made by the test, deleted at its end (the session shares them)."""
    made: list[tuple[str, str]] = []
    yield made
    for plural, name in made:
        realapi.kube.delete(plural_path(RBAC, plural, "", name))


@pytest.fixture()
def background_controller(realapi: RealServer) -> Iterator[None]:
    """Kyverno's background controller Deployment as its chart names it, so that the account a review asks
    about is the one Kyverno runs as (a bare server runs no pod of it); deleted at the test's end, so that no
    other test's state holds it."""
    pod = {"serviceAccountName": SA,
           "containers": [{"name": "controller", "image": "reg.kyverno.io/kyverno/background-controller:v1.17.2"}]}
    realapi.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kyverno"}},
                 {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SA, "namespace": "kyverno"}},
                 {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
                     "name": "kyverno-background-controller", "namespace": "kyverno", "labels": LABELS},
                  "spec": {"selector": {"matchLabels": LABELS},
                           "template": {"metadata": {"labels": LABELS}, "spec": pod}}})
    yield
    realapi.kube.delete(plural_path("apps/v1", "deployments", "kyverno", "kyverno-background-controller"))


LABELS = {"app.kubernetes.io/component": "background-controller", "app.kubernetes.io/instance": "kyverno",
          "app.kubernetes.io/part-of": "kyverno"}


def _causes(result: Any, namespaces: list[str]) -> dict[str, dict[str, Any]]:
    doc = json.loads(result.stdout)
    return {c["object"]["namespace"]: c["cause"] for c in doc["changes"]
            if c["domain"] == "downstream" and c["object"]["namespace"] in namespaces}


def test_the_background_controller_s_missing_verb_is_named_by_a_subject_access_review(
        realapi: RealServer, cluster_scoped: list[tuple[str, str]], background_controller: None,
        tmp_path: Path) -> None:
    policy, namespaces = gpol(realapi, tmp_path, "causes-rbac")
    role, binding = realapi.unique("kyverno-bg-test"), realapi.unique("kyverno-bg-test")
    # every verb Kyverno checks for a synchronized generate rule but create
    realapi.seed({"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": role},
                  "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                             "verbs": ["get", "list", "watch", "update", "delete"]}]},
                 {"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": binding},
                  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                  "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": "kyverno"}]})
    cluster_scoped += [("clusterroles", role), ("clusterrolebindings", binding)]

    diff = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, "-o", "json")
    assert diff.exit_code == 1, diff.stderr
    causes = _causes(diff, namespaces)
    assert set(causes) == set(namespaces)
    for ns, cause in causes.items():
        assert cause["kind"] == "rbac", cause
        assert cause["message"] == (
            f"Kyverno's background controller (service account kyverno/{SA}) may not create configmaps in "
            f'namespace {ns} (SubjectAccessReview); grant: apiGroups: [""], resources: ["configmaps"], '
            'verbs: ["create"]')

    # a capture records the RBAC objects: offline, kyrec's own RBAC evaluation must answer as the server did
    state = tmp_path / "state.json"
    captured = kyrec(realapi, tmp_path, "capture", "-p", policy, "-o", str(state))
    assert captured.exit_code == 0, captured.output
    offline = CliRunner().invoke(cli, ["diff", "--downstreams", "-p", policy, "--state", str(state), "-o", "json"])
    assert offline.exit_code == 1, offline.output
    for ns, cause in _causes(offline, namespaces).items():
        assert cause["kind"] == "rbac" and cause["message"] == causes[ns]["message"].replace(
            "(SubjectAccessReview)", "(the state's RBAC objects)")
        assert f"ClusterRoleBinding {binding}" in [f"{e['kind']} {e['name']}" for e in cause["evidence"]]

    # granted: Kyverno's permissions are no longer the cause, and nothing else the cluster holds says why
    realapi.seed({"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": role},
                  "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                             "verbs": ["get", "list", "watch", "create", "update", "delete"]}]})
    granted = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, "-o", "json")
    assert {c["kind"] for c in _causes(granted, namespaces).values()} == {"unknown"}


def test_a_reader_without_review_rights_gets_a_notice_and_the_rbac_objects_decide(
        realapi: RealServer, cluster_scoped: list[tuple[str, str]], background_controller: None,
        tmp_path: Path) -> None:
    policy, namespaces = gpol(realapi, tmp_path, "causes-reader")
    realapi.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kyverno"}})
    realapi.seed(*[d for d in yaml.safe_load_all((ROOT / "docs" / "rbac.yaml").read_text()) if d])

    def bind(to: str) -> None:
        name = realapi.unique(f"restricted-{to}")
        realapi.seed({"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": name},
                      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": to},
                      "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                    "name": "restricted-users"}]})
        cluster_scoped.append(("clusterrolebindings", name))

    bind("kyrec-read")
    reader = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, "-o", "json", context="restricted")
    assert reader.exit_code == 1, reader.stderr
    notices = json.loads(reader.stdout)["notices"]
    assert any(n.startswith("Kyverno's permissions were not asked of the cluster (forbidden: cannot create "
                            "subjectaccessreviews.authorization.k8s.io") for n in notices), notices
    # without the review, the RBAC objects the live diff read decide, as they decide offline for its capture
    read = _causes(reader, namespaces)
    assert {c["kind"] for c in read.values()} == {"rbac"}, read
    assert all("create configmaps in namespace" in c["message"] and "(the state's RBAC objects)" in c["message"]
               for c in read.values()), read

    bind("kyrec-review-kyverno-permissions")
    reviewer = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, "-o", "json", context="restricted")
    causes = _causes(reviewer, namespaces)
    # nothing in the session grants Kyverno's service account create on ConfigMaps (the first test's role
    # lacks it, and goes at its end): named, with the review as the evidence's source
    assert {c["kind"] for c in causes.values()} == {"rbac"}, causes
    assert all("create configmaps in namespace" in c["message"] and "(SubjectAccessReview)" in c["message"]
               for c in causes.values()), causes


def test_a_downstream_whose_kyverno_labels_were_edited_away_names_the_edit(realapi: RealServer,
                                                                           tmp_path: Path) -> None:
    policy, [a, b] = gpol(realapi, tmp_path, "causes-relabel")
    assert kyrec(realapi, tmp_path, "apply", "-p", policy, "--yes").exit_code == 0
    # managedFields times have a resolution of one second: an edit in the same second as Kyverno's write
    # cannot be told to come after it (and is not named)
    time.sleep(1.1)

    def edit(ns: str, data: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
        """As `kubectl edit` does it: a PUT of the whole object, Kyverno's labels replaced by another."""
        path = plural_path("v1", "configmaps", ns, "base")
        obj = realapi.kube.get(path)
        obj["metadata"]["labels"] = {"team": "a"}
        obj["data"] = data
        answer = realapi.kube.request("PUT", path, obj, query={"fieldManager": "kubectl-edit"})
        assert answer.status == 200, answer
        return obj, {m["manager"]: m for m in answer.json()["metadata"]["managedFields"]}

    # a: the labels only; Kyverno's manager keeps the data it wrote, and so its entry
    edited, managers = edit(a, {"a": "1"})
    assert set(managers) == {"kyverno-generate", "kubectl-edit"}
    # b: every field Kyverno wrote changed too: the server drops its entry, nothing records Kyverno wrote it
    _, others = edit(b, {"a": "2"})
    assert set(others) == {"kubectl-edit"}
    diff = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, "-o", "json")
    changes = {c["object"]["namespace"]: c for c in json.loads(diff.stdout)["changes"] if c["object"]["namespace"]
               in (a, b)}
    assert {(c["class"], c["reason"]) for c in changes.values()} == {("conflict", "unowned")}
    assert changes[a]["cause"] == {
        "kind": "history",
        "message": f"written by Kyverno (kyverno-generate), then changed by kubectl-edit (Update) at "
                   f"{managers['kubectl-edit']['time']}: its labels no longer mark it as Kyverno's",
        "evidence": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": a, "name": "base",
                      "uid": edited["metadata"]["uid"]}]}
    assert changes[b]["cause"]["kind"] == "unknown"


def test_a_trigger_relabelled_out_of_the_policy_names_the_relabelling(realapi: RealServer, tmp_path: Path) -> None:
    policy, [a, b] = gpol(realapi, tmp_path, "causes-optin")
    text = Path(policy).read_text()
    # the fixture policy selects by name; this one by label, as Kyverno's sync-trigger-stops-matching does
    selects = text[text.index("    expression: object.metadata.name.startsWith("):].splitlines()[0]
    Path(policy).write_text(text.replace(
        selects, '    expression: object.metadata.?labels["opt-in"].orValue("") == "true"'))
    for ns in (a, b):
        realapi.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"opt-in": "true"}}})
    assert kyrec(realapi, tmp_path, "apply", "-p", policy, "--yes").exit_code == 0
    time.sleep(1.1)         # one second apart: the relabelling comes after the downstream's creation
    path = plural_path("v1", "namespaces", "", a)
    answer = realapi.kube.request("PATCH", path, {"metadata": {"labels": {"opt-in": "false"}}},
                                  query={"fieldManager": "kubectl-label"}, content_type="application/merge-patch+json")
    assert answer.status == 200, answer
    [label_entry] = [m for m in answer.json()["metadata"]["managedFields"] if m["manager"] == "kubectl-label"]
    diff = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, "-o", "json")
    changes = {c["object"]["namespace"]: c for c in json.loads(diff.stdout)["changes"]
               if c["object"]["namespace"] in (a, b)}
    assert (changes[a]["class"], changes[a]["reason"]) == ("orphan", "no-longer-matches")
    assert changes[a]["cause"]["kind"] == "history"
    assert changes[a]["cause"]["message"] == (
        f"Namespace {a} no longer matches: changed by kubectl-label (Update) at {label_entry['time']}, which owns "
        "its labels opt-in, after the downstream was made")
    assert changes[b]["class"] == "in-sync" and changes[b]["cause"] is None
