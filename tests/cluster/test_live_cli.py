"""The live path end to end through the CLI against the API server double: diff reads and never writes,
capture round-trips, apply creates, re-applies, takes fields back, prunes with preconditions, refuses what
it must refuse, and each fault gives its one line and exit code."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.kubeapi.server import ApiServer

DATA = Path(__file__).parent / "data"
POLICY = str(DATA / "gpol-configmap.yaml")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[ApiServer]:
    with ApiServer() as api:
        for name in ("default", "kube-system", "team-a", "team-b"):
            api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        api.kubeconfig(tmp_path / "kubeconfig")
        api.clear_log()
        yield api


def kyrec(api: ApiServer, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    environ = {"KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
               **(env or {})}
    return CliRunner().invoke(cli, list(args), env=environ)


def changes(result: Result) -> dict[tuple[str, str], str]:
    doc = json.loads(result.stdout)
    return {(c["object"]["namespace"], c["object"]["name"]): c["class"] + (f"/{c['reason']}" if c["reason"] else "")
            for c in doc["changes"] if c["domain"] == "downstream"}


def owned(api: ApiServer, ns: str) -> dict[str, Any]:
    return api.store.get(api.catalogue.by_kind("v1", "ConfigMap"), "v1", ns, "base")  # type: ignore[arg-type]


# ---- diff --------------------------------------------------------------------------------------------------

def test_diff_reads_the_current_context_and_never_writes(cluster: ApiServer, tmp_path: Path) -> None:
    result = kyrec(cluster, tmp_path, "diff", "-p", POLICY, "-o", "json")
    assert result.exit_code == 1, result.stderr
    assert changes(result) == {("team-a", "base"): "missing", ("team-b", "base"): "missing"}
    assert cluster.writes() == []
    gets = cluster.requests("GET")
    discovery = [r for r in gets if r.path in ("/api", "/apis")]
    lists = [r for r in gets if r.verb == "list"]
    assert len(discovery) == 2 and len(discovery) + len(lists) == len(cluster.requests())
    assert all(r.query.get("limit") == "500" for r in lists)         # paginated, no per-object GET
    # one LIST per type and scope, none of a kind that cannot be listed
    assert len({(r.path, r.query.get("labelSelector")) for r in lists}) == len(lists)
    assert not [r for r in gets if "tokenreviews" in r.path] and all(r.status == 200 for r in gets)


def test_discovery_is_cached_between_runs(cluster: ApiServer, tmp_path: Path) -> None:
    kyrec(cluster, tmp_path, "diff", "-p", POLICY)
    cluster.clear_log()
    kyrec(cluster, tmp_path, "diff", "-p", POLICY)
    assert [r for r in cluster.requests() if r.path in ("/api", "/apis")] == []


def test_live_and_captured_state_give_the_same_changes(cluster: ApiServer, tmp_path: Path) -> None:
    assert kyrec(cluster, tmp_path, "apply", "-p", POLICY, "--yes").exit_code == 0
    cluster.store.mutate("v1", "ConfigMap", "team-a", "base", lambda o: o["data"].update(a="edited"))
    cluster.store.mutate("v1", "ConfigMap", "team-b", "base", lambda o: o["data"].update(extra="x"),
                         manager="helm")
    cluster.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-c"}})
    live = kyrec(cluster, tmp_path, "diff", "-p", POLICY, "-o", "json")
    capture = kyrec(cluster, tmp_path, "capture", "-p", POLICY, "-o", str(tmp_path / "state.json"))
    assert capture.exit_code == 0, capture.stderr
    offline = kyrec(cluster, tmp_path, "diff", "-p", POLICY, "--state", str(tmp_path / "state.json"), "-o", "json")
    assert changes(live) == changes(offline)
    assert changes(live) == {("team-a", "base"): "drifted/changed-fields", ("team-b", "base"): "drifted/foreign-fields",
                             ("team-c", "base"): "missing"}
    doc = json.loads((tmp_path / "state.json").read_text())
    listed = json.loads(doc["metadata"]["annotations"]["kyrec.io/listed"])
    assert {"apiVersion": "v1", "kind": "Namespace", "namespace": ""} in listed
    assert all(i["metadata"].get("managedFields") for i in doc["items"] if i["kind"] == "ConfigMap")


def test_capture_digests_secret_data_and_warns_only_when_asked_for_it(cluster: ApiServer, tmp_path: Path) -> None:
    cluster.seed({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "team-a"},
                  "data": {"k": "dmFsdWU="}})
    policy = tmp_path / "secrets.yaml"
    policy.write_text(Path(POLICY).read_text().replace("resources: [namespaces]", "resources: [namespaces, secrets]"))
    result = kyrec(cluster, tmp_path, "capture", "-p", str(policy))
    assert result.exit_code == 0 and result.stderr == ""
    assert '"kind": "Secret"' in result.stdout and "dmFsdWU=" not in result.stdout
    result = kyrec(cluster, tmp_path, "capture", "-p", str(policy), "--include-secret-values")
    assert result.exit_code == 0
    assert "warning: --include-secret-values: the capture holds the values of 1 Secret(s) in clear" in result.stderr
    assert "dmFsdWU=" in result.stdout


# ---- apply -------------------------------------------------------------------------------------------------

def test_apply_creates_as_kyverno_generate_and_second_run_writes_nothing(cluster: ApiServer, tmp_path: Path) -> None:
    result = kyrec(cluster, tmp_path, "apply", "-p", POLICY, "--yes", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert "plan: 2 write(s) as field manager kyverno-generate with force" in result.stderr
    doc = json.loads(result.stdout)
    assert doc["kind"] == "ApplyResult" and doc["summary"]["done"] == 2
    patches = cluster.writes()
    ssa = ("PATCH", {"fieldManager": "kyverno-generate", "force": "true"})
    assert [(r.method, r.query) for r in patches] == [ssa, ssa]
    assert all(r.headers["content-type"] == "application/apply-patch+yaml" for r in patches)
    obj = owned(cluster, "team-a")
    assert obj["metadata"]["labels"]["generate.kyverno.io/policy-name"] == "base-config"
    assert [m["manager"] for m in obj["metadata"]["managedFields"]] == ["kyverno-generate"]
    cluster.clear_log()
    again = kyrec(cluster, tmp_path, "apply", "-p", POLICY, "--yes")
    assert again.exit_code == 0 and cluster.writes() == []
    assert kyrec(cluster, tmp_path, "diff", "-p", POLICY).exit_code == 0


def _ssa_policy(tmp_path: Path) -> str:
    """The policy with useServerSideApply: Kyverno corrects its downstreams by a forced apply, not a PUT."""
    path = tmp_path / "ssa.yaml"
    path.write_text(Path(POLICY).read_text().replace("spec:\n", "spec:\n  useServerSideApply: true\n", 1))
    return str(path)


def test_apply_takes_fields_back_with_force_and_reports_conflicts_without(cluster: ApiServer, tmp_path: Path) -> None:
    policy = _ssa_policy(tmp_path)
    kyrec(cluster, tmp_path, "apply", "-p", policy, "--yes")
    cluster.store.mutate("v1", "ConfigMap", "team-a", "base", lambda o: o["data"].update(a="edited"),
                         manager="kubectl-edit")
    refused = kyrec(cluster, tmp_path, "apply", "-p", policy, "--yes", "--no-force", "--field-manager", "kyrec",
                    "-o", "json")
    assert refused.exit_code == 4
    [outcome] = [o for o in json.loads(refused.stdout)["outcomes"] if o["action"] != "skip"]
    assert outcome["status"] == "failed" and outcome["httpStatus"] == 409
    assert outcome["conflicts"] == [{"manager": "kubectl-edit", "field": ".data.a"}]
    assert owned(cluster, "team-a")["data"]["a"] == "edited"
    forced = kyrec(cluster, tmp_path, "apply", "-p", policy, "--yes")
    assert forced.exit_code == 0, forced.stdout
    assert owned(cluster, "team-a")["data"]["a"] == "1"


def test_apply_never_touches_an_unowned_object(cluster: ApiServer, tmp_path: Path) -> None:
    cluster.seed({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "base", "namespace": "team-b"},
                  "data": {"mine": "yes"}})
    result = kyrec(cluster, tmp_path, "apply", "-p", POLICY, "--yes", "-o", "json")
    assert result.exit_code == 0
    outcomes = {o["object"]["namespace"]: o for o in json.loads(result.stdout)["outcomes"]}
    assert outcomes["team-b"]["action"] == "skip" and outcomes["team-b"]["class"] == "conflict"
    assert [r.path for r in cluster.writes()] == ["/api/v1/namespaces/team-a/configmaps/base"]
    assert owned(cluster, "team-b")["data"] == {"mine": "yes"}


def _narrowed(tmp_path: Path) -> str:
    """The policy, now for team-a only: team-b's downstream no longer matches (an orphan to prune)."""
    path = tmp_path / "narrowed.yaml"
    path.write_text(Path(POLICY).read_text().replace('object.metadata.name.startsWith("team-")',
                                                     'object.metadata.name == "team-a"'))
    return str(path)


def test_prune_deletes_with_preconditions(cluster: ApiServer, tmp_path: Path) -> None:
    kyrec(cluster, tmp_path, "apply", "-p", POLICY, "--yes")
    stale = owned(cluster, "team-b")
    uid, rv = stale["metadata"]["uid"], stale["metadata"]["resourceVersion"]
    cluster.clear_log()
    without = kyrec(cluster, tmp_path, "apply", "-p", _narrowed(tmp_path), "--yes", "-o", "json")
    assert without.exit_code == 0 and cluster.writes() == []
    [skipped] = [o for o in json.loads(without.stdout)["outcomes"] if o["class"] == "orphan"]
    assert skipped["message"] == "not deleted without --prune" and skipped["status"] == "refused"
    pruned = kyrec(cluster, tmp_path, "apply", "-p", _narrowed(tmp_path), "--yes", "--prune", "-o", "json")
    assert pruned.exit_code == 0, pruned.stdout
    [delete] = cluster.requests("DELETE")
    assert delete.path == "/api/v1/namespaces/team-b/configmaps/base"
    assert delete.json_body()["preconditions"] == {"uid": uid, "resourceVersion": rv}
    assert delete.status == 200


def test_prune_reports_a_409_when_the_object_changed_after_the_read(cluster: ApiServer, tmp_path: Path) -> None:
    import datetime

    from kubectl_kyrec.cluster.connection import ConnectionOptions
    from kubectl_kyrec.cluster.live_source import LiveSource
    from kubectl_kyrec.cluster.writer import execute
    from kubectl_kyrec.load.run_inputs.sources import FileSource
    from kubectl_kyrec.reconcile.plan import PlanOptions
    from kubectl_kyrec.run.apply import ApplyRunOptions, compute_plan

    kyrec(cluster, tmp_path, "apply", "-p", POLICY, "--yes")
    source = LiveSource(FileSource(policy_paths=(_narrowed(tmp_path),)),
                        ConnectionOptions(kubeconfig=str(tmp_path / "kubeconfig")), cache_dir=tmp_path / "cache")
    options = ApplyRunOptions(now=datetime.datetime.now(datetime.timezone.utc), plan=PlanOptions(prune=True))
    result = compute_plan(options, source)
    [delete] = result.plan.writes
    cluster.store.mutate("v1", "ConfigMap", "team-b", "base", lambda o: o["data"].update(late="edit"))
    client, found = source.open()
    cluster.clear_log()
    [outcome] = [o for o in execute(client, result.plan, resolve_kind=found.find) if o.change is delete]
    assert outcome.status == "failed" and outcome.http_status == 409
    assert outcome.message.startswith("changed since it was read, not deleted (not retried): Operation cannot be "
                                      'fulfilled on ConfigMap "base": the ResourceVersion in the precondition')
    assert len(cluster.requests("DELETE")) == 1
    assert owned(cluster, "team-b")["data"]["late"] == "edit"


def test_dry_runs_write_nothing(cluster: ApiServer, tmp_path: Path) -> None:
    server = kyrec(cluster, tmp_path, "apply", "-p", POLICY, "--dry-run=server", "-o", "json")
    assert server.exit_code == 0, server.stderr
    assert {o["status"] for o in json.loads(server.stdout)["outcomes"]} == {"dry-run"}
    assert cluster.writes() and all(r.query.get("dryRun") == "All" for r in cluster.writes())
    assert cluster.store.objects.get(("", "configmaps"), {}) == {}
    cluster.clear_log()
    client = kyrec(cluster, tmp_path, "apply", "-p", POLICY, "--dry-run=client", "-o", "json")
    assert client.exit_code == 0 and cluster.writes() == []


def test_apply_refuses_without_terminal_or_with_state(cluster: ApiServer, tmp_path: Path) -> None:
    result = kyrec(cluster, tmp_path, "apply", "-p", POLICY)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: apply writes to the cluster and there is no terminal to ask on")
    result = kyrec(cluster, tmp_path, "apply", "-p", POLICY, "--yes", "--state", POLICY)
    assert result.exit_code == 2 and "apply works on the live cluster, not on --state files" in result.stderr
    assert cluster.requests() == []


# ---- faults ----------------------------------------------------------------------------------------------

def test_no_kubeconfig(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["diff", "-p", POLICY], env={"KUBECONFIG": str(tmp_path / "none"),
                                                                  "HOME": str(tmp_path)})
    assert result.exit_code == 5
    assert result.stderr.startswith("error: no kubeconfig found") and "--state" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_401_and_unreachable(cluster: ApiServer, tmp_path: Path) -> None:
    cluster.add_user("alice", "good")
    cluster.kubeconfig(tmp_path / "kubeconfig", user="alice", token="bad", context="prod")
    result = kyrec(cluster, tmp_path, "diff", "-p", POLICY)
    assert result.exit_code == 5
    assert result.stderr.startswith('error: the cluster rejected the credentials of user "alice" (context "prod")')
    cluster.kubeconfig(tmp_path / "kubeconfig", server="http://127.0.0.1:9", context="gone")
    result = kyrec(cluster, tmp_path, "diff", "-p", POLICY)
    assert result.exit_code == 5 and result.stderr.startswith("error: cannot reach the cluster at http://127.0.0.1:9")


def test_403_on_one_type_goes_on_and_exits_5(cluster: ApiServer, tmp_path: Path) -> None:
    cluster.inject(r"^/api/v1/configmaps$", status=403, times=None)
    result = kyrec(cluster, tmp_path, "diff", "-p", POLICY, "-o", "json")
    assert result.exit_code == 5
    assert "error: forbidden: cannot list configmaps cluster-wide" in result.stderr
    doc = json.loads(result.stdout)
    assert doc["changes"]          # the run went on


def test_429_and_5xx_are_retried(cluster: ApiServer, tmp_path: Path) -> None:
    cluster.inject(r"^/api/v1/namespaces$", status=429, retry_after=0, times=1)
    cluster.inject(r"^/api/v1/configmaps$", status=503, times=1)
    result = kyrec(cluster, tmp_path, "diff", "-p", POLICY, "-o", "json")
    assert result.exit_code == 1, result.stderr
    assert changes(result) == {("team-a", "base"): "missing", ("team-b", "base"): "missing"}


# ---- RBAC -----------------------------------------------------------------------------------------------------

def _bind(role: str, user: str) -> str:
    return (f"---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: {user}}}\n"
            f"roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {role}}}\n"
            f"subjects: [{{kind: User, name: {user}}}]\n")


def test_documented_roles_suffice(cluster: ApiServer, tmp_path: Path) -> None:
    roles = (ROOT / "docs" / "rbac.yaml").read_text()
    cluster.load_rbac(roles + _bind("kyrec-read", "reader") + _bind("kyrec-apply", "fixer"))
    cluster.add_user("reader", "r")
    cluster.add_user("fixer", "f")
    cluster.kubeconfig(tmp_path / "kubeconfig", user="reader", token="r")
    assert kyrec(cluster, tmp_path, "diff", "-p", POLICY).exit_code == 1
    denied = kyrec(cluster, tmp_path, "apply", "-p", POLICY, "--yes")
    assert denied.exit_code == 4 and "forbidden" in denied.stdout
    cluster.kubeconfig(tmp_path / "kubeconfig", user="fixer", token="f")
    assert kyrec(cluster, tmp_path, "apply", "-p", POLICY, "--yes").exit_code == 0
    assert kyrec(cluster, tmp_path, "diff", "-p", POLICY).exit_code == 0


APPLY_KEYS = {
    "apiVersion", "kind", "kyrecVersion", "fieldManager", "force", "summary", "errors", "notices", "outcomes",
    "outcomes[].action", "outcomes[].class", "outcomes[].object", "outcomes[].status", "outcomes[].httpStatus",
    "outcomes[].conflicts", "outcomes[].message", "outcomes[].conflicts[].manager", "outcomes[].conflicts[].field",
    *(f"outcomes[].object.{k}" for k in ("apiVersion", "kind", "namespace", "name", "uid")),
    *(f"summary.{s}" for s in ("done", "dry-run", "failed", "refused", "not-attempted", "unknown", "failedReads")),
}


def test_apply_result_keys_are_the_documented_contract(cluster: ApiServer, tmp_path: Path) -> None:
    from tests.contract.test_document_keys import key_paths

    policy = _ssa_policy(tmp_path)       # a conflict needs an apply (Kyverno PUTs without useServerSideApply)
    kyrec(cluster, tmp_path, "apply", "-p", policy, "--yes")
    cluster.store.mutate("v1", "ConfigMap", "team-a", "base", lambda o: o["data"].update(a="x"), manager="edit")
    cluster.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-c"}})
    cluster.seed({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "base", "namespace": "team-c"}})
    result = kyrec(cluster, tmp_path, "apply", "-p", policy, "--yes", "--no-force", "--field-manager", "me",
                   "-o", "json")
    doc = json.loads(result.stdout)
    assert key_paths(doc) == APPLY_KEYS
    documented = (ROOT / "docs" / "output.md").read_text()
    for key in {p.rsplit(".", 1)[-1].removesuffix("[]") for p in APPLY_KEYS}:
        assert f"`{key}`" in documented, key
    as_yaml = kyrec(cluster, tmp_path, "apply", "-p", POLICY, "--dry-run=client", "-o", "yaml")
    import yaml

    assert yaml.safe_load(as_yaml.stdout)["kind"] == "ApplyResult"


def test_a_capture_carries_its_policies(cluster: ApiServer, tmp_path: Path) -> None:
    # the cluster's own policies: no -p live, and no -p on the capture either
    cluster.seed(yaml_doc(POLICY))
    live = kyrec(cluster, tmp_path, "diff", "-o", "json")
    assert kyrec(cluster, tmp_path, "capture", "-o", str(tmp_path / "state.json")).exit_code == 0
    offline = kyrec(cluster, tmp_path, "diff", "--state", str(tmp_path / "state.json"), "-o", "json")
    assert live.exit_code == offline.exit_code == 1, offline.stderr
    assert changes(live) == changes(offline) == {("team-a", "base"): "missing", ("team-b", "base"): "missing"}


def yaml_doc(path: str) -> dict[str, Any]:
    import yaml

    doc = yaml.safe_load(Path(path).read_text())
    assert isinstance(doc, dict)
    return doc


SECRET_POLICY = str(DATA / "gpol-secret-trigger.yaml")


def test_a_kind_listed_empty_is_known_empty_and_an_unreadable_one_is_unknown(cluster: ApiServer,
                                                                             tmp_path: Path) -> None:
    cluster.seed({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "only", "namespace": "team-a"},
                  "data": {"k": "dg=="}})
    assert kyrec(cluster, tmp_path, "apply", "-p", SECRET_POLICY, "--yes").exit_code == 0
    cluster.store.delete(cluster.catalogue.by_kind("v1", "Secret"), "v1", "team-a", "only")  # type: ignore[arg-type]
    # Secrets were listed and none is left: the trigger is gone, and Kyverno would delete the downstream
    gone = kyrec(cluster, tmp_path, "diff", "-p", SECRET_POLICY, "-o", "json")
    assert changes(gone) == {("default", "index-only"): "orphan/trigger-gone"}
    # Secrets cannot be read: nothing is known about the trigger; undetermined (the failed read named),
    # exit 5, and apply leaves it alone
    cluster.inject(r"^/api/v1/secrets$", status=403, times=None)
    unknown = kyrec(cluster, tmp_path, "diff", "-p", SECRET_POLICY, "-o", "json")
    assert unknown.exit_code == 5
    assert changes(unknown) == {("default", "index-only"): "undetermined/read-failed"}
    [held] = json.loads(unknown.stdout)["changes"]
    assert held["message"].startswith("cannot tell: the LIST of Secret in team-a failed (forbidden: cannot list "
                                      "secrets cluster-wide")
    assert "from what was read it looks orphan/trigger-unknown" in held["message"]
    assert "error: forbidden: cannot list secrets cluster-wide" in unknown.stderr
    cluster.clear_log()
    refused = kyrec(cluster, tmp_path, "apply", "-p", SECRET_POLICY, "--yes", "--prune")
    assert refused.exit_code == 5 and cluster.writes() == []


def test_impersonation_flags_reach_the_server(cluster: ApiServer, tmp_path: Path) -> None:
    cluster.add_user("alice", "a")
    cluster.load_rbac((ROOT / "docs" / "rbac.yaml").read_text() + _bind("kyrec-read", "bob") + """---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonator}
rules:
- {apiGroups: [""], resources: [users, groups], verbs: [impersonate]}
""" + _bind("impersonator", "alice"))
    cluster.kubeconfig(tmp_path / "kubeconfig", user="alice", token="a")
    assert kyrec(cluster, tmp_path, "diff", "-p", POLICY).exit_code == 5        # alice herself may not list
    cluster.clear_log()
    result = kyrec(cluster, tmp_path, "diff", "-p", POLICY, "--as", "bob", "--as-group", "team", "--as-group", "ops")
    assert result.exit_code == 1, result.stderr
    req = cluster.requests()[-1]
    assert req.headers["impersonate-user"] == "bob" and req.header_values("Impersonate-Group") == ["team", "ops"]


def test_a_refused_impersonation_ends_the_run_with_one_line(cluster: ApiServer, tmp_path: Path) -> None:
    cluster.add_user("alice", "a")
    cluster.load_rbac((ROOT / "docs" / "rbac.yaml").read_text() + _bind("kyrec-read", "alice"))
    cluster.kubeconfig(tmp_path / "kubeconfig", user="alice", token="a")
    result = kyrec(cluster, tmp_path, "diff", "-p", POLICY, "--as", "bob")
    assert result.exit_code == 5
    assert result.stderr.splitlines() == [
        'error: cannot impersonate with --as/--as-group as user "alice" (context "double"): 403 users "bob" is '
        'forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope']
    assert len(cluster.requests()) == 1                 # the first request says it all: nothing more is sent


def test_as_group_without_as_is_a_usage_error(cluster: ApiServer, tmp_path: Path) -> None:
    result = kyrec(cluster, tmp_path, "diff", "-p", POLICY, "--as-group", "devs")
    assert result.exit_code == 2
    assert "--as-group needs --as" in result.stderr and cluster.requests() == []


def test_offline_runs_never_import_the_kubernetes_client(tmp_path: Path) -> None:
    import subprocess
    import sys

    case = ROOT / "testdata" / "diff" / "trigger-gone"
    script = ("import sys\nfrom kubectl_kyrec.cli.main import cli\n"
              "try:\n    cli(['diff', '-p', sys.argv[1], '--state', sys.argv[2]], prog_name='kubectl-kyrec')\n"
              "except SystemExit:\n    pass\n"
              "sys.stderr.write('IMPORTED ' + str(any(m.split('.')[0] in ('kubernetes', 'urllib3') "
              "for m in sys.modules)) + '\\n')\n")
    done = subprocess.run([sys.executable, "-c", script, str(case / "policy.yaml"), str(case / "state.yaml")],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "IMPORTED False" in done.stderr, done.stderr


CLASSIC_NETPOL = """apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: netpol
  creationTimestamp: "2026-01-01T00:00:00Z"
spec:
  rules:
  - name: deny-all
    match:
      any:
      - resources:
          kinds: [Namespace]
          names: ["team-*"]
    generate:
      apiVersion: networking.k8s.io/v1
      kind: NetworkPolicy
      name: deny-all
      namespace: "{{request.object.metadata.name}}"
      synchronize: true
      data:
        spec:
          podSelector: {}
          policyTypes: [Ingress]
"""


def test_a_classic_generate_target_kind_is_read_in_full(cluster: ApiServer, tmp_path: Path) -> None:
    # an unowned NetworkPolicy in the way in team-a: only a full LIST of NetworkPolicies shows it (the
    # selector-narrowed search for owned downstreams cannot), so diff must not call it missing and apply
    # must be able to create the one in team-b (it refuses creates of kinds it did not list)
    cluster.seed({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                  "metadata": {"name": "deny-all", "namespace": "team-a"},
                  "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}})
    policy = tmp_path / "netpol.yaml"
    policy.write_text(CLASSIC_NETPOL)
    result = kyrec(cluster, tmp_path, "diff", "-p", str(policy), "-o", "json")
    assert changes(result) == {("team-a", "deny-all"): "conflict/kyverno-would-overwrite",
                               ("team-b", "deny-all"): "missing"}
    lists = [r for r in cluster.requests("GET", "networkpolicies") if not r.query.get("labelSelector")]
    assert [r.path for r in lists] == ["/apis/networking.k8s.io/v1/networkpolicies"]
    applied = kyrec(cluster, tmp_path, "apply", "-p", str(policy), "--yes", "-o", "json")
    assert applied.exit_code == 0, applied.stdout
    assert [r.path for r in cluster.writes()] == ["/apis/networking.k8s.io/v1/namespaces/team-b/networkpolicies/"
                                                  "deny-all"]


def test_a_type_removed_since_discovery_was_cached_is_rediscovered_not_fatal(cluster: ApiServer,
                                                                             tmp_path: Path) -> None:
    assert kyrec(cluster, tmp_path, "diff", "-p", POLICY).exit_code == 1      # discovery cached
    # openreports uninstalled: its LISTs now answer 404 (the type is not served), the cache says it is
    cluster.catalogue.types = [t for t in cluster.catalogue.types if t.group != "openreports.io"]
    cluster.clear_log()
    result = kyrec(cluster, tmp_path, "diff", "-p", POLICY, "-o", "json")
    assert result.exit_code == 1, result.stderr
    assert changes(result) == {("team-a", "base"): "missing", ("team-b", "base"): "missing"}
    failed = [r.path for r in cluster.requests() if r.status == 404]
    assert failed and all("openreports.io" in p for p in failed)
    assert [r.path for r in cluster.requests() if r.path in ("/api", "/apis")] == ["/api", "/apis"]
    assert not [r for r in cluster.requests() if "openreports.io" in r.path and r.status != 404]
    cluster.clear_log()
    assert kyrec(cluster, tmp_path, "diff", "-p", POLICY).exit_code == 1      # the refreshed cache serves
    assert [r for r in cluster.requests() if r.path in ("/api", "/apis") or r.status == 404] == []


def test_a_404_from_a_fresh_discovery_is_still_a_cluster_error(cluster: ApiServer, tmp_path: Path) -> None:
    cluster.inject("/apis/openreports.io/v1alpha1/reports$", status=404, times=None)
    result = kyrec(cluster, tmp_path, "diff", "-p", POLICY)
    assert result.exit_code == 5
    assert "error: list reports.openreports.io: 404" in result.stderr
    assert [r.path for r in cluster.requests() if r.path in ("/api", "/apis")] == ["/api", "/apis"]


def test_the_documented_apply_role_can_correct_a_classic_rule_by_update(cluster: ApiServer, tmp_path: Path) -> None:
    # a classic rule without useServerSideApply is corrected as Kyverno does it, by a PUT: the role needs
    # `update` beside `patch`
    policy = tmp_path / "netpol.yaml"
    policy.write_text(CLASSIC_NETPOL)
    assert kyrec(cluster, tmp_path, "apply", "-p", str(policy), "--yes").exit_code == 0
    cluster.store.mutate("networking.k8s.io/v1", "NetworkPolicy", "team-a", "deny-all",
                         lambda o: o["spec"].update(policyTypes=["Egress"]))
    cluster.load_rbac((ROOT / "docs" / "rbac.yaml").read_text() + _bind("kyrec-apply", "fixer"))
    cluster.add_user("fixer", "f")
    cluster.kubeconfig(tmp_path / "kubeconfig", user="fixer", token="f")
    cluster.clear_log()
    result = kyrec(cluster, tmp_path, "apply", "-p", str(policy), "--yes", "-o", "json")
    assert result.exit_code == 0, result.stdout
    [write] = cluster.writes()
    assert (write.method, write.status) == ("PUT", 200)
    assert kyrec(cluster, tmp_path, "diff", "-p", str(policy)).exit_code == 0


def test_a_reapply_never_takes_over_an_object_disowned_after_the_read(cluster: ApiServer, tmp_path: Path) -> None:
    import datetime

    from kubectl_kyrec.cluster.connection import ConnectionOptions
    from kubectl_kyrec.cluster.live_source import LiveSource
    from kubectl_kyrec.cluster.writer import execute
    from kubectl_kyrec.load.run_inputs.sources import FileSource
    from kubectl_kyrec.reconcile.plan import PlanOptions
    from kubectl_kyrec.run.apply import ApplyRunOptions, compute_plan

    policy = _ssa_policy(tmp_path)
    kyrec(cluster, tmp_path, "apply", "-p", policy, "--yes")
    cluster.store.mutate("v1", "ConfigMap", "team-b", "base", lambda o: o["data"].update(a="drift"))
    source = LiveSource(FileSource(policy_paths=(policy,)), ConnectionOptions(kubeconfig=str(tmp_path / "kubeconfig")),
                        cache_dir=tmp_path / "cache")
    now = datetime.datetime.now(datetime.timezone.utc)
    result = compute_plan(ApplyRunOptions(now=now, plan=PlanOptions()), source)
    [reapply] = result.plan.writes
    assert (reapply.action, reapply.object.namespace) == ("apply", "team-b")
    read_rv = owned(cluster, "team-b")["metadata"]["resourceVersion"]
    assert reapply.body is not None and reapply.body["metadata"]["resourceVersion"] == read_rv

    def disown(obj: dict[str, Any]) -> None:      # someone takes the object over between read and write
        obj["metadata"]["labels"] = {"owner": "team-b"}
        obj["data"] = {"a": "mine"}

    cluster.store.mutate("v1", "ConfigMap", "team-b", "base", disown)
    client, found = source.open()
    [outcome] = execute(client, result.plan, resolve_kind=found.find)
    assert outcome.status == "failed" and outcome.http_status == 409
    assert outcome.message.startswith("changed since it was read, not applied (not retried): Operation cannot be "
                                      'fulfilled on configmaps "base": the object has been modified')
    after = owned(cluster, "team-b")
    assert after["data"] == {"a": "mine"} and after["metadata"]["labels"] == {"owner": "team-b"}
    # read again, it is a conflict and is left alone
    assert changes(kyrec(cluster, tmp_path, "diff", "-p", policy, "-o", "json"))[("team-b", "base")] == \
        "conflict/unowned"


def test_all_namespaces_wins_over_a_namespace_as_in_kubectl(cluster: ApiServer, tmp_path: Path) -> None:
    assert changes(kyrec(cluster, tmp_path, "diff", "-p", POLICY, "-n", "team-a", "-o", "json")) == {
        ("team-a", "base"): "missing"}
    assert changes(kyrec(cluster, tmp_path, "diff", "-p", POLICY, "-n", "team-a", "-A", "-o", "json")) == {
        ("team-a", "base"): "missing", ("team-b", "base"): "missing"}


def test_refused_searches_for_owned_downstreams_are_one_notice(cluster: ApiServer, tmp_path: Path) -> None:
    # a narrow read-only role refuses the selector-narrowed search of many kinds: said once, not per kind
    for resource in ("deployments", "daemonsets", "statefulsets"):
        cluster.inject(rf"^/apis/apps/v1/{resource}$", status=403, times=None)
    result = kyrec(cluster, tmp_path, "diff", "-p", POLICY)
    lines = [line for line in result.stderr.splitlines() if "not searched" in line]
    assert len(lines) == 1, result.stderr
    assert "owned downstreams of 3 kind(s) not searched (DaemonSet, Deployment, StatefulSet): " in lines[0]
