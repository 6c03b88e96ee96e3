"""Kyverno's refusal of rules matching every kind (`kinds: ["*"]`), as its policy validation does
(kk: pkg/validation/policy/validate.go Validate -> validateKinds -> validateWildcard). The webhook rejects
such a policy and the CLI skips it; kyrec reports it as an error with Kyverno's text."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.policy.classic import ClassicPolicy, ClassicRule

# kk: wildCardAllowedVariables
_ALLOWED_VARIABLES = re.compile(r"\{\{\s*(request\.|serviceAccountName|serviceAccountNamespace)[^{}]*\}\}")
_METADATA_ONLY = ("policy can only deal with the metadata field of the resource if the rule does not match "
                  "any kind")


def _kind_lists(rule: ClassicRule) -> Iterator[tuple[str, Any]]:
    """(path, kinds) in Kyverno's order: match any, all, resources; then exclude's."""
    for part in ("match", "exclude"):
        block = rule.raw.get(part)
        if not isinstance(block, Mapping):
            continue
        for sub in ("any", "all"):
            for j, item in enumerate(block.get(sub) or []):
                resources = item.get("resources") if isinstance(item, Mapping) else None
                if isinstance(resources, Mapping):
                    yield f"spec.rules[{rule.index}].{part}.{sub}[{j}].kinds", resources.get("kinds")
        resources = block.get("resources")
        yield f"spec.rules[{rule.index}].{part}.kinds", (
            resources.get("kinds") if isinstance(resources, Mapping) else None)


def _only_metadata(rule: ClassicRule) -> bool:
    """kk: ruleOnlyDealsWithResourceMetaData (the mutate half does not concern a validate rule)."""
    validate = rule.raw.get("validate")
    if not isinstance(validate, Mapping):
        return True
    patterns = [validate.get("pattern"), *(validate.get("anyPattern") or [])]
    return all(k == "metadata" for p in patterns if isinstance(p, Mapping) for k in p)


def _wildcard_error(kinds: list[Any], background: bool, rule: ClassicRule) -> str | None:
    if "*" not in kinds:
        return None
    if background:
        return ("wildcard policy not allowed in background mode. Set spec.background=false to disable background "
                "mode for this policy rule ")
    if len(kinds) > 1:
        return "wildcard policy can not deal with more than one kind"
    validate = rule.raw.get("validate")
    validate = validate if isinstance(validate, Mapping) else None
    if rule.raw.get("generate") or rule.raw.get("verifyImages") or (
            validate is not None and validate.get("foreach") is not None):
        return "wildcard policy does not support rule type"
    if validate is not None:
        if (validate.get("pattern") is not None or validate.get("anyPattern") is not None) \
                and not _only_metadata(rule):
            return _METADATA_ONLY
        deny = validate.get("deny")
        conditions = deny.get("conditions") if isinstance(deny, Mapping) else None
        # only the old list form of conditions is checked (GetAnyAllConditions returning []Condition)
        for condition in conditions if isinstance(conditions, list) else []:
            key = str((condition or {}).get("key", "")) if isinstance(condition, Mapping) else ""
            if "request.object.metadata." not in key and (
                    not _ALLOWED_VARIABLES.search(key) or "request.object.spec" in key):
                return _METADATA_ONLY
    return None


def refused_wildcard(policy: ClassicPolicy) -> InputError | None:
    """The first rule whose match or exclude lists `*` among its kinds in a way Kyverno refuses."""
    for rule in policy.rules:
        for path, kinds in _kind_lists(rule):
            if not isinstance(kinds, list):
                continue
            message = _wildcard_error(kinds, policy.background, rule)
            if message is not None:
                return InputError(f"{policy.meta.label}: {path}: {message}", policy.meta.source, path)
    return None
