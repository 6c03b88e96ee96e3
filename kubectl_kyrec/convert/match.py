"""A classic rule's match/exclude -> a CEL policy's matchConstraints and matchConditions.

Kinds become resourceRules (the offline REST mapper, load/run_inputs/kinds.py, names their resources); namespaces and
names become matchConditions on the request (wildcards as RE2); selectors are copied. User, role and subject
filters, and annotations, are not converted (they raise Unconvertible naming the field)."""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.convert.cel_text import Unconvertible, disj, has_wildcard, literal, negate, wildcard_as_re2
from kubectl_kyrec.load.run_inputs.kinds import KindTable, builtin_kinds, guess_plural
from kubectl_kyrec.load.run_inputs.kyverno_config import parse_kind_selector

# what a matchCondition reads of the subject: the admission request's fields in the admission kinds
REQUEST = {"namespace": "request.namespace", "name": "request.name", "kind": "request.kind.kind",
           "operation": "request.operation"}
_UNCONVERTED = {"subjects": "user and group subjects", "roles": "roles", "clusterRoles": "cluster roles",
                "annotations": "annotations"}


def _filters(block: Any, field: str) -> list[tuple[dict[str, Any], str]]:
    """The resource filters of a match/exclude block, each with its field path; one `any` or `all` entry."""
    if not block:
        return []
    if not isinstance(block, dict):
        raise Unconvertible(field, "must be a map")
    out: list[tuple[dict[str, Any], str]] = []
    if block.get("resources") is not None:
        out.append((dict(block), field))
    for group in ("any", "all"):
        entries = block.get(group) or []
        if group == "all" and len(entries) > 1:
            raise Unconvertible(f"{field}.all", "several `all` entries (an intersection of filters); not converted")
        out.extend((e, f"{field}.{group}[{i}]") for i, e in enumerate(entries))
    return out


def _resource_rules(kinds: list[str], operations: list[str], field: str, known: KindTable | None = None,
                    guesses: list[str] | None = None) -> list[dict[str, Any]]:
    """Each kind selector (read as Kyverno reads it, ParseKindSelector) as a resourceRule. A kind the table
    (built-ins, CRDs given) does not know, written with its group, gets Kubernetes' guessed plural, and a note
    naming the guess goes to `guesses` (a documented substitute); without a group it is refused."""
    rules: list[dict[str, Any]] = []
    table = list(known if known is not None else builtin_kinds())
    for kind in kinds:
        if kind == "*":
            rules.append({"apiGroups": ["*"], "apiVersions": ["*"], "operations": operations, "resources": ["*"]})
            continue
        group, version, name, sub = parse_kind_selector(kind)
        if has_wildcard(name) or (group != "*" and has_wildcard(group)):
            raise Unconvertible(field, f"kind {kind!r} is a wildcard; not converted")
        found = [i for i in table if i.kind == name and group in ("*", i.group) and version in ("*", i.version)]
        if found:
            # Kyverno matches the kind in every group and version the selector leaves open: one rule per group
            # serving it (Event: core and events.k8s.io), naming each version served (HorizontalPodAutoscaler:
            # v1 and v2); `*` written stays any version
            any_version = version == "*" and "*" in kind.split("/")[:-1]
            served: dict[tuple[str, str], list[str]] = {}
            for info in found:
                served.setdefault((info.group, info.resource), []).append(info.version)
            for (group, resource), versions in served.items():
                rules.append({"apiGroups": [group], "apiVersions": ["*"] if any_version else versions,
                              "operations": operations, "resources": [f"{resource}/{sub}" if sub else resource]})
            continue
        if group == "*":
            # Kyverno matches a kind without a group in every API group; a resourceRule names one group's
            # resource, and which group serves the kind (and under which plural) only its CRD says
            raise Unconvertible(field, f"kind {kind!r} is not one the offline REST mapper knows and names no API "
                                       "group (Kyverno matches it in every group); its resource cannot be named "
                                       "(give its CustomResourceDefinition with --crd)")
        resource = guess_plural(name)
        if guesses is not None:
            guesses.append(f"{field}: kind {kind!r} is not one the offline REST mapper knows; its resource is "
                           f"guessed as {group}/{resource} (Kubernetes' UnsafeGuessKindToResource): should its "
                           "CustomResourceDefinition name another plural, the policy matches another resource "
                           "or none (give the CRD with --crd for its own plural)")
        resource = f"{resource}/{sub}" if sub else resource
        rules.append({"apiGroups": [group], "apiVersions": [version],
                      "operations": operations, "resources": [resource]})
    return rules


def names_condition(values: list[str], subject: str) -> str:
    plain = [v for v in values if not has_wildcard(v)]
    wild = [v for v in values if has_wildcard(v)]
    parts = [f"{subject} in {literal(plain)}"] if plain else []
    parts += [f"{subject}.matches({literal(wildcard_as_re2(v))})" for v in wild]
    return disj(parts)


def _filter_condition(entry: dict[str, Any], field: str,
                      reads: dict[str, str] = REQUEST) -> tuple[list[str], dict[str, Any]]:
    """What a filter adds besides kinds: (CEL conditions, selectors)."""
    for key, what in _UNCONVERTED.items():
        if entry.get(key) or (entry.get("resources") or {}).get(key):
            raise Unconvertible(f"{field}.{key}", f"matching on {what} is not converted")
    resources = entry.get("resources") or {}
    conditions: list[str] = []
    selectors: dict[str, Any] = {}
    if resources.get("namespaces"):
        conditions.append(names_condition(resources["namespaces"], reads["namespace"]))
    names = list(resources.get("names") or []) + ([resources["name"]] if resources.get("name") else [])
    if names:
        conditions.append(names_condition(names, reads["name"]))
    if resources.get("selector"):
        selectors["objectSelector"] = resources["selector"]
    if resources.get("namespaceSelector"):
        selectors["namespaceSelector"] = resources["namespaceSelector"]
    return conditions, selectors


def convert_match(match: Any, exclude: Any, default_operations: list[str],
                  field: str, known: KindTable | None = None, reads: dict[str, str] = REQUEST,
                  guesses: list[str] | None = None) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """-> (matchConstraints, matchConditions). `known`: the kinds (built-ins, and CRDs given), default the
    built-ins; `reads`: the CEL that names the subject's namespace, name, kind and operation (REQUEST);
    `guesses`: gets a note for each resource named by a guessed plural (_resource_rules)."""
    includes = _filters(match, f"{field}.match")
    if not includes:
        raise Unconvertible(f"{field}.match", "a rule without a match block")
    kinds: list[str] = []
    operations: list[str] | None = None
    conditions: list[str] = []
    constraints: dict[str, Any] = {}
    shared_extra: tuple[list[str], dict[str, Any]] | None = None
    for entry, at in includes:
        resources = entry.get("resources") or {}
        kinds.extend(k for k in resources.get("kinds") or [] if k not in kinds)
        ops = resources.get("operations")
        if ops is not None:
            if operations is not None and sorted(ops) != sorted(operations):
                raise Unconvertible(f"{at}.resources.operations", "filters with different operations")
            operations = list(ops)
        extra = _filter_condition(entry, at, reads)
        if shared_extra is not None and extra != shared_extra:
            raise Unconvertible(at, "several match filters with different namespaces, names or selectors; "
                                    "not converted")
        shared_extra = extra
    assert shared_extra is not None
    conditions.extend(shared_extra[0])
    constraints.update(shared_extra[1])
    constraints["resourceRules"] = _resource_rules(kinds, operations or default_operations, f"{field}.match",
                                                  known, guesses)
    match_conditions = [{"name": f"match-{i}" if len(conditions) > 1 else "match", "expression": c}
                        for i, c in enumerate(conditions)]
    excluded: list[str] = []
    for entry, at in _filters(exclude, f"{field}.exclude"):
        resources = entry.get("resources") or {}
        extra_conditions, selectors = _filter_condition(entry, at, reads)
        if selectors:
            raise Unconvertible(at, "an exclude selector; not converted")
        parts = list(extra_conditions)
        if resources.get("kinds"):
            parts.append(disj([f"{reads['kind']} == {literal(k)}" for k in resources["kinds"]]))
            if any("/" in k for k in resources["kinds"]):
                raise Unconvertible(at, "an excluded kind with a group/version; not converted")
        if resources.get("operations"):
            parts.append(f"{reads['operation']} in {literal(resources['operations'])}")
        if not parts:
            raise Unconvertible(at, "an exclude filter with nothing converted")
        excluded.append(" && ".join(f"({p})" for p in parts))
    for i, expr in enumerate(excluded):
        match_conditions.append({"name": f"exclude-{i}" if len(excluded) > 1 else "exclude",
                                 "expression": negate(expr)})
    return constraints, match_conditions
