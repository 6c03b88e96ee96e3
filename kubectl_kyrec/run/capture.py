"""Kinds a run needs that the state never captured: named once, with the command that captures them.

A state holds what was listed. When the policies match Pods and the state holds no Pod and no record of
listing Pods, "no subject in scope" means nothing; kyrec says which kinds are missing instead of
answering with confidence (and rows that depend on them say so themselves: kind-not-captured).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubectl_kyrec.errors import few
from kubectl_kyrec.load.run_inputs.cluster_state import capture_command

if TYPE_CHECKING:
    from kubectl_kyrec.load.policy.classic import ClassicPolicy
    from kubectl_kyrec.load.policy.policies import PolicySet
    from kubectl_kyrec.load.policy.vocabulary import MatchResources
    from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState
    from kubectl_kyrec.load.run_inputs.kinds import KindTable, ResourceInfo
    from kubectl_kyrec.load.run_inputs.sources import Inputs


# create-only kinds (reviews, Pod bindings): nothing can list them, so a wildcard never makes them a gap
_NOT_LISTABLE = frozenset({("", "Binding"), ("authentication.k8s.io", "TokenReview"),
                           ("authentication.k8s.io", "SelfSubjectReview"),
                           ("authorization.k8s.io", "SubjectAccessReview"),
                           ("authorization.k8s.io", "LocalSubjectAccessReview"),
                           ("authorization.k8s.io", "SelfSubjectAccessReview"),
                           ("authorization.k8s.io", "SelfSubjectRulesReview")})


@dataclass(frozen=True)
class Need:
    """A kind the run's subjects come from, and the versions a policy matches it at (None: any version).

    The version counts: a state object is matched at the version it was captured at, so Deployments
    listed as apps/v1 are no subjects for a rule that names only another version."""

    info: ResourceInfo
    versions: frozenset[str] | None
    # the policies (report names) that select this kind through a `*` for the resource or kind: when many
    # kinds lack, naming them says why the list is long, where naming every kind would bury the notice
    wildcard_by: frozenset[str] = frozenset()


def trigger_kinds(policies: PolicySet, table: KindTable) -> list[Need]:
    """The kinds the policies select: resourceRules with `*` expanded through the kind table, the pod
    controllers of autogen (ValidatingPolicy, ImageValidatingPolicy and classic), and classic rules' `kinds`."""
    from kubectl_kyrec.evaluate.autogen import autogen_targets, variants

    constraints: list[tuple[str, MatchResources | None]] = [
        *((p.meta.key, v.match_constraints) for p in policies.validating for v in variants(p)),
        *((p.meta.key, p.match_constraints) for p in policies.admission),
        *((p.meta.key, p.match_constraints) for p in policies.generating),
        *((p.meta.key, p.match_constraints) for p in policies.image_validating),
        *((p.meta.key, t.match) for p in policies.image_validating if p.meta.kind == "ImageValidatingPolicy"
          for t in autogen_targets(p.match_constraints, p.autogen_controllers))]
    versions: dict[tuple[str, str], set[str] | None] = {}
    infos: dict[tuple[str, str], ResourceInfo] = {}
    wildcard_by: dict[tuple[str, str], set[str]] = {}

    def need(info: ResourceInfo, version: str, wildcard_of: str | None = None) -> None:
        key = (info.group, info.kind)
        if key in _NOT_LISTABLE:
            return
        infos.setdefault(key, info)
        if wildcard_of is not None:
            wildcard_by.setdefault(key, set()).add(wildcard_of)
        if version == "*":
            versions[key] = None
        elif key not in versions or versions[key] is not None:
            known = versions.setdefault(key, set())
            assert known is not None
            known.add(version)

    for policy_name, match in constraints:
        for rule in match.resource_rules if match is not None else ():
            for group in rule.api_groups:
                for resource in rule.resources:
                    name, _, sub = resource.partition("/")
                    if sub and sub != "*":      # a subresource's requests are no objects of the state
                        continue
                    for version in rule.api_versions or ("*",):
                        for info in table.kinds_for_resource(group, version, name):
                            need(info, version, policy_name if name == "*" else None)
    for policy in policies.classic:
        for kind_text in _classic_kinds(policy):
            kind, _ = _classic_kind(kind_text)
            for info in _classic_infos(kind_text, table):
                need(info, "*", policy.meta.key if kind == "*" else None)
    return [Need(infos[key], frozenset(v) if v is not None else None, frozenset(wildcard_by.get(key, ())))
            for key, v in versions.items()]


def _classic_kinds(policy: ClassicPolicy) -> list[str]:
    from kubectl_kyrec.classic.autogen import ANNOTATION, POD_CONTROLLERS, can_autogen

    kinds: list[str] = []
    for rule in policy.rules:
        block = rule.raw.get("match") or {}
        for desc in [block, *(block.get("any") or []), *(block.get("all") or [])]:
            resources = desc.get("resources") if isinstance(desc, Mapping) else None
            if isinstance(resources, Mapping):
                kinds.extend(str(k) for k in resources.get("kinds") or [])
    if can_autogen(policy):
        annotation = policy.meta.annotations.get(ANNOTATION)
        chosen = POD_CONTROLLERS if annotation is None else tuple(annotation.split(","))
        kinds.extend(k for k in chosen if k in POD_CONTROLLERS)
    return kinds


def _classic_kind(text: str) -> tuple[str, str | None]:
    """The kind and group (None: any) of `Kind`, `version/Kind`, `group/version/Kind` (a `/subresource`
    ignored); the kind `*` is every kind."""
    parts = text.split("/")
    kind = parts[-1].split(".")[0] if len(parts) <= 3 else parts[2]
    return kind, parts[0] if len(parts) >= 3 else None


def _classic_infos(text: str, table: KindTable) -> list[ResourceInfo]:
    kind, group = _classic_kind(text)
    return [i for i in table if kind in ("*", i.kind) and (group in (None, "*", i.group))]


def _met(state: ClusterState, need: Need, namespace: str) -> bool:
    info = need.info
    if need.versions is None:
        return state.is_listed(info.api_version, info.kind, namespace) is True
    return any(state.is_listed(f"{info.group}/{v}" if info.group else v, info.kind, namespace,
                               exact_version=True) is True for v in need.versions)


def uncaptured(state: ClusterState, kinds: Iterable[Need], namespace: str = "") -> list[Need]:
    """The kinds the state has no listing of (in `namespace`, "" = everywhere) at a version a policy matches."""
    return [need for need in kinds if not _met(state, need, namespace)]


def _served(state: ClusterState, need: Need) -> Need | None:
    """`need` cut to what the server serves (None: none of it), as far as the state knows what it serves.

    A kind the server does not serve cannot be listed, so advising a capture of it gives a `kubectl get`
    that fails; nothing of it exists in the cluster either. When the state does not know (files without a
    `kyrec.io/served` record), every kind stays."""
    info = need.info
    if state.serves(info.api_version, info.kind) is False:
        return None
    if need.versions is None or state.served is None:
        return need
    versions = frozenset(v for v in need.versions
                         if state.serves(f"{info.group}/{v}" if info.group else v, info.kind, exact_version=True))
    return dataclasses.replace(need, versions=versions) if versions else None


def run_gaps(inputs: Inputs, namespace: str = "", extra: Iterable[tuple[str, str]] = ()) -> str | None:
    """The capture notice of a run: the policies' trigger kinds when the subjects come from the state,
    and `extra` (apiVersion, kind) pairs a stage found missing (downstream kinds)."""
    from kubectl_kyrec.load.run_inputs.kinds import ResourceInfo, guess_plural
    from kubectl_kyrec.model import group_version

    needed = [] if inputs.resources_named else trigger_kinds(inputs.policies, inputs.kinds)
    for api_version, kind in extra:
        info = inputs.kinds.by_kind(api_version, kind)
        if info is None:
            group, version = group_version(api_version)
            info = ResourceInfo(group, version, kind, guess_plural(kind), True)
        needed.append(Need(info, None))
    unique: dict[tuple[str, str], Need] = {}
    for item in needed:
        served = _served(inputs.state, item)
        if served is not None:
            unique.setdefault((item.info.group, item.info.kind), served)
    return capture_notice(uncaptured(inputs.state, unique.values(), namespace), inputs.state, namespace)


# Up to 8 lacking kinds are named in full, with a kubectl command of exactly those: that keeps a Pod policy's whole
# family explicit (Pods and the six pod controllers autogen adds: 7) and a policy on a few kinds, in a notice of a
# few lines. More come from a `*` (one resourceRule on every kind selects the ~90 kinds, ~95 resources, the kind
# table knows) or from many policies: their kinds and resource names (~3,000 characters) would bury the notice at
# the top of every run, so it gives the count, the first few kinds, the policies whose `*` selects them, and a
# command that lets kubectl list every listable kind itself.
_NAMED_IN_FULL = 8
_NAMED_WHEN_MANY = 5
_POLICIES_NAMED = 3
# kubectl's own list of the listable resource names, in place of spelling them out
_EVERY_LISTABLE = "$(kubectl api-resources --verbs=list -o name | paste -sd, -)"


def capture_notice(kinds: Sequence[Need], state: ClusterState, namespace: str = "") -> str | None:
    """One notice naming the kinds and the kubectl command that captures them; None when nothing lacks."""
    if state.source == "live":
        # a kind the cluster refused to list needs a permission, not a capture: its error (printed with
        # the exit code, run/unreadable.py) names the verb, the resource and the rule that grants them
        kinds = [n for n in kinds if not state.unreadable_message(n.info.api_version, n.info.kind, namespace)]
    if not kinds:
        return None
    absent = [n for n in kinds if state.is_listed(n.info.api_version, n.info.kind, namespace) is not True]
    elsewhere = [n for n in kinds if n not in absent]
    plain: set[str] = set()
    versioned: set[str] = set()
    for n in kinds:
        i = n.info
        if n in elsewhere and n.versions:       # kubectl's resource.version.group names the version
            versioned.update(f"{i.resource}.{v}.{i.group}" if i.group else f"{i.resource}.{v}" for v in n.versions)
        else:
            plain.add(f"{i.resource}.{i.group}" if i.group else i.resource)
    unreadable = [f"{n.info.kind}: {msg}" for n in kinds
                  if (msg := state.unreadable_message(n.info.api_version, n.info.kind, namespace))]
    scope = f"-n {namespace}" if namespace else "-A"
    absent_kinds = sorted({n.info.kind for n in absent})
    many = len(absent_kinds) > _NAMED_IN_FULL
    resources = ",".join(sorted(plain | versioned))
    parts = []
    if many:
        parts.append(f"the state never listed {len(absent_kinds)} kinds the policies use "
                     f"({few(absent_kinds, _NAMED_WHEN_MANY)}{_wildcard_clause(absent, len(absent_kinds))})")
        # api-resources gives each kind at its preferred version, which may be the very one the state lists
        # where a policy matches another: those keep their versioned names
        resources = ",".join([_EVERY_LISTABLE, *sorted(versioned)])
    elif absent:
        parts.append(f"the state holds no {', '.join(absent_kinds)} and no record of listing them")
    if elsewhere:
        parts.append("the state lists " + ", ".join(sorted(
            f"{n.info.kind} only at {', '.join(state.listed_versions(n.info.api_version, n.info.kind))} where the "
            f"policies match {', '.join(sorted(n.versions or ()))}" for n in elsewhere)))
    # the short form leaves out what kind-not-captured means: the rows that carry that reason say it themselves
    unknown = ("whether any is in scope is not known" if many else "what depends on them cannot be known (no "
               "object of those kinds is in scope; downstreams of them are kind-not-captured)")
    # kyrec's own capture, not `kubectl get`: kubectl's List of a kind with no objects is empty and names no kind,
    # so a later run could not tell that the kind was listed; capture records each LIST, empty or not
    text = (f"{'; '.join(parts)}, so {unknown}. Capture them with: {capture_command(resources, scope)}, and pass "
            "it with another --state")
    if unreadable:
        text += f" (could not be read: {'; '.join(unreadable)})"
    return text


def _wildcard_clause(absent: Sequence[Need], total: int) -> str:
    """Why the list is long: how many of the kinds a `*` selects, and in which policies ("" when none)."""
    policies = sorted({p for n in absent for p in n.wildcard_by})
    if not policies:
        return ""
    count = len({n.info.kind for n in absent if n.wildcard_by})
    which = "all" if count == total else f"{count} of them"
    named = few(policies, _POLICIES_NAMED) + (" policies" if len(policies) > _POLICIES_NAMED else "")
    return f"; {which} through `*` in {named}"
