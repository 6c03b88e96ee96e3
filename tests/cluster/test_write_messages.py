"""What a refused write or read says: a 409 is worded by what its Status says it is (fields other managers
own, named with their managers; an object changed or created since the read), and a 403 names the verb,
the resource and the RBAC rule that would grant it, for reads and writes alike, never a `kubectl get`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.cluster.client import KubeClient, connect
from kubectl_kyrec.cluster.connection import ConnectionOptions
from kubectl_kyrec.cluster.discovery import discover
from kubectl_kyrec.cluster.writer import Status, execute
from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.plan import Action, Plan, PlannedChange
from tests.kubeapi.server import ApiServer

POLICY = str(Path(__file__).parent / "data" / "gpol-configmap.yaml")


def _apply(name: str, data: dict[str, str], *, resource_version: str = "") -> PlannedChange:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if resource_version:
        meta["resourceVersion"] = resource_version
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}
    return PlannedChange(Action.APPLY, "downstream", "drifted", "changed-fields",
                         Ref("v1", "ConfigMap", "default", name, "u"), body=body, message="ssa")


def _seeded(api: ApiServer) -> None:
    api.seed({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"},
              "data": {"a": "0", "b": "0"}})
    api.store.mutate("v1", "ConfigMap", "default", "cm", lambda o: o["data"].update(a="edited"), manager="kubectl-edit")
    api.store.mutate("v1", "ConfigMap", "default", "cm", lambda o: o["data"].update(b="edited"), manager="helm")


def test_a_field_manager_conflict_names_every_manager_and_field(api: ApiServer, kube: KubeClient) -> None:
    _seeded(api)
    found = discover(kube)
    [outcome] = execute(kube, Plan((_apply("cm", {"a": "1", "b": "2"}),), "kyverno-generate", force=False),
                        resolve_kind=found.find)
    assert outcome.status is Status.FAILED and outcome.http_status == 409
    assert outcome.conflicts == (("helm", ".data.b"), ("kubectl-edit", ".data.a"))
    # the API server's text for two conflicts spans lines: its first line named neither field
    assert outcome.message == ('not applied: field manager conflict: .data.b owned by "helm"; .data.a owned by '
                               '"kubectl-edit" (--force takes them over, as Kyverno does)')


def test_a_stale_resource_version_is_a_change_since_the_read(api: ApiServer, kube: KubeClient) -> None:
    _seeded(api)
    found = discover(kube)
    [outcome] = execute(kube, Plan((_apply("cm", {"a": "1"}, resource_version="1"),)), resolve_kind=found.find)
    assert outcome.status is Status.FAILED and outcome.http_status == 409 and outcome.conflicts == ()
    assert outcome.message.startswith('changed since it was read, not applied (not retried): Operation cannot be '
                                      'fulfilled on configmaps "cm"')


ROLES = """apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: lister}
rules:
- {apiGroups: [""], resources: [configmaps, namespaces], verbs: [list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: lister}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: lister}
subjects: [{kind: User, name: reader}]
"""


def test_a_refused_write_names_the_rule_that_grants_it(api: ApiServer, tmp_path: Path) -> None:
    api.load_rbac(ROLES)
    api.add_user("reader", "r")
    kube = connect(ConnectionOptions(kubeconfig=str(api.kubeconfig(tmp_path / "kubeconfig", user="reader",
                                                                   token="r"))))
    found = discover(kube)
    delete = PlannedChange(Action.DELETE, "downstream", "orphan", "policy-gone",
                           Ref("v1", "ConfigMap", "default", "old", "u"), precondition_uid="u",
                           precondition_resource_version="1")
    applied, deleted = execute(kube, Plan((_apply("cm", {"a": "1"}), delete)), resolve_kind=found.find)
    assert applied.message == ('forbidden: cannot patch configmaps in namespace "default" as user "reader" of '
                               'context "double"; grant: apiGroups: [""], resources: ["configmaps"], '
                               'verbs: ["patch"]')
    assert deleted.message.endswith('; grant: apiGroups: [""], resources: ["configmaps"], verbs: ["delete"]')


def test_a_refused_list_names_the_rule_and_no_capture(tmp_path: Path) -> None:
    with ApiServer() as api:
        api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
        api.inject(r"^/api/v1/configmaps$", status=403, times=None)     # not the RBAC authorizer's wording
        api.kubeconfig(tmp_path / "kubeconfig")
        result = CliRunner().invoke(cli, ["diff", "-p", POLICY], env={
            "KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert result.exit_code == 5
    assert ('error: forbidden: cannot list configmaps cluster-wide as user "admin" of context "double": forbidden: '
            'injected fault; grant: apiGroups: [""], resources: ["configmaps"], verbs: ["list"]') in result.stderr
    assert "kubectl get" not in result.stderr        # a permission is missing, not a capture
