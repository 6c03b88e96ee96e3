"""A `kyverno.io/v2` PolicyException -> a `policies.kyverno.io/v1` PolicyException whose policyRefs name the
converted policies (Kyverno's mapping: kyverno/kyverno#16506; docs/convert.md lists what maps).

A classic exception exempts rules: a request its `match` selects skips each rule it names (kk:
pkg/engine/utils/exceptions.go MatchesException, api/kyverno/v2 Exception.Contains: rule names may hold
wildcards; `autogen-<rule>` and `autogen-cronjob-<rule>` are the rule's pod-controller variants). A CEL
exception exempts a whole policy: every validation, autogen variants included, for a request its
matchConditions hold for (docs/semantics/exceptions.md). So an exception converts when, for each converted
policy it touches, it names every rule the policy holds or none, per class of kinds (the Pod rules, their
`autogen-` variants, their `autogen-cronjob-` variants); a class it does not name becomes a matchCondition
on `request.kind.kind` that leaves those kinds out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.classic.autogen import POD_CONTROLLERS
from kubectl_kyrec.convert.cel_text import Unconvertible, conj, disj, has_wildcard, literal, negate
from kubectl_kyrec.convert.match import REQUEST, names_condition
from kubectl_kyrec.golang.wildcard import match as wildcard_match

CEL_API = "policies.kyverno.io/v1"
# the classic autogen's rule-name prefixes and the kinds each covers (kk: pkg/autogen)
_CLASSES = (("", ()), ("autogen-", tuple(k for k in POD_CONTROLLERS if k != "CronJob")),
            ("autogen-cronjob-", ("CronJob",)))




def _filter(entry: Any, at: str) -> str:
    """One match filter as CEL on the admission request (kk: pkg/engine/utils/exceptions.go
    checkResourceFilter): kinds, names, namespaces and operations; what else it could name is refused."""
    if not isinstance(entry, dict):
        raise Unconvertible(at, "must be a map")
    for key in entry:
        if key != "resources":
            raise Unconvertible(f"{at}.{key}", "matching on users, groups, roles or subjects is not converted")
    resources = entry.get("resources") or {}
    parts: list[str] = []
    for key, value in resources.items():
        if not value:
            continue
        if key == "kinds":
            if any("/" in str(k) or has_wildcard(str(k)) for k in value):
                raise Unconvertible(f"{at}.resources.kinds", "a kind with a group, version or wildcard; not converted")
            parts.append(f"{REQUEST['kind']} in {literal([str(k) for k in value])}")
        elif key in ("names", "name"):
            parts.append(names_condition([str(v) for v in (value if key == "names" else [value])], REQUEST["name"]))
        elif key == "namespaces":
            parts.append(names_condition([str(v) for v in value], REQUEST["namespace"]))
        elif key == "operations":
            parts.append(f"{REQUEST['operation']} in {literal([str(v) for v in value])}")
        else:
            raise Unconvertible(f"{at}.resources.{key}", "not converted (selectors and annotations are label "
                                                         "matching CEL does not spell exactly here)")
    if not parts:
        # an empty filter selects nothing (kk: checkResourceFilter); nothing to convert it to but `false`
        raise Unconvertible(at, "an empty filter, which matches nothing; not converted")
    return conj(parts)


def _match(match: Any) -> str:
    if not isinstance(match, dict) or not (match.get("any") or match.get("all")):
        raise Unconvertible("spec.match", "needs `any` or `all` filters")
    if match.get("any"):
        return disj([_filter(e, f"spec.match.any[{i}]") for i, e in enumerate(match["any"])])
    return conj([_filter(e, f"spec.match.all[{i}]") for i, e in enumerate(match["all"])])


def _kinds_left_out(patterns: Sequence[str], rules: Sequence[str], policy: str, at: str,
                    targets_pods: bool) -> tuple[str, ...] | None:
    """The request kinds the CEL exception must leave out so that it exempts a converted policy exactly where
    the classic one exempts all of its rules; None when the exception names none of them."""
    named_classes = []
    left_out: list[str] = []
    for prefix, kinds in _CLASSES:
        named = [r for r in rules if any(wildcard_match(p, prefix + r) for p in patterns)]
        if named and len(named) != len(rules):
            others = sorted(prefix + r for r in rules if r not in named)
            raise Unconvertible(at, f"names rules {sorted(prefix + r for r in named)} of the converted policy "
                                    f"{policy!r}, which also holds {others}: a CEL exception exempts a whole "
                                    "policy; not converted")
        if named:
            named_classes.append(prefix)
        elif prefix and targets_pods:
            left_out.extend(kinds)
    if not named_classes:
        return None
    if "" not in named_classes:
        raise Unconvertible(at, f"names only the pod-controller variants of the rules of {policy!r}; not converted")
    return tuple(left_out)


def convert_exception(doc: dict[str, Any], conversions: Mapping[str, Any]
                      ) -> tuple[list[dict[str, Any]], list[str]]:
    """-> (the PolicyException document, the keys of the original policies it refers to). `conversions`:
    policy key (`name`, `ns/name` for a Policy) -> its Conversion; Unconvertible names the field."""
    meta = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    if spec.get("conditions") is not None:
        raise Unconvertible("spec.conditions", "an error in them applies no exception in Kyverno, and is an error "
                                               "result in a CEL exception's matchConditions; not converted")
    if spec.get("podSecurity"):
        raise Unconvertible("spec.podSecurity", "podSecurity exclusions: podSecurity rules are not converted")
    if spec.get("background") is False:
        raise Unconvertible("spec.background", "false has no CEL PolicyException counterpart")
    refs: list[dict[str, str]] = []
    originals: list[str] = []
    restriction: tuple[str, ...] | None = None
    for i, entry in enumerate(spec.get("exceptions") or []):
        at = f"spec.exceptions[{i}]"
        key = str(entry.get("policyName", ""))
        conv = conversions.get(key)
        if conv is None or not conv.documents:
            raise Unconvertible(f"{at}.policyName", f"policy {key!r} is not among the converted policies (not given "
                                                    "with -p, or not converted; an exception converts with the "
                                                    "policies it names)")
        patterns = [str(r) for r in entry.get("ruleNames") or []]
        for document in conv.documents:
            name, kind = document["metadata"]["name"], document["kind"]
            rules = [r for r, held in conv.rule_policies.items() if held[0] == name]
            resources = [r for rule in (document["spec"].get("matchConstraints") or {}).get("resourceRules") or []
                         for r in rule.get("resources") or []]
            left_out = _kinds_left_out(patterns, rules, name, at, "pods" in resources)
            if left_out is None:
                continue
            if restriction is not None and left_out != restriction:
                raise Unconvertible(at, "its policies would need different kinds left out of one CEL exception; "
                                        "not converted")
            restriction = left_out
            refs.append({"name": name, "kind": kind})
        originals.append(key)
    if not refs:
        raise Unconvertible("spec.exceptions", "names no rule of a converted policy")
    conditions = [{"name": "match", "expression": _match(spec.get("match"))}]
    if restriction:
        conditions.append({"name": "autogen-rules-not-named",
                           "expression": negate(f"{REQUEST['kind']} in {literal(list(restriction))}")})
    out_meta: dict[str, Any] = {"name": meta.get("name")}
    for key in ("namespace", "annotations", "labels"):
        if meta.get(key):
            out_meta[key] = meta[key]
    return ([{"apiVersion": CEL_API, "kind": "PolicyException", "metadata": out_meta,
              "spec": {"policyRefs": refs, "matchConditions": conditions}}], originals)
