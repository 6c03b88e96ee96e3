"""The live commands end to end on both back-ends (the double and the real kube-apiserver): `diff`, `capture`,
`apply` (create, re-apply, take back, conflicts, prune, dry runs), `coverage` and `eval --live`, asserting on
what the server then holds (GET after apply: fields, labels, managedFields per manager) and on exit codes and
outputs. Request-log assertions stay in tests/cluster (only the double has a log); here the server's own
state is the evidence.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.realapi.backends import Backend

DATA = Path(__file__).resolve().parents[1] / "cluster" / "data"
NOW = ["--now", "2026-12-01T00:00:00Z"]


def kyrec(b: Backend, tmp_path: Path, *args: str) -> Result:
    env = {"KUBECONFIG": str(b.kubeconfig), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return CliRunner().invoke(cli, list(args), env=env)


def changes(result: Result) -> dict[tuple[str, str], str]:
    doc = json.loads(result.stdout)
    return {(c["object"]["namespace"], c["object"]["name"]): c["class"] + (f"/{c['reason']}" if c["reason"] else "")
            for c in doc["changes"] if c["domain"] == "downstream"}


class Gpol:
    """tests/cluster/data/gpol-configmap.yaml under a name of the test's own, for namespaces of its own prefix:
    on the shared real server no other test's namespace matches it and no other test's downstream is its."""

    def __init__(self, b: Backend, tmp_path: Path, *, ssa: bool = False) -> None:
        self.name = b.unique("base-config")
        self.prefix = b.unique("team")
        text = (DATA / "gpol-configmap.yaml").read_text()
        if ssa:
            # Kyverno corrects such a policy's downstreams by a forced apply (without it, by a PUT)
            text = text.replace("spec:\n", "spec:\n  useServerSideApply: true\n", 1)
        text = text.replace("name: base-config", f"name: {self.name}")
        self.text = text.replace('startsWith("team-")', f'startsWith("{self.prefix}-")')
        self.path = tmp_path / f"{self.name}.yaml"
        self.path.write_text(self.text)
        self.a, self.b = f"{self.prefix}-a", f"{self.prefix}-b"
        for ns in (self.a, self.b):
            b.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    def narrowed(self, tmp_path: Path) -> str:
        """The policy for namespace a only: b's downstream becomes an orphan to prune."""
        path = tmp_path / f"{self.name}-narrowed.yaml"
        path.write_text(self.text.replace(f'object.metadata.name.startsWith("{self.prefix}-")',
                                          f'object.metadata.name == "{self.a}"'))
        return str(path)


def base(b: Backend, ns: str) -> Any:
    return b.get("v1", "configmaps", ns, "base")


def managers(obj: dict[str, Any]) -> dict[str, tuple[str, set[str]]]:
    """manager -> (operation, the top-level paths of what it owns), from managedFields."""
    out = {}
    for entry in obj["metadata"].get("managedFields") or []:
        owned = set()
        for key, sub in (entry.get("fieldsV1") or {}).items():
            if key == "f:data":
                owned |= {f"data.{k[2:]}" for k in sub if k.startswith("f:")}
            elif key == "f:metadata":
                owned |= {f"metadata.{k[2:]}" for k in sub if k.startswith("f:")}
            else:
                owned.add(key)
        out[entry["manager"]] = (entry["operation"], owned)
    return out


# ---- diff, capture ---------------------------------------------------------------------------------------------

def test_diff_finds_missing_and_writes_nothing(backend: Backend, tmp_path: Path) -> None:
    pol = Gpol(backend, tmp_path)
    result = kyrec(backend, tmp_path, "diff", "--downstreams", "-p", str(pol.path), "-o", "json")
    assert result.exit_code == 1, result.stderr
    assert changes(result) == {(pol.a, "base"): "missing", (pol.b, "base"): "missing"}
    assert base(backend, pol.a) is None and base(backend, pol.b) is None


def test_kind_takes_the_short_names_discovery_lists(backend: Backend, tmp_path: Path) -> None:
    # kubectl's names for a kind come from discovery (shortNames, singularResource): `ns` as kubectl takes it
    pol = Gpol(backend, tmp_path)
    for name in ("ns", "namespace", "Namespace", "namespaces"):
        result = kyrec(backend, tmp_path, "diff", "--downstreams", "-p", str(pol.path), "--kind", name, "-o", "json")
        assert result.exit_code == 1, (name, result.stderr)
        assert changes(result) == {(pol.a, "base"): "missing", (pol.b, "base"): "missing"}
    unknown = kyrec(backend, tmp_path, "diff", "--downstreams", "-p", str(pol.path), "--kind", "nss")
    assert unknown.exit_code == 3 and "--kind nss: no such resource type" in unknown.stderr


def test_live_and_captured_state_give_the_same_changes(backend: Backend, tmp_path: Path) -> None:
    pol = Gpol(backend, tmp_path)
    assert kyrec(backend, tmp_path, "apply", "-p", str(pol.path), "--yes").exit_code == 0
    backend.edit("v1", "configmaps", pol.a, "base", lambda o: o["data"].update(a="edited"))
    backend.edit("v1", "configmaps", pol.b, "base", lambda o: o["data"].update(extra="x"), manager="helm")
    c = backend.namespace(f"{pol.prefix}-c")
    live = kyrec(backend, tmp_path, "diff", "--downstreams", "-p", str(pol.path), "-o", "json")
    assert live.exit_code == 1, live.stderr
    capture = kyrec(backend, tmp_path, "capture", "-p", str(pol.path), "-o", str(tmp_path / "state.json"))
    assert capture.exit_code == 0, capture.stderr
    offline = kyrec(backend, tmp_path, "diff", "--downstreams", "-p", str(pol.path),
                    "--state", str(tmp_path / "state.json"), "-o", "json")
    assert changes(live) == changes(offline) == {
        (pol.a, "base"): "drifted/changed-fields", (pol.b, "base"): "drifted/foreign-fields", (c, "base"): "missing"}
    doc = json.loads((tmp_path / "state.json").read_text())
    mine = [i for i in doc["items"] if i["kind"] == "ConfigMap" and i["metadata"]["namespace"] in (pol.a, pol.b)]
    assert len(mine) == 2 and all(i["metadata"].get("managedFields") for i in mine)


# ---- apply -----------------------------------------------------------------------------------------------------

def test_apply_creates_as_kyverno_generate_and_a_second_run_changes_nothing(backend: Backend, tmp_path: Path) -> None:
    pol = Gpol(backend, tmp_path)
    result = kyrec(backend, tmp_path, "apply", "-p", str(pol.path), "--yes", "-o", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["summary"]["done"] == 2
    assert {o["httpStatus"] for o in doc["outcomes"]} == {201}          # SSA that creates answers 201
    for ns in (pol.a, pol.b):
        obj = base(backend, ns)
        assert obj["data"] == {"a": "1"}
        labels = obj["metadata"]["labels"]
        assert labels["generate.kyverno.io/policy-name"] == pol.name
        assert labels["generate.kyverno.io/trigger-name"] == ns
        assert managers(obj) == {"kyverno-generate": ("Apply", {"data.a", "metadata.labels"})}
    versions = {ns: base(backend, ns)["metadata"]["resourceVersion"] for ns in (pol.a, pol.b)}
    again = kyrec(backend, tmp_path, "apply", "-p", str(pol.path), "--yes", "-o", "json")
    assert again.exit_code == 0
    assert json.loads(again.stdout)["summary"]["done"] == 0
    assert {ns: base(backend, ns)["metadata"]["resourceVersion"] for ns in (pol.a, pol.b)} == versions
    assert kyrec(backend, tmp_path, "diff", "--downstreams", "-p", str(pol.path)).exit_code == 0


def test_apply_takes_fields_back_with_force_and_reports_conflicts_without(backend: Backend, tmp_path: Path) -> None:
    pol = Gpol(backend, tmp_path, ssa=True)
    kyrec(backend, tmp_path, "apply", "-p", str(pol.path), "--yes")
    backend.edit("v1", "configmaps", pol.a, "base", lambda o: o["data"].update(a="edited"))
    edited = managers(base(backend, pol.a))
    assert edited["kubectl-edit"] == ("Update", {"data.a"})
    assert edited["kyverno-generate"] == ("Apply", {"metadata.labels"})     # the Update took data.a over
    refused = kyrec(backend, tmp_path, "apply", "-p", str(pol.path), "--yes", "--no-force",
                    "--field-manager", "kyrec", "-o", "json")
    assert refused.exit_code == 4
    [outcome] = [o for o in json.loads(refused.stdout)["outcomes"] if o["action"] != "skip"]
    assert outcome["status"] == "failed" and outcome["httpStatus"] == 409
    assert outcome["conflicts"] == [{"manager": "kubectl-edit", "field": ".data.a"}], outcome
    assert base(backend, pol.a)["data"]["a"] == "edited"
    forced = kyrec(backend, tmp_path, "apply", "-p", str(pol.path), "--yes")
    assert forced.exit_code == 0, forced.stdout
    after = base(backend, pol.a)
    assert after["data"] == {"a": "1"}
    # force moves the field back; the editor, left owning nothing, is dropped from managedFields
    assert managers(after) == {"kyverno-generate": ("Apply", {"data.a", "metadata.labels"})}


def test_apply_never_touches_an_unowned_object(backend: Backend, tmp_path: Path) -> None:
    pol = Gpol(backend, tmp_path)
    backend.seed({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "base", "namespace": pol.b},
                  "data": {"mine": "yes"}})
    before = base(backend, pol.b)
    result = kyrec(backend, tmp_path, "apply", "-p", str(pol.path), "--yes", "-o", "json")
    assert result.exit_code == 0
    outcomes = {o["object"]["namespace"]: o for o in json.loads(result.stdout)["outcomes"]}
    assert outcomes[pol.b]["action"] == "skip" and outcomes[pol.b]["class"] == "conflict"
    assert base(backend, pol.b) == before
    assert base(backend, pol.a)["data"] == {"a": "1"}


def test_prune_deletes_and_only_with_prune(backend: Backend, tmp_path: Path) -> None:
    pol = Gpol(backend, tmp_path)
    kyrec(backend, tmp_path, "apply", "-p", str(pol.path), "--yes")
    narrowed = pol.narrowed(tmp_path)
    without = kyrec(backend, tmp_path, "apply", "-p", narrowed, "--yes", "-o", "json")
    assert without.exit_code == 0
    [skipped] = [o for o in json.loads(without.stdout)["outcomes"] if o["class"] == "orphan"]
    assert skipped["status"] == "refused" and base(backend, pol.b) is not None
    pruned = kyrec(backend, tmp_path, "apply", "-p", narrowed, "--yes", "--prune", "-o", "json")
    assert pruned.exit_code == 0, pruned.stdout
    [deleted] = [o for o in json.loads(pruned.stdout)["outcomes"] if o["class"] == "orphan"]
    assert (deleted["status"], deleted["httpStatus"]) == ("done", 200)
    assert base(backend, pol.b) is None and base(backend, pol.a) is not None


def _plan(b: Backend, tmp_path: Path, policy: str, *, prune: bool = False) -> tuple[Any, Any, Any]:
    """Read and plan as `apply` does, without writing: the test then changes the cluster before the writes."""
    from kubectl_kyrec.cluster.connection import ConnectionOptions
    from kubectl_kyrec.cluster.live_source import LiveSource
    from kubectl_kyrec.load.run_inputs.sources import FileSource
    from kubectl_kyrec.reconcile.plan import PlanOptions
    from kubectl_kyrec.run.apply import ApplyRunOptions, compute_plan

    source = LiveSource(FileSource(policy_paths=(policy,)), ConnectionOptions(kubeconfig=str(b.kubeconfig)),
                        cache_dir=tmp_path / "cache")
    options = ApplyRunOptions(now=datetime.datetime.now(datetime.UTC), plan=PlanOptions(prune=prune))
    result = compute_plan(options, source)
    client, found = source.open()
    return result.plan, client, found


def test_prune_of_an_object_changed_after_the_read_is_a_409_and_the_object_stays(backend: Backend,
                                                                                  tmp_path: Path) -> None:
    from kubectl_kyrec.cluster.writer import execute

    pol = Gpol(backend, tmp_path)
    kyrec(backend, tmp_path, "apply", "-p", str(pol.path), "--yes")
    plan, client, found = _plan(backend, tmp_path, pol.narrowed(tmp_path), prune=True)
    [delete] = plan.writes
    backend.edit("v1", "configmaps", pol.b, "base", lambda o: o["data"].update(late="edit"))
    [outcome] = [o for o in execute(client, plan, resolve_kind=found.find) if o.change is delete]
    assert outcome.status == "failed" and outcome.http_status == 409
    assert outcome.message == ('changed since it was read, not deleted (not retried): Operation cannot be '
                               'fulfilled on ConfigMap "base": the ResourceVersion in the precondition '
                               f'({delete.precondition_resource_version}) does not match the ResourceVersion in '
                               f'record ({base(backend, pol.b)["metadata"]["resourceVersion"]}). The object might '
                               'have been modified')
    assert base(backend, pol.b)["data"]["late"] == "edit"


def test_a_reapply_never_takes_over_an_object_disowned_after_the_read(backend: Backend, tmp_path: Path) -> None:
    from kubectl_kyrec.cluster.writer import execute

    pol = Gpol(backend, tmp_path, ssa=True)
    kyrec(backend, tmp_path, "apply", "-p", str(pol.path), "--yes")
    backend.edit("v1", "configmaps", pol.b, "base", lambda o: o["data"].update(a="drift"))
    plan, client, found = _plan(backend, tmp_path, str(pol.path))
    [reapply] = plan.writes
    assert (reapply.action, reapply.object.namespace) == ("apply", pol.b)

    def disown(obj: dict[str, Any]) -> None:
        obj["metadata"]["labels"] = {"owner": "team-b"}
        obj["data"] = {"a": "mine"}

    backend.edit("v1", "configmaps", pol.b, "base", disown)
    [outcome] = execute(client, plan, resolve_kind=found.find)
    assert outcome.status == "failed" and outcome.http_status == 409
    assert outcome.message.startswith("changed since it was read, not applied (not retried): Operation cannot be "
                                      'fulfilled on configmaps "base": the object has been modified')
    after = base(backend, pol.b)
    assert after["data"] == {"a": "mine"} and after["metadata"]["labels"] == {"owner": "team-b"}


@pytest.mark.parametrize("ssa", [True, False], ids=["apply", "update"])
def test_a_rewrite_of_an_object_deleted_after_the_read_is_refused(backend: Backend, tmp_path: Path,
                                                                 ssa: bool) -> None:
    # The read's resourceVersion in an apply body is a precondition only while the object exists: Kubernetes
    # creates a missing object on apply whatever resourceVersion the body names (the registry checks it
    # against the stored object, and there is none). So the write carries the read's uid too, which the
    # server checks against no object as a 409 (apply) or, for a PUT, finds nothing to update (404): the
    # write is of the object read, or nothing; the next run sees it missing and creates it as such.
    from kubectl_kyrec.cluster.writer import execute

    pol = Gpol(backend, tmp_path, ssa=ssa)
    kyrec(backend, tmp_path, "apply", "-p", str(pol.path), "--yes")
    backend.edit("v1", "configmaps", pol.b, "base", lambda o: o["data"].update(a="drift"))
    plan, client, found = _plan(backend, tmp_path, str(pol.path))
    [rewrite] = plan.writes
    old_uid = base(backend, pol.b)["metadata"]["uid"]
    assert rewrite.action == ("apply" if ssa else "update") and rewrite.body is not None
    assert rewrite.body["metadata"]["resourceVersion"] and rewrite.body["metadata"]["uid"] == old_uid
    backend.delete("v1", "configmaps", pol.b, "base")
    [outcome] = execute(client, plan, resolve_kind=found.find)
    assert (outcome.status, outcome.http_status) == ("failed", 409 if ssa else 404), outcome
    assert base(backend, pol.b) is None


def test_server_dry_run_writes_nothing(backend: Backend, tmp_path: Path) -> None:
    pol = Gpol(backend, tmp_path)
    server = kyrec(backend, tmp_path, "apply", "-p", str(pol.path), "--dry-run=server", "-o", "json")
    assert server.exit_code == 0, server.stderr
    outcomes = json.loads(server.stdout)["outcomes"]
    assert {(o["status"], o["httpStatus"]) for o in outcomes} == {("dry-run", 201)}
    assert base(backend, pol.a) is None and base(backend, pol.b) is None


# ---- policy reports: coverage, eval --live, apply --write-reports -------------------------------------------

class Vpol:
    """tests/cluster/data/vpol-team-label.yaml in a namespace of the test's own, with one good and one bad
    ConfigMap; the commands run with -n so other tests' ConfigMaps are out of scope."""

    def __init__(self, b: Backend, tmp_path: Path) -> None:
        self.ns = b.namespace("reports")
        self.name = b.unique("team-label")
        self.path = tmp_path / "vpol.yaml"
        self.path.write_text((DATA / "vpol-team-label.yaml").read_text().replace("name: team-label",
                                                                                 f"name: {self.name}"))
        b.seed({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "good", "namespace": self.ns, "labels": {"team": "a"}}},
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad", "namespace": self.ns}})

    def args(self) -> list[str]:
        return ["-p", str(self.path), "-n", self.ns, *NOW]


def reports(b: Backend, ns: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = b.kube.get(f"/apis/wgpolicyk8s.io/v1alpha2/namespaces/{ns}/policyreports")["items"]
    return items


def test_coverage_and_eval_read_the_cluster(backend: Backend, tmp_path: Path) -> None:
    pol = Vpol(backend, tmp_path)
    coverage = kyrec(backend, tmp_path, "coverage", *pol.args(), "-o", "json")
    assert coverage.exit_code == 1, coverage.stderr
    assert json.loads(coverage.stdout)["counts"]["missing"] == 2
    evaluated = kyrec(backend, tmp_path, "eval", "--live", *pol.args(), "-o", "json")
    assert evaluated.exit_code == 1, evaluated.stderr
    results = {(r["subject"]["name"], r["result"]) for r in json.loads(evaluated.stdout)["results"]}
    assert results == {("good", "pass"), ("bad", "fail")}
    assert reports(backend, pol.ns) == []


def test_written_reports_survive_the_schema_and_are_current(backend: Backend, tmp_path: Path) -> None:
    # the real server prunes what the PolicyReport CRD's schema does not declare: a report kyrec writes must
    # read back as kyrec's own diff expects it, or every run would call it stale
    pol = Vpol(backend, tmp_path)
    result = kyrec(backend, tmp_path, "apply", *pol.args(), "--write-reports", "--yes", "-o", "json")
    assert result.exit_code == 0, result.stderr
    written = reports(backend, pol.ns)
    assert len(written) == 2
    by_subject = {r["scope"]["name"]: r for r in written}
    assert [r["result"] for r in by_subject["bad"]["results"]] == ["fail"]
    assert [r["result"] for r in by_subject["good"]["results"]] == ["pass"]
    assert by_subject["bad"]["summary"]["fail"] == 1
    assert all(managers(r).keys() == {"kyrec"} for r in written)
    coverage = kyrec(backend, tmp_path, "coverage", *pol.args(), "-o", "json")
    assert coverage.exit_code == 0, coverage.stdout
    diff = kyrec(backend, tmp_path, "diff", *pol.args(), "--reports", "-o", "json")
    assert diff.exit_code == 0, diff.stdout
    again = kyrec(backend, tmp_path, "apply", *pol.args(), "--write-reports", "--yes", "-o", "json")
    assert again.exit_code == 0 and json.loads(again.stdout)["summary"]["done"] == 0


def test_apply_reports_deletes_orphans_and_duplicates_and_keeps_the_current_one(backend: Backend,
                                                                                tmp_path: Path) -> None:
    pol = Vpol(backend, tmp_path)
    good = backend.get("v1", "configmaps", pol.ns, "good")["metadata"]["uid"]
    gone = "00000000-dead-4000-8000-000000000000"

    def report(name: str, uid: str, subject: str) -> dict[str, Any]:
        return {"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
                "metadata": {"name": name, "namespace": pol.ns, "labels": {"app.kubernetes.io/managed-by": "kyverno"}},
                "scope": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": pol.ns, "name": subject, "uid": uid},
                "results": [], "summary": {"pass": 0, "fail": 0, "warn": 0, "error": 0, "skip": 0}}

    backend.seed(report(gone, gone, "gone"), report(good, good, "good"), report("misnamed-copy", good, "good"))
    # deletes need --prune; --reports narrows apply to the report domain, as it narrows diff
    result = kyrec(backend, tmp_path, "apply", *pol.args(), "--reports", "--prune", "--yes", "-o", "json")
    assert result.exit_code == 0, result.stderr
    deleted = {o["object"]["name"]: (o["status"], o["httpStatus"]) for o in json.loads(result.stdout)["outcomes"]
               if o["action"] == "delete"}
    assert deleted == {gone: ("done", 200), "misnamed-copy": ("done", 200)}
    assert [r["metadata"]["name"] for r in reports(backend, pol.ns)] == [good]


def classic_netpol(name: str, prefix: str) -> str:
    """tests/cluster/test_live_cli.py's classic NetworkPolicy rule, under a name and a namespace prefix of
    the test's own (the real server is shared by the session)."""
    from tests.cluster.test_live_cli import CLASSIC_NETPOL

    return CLASSIC_NETPOL.replace("name: netpol", f"name: {name}", 1).replace('"team-*"', f'"{prefix}-*"')


def test_a_classic_rule_is_corrected_by_an_update(backend: Backend, tmp_path: Path) -> None:
    # a classic generate rule without useServerSideApply: created, then corrected by a PUT of the whole
    # object, as Kyverno writes it
    prefix, name = backend.unique("classic"), backend.unique("netpol")
    a = backend.namespace(f"{prefix}-a")
    policy = tmp_path / "netpol.yaml"
    policy.write_text(classic_netpol(name, prefix))
    created = kyrec(backend, tmp_path, "apply", "-p", str(policy), "--yes", "-o", "json")
    assert created.exit_code == 0, created.stdout
    obj = backend.get("networking.k8s.io/v1", "networkpolicies", a, "deny-all")
    assert obj["spec"]["policyTypes"] == ["Ingress"]
    assert obj["metadata"]["labels"]["generate.kyverno.io/policy-name"] == name
    backend.edit("networking.k8s.io/v1", "networkpolicies", a, "deny-all",
                 lambda o: o["spec"].update(policyTypes=["Egress"]))
    result = kyrec(backend, tmp_path, "apply", "-p", str(policy), "--yes", "-o", "json")
    assert result.exit_code == 0, result.stdout
    [outcome] = [o for o in json.loads(result.stdout)["outcomes"] if o["object"]["namespace"] == a]
    assert (outcome["action"], outcome["status"], outcome["httpStatus"]) == ("update", "done", 200)
    after = backend.get("networking.k8s.io/v1", "networkpolicies", a, "deny-all")
    assert after["spec"]["policyTypes"] == ["Ingress"] and after["metadata"]["uid"] == obj["metadata"]["uid"]
    # the editor's Update lost its only field to kyrec's: the entry is gone, kyrec's Update owns the field
    assert [(m["manager"], m["operation"], m["fieldsV1"].get("f:spec")) for m in after["metadata"]["managedFields"]
            if m["operation"] == "Update"] == [("kyverno-generate", "Update", {"f:policyTypes": {}})]
    assert {m["manager"] for m in after["metadata"]["managedFields"]} == {"kyverno-generate"}
    assert kyrec(backend, tmp_path, "diff", "--downstreams", "-p", str(policy)).exit_code == 0


def test_a_uid_in_an_apply_body_is_a_precondition_even_for_a_deleted_object(backend: Backend) -> None:
    # what a re-apply could carry besides the resourceVersion to be conditional on the object it read even
    # when that object was deleted meanwhile (see the re-create test above)
    ns = backend.namespace("uid")
    cm: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "u", "namespace": ns},
                          "data": {"a": "1"}}
    made = backend.apply_as("m", cm, "configmaps")
    assert made.status == 201, made
    uid = made.json()["metadata"]["uid"]
    other = backend.apply_as("m", {**cm, "metadata": {**cm["metadata"], "uid": "other"}}, "configmaps")
    assert other.status == 422
    assert other.json()["message"] == ('ConfigMap "u" is invalid: metadata.uid: Invalid value: "other": field is '
                                       "immutable")
    backend.delete("v1", "configmaps", ns, "u")
    gone = backend.apply_as("m", {**cm, "metadata": {**cm["metadata"], "uid": uid}}, "configmaps")
    assert gone.status == 409
    assert gone.json()["message"] == (f'Operation cannot be fulfilled on configmaps "u": uid mismatch: the provided '
                                      f"object specified uid {uid}, and no existing object was found")
    assert backend.get("v1", "configmaps", ns, "u") is None
