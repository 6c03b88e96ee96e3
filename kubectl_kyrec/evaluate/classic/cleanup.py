"""Whether a ClusterCleanupPolicy/CleanupPolicy's run deletes an object, step for step as Kyverno's cleanup
controller decides it (kk: pkg/controllers/cleanup/controller.go cleanup). kyrec does not evaluate these
deprecated kinds elsewhere (load/policy/policies.py UNEVALUATED_KINDS); `convert --verify` compares a
conversion's DeletingPolicy against this.

For each object of a kind the match names: an object outside a CleanupPolicy's namespace is passed over
(match.CheckNamespace); `match` must select it and `exclude` must not, both with pkg/utils/match
CheckMatchesResources (an empty RequestInfo, no operation); then `conditions` (pkg/utils/conditions
CheckAnyAllConditions: every `all` condition in order, a false one keeps the object; then the `any` ones in
order, the first true deletes it; an error keeps it) with the object as `target` and its namespace as
`request.namespace`. `images` (the object's image infos) is not set here: a policy reading it is not
converted (convert/cleanup.py), so nothing compared reads it."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from kubectl_kyrec.classic.conditions import check_any_all_conditions
from kubectl_kyrec.classic.json_context import EvalContext
from kubectl_kyrec.classic.match import RequestFacts, matches_resources
from kubectl_kyrec.errors import EngineError


class CleanupStatus(enum.StrEnum):
    DELETE = "delete"
    NOT_SELECTED = "not-selected"     # another namespace, not matched, or excluded
    KEEP = "keep"                     # the conditions are false
    ERROR = "error"                   # a condition failed: the run leaves the object and reports the error


def cleanup_decision(policy: Mapping[str, Any], obj: Mapping[str, Any], group: str, version: str,
                     namespace_labels: Mapping[str, str] | None) -> CleanupStatus:
    spec = policy.get("spec") or {}
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    if policy.get("kind") == "CleanupPolicy" and namespace != str((policy.get("metadata") or {}).get("namespace")):
        return CleanupStatus.NOT_SELECTED
    facts = RequestFacts(obj=obj, group=group, version=version, kind=str(obj.get("kind")), subresource="",
                         operation="", namespace_labels=namespace_labels)
    if not matches_resources(spec.get("match") or {}, facts):
        return CleanupStatus.NOT_SELECTED
    if spec.get("exclude") is not None and matches_resources(spec["exclude"], facts):
        return CleanupStatus.NOT_SELECTED
    block = spec.get("conditions")
    if block is None:
        return CleanupStatus.DELETE
    ctx = EvalContext({"target": dict(obj)})
    ctx.add_namespace(namespace)
    try:
        return CleanupStatus.DELETE if check_any_all_conditions(ctx, block) else CleanupStatus.KEEP
    except EngineError:
        return CleanupStatus.ERROR
