"""Which LISTs a live run makes, from the policies alone (cluster/live.py's read plan; no server)."""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.cluster.discovery import Discovered
from kubectl_kyrec.cluster.live import OWNED_SELECTOR, ReadNeeds, plan_reads
from kubectl_kyrec.load.run_inputs.kinds import ResourceInfo

FOUND = Discovered(
    (ResourceInfo("", "v1", "Namespace", "namespaces", False), ResourceInfo("", "v1", "Pod", "pods", True),
     ResourceInfo("", "v1", "ConfigMap", "configmaps", True), ResourceInfo("", "v1", "Secret", "secrets", True),
     ResourceInfo("apps", "v1", "Deployment", "deployments", True),
     ResourceInfo("batch", "v1", "CronJob", "cronjobs", True),
     ResourceInfo("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True),
     ResourceInfo("policies.kyverno.io", "v1", "GeneratingPolicy", "generatingpolicies", False),
     ResourceInfo("policies.kyverno.io", "v1beta1", "GeneratingPolicy", "generatingpolicies", False),
     ResourceInfo("kyverno.io", "v1", "ClusterPolicy", "clusterpolicies", False),
     ResourceInfo("wgpolicyk8s.io", "v1alpha2", "PolicyReport", "policyreports", True)),
    {"": "v1", "apps": "v1", "batch": "v1", "networking.k8s.io": "v1", "policies.kyverno.io": "v1",
     "kyverno.io": "v1", "wgpolicyk8s.io": "v1alpha2"})


def _reads(*docs: dict[str, Any], **needs: Any) -> dict[tuple[str, str], str]:
    return {(r.info.kind, r.namespace): r.label_selector for r in plan_reads(ReadNeeds(policy_docs=docs, **needs),
                                                                              FOUND)}


GPOL = {"apiVersion": "policies.kyverno.io/v1", "kind": "GeneratingPolicy", "metadata": {"name": "g"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                         "resources": ["namespaces"]}]},
                 "generate": [{"expression": 'generator.Apply(object.metadata.name, [{"kind": dyn("NetworkPolicy")}'
                                             ', resource.Get("v1", "secrets", "base", "token")])'}]}}


def test_triggers_downstream_kinds_and_clone_sources_are_listed_in_full() -> None:
    reads = _reads(GPOL, reports=False)
    assert reads[("Namespace", "")] == "" and reads[("NetworkPolicy", "")] == "" and reads[("Secret", "")] == ""
    # the policy kinds, always (at the preferred version), and Kyverno's ConfigMap namespace
    assert reads[("GeneratingPolicy", "")] == "" and reads[("ConfigMap", "kyverno")] == ""
    # any other kind: only its Kyverno-owned objects
    assert reads[("Deployment", "")] == OWNED_SELECTOR and reads[("Pod", "")] == OWNED_SELECTOR
    assert reads[("PolicyReport", "")] == OWNED_SELECTOR      # no full list of reports without the report domain
    assert [r.info.version for r in plan_reads(ReadNeeds(policy_docs=(GPOL,)), FOUND)
            if r.info.kind == "GeneratingPolicy"] == ["v1"]


def test_validating_policies_on_pods_read_the_pod_controllers_and_reports() -> None:
    vpol = {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "v"},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                             "resources": ["pods"]}]}}}
    reads = _reads(vpol, downstreams=False, namespace="team")
    assert reads[("Pod", "team")] == "" and reads[("Deployment", "team")] == "" and reads[("CronJob", "team")] == ""
    assert reads[("PolicyReport", "team")] == ""
    assert not [k for k, sel in reads.items() if sel]          # no owned-downstream search without downstreams


def test_classic_policies_name_their_kinds() -> None:
    cpol = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "c"},
            "spec": {"rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["apps/v1/Deployment"]}}]},
                                "exclude": {"resources": {"kinds": ["Pod"]}}}]}}
    reads = _reads(cpol, downstreams=False)
    assert reads[("Deployment", "")] == "" and reads[("Pod", "")] == ""
    assert ("NetworkPolicy", "") not in reads


UR_FOUND = Discovered(
    (*FOUND.resources, ResourceInfo("kyverno.io", "v2", "UpdateRequest", "updaterequests", True)),
    {"": "v1", "kyverno.io": "v1"})


def test_update_requests_are_read_in_kyverno_s_namespace_with_downstreams_only() -> None:
    plan = plan_reads(ReadNeeds(policy_docs=(GPOL,), reports=False), UR_FOUND)
    urs = [r for r in plan if r.info.kind == "UpdateRequest"]
    assert [(r.namespace, r.label_selector, r.evidence) for r in urs] == [("kyverno", "", True)]
    assert not [r for r in plan_reads(ReadNeeds(policy_docs=(GPOL,), downstreams=False), UR_FOUND)
                if r.info.kind == "UpdateRequest"]


def test_apply_s_read_plan_has_no_update_request_list_not_even_the_owned_downstream_search() -> None:
    # apply (update_requests=False) names no cause; the kind is not searched for owned downstreams either
    plan = plan_reads(ReadNeeds(policy_docs=(GPOL,), reports=False, update_requests=False), UR_FOUND)
    assert [r for r in plan if r.info.kind == "UpdateRequest"] == []
    assert any(r.label_selector for r in plan)      # the owned-downstream search itself is still made


def test_a_refused_update_request_read_is_a_notice_not_an_unreadable_kind(monkeypatch: Any) -> None:
    from kubectl_kyrec.cluster import live
    from kubectl_kyrec.cluster.lister import ListOutcome

    [request] = [r for r in plan_reads(ReadNeeds(policy_docs=(GPOL,), reports=False), UR_FOUND)
                 if r.info.kind == "UpdateRequest"]
    monkeypatch.setattr(live, "list_many", lambda client, requests, progress=None: [
        ListOutcome(r, error="forbidden", forbidden=True, status=403) for r in requests])
    read = live.read_state(None, [request], context="ctx")  # type: ignore[arg-type]
    assert not read.state.unreadable
    assert read.notices == ["UpdateRequests in kyverno not read (forbidden): causes cannot name them"]


RBAC_FOUND = Discovered(
    (*UR_FOUND.resources, *(ResourceInfo("rbac.authorization.k8s.io", "v1", kind, plural, namespaced) for kind, plural,
                            namespaced in (("ClusterRole", "clusterroles", False),
                                           ("ClusterRoleBinding", "clusterrolebindings", False),
                                           ("Role", "roles", True), ("RoleBinding", "rolebindings", True)))),
    {"": "v1", "kyverno.io": "v1", "rbac.authorization.k8s.io": "v1"})


def test_the_evidence_of_causes_kyverno_s_deployments_and_for_capture_the_rbac_objects() -> None:
    def evidence(**needs: Any) -> set[tuple[str, str]]:
        return {(r.info.kind, r.namespace) for r in plan_reads(ReadNeeds(policy_docs=(GPOL,), **needs), RBAC_FOUND)
                if r.evidence}

    assert evidence() == {("UpdateRequest", "kyverno")}                   # eval --live, explain: no causes
    assert evidence(causes=True) == {("UpdateRequest", "kyverno"), ("Deployment", "kyverno")}
    assert evidence(causes=True, rbac=True) == {
        ("UpdateRequest", "kyverno"), ("Deployment", "kyverno"), ("ClusterRole", ""), ("ClusterRoleBinding", ""),
        ("Role", ""), ("RoleBinding", "")}
    # Deployments listed in full already (a policy on Pods, autogen): no second read of Kyverno's namespace
    vpol = {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "v"},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                             "resources": ["pods"]}]}}}
    plan = plan_reads(ReadNeeds(policy_docs=(vpol,), causes=True), RBAC_FOUND)
    assert [(r.namespace, r.evidence) for r in plan if r.info.kind == "Deployment"] == [("", False)]


MUTATING_FOUND = Discovered(
    (*FOUND.resources,
     ResourceInfo("policies.kyverno.io", "v1", "MutatingPolicy", "mutatingpolicies", False),
     ResourceInfo("policies.kyverno.io", "v1", "NamespacedMutatingPolicy", "namespacedmutatingpolicies", True),
     ResourceInfo("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicy", "mutatingadmissionpolicies",
                  False),
     ResourceInfo("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicyBinding",
                  "mutatingadmissionpolicybindings", False)),
    {**FOUND.preferred, "admissionregistration.k8s.io": "v1"})


def test_the_mutating_policy_kinds_are_read_where_served_and_not_where_not() -> None:
    # eval admits manifests through them: a live run without -p needs the cluster's
    kinds = {"MutatingPolicy", "NamespacedMutatingPolicy", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}
    served = {r.info.kind: r for r in plan_reads(ReadNeeds(downstreams=False, reports=False), MUTATING_FOUND)}
    assert kinds <= set(served) and not any(served[k].label_selector or served[k].namespace for k in kinds)
    # a server without them (no Kyverno CRD of that kind, no MutatingAdmissionPolicy API): nothing to read
    assert not kinds & {r.info.kind for r in plan_reads(ReadNeeds(downstreams=False, reports=False), FOUND)}


def test_a_mutating_admission_policy_s_param_kind_is_read_and_not_the_kinds_mutating_policies_select() -> None:
    pods = {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                    "resources": ["pods"]}]}}
    mapol = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
             "metadata": {"name": "m"}, "spec": {**pods, "paramKind": {"apiVersion": "v1", "kind": "Secret"}}}
    mpol = {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": "p"}, "spec": pods}
    reads = {(r.info.kind, r.namespace): r.label_selector for r in plan_reads(
        ReadNeeds(policy_docs=(mapol, mpol), downstreams=False, reports=False), MUTATING_FOUND)}
    assert reads[("Secret", "")] == ""
    # they mutate manifests (eval -r), not the stored Pods: no LIST of them, nor of the pod controllers
    assert ("Pod", "") not in reads and ("Deployment", "") not in reads


def test_a_kind_the_user_names_is_read_though_no_policy_matches_it() -> None:
    """`explain --live KIND/NAME`: the subject is read (in -n's namespace), its trees then say no policy
    matched, as offline; named as kubectl names it."""
    # (GPOL without its clone source, which would read Secrets everywhere)
    gpol = {**GPOL, "spec": {**GPOL["spec"], "generate": [{"expression": "generator.Apply('x', [])"}]}}
    reads = _reads(gpol, downstreams=False, reports=False, namespace="team", kinds=("secret",))
    assert reads[("Secret", "team")] == ""
    assert ("Pod", "team") not in reads and ("Pod", "") not in reads
    assert _reads(GPOL, downstreams=False, reports=False, kinds=("no-such-kind",)) == \
        _reads(GPOL, downstreams=False, reports=False)


def _cpol_with_context(*entries: dict[str, Any], foreach: bool = False) -> dict[str, Any]:
    validate: dict[str, Any] = {"message": "m", "deny": {}}
    if foreach:
        validate = {"foreach": [{"list": "request.object.spec.containers", "context": list(entries), "deny": {}}]}
    rule: dict[str, Any] = {"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "validate": validate}
    if not foreach:
        rule["context"] = list(entries)
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "c"},
            "spec": {"rules": [rule]}}


def test_a_configmap_context_entry_reads_configmaps_in_its_namespace_whatever_n_says() -> None:
    cpol = _cpol_with_context({"name": "teams", "configMap": {"name": "teams", "namespace": "platform"}})
    reads = _reads(cpol, downstreams=False, reports=False, namespace="shop")
    assert reads[("ConfigMap", "platform")] == "" and reads[("ConfigMap", "kyverno")] == ""
    assert reads[("Pod", "shop")] == ""
    # a namespace made of a variable: every namespace (which holds Kyverno's too)
    cpol = _cpol_with_context({"name": "t", "configMap": {"name": "t", "namespace": "{{request.namespace}}"}},
                              foreach=True)
    reads = _reads(cpol, downstreams=False, reports=False, namespace="shop")
    assert reads[("ConfigMap", "")] == "" and ("ConfigMap", "kyverno") not in reads


def test_an_api_call_get_reads_the_kind_of_its_path_and_a_post_or_service_call_nothing() -> None:
    cpol = _cpol_with_context(
        {"name": "a", "apiCall": {"urlPath": "/apis/networking.k8s.io/v1/namespaces/{{request.namespace}}/"
                                             "networkpolicies"}},
        {"name": "b", "apiCall": {"urlPath": "/api/v1/namespaces/base/secrets/token", "method": "GET"}},
        {"name": "c", "apiCall": {"urlPath": "/apis/apps/v1/deployments", "method": "POST"}},
        {"name": "d", "apiCall": {"urlPath": "/apis/batch/v1/{{x}}"}},
        {"name": "e", "apiCall": {"service": {"url": "https://x"}, "urlPath": "/apis/batch/v1/cronjobs"}})
    reads = _reads(cpol, downstreams=False, reports=False)
    assert reads[("NetworkPolicy", "")] == "" and reads[("Secret", "base")] == ""
    assert ("Deployment", "") not in reads and ("CronJob", "") not in reads


def test_a_cel_policy_s_resource_lookup_is_read_in_its_literal_namespace_else_everywhere() -> None:
    def vpol(*expressions: str) -> dict[str, Any]:
        return {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "v"},
                "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                                 "resources": ["deployments"]}]},
                         "validations": [{"expression": e} for e in expressions]}}

    reads = _reads(vpol('resource.Get("v1", "configmaps", "platform", "teams") != null',
                        'resource.List("v1", "secrets", object.metadata.namespace).items.size() > 0'),
                   downstreams=False, reports=False, namespace="shop")
    # a literal namespace: that namespace alone (a role listing ConfigMaps only there suffices); an
    # expression: every namespace
    assert reads[("ConfigMap", "platform")] == "" and ("ConfigMap", "") not in reads
    assert reads[("Secret", "")] == "" and reads[("Deployment", "shop")] == ""
    # every literal namespace a kind's lookups name, each alone
    reads = _reads(vpol('resource.List("v1", "configmaps", "platform").items.size() > 0',
                        "resource.Get('v1', 'configmaps', 'team-a', 'teams') != null"),
                   downstreams=False, reports=False)
    assert {k for k in reads if k[0] == "ConfigMap"} == {("ConfigMap", "platform"), ("ConfigMap", "team-a"),
                                                          ("ConfigMap", "kyverno")}
    # one lookup of the kind in any namespace (an expression, or "" for a cluster-wide list): read everywhere
    for other in ('resource.Get("v1", "configmaps", "plat" + "form", "teams") != null',
                  'resource.List("v1", "configmaps", "").items.size() > 0'):
        reads = _reads(vpol('resource.Get("v1", "configmaps", "platform", "teams") != null', other),
                       downstreams=False, reports=False)
        assert {k for k in reads if k[0] == "ConfigMap"} == {("ConfigMap", "")}, other


def test_a_mutate_existing_rule_s_target_kind_is_read_where_it_looks() -> None:
    """eval's preview of a mutate-existing rule, and the report entry it gives, read the targets: a target kind
    the state did not list makes them undetermined (evaluate/classic/mutate_existing_preview.py)."""
    def cpol(namespace: str, kind: str = "Secret") -> dict[str, Any]:
        return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "c"}, "spec": {"rules": [
            {"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
             "mutate": {"targets": [{"apiVersion": "v1", "kind": kind, "namespace": namespace, "name": "s"}],
                        "patchStrategicMerge": {"metadata": {"labels": {"a": "b"}}}}}]}}
    reads = _reads(cpol("vault"), downstreams=False, reports=False, namespace="shop")
    assert reads[("Secret", "vault")] == "" and reads[("Pod", "shop")] == ""
    reads = _reads(cpol("{{ request.object.metadata.namespace }}"), downstreams=False, reports=False)
    assert reads[("Secret", "")] == ""
    # a kind made of a variable names nothing to read ahead
    assert not [k for k in _reads(cpol("vault", "{{ request.object.kind }}"), downstreams=False, reports=False)
                if k[0] == "Secret"]
