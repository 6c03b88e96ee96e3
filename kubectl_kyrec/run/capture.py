"""Kinds a run needs that the state never captured: named once, with the command that captures them.

A state holds what was listed. When the policies match Pods and the state holds no Pod and no record of
listing Pods, "no subject in scope" means nothing; kyrec says which kinds are missing instead of
answering with confidence (and rows that depend on them say so themselves: kind-not-captured).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubectl_kyrec.cluster.state import ClusterState
    from kubectl_kyrec.load.kinds import KindTable, ResourceInfo
    from kubectl_kyrec.load.policies import MatchResources, PolicySet
    from kubectl_kyrec.run.inputs import Inputs


def trigger_kinds(policies: PolicySet, table: KindTable) -> list[ResourceInfo]:
    """The kinds the policies' resourceRules name outright (wildcards and subresources are left out: a
    policy on `*` does not make every kind a capture gap)."""
    constraints: list[MatchResources | None] = [
        *(p.match_constraints for p in policies.validating), *(p.match_constraints for p in policies.admission),
        *(p.match_constraints for p in policies.generating)]
    out: dict[tuple[str, str], ResourceInfo] = {}
    for match in constraints:
        for rule in match.resource_rules if match is not None else ():
            for group in rule.api_groups:
                for resource in rule.resources:
                    if "*" in group or "*" in resource or "/" in resource:
                        continue
                    for version in rule.api_versions or ("*",):
                        for info in table.kinds_for_resource(group, version, resource):
                            out.setdefault((info.group, info.kind), info)
    return list(out.values())


def uncaptured(state: ClusterState, kinds: Iterable[ResourceInfo], namespace: str = "") -> list[ResourceInfo]:
    """The kinds the state has no listing of (in `namespace`, "" = everywhere)."""
    return [info for info in kinds if state.is_listed(info.api_version, info.kind, namespace) is not True]


def run_gaps(inputs: Inputs, namespace: str = "", extra: Iterable[tuple[str, str]] = ()) -> str | None:
    """The capture notice of a run: the policies' trigger kinds when the subjects come from the state,
    and `extra` (apiVersion, kind) pairs a stage found missing (downstream kinds)."""
    from kubectl_kyrec.load.kinds import ResourceInfo, guess_plural
    from kubectl_kyrec.model import group_version

    needed = [] if inputs.resources_named else trigger_kinds(inputs.policies, inputs.kinds)
    for api_version, kind in extra:
        info = inputs.kinds.by_kind(api_version, kind)
        if info is None:
            group, version = group_version(api_version)
            info = ResourceInfo(group, version, kind, guess_plural(kind), True)
        needed.append(info)
    unique = {(i.group, i.kind): i for i in needed}
    return capture_notice(uncaptured(inputs.state, unique.values(), namespace), inputs.state, namespace)


def capture_notice(kinds: Sequence[ResourceInfo], state: ClusterState, namespace: str = "") -> str | None:
    """One notice naming the kinds and the kubectl command that captures them; None when nothing lacks."""
    if not kinds:
        return None
    names = sorted({f"{i.resource}.{i.group}" if i.group else i.resource for i in kinds})
    unreadable = [f"{i.kind}: {msg}" for i in kinds
                  if (msg := state.unreadable_message(i.api_version, i.kind, namespace))]
    scope = f"-n {namespace}" if namespace else "-A"
    text = (f"the state holds no {', '.join(sorted({i.kind for i in kinds}))} and no record of listing them, so "
            "what depends on them cannot be known (no object of those kinds is in scope; downstreams of them are "
            f"kind-not-captured). Capture them with: kubectl get {','.join(names)} {scope} -o json "
            "--show-managed-fields > more-state.json, and pass it with another --state")
    if unreadable:
        text += f" (could not be read: {'; '.join(unreadable)})"
    return text
