"""Autogen: the pod-controller variants of a Pod-targeting ValidatingPolicy (docs/semantics/validating.md#autogen).

Kyverno rewrites the JSON-marshalled spec byte by byte (`object.spec` -> `object.spec.template.spec`, and
so on; kk: pkg/cel/autogen), wraps each matchCondition in a kind precondition, and evaluates every variant
as a separate compiled copy under the same policy name. We rewrite the same texts the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kubectl_kyrec.load.policy.policies import ValidatingPolicy
from kubectl_kyrec.load.policy.vocabulary import (
    AuditAnnotation,
    MatchResources,
    NamedExpression,
    ResourceRule,
    Validation,
)

# controller resource -> (group, version, kind, replacement set)
CONTROLLERS = {
    "daemonsets": ("apps", "v1", "DaemonSet", "defaults"),
    "deployments": ("apps", "v1", "Deployment", "defaults"),
    "replicasets": ("apps", "v1", "ReplicaSet", "defaults"),
    "statefulsets": ("apps", "v1", "StatefulSet", "defaults"),
    "jobs": ("batch", "v1", "Job", "defaults"),
    "cronjobs": ("batch", "v1", "CronJob", "cronjobs"),
}

_REPLACEMENTS = {
    "defaults": (("spec", "spec.template.spec"), ("metadata", "spec.template.metadata")),
    "cronjobs": (("spec", "spec.jobTemplate.spec.template.spec"),
                 ("metadata", "spec.jobTemplate.spec.template.metadata")),
}


@dataclass(frozen=True)
class Variant:
    """The parts of a ValidatingPolicy that autogen rewrites; `name` is "" for the policy as written."""

    name: str
    match_constraints: MatchResources | None
    match_conditions: tuple[NamedExpression, ...]
    validations: tuple[Validation, ...]
    audit_annotations: tuple[AuditAnnotation, ...]
    variables: tuple[NamedExpression, ...]


def can_autogen(match: MatchResources | None) -> bool:
    """kk: pkg/cel/autogen/support.go CanAutoGen, for every CEL kind (ValidatingPolicy, MutatingPolicy...): one
    rule on v1 pods, no names, no object selector, no excludes. A namespaceSelector is kept on the copies
    (Kyverno #16476, after v1.17.2, whose CanAutoGen still refused one: docs/compatibility.md)."""
    if match is None or match.exclude_resource_rules or len(match.resource_rules) != 1:
        return False
    sel = match.object_selector
    if sel and (sel.get("matchLabels") or sel.get("matchExpressions")):
        return False
    rule = match.resource_rules[0]
    return (not rule.resource_names and rule.api_groups == ("",) and rule.api_versions == ("v1",)
            and rule.resources == ("pods",))


def _rewrite(text: str, replacements: tuple[tuple[str, str], ...]) -> str:
    # `object.metadata.namespace` stays on the controller itself (kk: autogen replacement's protected
    # suffix); anything else under object.spec / object.metadata moves into the pod template.
    for src, dst in replacements:
        for root in ("object", "oldObject"):
            pattern = re.compile(re.escape(f"{root}.{src}") + r"(?!\.namespace(?![A-Za-z0-9_]))")
            text = pattern.sub(f"{root}.{dst}", text)
    return text


def _precondition(resources: list[str]) -> str:
    parts = sorted({f"(object.apiVersion == '{CONTROLLERS[r][0]}/{CONTROLLERS[r][1]}' && "
                    f"object.kind =='{CONTROLLERS[r][2]}')" for r in resources})
    return "||".join(parts)


@dataclass(frozen=True)
class AutogenTarget:
    """One replacement set's controllers: the matchConstraints Kyverno gives them and its text rewrite."""

    ref: str                        # "defaults" or "cronjobs" (kk: autogen.ReplacementsMap)
    resources: tuple[str, ...]
    match: MatchResources

    @property
    def prefix(self) -> str:
        return "autogen" if self.ref == "defaults" else f"autogen-{self.ref}"

    def rewrite(self, text: str) -> str:
        return _rewrite(text, _REPLACEMENTS[self.ref])


def autogen_targets(match: MatchResources | None, controllers: tuple[str, ...] | None) -> list[AutogenTarget]:
    """The pod-controller targets of a Pod-matching policy, in Kyverno's order (replacement sets sorted);
    `controllers` is the policy's autogen.podControllers.controllers (None: every one). The vpol and ivpol
    autogen alike (kk: pkg/cel/autogen CreateMatchConstraints)."""
    if not can_autogen(match):
        return []
    assert match is not None
    chosen = [c for c in (controllers if controllers is not None else CONTROLLERS) if c in CONTROLLERS]
    groups: dict[str, list[str]] = {}
    for resource in chosen:
        groups.setdefault(CONTROLLERS[resource][3], []).append(resource)
    operations = match.resource_rules[0].operations
    out = []
    for ref in sorted(groups):
        resources = groups[ref]
        by_gv: dict[tuple[str, str], set[str]] = {}
        for r in resources:
            by_gv.setdefault((CONTROLLERS[r][0], CONTROLLERS[r][1]), set()).add(r)
        rules = tuple(ResourceRule((g,), (v,), operations, tuple(sorted(res)))
                      for (g, v), res in sorted(by_gv.items()))
        out.append(AutogenTarget(ref, tuple(resources),
                                 MatchResources(resource_rules=rules, namespace_selector=match.namespace_selector)))
    return out


def variants(policy: ValidatingPolicy) -> list[Variant]:
    """The policy itself, then its autogen variants in Kyverno's order (replacement sets sorted)."""
    base = Variant("", policy.match_constraints, policy.match_conditions, policy.validations,
                   policy.audit_annotations, policy.variables)
    out = [base]
    for target in autogen_targets(policy.match_constraints, policy.autogen_controllers):
        rewrite = target.rewrite
        prefix = target.prefix
        pre = _precondition(list(target.resources))
        conditions = tuple(NamedExpression(f"{prefix}-{m.name}", rewrite(f"!({pre}) || ({m.expression})"))
                           for m in policy.match_conditions)
        out.append(Variant(
            f"{prefix}-{policy.meta.name}", target.match, conditions,
            tuple(Validation(rewrite(v.expression), rewrite(v.message), rewrite(v.message_expression))
                  for v in policy.validations),
            tuple(AuditAnnotation(a.key, rewrite(a.value_expression)) for a in policy.audit_annotations),
            tuple(NamedExpression(v.name, rewrite(v.expression)) for v in policy.variables)))
    return out
