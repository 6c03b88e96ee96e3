"""Autogen variants: when they exist and how expressions are rewritten (docs/semantics/validating.md#autogen)."""

from __future__ import annotations

from kubectl_kyrec.evaluate.autogen import _rewrite, can_autogen, variants
from kubectl_kyrec.load.policy.policies import parse_validating_policy
from kubectl_kyrec.model import Document, Source

DEFAULTS = (("spec", "spec.template.spec"), ("metadata", "spec.template.metadata"))


def policy(match: dict, **spec: object) -> object:
    obj = {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "p"},
           "spec": {"matchConstraints": match, "validations": [{"expression": "object.spec.x == 1"}], **spec}}
    return parse_validating_policy(Document(obj, Source("p.yaml", 1)))


PODS = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["pods"]}]}


def test_rewrite_keeps_namespace_on_the_controller() -> None:
    text = "object.metadata.namespace + object.metadata.name + oldObject.spec.x + object.metadata.namespaceX"
    assert _rewrite(text, DEFAULTS) == ("object.metadata.namespace + object.spec.template.metadata.name + "
                                        "oldObject.spec.template.spec.x + object.spec.template.metadata.namespaceX")


def test_variants_for_all_controllers() -> None:
    vs = variants(policy(PODS))  # type: ignore[arg-type]
    # Kyverno walks the replacement sets in sorted order: cronjobs before defaults
    assert [v.name for v in vs] == ["", "autogen-cronjobs-p", "autogen-p"]
    rules = vs[2].match_constraints.resource_rules  # type: ignore[union-attr]
    assert [(r.api_groups, r.resources) for r in rules] == [
        (("apps",), ("daemonsets", "deployments", "replicasets", "statefulsets")), (("batch",), ("jobs",))]
    assert vs[1].validations[0].expression == "object.spec.jobTemplate.spec.template.spec.x == 1"


def test_no_autogen_for_other_shapes() -> None:
    assert not can_autogen(policy({"resourceRules": PODS["resourceRules"] * 2}).match_constraints)  # type: ignore
    with_selector = {**PODS, "objectSelector": {"matchLabels": {"a": "b"}}}
    assert not can_autogen(policy(with_selector).match_constraints)  # type: ignore[attr-defined]
    assert can_autogen(policy({**PODS, "objectSelector": {}}).match_constraints)  # type: ignore[attr-defined]


def test_explicit_empty_controllers_disable_autogen() -> None:
    p = policy(PODS, autogen={"podControllers": {"controllers": []}})
    assert [v.name for v in variants(p)] == [""]  # type: ignore[arg-type]


def test_match_conditions_get_the_kind_precondition() -> None:
    p = policy(PODS, matchConditions=[{"name": "c", "expression": "object.metadata.labels.a == 'b'"}],
               autogen={"podControllers": {"controllers": ["deployments"]}})
    cond = variants(p)[1].match_conditions[0]  # type: ignore[arg-type]
    assert cond.name == "autogen-c"
    assert cond.expression == ("!((object.apiVersion == 'apps/v1' && object.kind =='Deployment')) || "
                               "(object.spec.template.metadata.labels.a == 'b')")
