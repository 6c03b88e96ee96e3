"""What Kyverno accepts in a classic policy with a warning: its admission webhook returns these to `kubectl
apply` as warnings, and the policy is used (kk: pkg/validation/policy/validate.go Validate, the `warnings` it
returns alongside no error; api/kyverno/v1 common_types.go GeneratePattern.Validate). kyrec reports them with
Kyverno's wording (`kubectl kyrec lint` lists them, `--strict` fails on them; eval, diff and explain print
them as `warning:` lines) and uses the policy.

Left out, because they need the cluster: the kinds discovery does not know (validKinds), the permission
checks of the background and reports controllers (validateActions), and the type checks of `validate.cel`
expressions against the cluster's OpenAPI (CheckExpression). Kyverno's CLI prints none of these warnings
(it discards what Validate returns besides the error).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from kubectl_kyrec.classic.variables import REGEX_VARIABLES
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.policy.classic import ClassicPolicy, ClassicRule

LOWERCASE_ACTION = "Validation failure actions enforce/audit are deprecated, use Enforce/Audit instead."
JSON_PATCH_ON_POD = ("Pods managed by workload controllers should not be directly mutated using policies. "
                     "Use the autogen feature or write policies that match Pod controllers.")
AUTOGEN_EXCLUSION = ("Policies that match Pods apply to all Pods including those created and managed by controllers "
                     "excluded from autogen. Use preconditions to exclude the Pods managed by controllers which are "
                     "excluded from autogen. Refer to https://kyverno.io/docs/policy-types/cluster-policy/autogen/ "
                     "for details.")
SCALE = "You are matching on replicas but not including the scale subresource in the policy."
STATUS = "You are matching on status but not including the status subresource in the policy."
# kk: pkg/engine/variables/operator/utils.go deprecatedOperators
DEPRECATED_OPERATORS = {"In": ("AllIn", "AnyIn"), "NotIn": ("AllNotIn", "AnyNotIn")}
AUTOGEN_ANNOTATION = "pod-policies.kyverno.io/autogen-controllers"
_ALL_CONTROLLERS = ["cronjob", "daemonset", "deployment", "job", "statefulset"]


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _lowercase_action(action: Any, overrides: Any) -> bool:
    """kk: checkValidationFailureAction."""
    return action in ("enforce", "audit") or any(_mapping(o).get("action") in ("enforce", "audit")
                                                  for o in _list(overrides))


def _kinds(block: Any) -> list[str]:
    """kk: MatchResources.GetKinds: the kinds of `any`, `all` and the legacy `resources`."""
    block = _mapping(block)
    out = [str(k) for k in _list(_mapping(block.get("resources")).get("kinds"))]
    for part in ("any", "all"):
        for filt in _list(block.get(part)):
            out.extend(str(k) for k in _list(_mapping(_mapping(filt).get("resources")).get("kinds")))
    return out


def _go_json(value: Any) -> str:
    """The block as Go marshals it (no spaces): what Kyverno searches for `replicas` and `status`."""
    return json.dumps(value, separators=(",", ":"))


def _subresource_warnings(block: Any, kinds: list[str]) -> Iterator[str]:
    """kk: checkForScaleSubresource, checkForStatusSubresource."""
    text = _go_json(block)
    if "replicas" in text and not any("scale" in k.lower() for k in kinds):
        yield SCALE
    if (".status" in text or '"status":' in text) and not any("status" in k.lower() for k in kinds):
        yield STATUS


def _operator_warning(condition: Any) -> str | None:
    operator = _mapping(condition).get("operator")
    alternatives = DEPRECATED_OPERATORS.get(operator) if isinstance(operator, str) else None
    if alternatives is None:
        return None
    quoted = " ".join(json.dumps(a) for a in alternatives)
    return f"Operator {operator} has been deprecated and will be removed soon. Use these instead: [{quoted}]"


def _conditions(value: Any) -> Iterator[Any]:
    """kk: checkDeprecatedRawJSONConditionOperator: `any` then `all`, or a plain list."""
    if isinstance(value, list):
        yield from value
    elif isinstance(value, Mapping):
        yield from _list(value.get("any"))
        yield from _list(value.get("all"))


def _operator_warnings(rule: ClassicRule) -> Iterator[str]:
    """kk: checkForDeprecatedOperatorsInRule: validate.deny, each foreach's preconditions and deny, and the
    attestations' conditions of verifyImages."""
    validate = _mapping(rule.raw.get("validate"))
    found = list(_conditions(_mapping(validate.get("deny")).get("conditions")))
    for each in _list(validate.get("foreach")):
        each = _mapping(each)
        found.extend(_conditions(each.get("preconditions")))
        found.extend(_conditions(_mapping(each.get("deny")).get("conditions")))
    for verify in _list(rule.raw.get("verifyImages")):
        for attestation in _list(_mapping(verify).get("attestations")):
            for block in _list(_mapping(attestation).get("conditions")):
                found.extend(_conditions(block))
    for condition in found:
        warning = _operator_warning(condition)
        if warning is not None:
            yield warning


def _rule_warnings(policy: ClassicPolicy, rule: ClassicRule) -> Iterator[tuple[str, str]]:
    """(field, warning) of one rule, in the order of Validate's loop over the rules."""
    raw, path = rule.raw, f"spec.rules[{rule.index}]"
    mutate = _mapping(raw.get("mutate"))
    legacy_kinds = _list(_mapping(_mapping(raw.get("match")).get("resources")).get("kinds"))
    if "Pod" in legacy_kinds and mutate.get("patchesJson6902"):
        yield f"{path}.mutate.patchesJson6902", JSON_PATCH_ON_POD
    kinds = _kinds(raw.get("match"))
    bare = {k.split("/")[-1].split(".")[0] for k in kinds}
    annotation = policy.meta.annotations.get(AUTOGEN_ANNOTATION)
    if bare == {"Pod"} and annotation is not None and annotation != "none" \
            and sorted(annotation.lower().split(",")) != _ALL_CONTROLLERS:
        yield f"metadata.annotations[{AUTOGEN_ANNOTATION}]", AUTOGEN_EXCLUSION
    all_kinds = kinds + _kinds(raw.get("exclude"))
    if "validate" in raw:
        validate = dict(_mapping(raw.get("validate")))
        if isinstance(validate.get("deny"), Mapping):
            validate["deny"] = {k: v for k, v in validate["deny"].items() if k != "conditions"}
        for warning in _subresource_warnings(validate, all_kinds):
            yield f"{path}.validate", warning
    if "mutate" in raw:
        targets = [str(_mapping(t).get("kind") or "") for t in _list(mutate.get("targets"))]
        for warning in _subresource_warnings(mutate, all_kinds + targets):
            yield f"{path}.mutate", warning
    for i, verify in enumerate(_list(raw.get("verifyImages"))):
        for j, attestation in enumerate(_list(_mapping(verify).get("attestations"))):
            predicate = _mapping(attestation).get("predicateType")
            if predicate:
                yield (f"{path}.verifyImages[{i}].attestations[{j}].predicateType",
                       f"predicateType has been deprecated use 'type: {predicate}' instead of "
                       f"'predicateType: {predicate}'")
    for warning in _operator_warnings(rule):
        yield f"{path}.validate", warning


def _generate_warnings(rule: ClassicRule) -> Iterator[tuple[str, str]]:
    """kk: GeneratePattern.Validate: variables in the kind, apiVersion, clone or cloneList of a generate rule
    (or of one of its foreach entries)."""
    generate = _mapping(rule.raw.get("generate"))
    patterns = [(f"spec.rules[{rule.index}].generate", generate)]
    patterns.extend((f"spec.rules[{rule.index}].generate.foreach[{i}]", _mapping(p))
                    for i, p in enumerate(_list(generate.get("foreach"))))
    for path, pattern in patterns if generate else ():
        kept = {k: pattern[k] for k in ("kind", "apiVersion", "clone", "cloneList") if k in pattern}
        if REGEX_VARIABLES.search(_go_json(kept)):
            yield path, f"variables in {path}.clone/cloneList would lead to incorrect synchronization behavior"


def policy_warnings(policy: ClassicPolicy) -> list[InputError]:
    """Kyverno's warnings for a policy it accepts, each once, as `Kind "name": <warning>` naming its field."""
    spec = _mapping(policy.raw.get("spec"))
    found: list[tuple[str, str]] = []
    if _lowercase_action(spec.get("validationFailureAction"), spec.get("validationFailureActionOverrides")):
        found.append(("spec.validationFailureAction", LOWERCASE_ACTION))
    for rule in policy.rules:
        validate = _mapping(rule.raw.get("validate"))
        if "failureAction" in validate and _lowercase_action(validate.get("failureAction"),
                                                             validate.get("failureActionOverrides")):
            found.append((f"spec.rules[{rule.index}].validate.failureAction", LOWERCASE_ACTION))
    for rule in policy.rules:
        found.extend(_generate_warnings(rule))
    for rule in policy.rules:
        found.extend(_rule_warnings(policy, rule))
    out: list[InputError] = []
    seen: set[str] = set()
    for path, warning in found:
        # the API server passes each distinct warning text once
        if warning not in seen:
            seen.add(warning)
            out.append(InputError(f"{policy.meta.label}: {warning}", policy.meta.source, path))
    return out
