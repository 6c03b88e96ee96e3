"""What only the real kube-apiserver can show: field-manager conflicts with kubectl itself, Kyverno's CRDs
pruning and validating what kyrec writes, real 422s on dryRun=All, real RBAC (the documented roles, a 403 on
one kind), a paginated LIST at one revision, discovery of the installed CRDs."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.realapi.fixture import CRDS, RealServer, kubectl_env, plural_path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "cluster" / "data"
NOW = ["--now", "2026-12-01T00:00:00Z"]


def kyrec(server: RealServer, tmp_path: Path, *args: str, context: str = "admin") -> Result:
    env = {"KUBECONFIG": str(server.kubeconfig), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    if args and args[0] == "apply" and "--reports" not in args:
        # the server is shared by the session: other tests' reports would turn apply's report domain on
        # (as in a cluster that holds reports) and add their findings to these tests' outcomes
        args = ("apply", "--downstreams", *args[1:])
    return CliRunner().invoke(cli, [*args, "--context", context], env=env)


def kubectl(kubectl_path: str, server: RealServer, tmp_path: Path, *args: str,
            stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([kubectl_path, *args], input=stdin, capture_output=True, text=True, timeout=120,
                          env=kubectl_env(server.kubeconfig, tmp_path / "kubectl-home"))


def gpol(server: RealServer, tmp_path: Path, prefix: str, *, ssa: bool = False) -> tuple[str, list[str]]:
    """The configmap GeneratingPolicy for two fresh namespaces of its own prefix: (policy file, namespaces).
    `ssa`: with useServerSideApply, whose drift Kyverno corrects by a forced apply (without, by a PUT)."""
    name, pre = server.unique("base-config"), server.unique(prefix)
    text = (DATA / "gpol-configmap.yaml").read_text().replace("name: base-config", f"name: {name}")
    if ssa:
        text = text.replace("spec:\n", "spec:\n  useServerSideApply: true\n", 1)
    text = text.replace('startsWith("team-")', f'startsWith("{pre}-")')
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    namespaces = [f"{pre}-a", f"{pre}-b"]
    server.seed(*({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in namespaces))
    return str(path), namespaces


def cm(server: RealServer, ns: str, name: str = "base") -> Any:
    return server.kube.get(plural_path("v1", "configmaps", ns, name))


def owners(obj: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    return {m["manager"]: (m["operation"], m["fieldsV1"]) for m in obj["metadata"]["managedFields"]}


# ---- server-side apply with a real foreign manager -------------------------------------------------------------

def test_a_field_taken_by_kubectl_is_a_conflict_without_force_and_is_taken_back_with_it(
        realapi: RealServer, kubectl_path: str, tmp_path: Path) -> None:
    policy, [a, _] = gpol(realapi, tmp_path, "ssa", ssa=True)
    assert kyrec(realapi, tmp_path, "apply", "-p", policy, "--yes").exit_code == 0
    manifest = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: base, namespace: {a}}}\ndata: {{a: argo}}\n"
    # kubectl's own apply refuses too, naming kyrec's manager: the field is kyverno-generate's
    refused = kubectl(kubectl_path, realapi, tmp_path, "apply", "--server-side", "--field-manager=argocd",
                      "-f", "-", stdin=manifest)
    assert refused.returncode == 1 and 'conflict with "kyverno-generate"' in refused.stderr, refused.stderr
    taken = kubectl(kubectl_path, realapi, tmp_path, "apply", "--server-side", "--field-manager=argocd",
                    "--force-conflicts", "-f", "-", stdin=manifest)
    assert taken.returncode == 0, taken.stderr
    assert owners(cm(realapi, a))["argocd"] == ("Apply", {"f:data": {"f:a": {}}})
    diff = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, "-o", "json")
    assert diff.exit_code == 1
    [change] = [c for c in json.loads(diff.stdout)["changes"] if c["object"]["namespace"] == a]
    assert (change["class"], change["reason"]) == ("drifted", "changed-fields")
    no_force = kyrec(realapi, tmp_path, "apply", "-p", policy, "--yes", "--no-force", "-o", "json")
    assert no_force.exit_code == 4
    [failed] = [o for o in json.loads(no_force.stdout)["outcomes"] if o["status"] == "failed"]
    assert failed["httpStatus"] == 409 and failed["conflicts"] == [{"manager": "argocd", "field": ".data.a"}]
    assert 'field manager conflict: .data.a owned by "argocd"' in failed["message"]
    assert cm(realapi, a)["data"] == {"a": "argo"}
    forced = kyrec(realapi, tmp_path, "apply", "-p", policy, "--yes", "-o", "json")
    assert forced.exit_code == 0, forced.stdout
    after = cm(realapi, a)
    assert after["data"] == {"a": "1"}
    # argocd's apply owned only data.a: forced away, its entry goes
    assert set(owners(after)) == {"kyverno-generate"}
    # and kubectl, asked again without force, now conflicts with kyrec's manager once more
    again = kubectl(kubectl_path, realapi, tmp_path, "apply", "--server-side", "--field-manager=argocd",
                    "-f", "-", stdin=manifest)
    assert again.returncode == 1 and 'conflict with "kyverno-generate"' in again.stderr


def test_a_label_added_by_kubectl_survives_a_server_side_apply_policy(realapi: RealServer, kubectl_path: str,
                                                                        tmp_path: Path) -> None:
    policy, [a, _] = gpol(realapi, tmp_path, "label", ssa=True)
    assert kyrec(realapi, tmp_path, "apply", "-p", policy, "--yes").exit_code == 0
    done = kubectl(kubectl_path, realapi, tmp_path, "-n", a, "label", "configmap", "base", "extra=yes")
    assert done.returncode == 0, done.stderr
    labelled = cm(realapi, a)
    assert owners(labelled)["kubectl-label"][0] == "Update"
    diff = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, "-o", "json")
    [change] = [c for c in json.loads(diff.stdout)["changes"] if c["object"]["namespace"] == a]
    # a field kyrec does not set is not its to take: in sync or foreign drift, never a write that removes it
    applied = kyrec(realapi, tmp_path, "apply", "-p", policy, "--yes", "-o", "json")
    assert applied.exit_code == 0, applied.stdout
    after = cm(realapi, a)
    assert after["metadata"]["labels"]["extra"] == "yes", change
    assert owners(after)["kubectl-label"][0] == "Update"


def test_a_label_added_by_kubectl_is_removed_as_kyverno_removes_it(realapi: RealServer, kubectl_path: str,
                                                                    tmp_path: Path) -> None:
    # without useServerSideApply Kyverno rewrites an owned downstream by an Update of the whole object: the
    # label is foreign-fields drift, the PUT removes it and Kubernetes drops kubectl-label's entry; then
    # diff is clean and a second apply writes nothing
    policy, [a, _] = gpol(realapi, tmp_path, "put")
    assert kyrec(realapi, tmp_path, "apply", "-p", policy, "--yes").exit_code == 0
    assert kubectl(kubectl_path, realapi, tmp_path, "-n", a, "label", "configmap", "base", "extra=yes").returncode == 0
    diff = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, "-o", "json")
    [change] = [c for c in json.loads(diff.stdout)["changes"] if c["object"]["namespace"] == a]
    assert (change["class"], change["reason"]) == ("drifted", "foreign-fields")
    applied = kyrec(realapi, tmp_path, "apply", "--downstreams", "-p", policy, "--yes", "-o", "json")
    assert applied.exit_code == 0, applied.stdout
    [written] = [o for o in json.loads(applied.stdout)["outcomes"] if o["action"] != "skip"]
    assert (written["action"], written["status"], written["httpStatus"]) == ("update", "done", 200)
    after = cm(realapi, a)
    assert "extra" not in after["metadata"]["labels"] and "kubectl-label" not in owners(after)
    assert kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy).exit_code == 0
    again = kyrec(realapi, tmp_path, "apply", "--downstreams", "-p", policy, "--yes", "-o", "json")
    assert json.loads(again.stdout)["summary"]["done"] == 0


# ---- what the CRDs' schemas do to what kyrec writes ---------------------------------------------------------

def test_the_policy_report_schema_prunes_unknown_fields_on_create_and_refuses_them_on_apply(
        realapi: RealServer) -> None:
    # the premise of the report tests: the installed CRD is structural (a real cluster with Kyverno). A create
    # (kyrec POSTs missing reports) drops what the schema does not declare, with a warning; a server-side
    # apply cannot even build its typed patch and answers 500 (kyrec writes downstreams that way)
    ns = realapi.namespace("prune")
    report: dict[str, Any] = {"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
              "metadata": {"name": "r", "namespace": ns}, "results": [], "bogus": {"x": 1},
              "summary": {"pass": 0, "fail": 0}}
    created = realapi.kube.request("POST", plural_path("wgpolicyk8s.io/v1alpha2", "policyreports", ns), report)
    assert created.status == 201, created
    stored = created.json()
    assert "bogus" not in stored and stored["summary"] == {"pass": 0, "fail": 0}
    assert created.warnings == ['unknown field "bogus"']
    report["metadata"]["name"] = "s"
    applied = realapi.kube.apply(plural_path("wgpolicyk8s.io/v1alpha2", "policyreports", ns, "s"), report, "test")
    assert applied.status == 500
    assert applied.json()["message"] == (f"failed to create typed patch object ({ns}/s; wgpolicyk8s.io/v1alpha2, "
                                         "Kind=PolicyReport): .bogus: field not declared in schema")


def test_kyrecs_reports_read_back_unpruned(realapi: RealServer, tmp_path: Path) -> None:
    # `eval -o reports` prints the PolicyReports Kyverno would write; stored as they are, the server must
    # keep every field (anything pruned would read back as a stale report on the next diff)
    ns = realapi.namespace("evalreports")
    realapi.seed({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "good", "namespace": ns,
                                                                       "labels": {"team": "a"}}},
                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad", "namespace": ns}})
    result = kyrec(realapi, tmp_path, "eval", "--live", "-p", str(DATA / "vpol-team-label.yaml"), "-n", ns, *NOW,
                   "-o", "reports")
    assert result.exit_code == 1, result.stderr
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    reports = [i for d in docs for i in (d.get("items") if d.get("kind", "").endswith("List") else [d])]
    assert {r["kind"] for r in reports} == {"PolicyReport"} and len(reports) == 2
    for report in reports:
        meta = report["metadata"]
        path = plural_path(report["apiVersion"], "policyreports", meta["namespace"], meta["name"])
        answer = realapi.kube.apply(path, report, "kyrec-test")
        assert answer.status == 201, answer
        stored = answer.json()
        for key in ("metadata", "apiVersion", "kind"):
            stored.pop(key), report.pop(key)
        assert stored == report


def test_server_dry_run_shows_the_servers_422_and_creates_nothing(realapi: RealServer, tmp_path: Path) -> None:
    policy, [a, b] = gpol(realapi, tmp_path, "invalid")
    text = Path(policy).read_text().replace('dyn({"a": "1"})', 'dyn({"not a key!": "1"})')
    Path(policy).write_text(text)
    result = kyrec(realapi, tmp_path, "apply", "-p", policy, "--dry-run=server", "-o", "json")
    assert result.exit_code == 4, result.stdout
    outcomes = json.loads(result.stdout)["outcomes"]
    assert {(o["status"], o["httpStatus"]) for o in outcomes} == {("failed", 422)}
    for o in outcomes:
        assert 'ConfigMap "base" is invalid: data[not a key!]: Invalid value: "not a key!"' in o["message"], o
    assert cm(realapi, a) is None and cm(realapi, b) is None


# ---- deletes: preconditions on uid ------------------------------------------------------------------------------

def test_prune_of_an_object_recreated_after_the_read_names_the_uid(realapi: RealServer, tmp_path: Path) -> None:
    import datetime

    from kubectl_kyrec.cluster.connection import ConnectionOptions
    from kubectl_kyrec.cluster.live_source import LiveSource
    from kubectl_kyrec.cluster.writer import execute
    from kubectl_kyrec.load.run_inputs.sources import FileSource
    from kubectl_kyrec.reconcile.plan import PlanOptions
    from kubectl_kyrec.run.apply import ApplyRunOptions, compute_plan

    policy, [a, b] = gpol(realapi, tmp_path, "recreated")
    kyrec(realapi, tmp_path, "apply", "-p", policy, "--yes")
    narrowed = tmp_path / "narrowed.yaml"
    narrowed.write_text(Path(policy).read_text().replace(f'.startsWith("{a[:-2]}-")', f' == "{a}"'))
    source = LiveSource(FileSource(policy_paths=(str(narrowed),)),
                        ConnectionOptions(kubeconfig=str(realapi.kubeconfig)), cache_dir=tmp_path / "cache")
    options = ApplyRunOptions(now=datetime.datetime.now(datetime.UTC), plan=PlanOptions(prune=True),
                              only_downstreams=True)
    plan = compute_plan(options, source).plan
    [delete] = plan.writes
    assert delete.object.namespace == b
    # deleted and made again by someone else (same name and labels, a new uid) between the read and the write
    old = cm(realapi, b)
    assert realapi.kube.delete(plural_path("v1", "configmaps", b, "base")).status == 200
    old["metadata"] = {k: old["metadata"][k] for k in ("name", "namespace", "labels")}
    assert realapi.kube.request("POST", plural_path("v1", "configmaps", b), old).status == 201
    client, found = source.open()
    [outcome] = execute(client, plan, resolve_kind=found.find)
    assert outcome.status == "failed" and outcome.http_status == 409
    assert "the UID in the precondition" in outcome.message and "might have been deleted and then recreated" in \
        outcome.message
    assert cm(realapi, b) is not None


# ---- RBAC -------------------------------------------------------------------------------------------------------

@pytest.fixture()
def bind(realapi: RealServer) -> Iterator[Any]:
    """Bind a ClusterRole to the restricted user's group for one test; the bindings go at its end (they are
    cluster-wide and the restricted user is shared by the session)."""
    made: list[str] = []

    def grant(role: str) -> None:
        name = realapi.unique(f"restricted-{role}")
        realapi.seed({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                      "metadata": {"name": name},
                      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                      "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                    "name": "restricted-users"}]})
        made.append(name)

    yield grant
    for name in made:
        realapi.kube.delete(plural_path("rbac.authorization.k8s.io/v1", "clusterrolebindings", "", name))


def _documented_roles(realapi: RealServer) -> None:
    # docs/rbac.yaml as a user installs it (idempotent: the same apply every test); its Role for Kyverno's
    # ConfigMap lives in Kyverno's namespace, which a cluster with Kyverno has
    realapi.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kyverno"}})
    realapi.seed(*[d for d in yaml.safe_load_all((ROOT / "docs" / "rbac.yaml").read_text()) if d])


def test_the_documented_roles_suffice_on_a_real_rbac_authorizer(realapi: RealServer, bind: Any,
                                                                 tmp_path: Path) -> None:
    policy, [a, b] = gpol(realapi, tmp_path, "rbac")
    _documented_roles(realapi)
    nothing = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, context="restricted")
    assert nothing.exit_code == 5 and "forbidden" in nothing.stderr
    bind("kyrec-read")
    assert kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, context="restricted").exit_code == 1
    denied = kyrec(realapi, tmp_path, "apply", "-p", policy, "--yes", "-o", "json", context="restricted")
    assert denied.exit_code == 4
    assert {o["httpStatus"] for o in json.loads(denied.stdout)["outcomes"]} == {403}
    assert cm(realapi, a) is None
    bind("kyrec-apply")
    applied = kyrec(realapi, tmp_path, "apply", "-p", policy, "--yes", context="restricted")
    assert applied.exit_code == 0, applied.stdout
    assert cm(realapi, a)["data"] == {"a": "1"} and cm(realapi, b)["data"] == {"a": "1"}
    clean = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, context="restricted")
    assert clean.exit_code == 0, clean.stdout + clean.stderr


def test_a_403_on_one_kind_is_reported_and_nothing_is_guessed(realapi: RealServer, bind: Any, tmp_path: Path) -> None:
    # read everything but Secrets: the Secret-triggered downstream's trigger is unknown, not gone
    role = realapi.unique("read-no-secrets")
    groups = ["", "apps", "batch", "networking.k8s.io", "rbac.authorization.k8s.io", "policies.kyverno.io",
              "kyverno.io", "wgpolicyk8s.io", "reports.kyverno.io", "admissionregistration.k8s.io",
              "apiextensions.k8s.io"]
    core = ["namespaces", "configmaps", "pods", "services", "serviceaccounts", "limitranges", "resourcequotas",
            "persistentvolumeclaims", "replicationcontrollers", "endpoints", "events", "nodes", "podtemplates",
            "persistentvolumes"]
    realapi.seed({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role},
                  "rules": [{"apiGroups": [""], "resources": core, "verbs": ["get", "list"]},
                            {"apiGroups": [g for g in groups if g], "resources": ["*"], "verbs": ["get", "list"]}]})
    bind(role)
    secret = realapi.unique("only")
    text = (DATA / "gpol-secret-trigger.yaml").read_text()
    name = realapi.unique("secret-index")
    policy = tmp_path / "secret.yaml"
    policy.write_text(text.replace("name: secret-index", f"name: {name}"))
    realapi.seed({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret, "namespace": "default"},
                  "data": {"k": "dg=="}})
    assert kyrec(realapi, tmp_path, "apply", "-p", str(policy), "--yes").exit_code == 0
    assert cm(realapi, "default", f"index-{secret}") is not None
    realapi.kube.delete(plural_path("v1", "secrets", "default", secret))
    gone = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", str(policy), "-o", "json")
    mine = {c["object"]["name"]: f"{c['class']}/{c['reason']}" for c in json.loads(gone.stdout)["changes"]
            if c["object"]["name"] == f"index-{secret}"}
    assert mine == {f"index-{secret}": "orphan/trigger-gone"}
    unknown = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", str(policy), "-o", "json", context="restricted")
    assert unknown.exit_code == 5, unknown.stderr
    assert "error: forbidden: cannot list secrets cluster-wide" in unknown.stderr
    assert 'cannot list secrets cluster-wide as user "restricted"' in unknown.stderr
    mine = {c["object"]["name"]: f"{c['class']}/{c['reason']}" for c in json.loads(unknown.stdout)["changes"]
            if c["object"]["name"] == f"index-{secret}"}
    # the trigger's kind could not be read: nothing is known of it, and the finding says which read failed
    assert mine == {f"index-{secret}": "undetermined/read-failed"}
    refused = kyrec(realapi, tmp_path, "apply", "-p", str(policy), "--yes", "--prune", context="restricted")
    assert refused.exit_code == 5
    assert cm(realapi, "default", f"index-{secret}") is not None


# ---- LIST and discovery ------------------------------------------------------------------------------------------

def test_pagination_with_limit_2_reads_one_revision(realapi: RealServer) -> None:
    from kubectl_kyrec.cluster.client import connect
    from kubectl_kyrec.cluster.connection import ConnectionOptions
    from kubectl_kyrec.cluster.lister import ListRequest, list_all
    from kubectl_kyrec.load.run_inputs.kinds import ResourceInfo

    ns = realapi.namespace("pages")
    names = [f"cm-{i:03d}" for i in range(300)]
    realapi.seed(*({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "namespace": ns}}
                   for n in names))
    client = connect(ConnectionOptions(kubeconfig=str(realapi.kubeconfig)))
    seen: list[str] = []

    def meanwhile(message: str) -> None:
        seen.append(message)
        if len(seen) == 10:          # after page 10: one object removed ahead, one added
            assert realapi.kube.delete(plural_path("v1", "configmaps", ns, "cm-299")).status == 200
            added = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-300", "namespace": ns}}
            assert realapi.kube.request("POST", plural_path("v1", "configmaps", ns), added).status == 201

    info = ResourceInfo("", "v1", "ConfigMap", "configmaps", True)
    outcome = list_all(client, ListRequest(info, namespace=ns), page_size=2, progress=meanwhile)
    assert outcome.ok and outcome.pages == 150
    # every page after the first is read at the first page's revision: the list is the namespace as it was
    assert [i["metadata"]["name"] for i in outcome.items] == names
    assert all(i["kind"] == "ConfigMap" and i["apiVersion"] == "v1" for i in outcome.items)
    assert seen[0] == f"listing configmaps in {ns}: 2, 298 to go"
    fresh = list_all(client, ListRequest(info, namespace=ns), page_size=2)
    assert [i["metadata"]["name"] for i in fresh.items] == [*names[:-1], "cm-300"]


def test_discovery_finds_every_installed_kyverno_kind(realapi: RealServer, tmp_path: Path) -> None:
    from kubectl_kyrec.cluster.client import connect
    from kubectl_kyrec.cluster.connection import ConnectionOptions
    from kubectl_kyrec.cluster.discovery import discover

    found = discover(connect(ConnectionOptions(kubeconfig=str(realapi.kubeconfig))), cache_dir=tmp_path)
    expected = 0
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # 5.6 MB of YAML
        spec = crd["spec"]
        for version in spec["versions"]:
            if not version.get("served"):
                continue
            expected += 1
            info = found.find(f"{spec['group']}/{version['name']}", spec["names"]["kind"])
            assert info is not None, (path.name, version["name"])
            assert info.resource == spec["names"]["plural"]
            assert info.singular == spec["names"]["singular"]
            assert info.short_names == tuple(spec["names"].get("shortNames") or ())
            assert info.namespaced == (spec["scope"] == "Namespaced")
            assert ("status" in info.subresources) == ("status" in (version.get("subresources") or {}))
        # the version kyrec reads a kind at when a policy names only its group (preferred, else served)
        preferred = found.preferred_for(spec["group"], spec["names"]["kind"])
        assert preferred is not None
        assert preferred.version in {v["name"] for v in spec["versions"] if v.get("served")}
    assert expected > 24


def test_the_mutating_policy_kinds_are_listed_as_v1_36_serves_them(realapi: RealServer, tmp_path: Path) -> None:
    """eval admits manifests through the cluster's mutating policies: a live read and capture LIST them.
    kube-apiserver 1.36 serves MutatingAdmissionPolicy (GA) at admissionregistration.k8s.io/v1 by default and
    no longer at v1beta1 or v1alpha1; Kyverno's CRDs serve the (Namespaced)MutatingPolicies."""
    from kubectl_kyrec.cluster.client import connect
    from kubectl_kyrec.cluster.connection import ConnectionOptions
    from kubectl_kyrec.cluster.discovery import discover

    found = discover(connect(ConnectionOptions(kubeconfig=str(realapi.kubeconfig))), cache_dir=tmp_path)
    for kind in ("MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"):
        assert [i.version for i in found.resources if i.kind == kind] == ["v1"]
    name, label = realapi.unique("mut"), realapi.unique("mut-ns")
    # matched to namespaces of a label no other test sets: the session's other live runs are not changed
    match = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                "resources": ["configmaps"]}],
             "namespaceSelector": {"matchLabels": {label: "yes"}}}
    mutation = {"patchType": "ApplyConfiguration", "applyConfiguration": {
        "expression": 'Object{metadata: Object.metadata{labels: {"mutated": "yes"}}}'}}
    docs = [{"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": name},
             "spec": {"matchConstraints": match, "mutations": [mutation]}},
            {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
             "metadata": {"name": name}, "spec": {"matchConstraints": match, "failurePolicy": "Fail",
                                                  "reinvocationPolicy": "Never", "mutations": [mutation]}},
            {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
             "metadata": {"name": name}, "spec": {"policyName": name}}]
    realapi.seed(*docs)
    try:
        result = kyrec(realapi, tmp_path, "capture", "-o", f"json={tmp_path / 'state.json'}")
        assert result.exit_code == 0, result.output
        items = json.loads((tmp_path / "state.json").read_text())["items"]
        assert {(o["apiVersion"], o["kind"]) for o in items if o["metadata"]["name"] == name} == {
            ("policies.kyverno.io/v1", "MutatingPolicy"),
            ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy"),
            ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicyBinding")}
    finally:
        for path in (plural_path("admissionregistration.k8s.io/v1", "mutatingadmissionpolicybindings", name=name),
                     plural_path("admissionregistration.k8s.io/v1", "mutatingadmissionpolicies", name=name),
                     plural_path("policies.kyverno.io/v1", "mutatingpolicies", name=name)):
            realapi.kube.delete(path)


# ---- the plugin through kubectl ---------------------------------------------------------------------------------

def test_kubectl_kyrec_apply_then_kubectl_get(realapi: RealServer, kubectl_path: str, tmp_path: Path) -> None:
    import os
    import sys

    policy, [a, b] = gpol(realapi, tmp_path, "plugin")
    shim = tmp_path / "bin" / "kubectl-kyrec"
    shim.parent.mkdir()
    shim.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                    "from kubectl_kyrec.cli.console import main\nmain()\n")
    shim.chmod(0o755)
    env = {**kubectl_env(realapi.kubeconfig, tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "PATH": f"{shim.parent}{os.pathsep}{Path(kubectl_path).parent}{os.pathsep}{os.environ.get('PATH', '')}"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([kubectl_path, *args], capture_output=True, text=True, env=env, timeout=120)

    diff = run("kyrec", "diff", "--downstreams", "-p", policy, "-o", "json")
    assert diff.returncode == 1, diff.stderr
    applied = run("kyrec", "apply", "-p", policy, "--yes", "--context", "admin")
    assert applied.returncode == 0, applied.stderr
    got = run("get", "configmap", "base", "-n", b, "-o", "json", "--show-managed-fields")
    assert got.returncode == 0, got.stderr
    obj = json.loads(got.stdout)
    assert obj["data"] == {"a": "1"} and [m["manager"] for m in obj["metadata"]["managedFields"]] == \
        ["kyverno-generate"]
    assert run("kyrec", "diff", "--downstreams", "-p", policy).returncode == 0


def test_a_generated_custom_resource_with_an_undeclared_field_fails_with_the_servers_500(
        realapi: RealServer, tmp_path: Path) -> None:
    # server-side apply cannot build a typed patch for a field the CRD's schema does not declare; kyrec says
    # what the server said, per object, and creates nothing (a create would have dropped the field silently)
    policy, [a, b] = gpol(realapi, tmp_path, "undeclared")
    text = Path(policy).read_text().replace(
        '"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"),',
        '"apiVersion": dyn("wgpolicyk8s.io/v1alpha2"), "kind": dyn("PolicyReport"), "bogus": dyn("x"),')
    Path(policy).write_text(text.replace('"data": dyn({"a": "1"})', '"results": dyn([])'))
    result = kyrec(realapi, tmp_path, "apply", "-p", policy, "--yes", "-o", "json")
    assert result.exit_code == 4, result.stdout
    outcomes = json.loads(result.stdout)["outcomes"]
    assert {(o["object"]["namespace"], o["status"], o["httpStatus"]) for o in outcomes} == {
        (a, "failed", 500), (b, "failed", 500)}
    for o in outcomes:
        ns = o["object"]["namespace"]
        assert o["message"] == (f"patch policyreports.wgpolicyk8s.io: 500 failed to create typed patch object "
                                f"({ns}/base; wgpolicyk8s.io/v1alpha2, Kind=PolicyReport): .bogus: field not "
                                "declared in schema")
        assert realapi.kube.get(plural_path("wgpolicyk8s.io/v1alpha2", "policyreports", ns, "base")) is None


def test_impersonation_reaches_the_real_authorizer(realapi: RealServer, tmp_path: Path) -> None:
    policy, _ = gpol(realapi, tmp_path, "imp")
    # admin (system:masters) may impersonate: as the restricted user, with no rights, the reads are refused
    impersonated = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, "--as", "restricted")
    assert impersonated.exit_code == 5
    assert ('error: forbidden: cannot list namespaces cluster-wide as "restricted" (impersonated); grant: '
            'apiGroups: [""], resources: ["namespaces"], verbs: ["list"]') in impersonated.stderr
    # with a group that may read everything, the same user reads
    as_group = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, "--as", "restricted",
                     "--as-group", "system:masters")
    assert as_group.exit_code == 1, as_group.stderr
    # the restricted user itself may not impersonate: one line, the server's words (1.36 words it as the
    # legacy check does, `users "admin" is forbidden: ... cannot impersonate resource "users" ...`, or, with
    # constrained impersonation, `forbidden: ... cannot impersonate-on:user-info:get path "/api"`)
    refused = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, "--as", "admin", context="restricted")
    assert refused.exit_code == 5
    [line] = refused.stderr.splitlines()
    assert line.startswith('error: cannot impersonate with --as/--as-group as user "restricted" (context '
                           '"restricted"): 403 ')
    assert 'forbidden: User "restricted" cannot impersonate' in line
    # groups without a user never leave kyrec (the server would answer 400)
    alone = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, "--as-group", "system:masters")
    assert alone.exit_code == 2 and "--as-group needs --as" in alone.stderr


def test_an_apply_that_creates_needs_create_beside_patch(realapi: RealServer, bind: Any, tmp_path: Path) -> None:
    # docs/rbac.yaml grants create for this reason; the double authorizes such an apply as patch only
    policy, [a, _] = gpol(realapi, tmp_path, "patchonly")
    role = realapi.unique("read-and-patch")
    realapi.seed({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role},
                  "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list"]},
                            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["patch"]}]})
    bind(role)
    result = kyrec(realapi, tmp_path, "apply", "-p", policy, "--yes", "-o", "json", context="restricted")
    assert result.exit_code == 4
    outcomes = json.loads(result.stdout)["outcomes"]
    assert {o["httpStatus"] for o in outcomes} == {403}
    # the verb the server checked is named, with the rule that grants it
    assert all(o["message"].startswith("forbidden: cannot create configmaps in namespace ") and
               o["message"].endswith('grant: apiGroups: [""], resources: ["configmaps"], verbs: ["create"]')
               for o in outcomes), outcomes
    assert cm(realapi, a) is None
