"""useServerSideApply of a classic generate rule (kk: background/generate/generator.go, dclient ApplyResource):
on, Kyverno writes by server-side apply as kyverno-generate; off, it creates and updates (PUT) the whole
object. The diff marks the second kind of drift `replace`, and the plan updates it instead of applying."""

from __future__ import annotations

import datetime
from typing import Any

import yaml

from kubectl_kyrec.evaluate.classic.generate_triggers import run_classic_generate
from kubectl_kyrec.evaluate.generating.engine import GenerateOptions
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Document, Ref, Source
from kubectl_kyrec.reconcile.classic_downstreams import (
    classic_outcomes,
    diff_classic_downstreams,
    is_classic_downstream,
)
from kubectl_kyrec.reconcile.downstreams import DownstreamChange, DownstreamClass, Reason, StateIndex
from kubectl_kyrec.reconcile.plan import Action, PlanOptions, plan_downstream

NOW = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)
POLICY = """
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: cm-per-ns}
spec:
  useServerSideApply: SSA
  rules:
  - name: cm
    match: {any: [{resources: {kinds: [Namespace]}}]}
    generate:
      synchronize: true
      apiVersion: v1
      kind: ConfigMap
      name: settings
      namespace: "{{request.object.metadata.name}}"
      data: {data: {level: info}}
"""
NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "blue", "uid": "ns-1"}}


def _downstream(data: dict[str, str], managers: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "data": data, "metadata": {
        "name": "settings", "namespace": "blue", "uid": "cm-1", "resourceVersion": "17",
        "labels": {"app.kubernetes.io/managed-by": "kyverno", "generate.kyverno.io/policy-name": "cm-per-ns",
                   "generate.kyverno.io/policy-namespace": "", "generate.kyverno.io/rule-name": "cm",
                   "generate.kyverno.io/trigger-version": "v1", "generate.kyverno.io/trigger-group": "",
                   "generate.kyverno.io/trigger-kind": "Namespace", "generate.kyverno.io/trigger-namespace": "",
                   "generate.kyverno.io/trigger-uid": "ns-1"},
        "managedFields": [{"manager": m, "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
                           "fieldsV1": f} for m, f in managers]}}


# `extra` was added by someone else's kubectl edit
FOREIGN = _downstream({"level": "info", "extra": "x"}, [
    ("kyverno-generate", {"f:data": {"f:level": {}}}), ("kubectl-edit", {"f:data": {"f:extra": {}}})])
EDITED = _downstream({"level": "debug"}, [("kyverno-generate", {"f:data": {"f:level": {}}})])


def change_for(ssa: bool, live: dict[str, Any]) -> DownstreamChange:
    policies = classify([Document(yaml.safe_load(POLICY.replace("SSA", str(ssa).lower())), Source("p.yaml", 1))])
    docs = [Document(NS, Source("s", 1)), Document(live, Source("s", 2))]
    out = run_classic_generate(policies.classic, docs[:1], docs, kinds=KindTable(),
                               options=GenerateOptions(now=NOW, user_info_known=True))
    _, classic = classic_outcomes(out)
    objs = [d.obj for d in docs]
    owned = [o for o in objs if is_classic_downstream(o)]
    changes, _ = diff_classic_downstreams(classic, StateIndex.build(objs), owned)
    (change,) = changes
    return change


def test_foreign_fields_are_drift_only_without_server_side_apply() -> None:
    off = change_for(False, FOREIGN)
    assert (off.klass, off.reason, off.replace) == (DownstreamClass.DRIFTED, Reason.FOREIGN_FIELDS, True)
    assert change_for(True, FOREIGN).klass is DownstreamClass.IN_SYNC     # an apply keeps another manager's field


def test_the_plan_updates_without_and_applies_with_server_side_apply() -> None:
    off = plan_downstream(change_for(False, EDITED), PlanOptions())
    assert off is not None and off.action is Action.UPDATE
    assert off.body is not None and off.body["metadata"]["resourceVersion"] == "17"
    assert off.body["data"] == {"level": "info"}
    on = plan_downstream(change_for(True, EDITED), PlanOptions())
    # both conditional on the read: the apply carries its resourceVersion too (the server checks it)
    assert on is not None and on.action is Action.APPLY and on.body is not None
    assert on.body["metadata"]["resourceVersion"] == "17" and on.body["data"] == {"level": "info"}


def test_a_reapply_needs_the_reads_resource_version() -> None:
    live = {**EDITED, "metadata": {k: v for k, v in EDITED["metadata"].items() if k != "resourceVersion"}}
    planned = plan_downstream(change_for(True, live), PlanOptions())
    assert planned is not None and planned.action is Action.SKIP and "resourceVersion" in planned.message


def test_an_update_needs_the_reads_resource_version() -> None:
    live = {**EDITED, "metadata": {k: v for k, v in EDITED["metadata"].items() if k != "resourceVersion"}}
    planned = plan_downstream(change_for(False, live), PlanOptions())
    assert planned is not None and planned.action is Action.SKIP and "resourceVersion" in planned.message


def test_no_change_is_equal_because_of_replace() -> None:
    a = DownstreamChange(DownstreamClass.DRIFTED, None, True, "p", None, Ref("v1", "ConfigMap", "n", "x", "u"))
    b = DownstreamChange(DownstreamClass.DRIFTED, None, True, "p", None, Ref("v1", "ConfigMap", "n", "x", "u"),
                         replace=True)
    assert a == b       # a plan detail, not part of the diff's identity
