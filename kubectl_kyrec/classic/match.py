"""match / exclude of a classic rule, as kk pkg/engine/utils/match.go MatchesResourceDescription decides.

A block (`any`, `all`, or the old `resources`/`subjects`/`roles`/`clusterRoles` form) is AND across the
attributes it sets and OR inside a list attribute; userInfo attributes are OR'ed into the same error list.
Exclude is looked at only when the match succeeded. When the request carries no user information (the
background scan), Kyverno drops the userInfo part of *match* blocks (so they match) while an exclude
block that needs user information never excludes: reproduced here, as kyrec predicts that scan.

User information *not given* (`RequestFacts.user_known` false: `eval` without a UserInfo) is not the
scan's empty RequestInfo: an admission request always names its user. `match_state` then answers None
when the answer depends on roles/clusterRoles/subjects, so the caller can say `undetermined` instead of
guessing (Kyverno refuses background policies with such blocks, kk pkg/validation/policy/background.go,
so only admission answers them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.golang.wildcard import contains_wildcard
from kubectl_kyrec.golang.wildcard import match as wildcard
from kubectl_kyrec.k8s.labels import Selector, SelectorError, from_label_selector
from kubectl_kyrec.load.run_inputs.kyverno_config import (
    parse_kind_selector,  # Kyverno's ParseKindSelector, one copy for rules and resourceFilters
)
from kubectl_kyrec.model import group_version
from kubectl_kyrec.recording import Step, Trace, shown


@dataclass(frozen=True)
class RequestFacts:
    """What matching needs to know about one request."""

    obj: Mapping[str, Any]                    # the resource (the old one on DELETE)
    group: str
    version: str
    kind: str
    subresource: str
    operation: str
    namespace_labels: Mapping[str, str] | None
    roles: tuple[str, ...] = ()
    cluster_roles: tuple[str, ...] = ()
    user_info: Mapping[str, Any] = field(default_factory=dict)   # {username, groups, ...}
    user_known: bool = True     # False: who makes the request is not given (not the scan's empty user)

    @property
    def has_user_info(self) -> bool:
        """False reads as Kyverno's empty RequestInfo (background scan)."""
        return bool(self.roles or self.cluster_roles or self.user_info.get("username")
                    or self.user_info.get("groups") or self.user_info.get("uid"))


def check_kind(kinds: Sequence[str], facts: RequestFacts, allow_ephemeral: bool = True) -> bool:
    for k in kinds:
        group, version, kind, sub = parse_kind_selector(str(k))
        if wildcard(group, facts.group) and wildcard(version, facts.version) and wildcard(kind, facts.kind):
            if wildcard(sub, facts.subresource):
                return True
            if (allow_ephemeral and (facts.group, facts.version, facts.kind) == ("", "v1", "Pod")
                    and facts.subresource == "ephemeralcontainers"):
                return True
    return False


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _expand_selector(selector: Mapping[str, Any], labels: Mapping[str, str]) -> Mapping[str, Any]:
    """kk: wildcards.ReplaceInSelector: wildcard matchLabels take the first label they match, else '0's."""
    match_labels = selector.get("matchLabels")
    if not isinstance(match_labels, Mapping):
        return selector
    out: dict[str, str] = {}
    for k, v in match_labels.items():
        k, v = str(k), str(v)
        if contains_wildcard(k) or contains_wildcard(v):
            hit = next(((k1, v1) for k1, v1 in labels.items() if wildcard(k, k1) and wildcard(v, str(v1))), None)
            if hit is not None:
                out[hit[0]] = str(hit[1])
            else:
                out[re.sub(r"[*?]", "0", k)] = re.sub(r"[*?]", "0", v)
        else:
            out[k] = v
    return {**selector, "matchLabels": out}


# a rule's selector is asked about every object of its kinds: parsed once unless its matchLabels hold a
# wildcard (then the labels decide what it becomes). The entry keeps the selector so its id is not reused.
_PARSED: dict[int, tuple[Mapping[str, Any], Selector]] = {}


def _has_wildcard_labels(selector: Mapping[str, Any]) -> bool:
    match_labels = selector.get("matchLabels")
    return isinstance(match_labels, Mapping) and any(
        contains_wildcard(str(k)) or contains_wildcard(str(v)) for k, v in match_labels.items())


def _selector(selector: Mapping[str, Any], labels: Mapping[str, str], what: str) -> str | None:
    try:
        entry = _PARSED.get(id(selector))
        if entry is not None and entry[0] is selector:
            parsed = entry[1]
        else:
            parsed = from_label_selector(_expand_selector(selector, labels))
            if not _has_wildcard_labels(selector):
                if len(_PARSED) > 4096:
                    _PARSED.clear()
                _PARSED[id(selector)] = (selector, parsed)
        if parsed.matches(labels):
            return None
        return f"{what} does not match"
    except SelectorError as exc:
        return f"failed to parse {what}: {exc}"


def _subjects(subjects: Sequence[Any], user: Mapping[str, Any]) -> bool:
    username = str(user.get("username") or "")
    groups = [str(g) for g in user.get("groups") or []]
    for s in subjects:
        if not isinstance(s, Mapping):
            continue
        kind, name = s.get("kind"), str(s.get("name") or "")
        if kind == "ServiceAccount":
            if wildcard(f"system:serviceaccount:{s.get('namespace') or ''}:{name}", username):
                return True
        elif kind == "Group":
            if any(wildcard(name, g) for g in groups):
                return True
        elif kind == "User" and wildcard(name, username):
            return True
    return False


def _block_errors(desc: Mapping[str, Any], user: Mapping[str, Any], facts: RequestFacts) -> list[str]:
    """kk: doesResourceMatchConditionBlock; an empty list means the block matches."""
    operations = desc.get("operations") or []
    if operations and facts.operation not in operations:
        return ["operation does not match"]
    errs = []
    obj = facts.obj
    meta = _meta(obj)
    kinds = desc.get("kinds") or []
    if kinds and not check_kind(kinds, facts):
        errs.append(f"kind does not match {kinds}")
    name = str(meta.get("name") or "") or str(meta.get("generateName") or "")
    if desc.get("name") and not wildcard(str(desc["name"]), name):
        errs.append("name does not match")
    names = desc.get("names") or []
    if names and not any(wildcard(str(n), name) for n in names):
        errs.append("none of the names match")
    namespaces = desc.get("namespaces") or []
    if namespaces:
        ns = str(meta.get("name") or "") if obj.get("kind") == "Namespace" else str(meta.get("namespace") or "")
        if not any(wildcard(str(n), ns) for n in namespaces):
            errs.append("namespace does not match")
    annotations = desc.get("annotations")
    if annotations:
        actual = meta.get("annotations") or {}
        for k, v in annotations.items():
            if not any(wildcard(str(k), str(k1)) and wildcard(str(v), str(v1)) for k1, v1 in actual.items()):
                errs.append("annotations does not match")
                break
    selector = desc.get("selector")
    if selector is not None:
        err = _selector(selector, meta.get("labels") or {}, "selector")
        if err:
            errs.append(err)
    ns_selector = desc.get("namespaceSelector")
    if ns_selector is not None:
        if obj.get("kind") == "Namespace":
            errs.append("namespace selector is not applicable for namespace resource")
        elif obj.get("kind"):
            err = _selector(ns_selector, facts.namespace_labels or {}, "namespace selector")
            if err:
                errs.append(err)
    roles = user.get("roles") or []
    if roles and not set(map(str, roles)) & set(facts.roles):
        errs.append("user info does not match roles for the given conditionBlock")
    cluster_roles = user.get("clusterRoles") or []
    if cluster_roles and not set(map(str, cluster_roles)) & set(facts.cluster_roles):
        errs.append("user info does not match clustersRoles for the given conditionBlock")
    subjects = user.get("subjects") or []
    if subjects and not _subjects(subjects, facts.user_info):
        errs.append("user info does not match subject for the given conditionBlock")
    return errs


def _user_part(block: Mapping[str, Any]) -> dict[str, Any]:
    return {k: block.get(k) for k in ("roles", "clusterRoles", "subjects") if block.get(k)}


def _is_empty(desc: Mapping[str, Any], user: Mapping[str, Any]) -> bool:
    return not any(v not in (None, "", [], {}) for v in desc.values()) and not user


def _match_helper(block: Mapping[str, Any], facts: RequestFacts) -> list[str]:
    desc = block.get("resources") or {}
    user = _user_part(block)
    if not facts.has_user_info:
        user = {}
    if _is_empty(desc, user):
        return ["match cannot be empty"]
    return _block_errors(desc, user, facts)


def _exclude_helper(block: Mapping[str, Any], facts: RequestFacts) -> list[str]:
    desc = block.get("resources") or {}
    user = _user_part(block)
    if _is_empty(desc, user):
        return []
    if not _block_errors(desc, user, facts):
        return ["resource excluded since one of the criteria excluded it"]
    return []


def _block_state(block: Mapping[str, Any], facts: RequestFacts, exclude: bool) -> bool | None:
    """Whether a match block matches (an exclude block excludes); None: it depends on the unknown user.

    With the user unknown, a block naming roles/clusterRoles/subjects is decided only when its resource
    part already fails (then the user cannot make it match)."""
    helper = _exclude_helper if exclude else _match_helper
    if facts.user_known or not _user_part(block):
        return bool(helper(block, facts)) is exclude
    desc = block.get("resources") or {}
    if _block_errors(desc, {}, facts):
        return False
    return None


def block_reasons(block: Mapping[str, Any], facts: RequestFacts, exclude: bool) -> tuple[bool | None, list[str]]:
    """One match (or exclude) block as the rule's answer takes it (`_block_state`: matches, excludes, None
    when it depends on the unknown user), with Kyverno's reasons for a block that does not match; an
    exclude block's reasons are the criteria it does not meet (none: it excludes). For `explain`."""
    state = _block_state(block, facts, exclude)
    reasons = _block_errors(block.get("resources") or {}, _user_part(block), facts) if exclude \
        else _match_helper(block, facts)
    return state, reasons


def _any(states: Iterable[bool | None]) -> bool | None:
    """Three-valued OR, stopping at the first True (the answer is the same as evaluating every block)."""
    unknown = False
    for state in states:
        if state is True:
            return True
        unknown = unknown or state is None
    return None if unknown else False


def _all(states: Iterable[bool | None]) -> bool | None:
    """Three-valued AND, stopping at the first False."""
    unknown = False
    for state in states:
        if state is False:
            return False
        unknown = unknown or state is None
    return None if unknown else True


def user_info_paths(block: Mapping[str, Any] | None, where: str) -> list[str]:
    """`exclude.any[0].clusterRoles`-style names of the userInfo fields a match/exclude sets."""
    if not block:
        return []
    out = [f"{where}.{k}" for k in _user_part(block)]
    for part in ("any", "all"):
        for i, b in enumerate(block.get(part) or []):
            if isinstance(b, Mapping):
                out.extend(f"{where}.{part}[{i}].{k}" for k in _user_part(b))
    return out


_KIND_ONLY = frozenset(("kinds", "operations"))
_BY_KIND: dict[tuple[int, int, str, str, str, str, str], tuple[Any, Any, bool | None]] = {}


def _kind_only(block: Mapping[str, Any] | None) -> bool:
    """A match/exclude whose answer depends on the request's kind and operation alone."""
    if not block:
        return True
    for b in [block, *(block.get("any") or []), *(block.get("all") or [])]:
        if not isinstance(b, Mapping) or any(k not in ("any", "all", "resources") for k in b):
            return False
        if not set(b.get("resources") or {}) <= _KIND_ONLY:
            return False
    return True


def rule_matches(match: Mapping[str, Any], exclude: Mapping[str, Any] | None, facts: RequestFacts,
                 policy_namespace: str = "") -> bool:
    """True when the rule applies to the request (kk: MatchesResourceDescription returns nil); an answer
    that depends on the unknown user (see match_state) is False."""
    return match_state(match, exclude, facts, policy_namespace) is True


def match_state(match: Mapping[str, Any], exclude: Mapping[str, Any] | None, facts: RequestFacts,
                policy_namespace: str = "", recorder: Trace | None = None) -> bool | None:
    """True when the rule applies, False when not, None when that depends on who makes the request and
    `facts.user_known` is false; `recorder` (explain's): each block's answer and reasons are recorded.

    Scans ask the same question for every subject of a kind: a rule whose blocks name only kinds and
    operations is answered once per (kind, operation) and remembered.
    """
    if recorder is not None:
        return _recorded_match(match, exclude, facts, policy_namespace, recorder)
    if policy_namespace and policy_namespace != str(_meta(facts.obj).get("namespace") or ""):
        return False
    key = (id(match), id(exclude), facts.group, facts.version, facts.kind, facts.subresource, facts.operation)
    cached = _BY_KIND.get(key)
    if cached is not None and cached[0] is match and cached[1] is exclude:
        return cached[2]
    answer = _rule_matches(match, exclude, facts)
    if _kind_only(match) and _kind_only(exclude) and answer is not None:
        _BY_KIND[key] = (match, exclude, answer)
    return answer


_SAYS = {False: {True: "matched", False: "not matched", None: "depends on the requesting user"},
         True: {True: "excludes", False: "does not exclude", None: "depends on the requesting user"}}


def _recorded_match(match: Mapping[str, Any], exclude: Mapping[str, Any] | None, facts: RequestFacts,
                    policy_namespace: str, recorder: Trace) -> bool | None:
    """match_state's answer from the blocks' answers as recorded (`block_reasons`), then `applies`. Every
    block is recorded, the exclude ones too when the match already failed: the answer is the same as
    `_rule_matches` stopping early, and explain shows what the rule is made of."""
    matched = _recorded_blocks("match", match, facts, False, recorder)
    excluded = _recorded_blocks("exclude", exclude, facts, True, recorder) if exclude else False
    answer = None if excluded is None and matched is not False else False if excluded else matched
    if policy_namespace and policy_namespace != str(_meta(facts.obj).get("namespace") or ""):
        answer = False
    recorder.add("applies", _SAYS[False][answer])
    return answer


def _recorded_blocks(name: str, block: Mapping[str, Any], facts: RequestFacts, exclude: bool,
                     recorder: Trace) -> bool | None:
    for form, combine in (("any", _any), ("all", _all)):
        if block.get(form):
            step = recorder.open(f"{name}.{form}")
            states = [_recorded_block(f"[{i}]", b, facts, exclude, recorder) for i, b in enumerate(block[form])]
            recorder.close(step, "")
            return combine(states)
    return _recorded_block(name, block, facts, exclude, recorder)


def _recorded_block(name: str, block: Mapping[str, Any], facts: RequestFacts, exclude: bool,
                    recorder: Trace) -> bool | None:
    state, reasons = block_reasons(block, facts, exclude)
    said = " ".join([shown(dict(block.get("resources") or {}), 200, go=False)]
                    + [f"{k} {shown(block[k], 200, go=False)}" for k in ("subjects", "roles", "clusterRoles")
                       if block.get(k)])
    recorder.add(name, _SAYS[exclude][state], said).children.extend(Step(reason) for reason in reasons)
    return state


def _rule_matches(match: Mapping[str, Any], exclude: Mapping[str, Any] | None,
                  facts: RequestFacts) -> bool | None:
    matched: bool | None
    if match.get("any"):
        matched = _any(_block_state(b, facts, False) for b in match["any"])
    elif match.get("all"):
        matched = _all(_block_state(b, facts, False) for b in match["all"])
    else:
        matched = _block_state(match, facts, False)
    if matched is False or not exclude:
        return matched
    excluded: bool | None
    if exclude.get("any"):
        excluded = _any(_block_state(b, facts, True) for b in exclude["any"])
    elif exclude.get("all"):
        # excluded only when every block excludes it
        excluded = _all(_block_state(b, facts, True) for b in exclude["all"])
    else:
        excluded = _block_state(exclude, facts, True)
    if excluded is True:
        return False
    return None if excluded is None else matched


def matches_resources(statement: Mapping[str, Any], facts: RequestFacts) -> bool:
    """A PolicyException's `match` (kk: pkg/utils/match CheckMatchesResources): any/all, no old form."""
    def filter_ok(block: Mapping[str, Any]) -> bool:
        desc = block.get("resources") or {}
        user = _user_part(block)
        if _is_empty(desc, user):
            return False
        return not _block_errors(desc, user, facts)

    if statement.get("any"):
        return any(filter_ok(b) for b in statement["any"])
    if statement.get("all"):
        return all(filter_ok(b) for b in statement["all"])
    return False


def exception_match_state(statement: Mapping[str, Any], facts: RequestFacts) -> bool | None:
    """matches_resources with the user unknown (`facts.user_known` false): None where a block names
    roles/clusterRoles/subjects and its resource part matches. (An exception's blocks always check their
    user part, kk checkResourceFilter: the scan's empty user never matches them.)"""
    def state(block: Mapping[str, Any]) -> bool | None:
        desc = block.get("resources") or {}
        user = _user_part(block)
        if _is_empty(desc, user):
            return False
        if facts.user_known or not user:
            return not _block_errors(desc, user, facts)
        return None if not _block_errors(desc, {}, facts) else False

    if statement.get("any"):
        return _any(state(b) for b in statement["any"])
    if statement.get("all"):
        return _all(state(b) for b in statement["all"])
    return False


# ---- early reject by kind ------------------------------------------------------------------------------------

def _kind_requirements(match: Mapping[str, Any]) -> tuple[tuple[str, ...], ...] | None:
    """Kind lists a request must satisfy (check_kind, each of them) for `match` to be able to succeed, read
    the way _rule_matches reads the block; None when some way of matching names no kind (any kind can pass).

    `any`: one block must match, so the union of the blocks' kinds is necessary, but only if every block
    names kinds. `all`: every block must match, so each block's kinds is necessary. The old form: its kinds.
    Exclude only takes matches away and is left to the full match.
    """
    def kinds_of(block: Any) -> tuple[str, ...] | None:
        desc = block.get("resources") if isinstance(block, Mapping) else None
        kinds = desc.get("kinds") if isinstance(desc, Mapping) else None
        return tuple(str(k) for k in kinds) if kinds else None

    if match.get("any"):
        union: list[str] = []
        for block in match["any"]:
            kinds = kinds_of(block)
            if kinds is None:
                return None
            union.extend(kinds)
        return (tuple(union),)
    if match.get("all"):
        needed = tuple(k for k in (kinds_of(b) for b in match["all"]) if k is not None)
        return needed or None
    kinds = kinds_of(match)
    return (kinds,) if kinds is not None else None


class KindGate:
    """Which of a list of rules can match a request of a given group/version/kind/subresource, asked once per
    distinct kind (a scan meets few kinds and many objects). Exact: the answer is check_kind's on each
    requirement, so wildcards (`*`, `apps/*/Deployment`), group/version-qualified kinds and `Kind/subresource`
    selectors decide as in the full match; a rule the gate lets through still gets the full match."""

    def __init__(self, matches: Sequence[Mapping[str, Any]]) -> None:
        self._requirements = [_kind_requirements(m) for m in matches]
        self._seen: dict[tuple[str, str, str, str], tuple[int, ...]] = {}
        self._by_object: dict[tuple[str, str], tuple[int, ...]] = {}

    def for_object(self, obj: Mapping[str, Any]) -> tuple[int, ...]:
        """candidates() for an object as read (no subresource), remembered by its apiVersion and kind."""
        key = (str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        found = self._by_object.get(key)
        if found is None:
            group, version = group_version(key[0])      # as build_request reads it
            found = self._by_object[key] = self.candidates(group, version, key[1])
        return found

    def candidates(self, group: str, version: str, kind: str, subresource: str = "") -> tuple[int, ...]:
        """Positions (in the order given) of the rules whose match can succeed for this kind."""
        key = (group, version, kind, subresource)
        found = self._seen.get(key)
        if found is None:
            facts = RequestFacts(obj={}, group=group, version=version, kind=kind, subresource=subresource,
                                 operation="", namespace_labels=None)
            found = tuple(i for i, reqs in enumerate(self._requirements)
                          if reqs is None or all(check_kind(kinds, facts) for kinds in reqs))
            self._seen[key] = found
        return found
