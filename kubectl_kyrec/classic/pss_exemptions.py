"""Kyverno's Pod Security exemptions (kk pkg/pss/evaluate.go ApplyPodSecurityExclusion, exemptExclusions,
GetPodWithMatchingContainers; pkg/pss/utils/mapping.go), used by a rule's `podSecurity.exclude` and by
PolicyExceptions' `podSecurity`.

An exclusion is evaluated by running the checks again on a stand-in pod: without `images`, the pod with its
containers replaced by one empty container named `fake` (pod-level exclusion); with `images`, a pod holding
only the containers whose image matches (container-level exclusion). Each field error the stand-in gives for
the control's checks, when its field (indexes as `*`) equals `restrictedField` (or none is set) and all its
bad values match `values` (go-wildcards; an error without bad values always does), removes the first field
error of the real pod with the same field, and for container fields the same container name. A check left
with no field errors is exempted.

The field errors of a check are removed as Go's `remove` does (the last one takes the removed one's place),
since that order shows in Kyverno's message. Kyverno keeps the remaining checks in a map, so their order in
its message is random once an exclusion applied; kyrec keeps them in check order.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.classic.pss_checks import CheckFailure, FieldError, Version, evaluate_pod
from kubectl_kyrec.classic.request import containers
from kubectl_kyrec.golang.wildcard import match as wildcard_match

# kk pssutils.PSS_control_name_to_ids (the check IDs a control name stands for)
CONTROL_CHECKS: Mapping[str, tuple[str, ...]] = {
    "Capabilities": ("capabilities_baseline", "capabilities_restricted"),
    "Seccomp": ("seccompProfile_baseline", "seccompProfile_restricted"),
    "Privileged Containers": ("privileged",),
    "Host Ports": ("hostPorts",),
    "/proc Mount Type": ("procMount",),
    "HostProcess": ("windowsHostProcess",),
    "SELinux": ("seLinuxOptions",),
    "Host Namespaces": ("hostNamespaces",),
    "HostPath Volumes": ("hostPathVolumes",),
    "Sysctls": ("sysctls",),
    "AppArmor": ("appArmorProfile",),
    "Privilege Escalation": ("allowPrivilegeEscalation",),
    "Running as Non-root": ("runAsNonRoot",),
    "Running as Non-root user": ("runAsUser",),
    "Volume Types": ("restrictedVolumes",),
}
CONTROL_NAMES: Mapping[str, str] = {check: name for name, checks in CONTROL_CHECKS.items() for check in checks}

_INDEX = re.compile(r"\d+")
_WORD = re.compile(r"[a-zA-Z]+")
_CONTAINER_TYPES = ("containers", "initContainers", "ephemeralContainers")


def _check_patterns(patterns: Sequence[str], value: str) -> bool:
    """kk ext/wildcard CheckPatterns: any pattern matches."""
    return any(wildcard_match(p, value) for p in patterns)


def _strings(entry: Mapping[str, Any], key: str) -> list[str]:
    value = entry.get(key)
    return [str(v) for v in value] if isinstance(value, list) else []


@functools.lru_cache(maxsize=4096)
def _parse_field(field: str) -> tuple[str, tuple[int, ...], str, bool]:
    """kk parseField: the field with indexes as `*`, its indexes, its second word and whether that word is a
    container list. Cached: the checks give the same few fields for every pod."""
    indexes = tuple(int(m) for m in _INDEX.findall(field))
    words = _WORD.findall(field)
    word = words[1] if len(words) > 1 else ""
    return _wildcard_indexes(field), indexes, word, word in _CONTAINER_TYPES


@functools.lru_cache(maxsize=4096)
def _wildcard_indexes(field: str) -> str:
    return _INDEX.sub("*", field)


def _container_name(pod_spec: Mapping[str, Any], index: int, kind: str) -> str:
    """kk getContainerInfo(...).Name."""
    containers = pod_spec.get(kind) if kind in _CONTAINER_TYPES else None
    if not isinstance(containers, list) or not 0 <= index < len(containers):
        return ""
    c = containers[index]
    name = c.get("name") if isinstance(c, Mapping) else None
    return name if isinstance(name, str) else ""


def _bad_values(err: FieldError) -> list[str]:
    """kk extractBadValues."""
    value = err.bad_value
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, int):
        return [str(value)]
    if isinstance(value, list):
        return [str(v) for v in value]
    return []


def _stand_in(exclude: Mapping[str, Any], meta: Mapping[str, Any],
              spec: Mapping[str, Any]) -> tuple[bool, Mapping[str, Any], Mapping[str, Any]]:
    """kk GetPodWithMatchingContainers: (container-level?, metadata, spec) of the pod the exclusion checks."""
    images = _strings(exclude, "images")
    if not images:
        # a shallow copy: the checks only read the pod (Kyverno deep-copies the typed Pod it edits)
        pod_spec = dict(spec)
        pod_spec["containers"] = [{"name": "fake"}]
        pod_spec.pop("initContainers", None)
        pod_spec.pop("ephemeralContainers", None)
        return False, meta, pod_spec
    matching: dict[str, Any] = {}
    for kind, _, c in containers(spec):
        if _check_patterns(images, _image(c)):
            matching.setdefault(kind, []).append(c)
    # the stand-in pod keeps only the name and namespace of the metadata
    stand_meta = {k: meta[k] for k in ("name", "namespace") if k in meta}
    return True, stand_meta, matching


def _image(container: Mapping[str, Any]) -> str:
    image = container.get("image")
    return image if isinstance(image, str) else ""


def _exempt(failures: dict[str, CheckFailure], excluded: list[CheckFailure], exclude: Mapping[str, Any],
            spec: Mapping[str, Any], matching: Mapping[str, Any], container_level: bool) -> None:
    """kk exemptExclusions, on `failures` (check id -> failure) in place."""
    restricted_field = str(exclude.get("restrictedField") or "")
    values = _strings(exclude, "values")
    for result in excluded:
        for check_id in CONTROL_CHECKS.get(str(exclude.get("controlName") or ""), ()):
            if result.id != check_id or result.result.errors is None:
                continue
            for ex_err in result.result.errors:
                ex_container = ""
                ex_is_container = False
                if container_level:
                    ex_field, ex_indexes, ex_kind, ex_is_container = _parse_field(ex_err.field)
                    if ex_is_container:
                        ex_container = _container_name(matching, ex_indexes[0], ex_kind)
                else:
                    ex_field = _wildcard_indexes(ex_err.field)
                if restricted_field and ex_field != restricted_field:
                    continue
                if values and not all(_check_patterns(values, v) for v in _bad_values(ex_err)):
                    continue
                failure = failures.get(check_id)
                if failure is None or failure.result.errors is None:
                    continue
                errors = failure.result.errors
                for idx, err in enumerate(errors):
                    is_container = False
                    if container_level:
                        field, indexes, kind, is_container = _parse_field(err.field)
                    else:
                        field = _wildcard_indexes(err.field)
                    if is_container:
                        same = ex_field == field and ex_container == _container_name(spec, indexes[0], kind)
                    else:
                        same = ex_field == field
                    if same:
                        errors[idx] = errors[-1]        # Go's remove(): the last takes its place
                        errors.pop()
                        break
                if not errors:
                    del failures[check_id]


def apply_exclusions(level: str, version: Version, excludes: Sequence[Mapping[str, Any]],
                     failures: list[CheckFailure], meta: Mapping[str, Any],
                     spec: Mapping[str, Any]) -> list[CheckFailure]:
    """kk ApplyPodSecurityExclusion: the failures left once every exclusion applied, in check order."""
    remaining = {f.id: f for f in failures}
    for exclude in excludes:
        # only the checks of the exclusion's control that still fail can be exempted (exemptExclusions
        # reads nothing else), so the stand-in runs those alone, and none when none is left
        checks = frozenset(c for c in CONTROL_CHECKS.get(str(exclude.get("controlName") or ""), ())
                           if c in remaining)
        if not checks:
            continue
        container_level, stand_meta, stand_spec = _stand_in(exclude, meta, spec)
        excluded = evaluate_pod(level, version, stand_meta, stand_spec, checks)
        _exempt(remaining, excluded, exclude, spec, stand_spec, container_level)
    return list(remaining.values())
