"""Autogen: the pod-controller variants of a Pod-targeting ValidatingPolicy (SEMANTICS B.3).

Kyverno rewrites the JSON-marshalled spec byte by byte (`object.spec` -> `object.spec.template.spec`, and
so on; kk: pkg/cel/autogen), wraps each matchCondition in a kind precondition, and evaluates every variant
as a separate compiled copy under the same policy name. We rewrite the same texts the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kubectl_kyrec.load.policies import (
    AuditAnnotation,
    MatchResources,
    NamedExpression,
    ResourceRule,
    ValidatingPolicy,
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


def variants(policy: ValidatingPolicy) -> list[Variant]:
    """The policy itself, then its autogen variants in Kyverno's order (replacement sets sorted)."""
    base = Variant("", policy.match_constraints, policy.match_conditions, policy.validations,
                   policy.audit_annotations, policy.variables)
    out = [base]
    if not can_autogen(policy.match_constraints):
        return out
    assert policy.match_constraints is not None
    chosen = [c for c in (policy.autogen_controllers if policy.autogen_controllers is not None
                          else CONTROLLERS) if c in CONTROLLERS]
    groups: dict[str, list[str]] = {}
    for resource in chosen:
        groups.setdefault(CONTROLLERS[resource][3], []).append(resource)
    operations = policy.match_constraints.resource_rules[0].operations
    for ref in sorted(groups):
        resources = groups[ref]
        by_gv: dict[tuple[str, str], set[str]] = {}
        for r in resources:
            by_gv.setdefault((CONTROLLERS[r][0], CONTROLLERS[r][1]), set()).add(r)
        rules = tuple(ResourceRule((g,), (v,), operations, tuple(sorted(res)))
                      for (g, v), res in sorted(by_gv.items()))
        match = MatchResources(resource_rules=rules,
                               namespace_selector=policy.match_constraints.namespace_selector)
        repl = _REPLACEMENTS[ref]
        prefix = "autogen" if ref == "defaults" else f"autogen-{ref}"
        pre = _precondition(resources)
        conditions = tuple(NamedExpression(f"{prefix}-{m.name}",
                                           _rewrite(f"!({pre}) || ({m.expression})", repl))
                           for m in policy.match_conditions)
        out.append(Variant(
            f"{prefix}-{policy.meta.name}", match, conditions,
            tuple(Validation(_rewrite(v.expression, repl), _rewrite(v.message, repl),
                             _rewrite(v.message_expression, repl)) for v in policy.validations),
            tuple(AuditAnnotation(a.key, _rewrite(a.value_expression, repl))
                  for a in policy.audit_annotations),
            tuple(NamedExpression(v.name, _rewrite(v.expression, repl)) for v in policy.variables)))
    return out
