"""A ClusterCleanupPolicy/CleanupPolicy (kyverno.io/v2) -> DeletingPolicy/NamespacedDeletingPolicy (Kyverno's
mapping: kyverno/kyverno#16507; docs/convert.md lists what maps and what is refused).

What the cleanup controller does (kk: pkg/controllers/cleanup/controller.go cleanup): it LISTs each kind the
match names (in the policy's namespace for a CleanupPolicy), keeps an object that `match` selects and
`exclude` does not (pkg/utils/match CheckMatchesResources, called with an empty RequestInfo and no
operation), then evaluates `conditions` with the object as `target` (and `request.namespace`, `images`):
true deletes it, false or an error keeps it. A DeletingPolicy does the same with matchConstraints (every
operation) and CEL `conditions` on `object`, all true deleting (kk: pkg/cel/policies/dpol)."""

from __future__ import annotations

import json
import re
from typing import Any

from kubectl_kyrec.convert import conditions, jmes
from kubectl_kyrec.convert.cel_text import Unconvertible
from kubectl_kyrec.convert.match import convert_match
from kubectl_kyrec.load.run_inputs.kinds import KindTable

CLEANUP_KINDS = ("ClusterCleanupPolicy", "CleanupPolicy")
CEL_API = "policies.kyverno.io/v1"
# a DeletingPolicy has no admission request: match conditions read the object itself
_OBJECT = {"namespace": "(has(object.metadata.namespace) ? object.metadata.namespace : '')",
           "name": "object.metadata.name", "kind": "object.kind", "operation": ""}
# the cleanup controller's context holds `target`, `request.namespace` and `images` (kk: controller.go); only
# `target` has a DeletingPolicy counterpart (`object`)
_READS_REQUEST = re.compile(r"\{\{[^}]*\b(?:request|images)\b")


def _no_operations(block: Any, field: str) -> None:
    """CheckMatchesResources is called with no operation: a filter naming operations selects nothing in the
    cleanup controller, where a DeletingPolicy matches every operation. Refused rather than guessed."""
    if not isinstance(block, dict):
        return
    filters = [(block, field)] + [(e, f"{field}.{g}[{i}]") for g in ("any", "all")
                                  for i, e in enumerate(block.get(g) or []) if isinstance(e, dict)]
    for entry, at in filters:
        if (entry.get("resources") or {}).get("operations"):
            raise Unconvertible(f"{at}.resources.operations", "the cleanup controller matches with no operation "
                                                              "(a filter naming operations selects nothing), a "
                                                              "DeletingPolicy with every operation; not converted")


def _ordered(block: Any) -> str:
    """The conditions in the cleanup controller's order (kk: pkg/utils/conditions CheckAnyAllConditions):
    the `all` ones, the first false keeping the object, then the `any` ones, the first true deleting it; an
    error in any condition reached keeps it. CEL's `&&`/`||` would let a later operand decide past an error
    (an erroring `any` condition before a true one deletes in CEL and keeps in Kyverno): `c ? x : y` is
    an error where `c` is, so each condition is a ternary's test, reached in Kyverno's order. An unresolved
    variable is an error in both (never softened to null)."""
    if not isinstance(block, dict):
        raise Unconvertible("spec.conditions", "must be an any/all map")
    scope = jmes.Scope({"target": "object"})
    alls = [conditions.condition(c, f"spec.conditions.all[{i}]", scope) for i, c in enumerate(block.get("all") or [])]
    anys = [conditions.condition(c, f"spec.conditions.any[{i}]", scope) for i, c in enumerate(block.get("any") or [])]
    text = "false" if anys else "true"
    for expr in reversed(anys):
        text = f"({expr}) ? true : {text}"
    for expr in reversed(alls):
        text = f"({expr}) ? ({text}) : false"
    return text


def convert_cleanup(doc: dict[str, Any], kinds: KindTable | None) -> tuple[list[dict[str, Any]], list[str]]:
    """-> (the DeletingPolicy document, substitutes); Unconvertible names the first field without an exact
    counterpart."""
    meta = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    if not spec.get("schedule"):
        raise Unconvertible("spec.schedule", "required")
    if spec.get("context"):
        raise Unconvertible("spec.context", "context entries (configMap, apiCall, globalReference, variable) are "
                                            "not converted yet")
    _no_operations(spec.get("match"), "spec.match")
    _no_operations(spec.get("exclude"), "spec.exclude")
    guesses: list[str] = []
    constraints, match_conditions = convert_match(spec.get("match"), spec.get("exclude"), ["*"], "spec", kinds,
                                                  reads=_OBJECT, guesses=guesses)
    out_conditions = [{"name": c["name"], "expression": c["expression"]} for c in match_conditions]
    if spec.get("conditions") is not None:
        if _READS_REQUEST.search(json.dumps(spec["conditions"])):
            raise Unconvertible("spec.conditions", "reads `request` or `images`, which the cleanup controller sets "
                                                   "and a DeletingPolicy does not have; not converted")
        out_conditions.append({"name": "conditions", "expression": _ordered(spec["conditions"])})
    out_spec: dict[str, Any] = {"schedule": spec["schedule"], "matchConstraints": constraints}
    if out_conditions:
        out_spec["conditions"] = out_conditions
    if spec.get("deletionPropagationPolicy"):
        out_spec["deletionPropagationPolicy"] = spec["deletionPropagationPolicy"]
    out_meta: dict[str, Any] = {"name": meta.get("name")}
    namespaced = doc.get("kind") == "CleanupPolicy"
    if namespaced and meta.get("namespace"):
        out_meta["namespace"] = meta["namespace"]
    for key in ("annotations", "labels"):
        if meta.get(key):
            out_meta[key] = meta[key]
    kind = "NamespacedDeletingPolicy" if namespaced else "DeletingPolicy"
    return [{"apiVersion": CEL_API, "kind": kind, "metadata": out_meta, "spec": out_spec}], guesses
