"""What kyrec cannot know is said, not guessed (issue 8): a policy's unknown age, kinds the state never
captured, a state without managedFields."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from tests.shared_inputs import require, shared

ROOT = Path(__file__).resolve().parents[2]
AGE = ROOT / "testdata" / "diff" / "policy-age-unknown"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_unknown_policy_age_is_said_once_and_never_taken_as_now() -> None:
    code, out, err = run("diff", "-p", str(AGE / "policy.yaml"), "--state", str(AGE / "state.yaml"), "-o", "json")
    assert code == 1
    notices = [line for line in err.splitlines() if "creationTimestamp" in line]
    assert len(notices) == 1 and "2 existing trigger(s)" in notices[0]
    changes = json.loads(out)["changes"]
    assert {c["reason"] for c in changes} == {"policy-age-unknown"}
    assert all(c["enforced"] for c in changes)


SYNC_OFF_CLASSIC = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: team-config
spec:
  rules:
  - name: team-config
    match:
      any:
      - resources:
          kinds: [Namespace]
    generate:
      synchronize: false
      apiVersion: v1
      kind: ConfigMap
      name: team-config
      namespace: "{{request.object.metadata.name}}"
      data:
        data:
          tier: standard
"""


def test_unknown_age_counts_even_where_kyverno_would_not_write_it(tmp_path: Path) -> None:
    """Issue 8: "classify with a reason that says the age is unknown, counted as a finding" - also for a
    sync-off policy (CEL and classic alike), whose missing downstream Kyverno would not write either way:
    counted for the exit code, never written by apply."""
    cel = (AGE / "policy.yaml").read_text().replace("enabled: true", "enabled: false")
    assert "enabled: false" in cel
    for name, text in (("cel.yaml", cel), ("classic.yaml", SYNC_OFF_CLASSIC)):
        policy = tmp_path / name
        policy.write_text(text)
        code, out, err = run("diff", "-p", str(policy), "--state", str(AGE / "state.yaml"), "-o", "json")
        assert code == 1, (name, err)
        changes = json.loads(out)["changes"]
        assert [(c["reason"], c["enforced"]) for c in changes] == [("policy-age-unknown", True)] * 2, name


def test_apply_leaves_a_counted_unknown_age_row_alone_where_kyverno_would_not_write_it() -> None:
    from kubectl_kyrec.model import Ref
    from kubectl_kyrec.reconcile.downstreams import DownstreamChange, DownstreamClass, Reason
    from kubectl_kyrec.reconcile.plan import Action, PlanOptions, plan_downstream

    target = Ref("v1", "ConfigMap", "team-old", "team-config", "")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "team-config", "namespace": "team-old"}}

    def row(kyverno_would_write: bool) -> DownstreamChange:
        return DownstreamChange(DownstreamClass.MISSING, Reason.POLICY_AGE_UNKNOWN, kyverno_would_write,
                                "team-config", None, target, expected=body)

    sync_off, sync_on = row(False), row(True)
    assert sync_off.finding and sync_off.enforced and sync_on.finding
    planned_off, planned_on = plan_downstream(sync_off, PlanOptions()), plan_downstream(sync_on, PlanOptions())
    assert planned_off is not None and planned_off.action is Action.SKIP
    assert planned_on is not None and planned_on.action is Action.CREATE
    # the rule is the age's alone: a sync-off row with a known age stays uncounted
    plain = DownstreamChange(DownstreamClass.MISSING, None, False, "team-config", None, target, expected=body)
    assert not plain.finding


def test_known_policy_age_gives_no_notice() -> None:
    case = ROOT / "testdata" / "diff" / "predates-policy"
    code, _, err = run("diff", "-p", str(case / "policy.yaml"), "--state", str(case / "state.yaml"))
    assert code == 0
    assert "creationTimestamp" not in err


# --- a state lacking whole kinds --------------------------------------------------------------------

COVERAGE = ROOT / "testdata" / "coverage-cli"
LACKS = ROOT / "testdata" / "diff" / "state-lacks-downstream-kind"


def _reports_only(tmp_path: Path) -> Path:
    """The coverage state without its Pods: what the README's old capture command gave."""
    doc = json.loads((COVERAGE / "state.json").read_text())
    doc["items"] = [i for i in doc["items"] if i["kind"] != "Pod"]
    path = tmp_path / "reports-only.json"
    path.write_text(json.dumps(doc))
    return path


def test_coverage_names_the_kinds_the_state_never_captured(tmp_path: Path) -> None:
    code, _, err = run("coverage", "-p", str(COVERAGE / "policy.yaml"), "--state", str(_reports_only(tmp_path)))
    gaps = [line for line in err.splitlines() if "no record of listing" in line]
    assert len(gaps) == 1
    # Pods, and ReplicaSets: the policy's autogen (podControllers: replicasets) makes them subjects too
    assert "no Pod, ReplicaSet and" in gaps[0]
    assert "kubectl kyrec capture --kind pods,replicasets.apps -A -o more-state.json" in gaps[0]


def test_a_capture_record_of_zero_pods_is_not_a_gap(tmp_path: Path) -> None:
    doc = json.loads(_reports_only(tmp_path).read_text())
    doc["metadata"] = {"annotations": {"kyrec.io/listed": json.dumps(
        [{"apiVersion": "v1", "kind": "Pod", "namespace": ""},
         {"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": ""}])}}
    path = tmp_path / "capture.json"
    path.write_text(json.dumps(doc))
    _, _, err = run("coverage", "-p", str(COVERAGE / "policy.yaml"), "--state", str(path))
    assert "no record of listing" not in err


def _gaps(policy: str, state: dict[str, object], tmp_path: Path) -> list[str]:
    (tmp_path / "policy.yaml").write_text(policy)
    (tmp_path / "state.json").write_text(json.dumps(state))
    _, _, err = run("eval", "-p", str(tmp_path / "policy.yaml"), "--state", str(tmp_path / "state.json"))
    return [line for line in err.splitlines() if "Capture them with" in line]


def _listed(*pairs: tuple[str, str]) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "List", "items": [], "metadata": {"annotations": {"kyrec.io/listed": json.dumps(
        [{"apiVersion": v, "kind": k, "namespace": ""} for v, k in pairs])}}}


VPOL = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: p
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - apiGroups: [{group}]
      apiVersions: [{version}]
      operations: [CREATE]
      resources: [{resource}]
  validations:
  - expression: "true"
"""


def test_a_kind_listed_at_another_version_than_the_policy_matches_is_a_gap(tmp_path: Path) -> None:
    """Issue 8 follow-up: a state object is matched at the version it was captured at, so HPAs listed as
    autoscaling/v2 are no subjects of a rule on autoscaling/v1: said, with the versioned kubectl name."""
    policy = VPOL.format(group="autoscaling", version="v1", resource="horizontalpodautoscalers")
    gaps = _gaps(policy, _listed(("autoscaling/v2", "HorizontalPodAutoscaler")), tmp_path)
    assert len(gaps) == 1
    assert "HorizontalPodAutoscaler only at autoscaling/v2 where the policies match v1" in gaps[0]
    assert "kubectl kyrec capture --kind horizontalpodautoscalers.v1.autoscaling -A" in gaps[0]
    assert _gaps(policy, _listed(("autoscaling/v1", "HorizontalPodAutoscaler")), tmp_path) == []
    every = VPOL.format(group="autoscaling", version="'*'", resource="horizontalpodautoscalers")
    assert _gaps(every, _listed(("autoscaling/v2", "HorizontalPodAutoscaler")), tmp_path) == []


def test_wildcard_resources_name_every_kind_they_need(tmp_path: Path) -> None:
    policy = VPOL.format(group="apps", version="v1", resource="'*'")
    gaps = _gaps(policy, _listed(("apps/v1", "Deployment"), ("apps/v1", "ReplicaSet")), tmp_path)
    assert len(gaps) == 1
    assert "no ControllerRevision, DaemonSet, StatefulSet and no record" in gaps[0]
    assert "kubectl kyrec capture --kind controllerrevisions.apps,daemonsets.apps,statefulsets.apps -A" in gaps[0]


def test_autogen_controllers_are_needed_kinds(tmp_path: Path) -> None:
    """A Pod policy also judges the pod controllers (autogen): a state of Pods alone cannot answer for them."""
    pods = _listed(("v1", "Pod"))
    gaps = _gaps(VPOL.format(group="''", version="v1", resource="pods"), pods, tmp_path)
    assert len(gaps) == 1
    assert "no CronJob, DaemonSet, Deployment, Job, ReplicaSet, StatefulSet and no record" in gaps[0]
    classic = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: c
  annotations:
    pod-policies.kyverno.io/autogen-controllers: Deployment,CronJob
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: m
      pattern:
        metadata:
          name: "?*"
"""
    gaps = _gaps(classic, pods, tmp_path)
    assert len(gaps) == 1
    assert "no CronJob, Deployment and no record" in gaps[0]


def _every_kind(name: str = "every-kind", version: str = "'*'") -> str:
    return VPOL.format(group="'*'", version=version, resource="'*'").replace("name: p\n", f"name: {name}\n")


def _counted(gap: str) -> int:
    found = re.search(r"never listed (\d+) kinds", gap)
    assert found, gap
    return int(found.group(1))


def test_a_wildcard_policy_gives_a_short_notice_that_says_why_and_how_to_capture(tmp_path: Path) -> None:
    """A `*` on every kind made the notice name ~90 kinds and ~95 resource names (3,000 characters on every
    run): the count, the first kinds, the policy whose `*` selects them and kubectl's own list instead."""
    from kubectl_kyrec.load.run_inputs.kinds import builtin_kinds
    from kubectl_kyrec.run.capture import _NOT_LISTABLE

    gaps = _gaps(_every_kind(), _listed(("v1", "Pod")), tmp_path)
    assert len(gaps) == 1
    gap = gaps[0]
    assert len(gap) <= 400, len(gap)
    kinds = sorted({i.kind for i in builtin_kinds() if (i.group, i.kind) not in _NOT_LISTABLE} - {"Pod"})
    assert _counted(gap) == len(kinds)
    assert f"({', '.join(kinds[:5])} and {len(kinds) - 5} more; all through `*` in every-kind)" in gap
    assert ("kubectl kyrec capture --kind $(kubectl api-resources --verbs=list -o name | paste -sd, -) -A -o "
            "more-state.json") in gap
    assert kinds[5] not in gap and "configmaps" not in gap


def test_the_short_notice_captures_in_the_namespace_asked_and_is_the_documents_notice(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(_every_kind())
    (tmp_path / "state.json").write_text(json.dumps(_listed(("v1", "Pod"))))
    code, out, err = run("eval", "-p", str(tmp_path / "policy.yaml"), "--state", str(tmp_path / "state.json"),
                         "-n", "team-a", "-o", "json")
    gaps = [line.removeprefix("notice: ") for line in err.splitlines() if "Capture them with" in line]
    assert len(gaps) == 1
    assert "paste -sd, -) -n team-a -o more-state.json" in gaps[0] and " -A " not in gaps[0]
    # stderr and the JSON document carry the same text: the short one
    assert [n for n in json.loads(out)["notices"] if "Capture them with" in n] == gaps


def test_many_kinds_named_one_by_one_are_counted_too(tmp_path: Path) -> None:
    """The cut is on the number of kinds, not on the `*`: 8 named kinds are spelled out with their own
    command, 9 are counted (no `*` to name then)."""
    kinds = ["ConfigMap", "Ingress", "Namespace", "NetworkPolicy", "Role", "RoleBinding", "Secret", "Service",
             "ServiceAccount"]

    def classic(named: list[str]) -> str:
        return f"""\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: c
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [{", ".join(named)}]
    validate:
      message: m
      pattern:
        metadata:
          name: "?*"
"""

    eight = _gaps(classic(kinds[:8]), _listed(("v1", "Pod")), tmp_path)
    assert len(eight) == 1
    assert f"the state holds no {', '.join(kinds[:8])} and no record of listing them" in eight[0]
    assert "kubectl kyrec capture --kind configmaps,ingresses.networking.k8s.io,namespaces," in eight[0]
    nine = _gaps(classic(kinds), _listed(("v1", "Pod")), tmp_path)
    assert len(nine) == 1
    assert f"never listed 9 kinds the policies use ({', '.join(kinds[:5])} and 4 more), so" in nine[0]
    assert "through `*`" not in nine[0] and "api-resources --verbs=list" in nine[0]


def test_the_short_notice_still_names_a_kind_listed_at_another_version(tmp_path: Path) -> None:
    """api-resources lists each kind at its preferred version, maybe the very one the state holds: a kind
    listed at another version than the policies match keeps its sentence and its versioned name."""
    gaps = _gaps(_every_kind(version="v1"), _listed(("v1", "Pod"), ("autoscaling/v2", "HorizontalPodAutoscaler")),
                 tmp_path)
    assert len(gaps) == 1
    assert _counted(gaps[0]) > 8
    assert "; the state lists HorizontalPodAutoscaler only at autoscaling/v2 where the policies match v1, so" \
        in gaps[0]
    assert "paste -sd, -),horizontalpodautoscalers.v1.autoscaling -A -o more-state.json" in gaps[0]


def test_the_short_notice_keeps_what_could_not_be_read() -> None:
    """A live read that was refused: its message stays, whichever form the notice takes."""
    from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState, ListedKind
    from kubectl_kyrec.load.run_inputs.kinds import builtin_kinds
    from kubectl_kyrec.run.capture import Need, capture_notice, uncaptured

    state = ClusterState.from_objects([], listed=[ListedKind("v1", "Pod")], unreadable={
        ListedKind("rbac.authorization.k8s.io/v1", "ClusterRole"): "clusterroles is forbidden"})
    needs = [Need(i, None, frozenset({"w"})) for i in builtin_kinds() if i.group in ("", "rbac.authorization.k8s.io")]
    notice = capture_notice(uncaptured(state, needs), state)
    assert notice is not None and "never listed" in notice
    assert notice.endswith("(could not be read: ClusterRole: clusterroles is forbidden)")


def test_diff_marks_downstreams_of_uncaptured_kinds_and_says_how_to_capture() -> None:
    policy = require(shared("corpus/kyverno-conformance/generating-policies/data/sync/sync-delete-downstream/"
                            "policy.yaml"), "diff of a state lacking a downstream kind")
    code, out, err = run("diff", "-p", str(policy), "--state", str(LACKS / "state.yaml"), "-o", "json")
    assert code == 0
    assert {c["reason"] for c in json.loads(out)["changes"]} == {"kind-not-captured"}
    gaps = [line for line in err.splitlines() if "no record of listing" in line]
    assert len(gaps) == 1 and "ConfigMap" in gaps[0] and "configmaps" in gaps[0]


# --- a state without managedFields -----------------------------------------------------------------

FOREIGN = ROOT / "testdata" / "diff" / "foreign-field-added"


def _without_managed_fields(tmp_path: Path) -> Path:
    doc = json.loads((FOREIGN / "state.json").read_text())
    for item in doc["items"]:
        item["metadata"].pop("managedFields", None)
    path = tmp_path / "state.json"
    path.write_text(json.dumps(doc))
    return path


def test_state_without_managed_fields_says_foreign_drift_cannot_be_seen(tmp_path: Path) -> None:
    code, _, err = run("diff", "-p", str(FOREIGN / "policy.yaml"), "--state", str(_without_managed_fields(tmp_path)))
    notices = [line for line in err.splitlines() if "managedFields" in line]
    assert len(notices) == 1
    assert "--show-managed-fields" in notices[0]


def test_state_with_managed_fields_gives_no_such_notice() -> None:
    code, _, err = run("diff", "-p", str(FOREIGN / "policy.yaml"), "--state", str(FOREIGN / "state.json"))
    assert code == 1
    assert "managedFields" not in err


def test_a_notice_two_pipelines_make_is_printed_once(tmp_path: Path) -> None:
    """A ValidatingPolicy and a GeneratingPolicy both read an unknown kind: each pipeline notices it, the
    user reads it once, on stderr and in the document."""
    policies = tmp_path / "policies.yaml"
    policies.write_text(
        "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata: {name: v}\nspec:\n"
        "  matchConstraints:\n    resourceRules:\n    - {apiGroups: ['*'], apiVersions: ['*'], operations: [CREATE],"
        " resources: ['*']}\n  validations:\n  - expression: 'true'\n---\n"
        "apiVersion: policies.kyverno.io/v1\nkind: GeneratingPolicy\nmetadata: {name: g}\nspec:\n"
        "  matchConstraints:\n    resourceRules:\n    - {apiGroups: ['*'], apiVersions: ['*'], operations: [CREATE],"
        " resources: ['*']}\n  generate:\n  - expression: 'true'\n")
    widgets = tmp_path / "widgets.yaml"
    widgets.write_text("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: shop}\n")
    result = CliRunner().invoke(cli, ["eval", "-p", str(policies), "-r", str(widgets)])
    assert result.stderr.count("unknown kind example.com/v1/Widget") == 1, result.stderr
    doc = json.loads(CliRunner().invoke(cli, ["eval", "-p", str(policies), "-r", str(widgets), "-o", "json"]).stdout)
    assert sum("unknown kind example.com/v1/Widget" in n for n in doc["notices"]) == 1
