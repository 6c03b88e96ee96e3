"""A PodSecurity exclusion as Kyverno refuses it when the policy is admitted (kk: api/kyverno/v1
PodSecurityStandard.Validate, Rule.ValidatePSaControlNames): a load-time check, so the loader holds it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# kk pssutils: the controls an exclusion must (container level) or must not (pod level) name images for, and
# those a baseline rule may not exclude
_CONTAINER_LEVEL = ("Capabilities", "Privileged Containers", "Host Ports", "/proc Mount Type", "Privilege Escalation")
_POD_LEVEL = ("Host Namespaces", "HostPath Volumes", "Sysctls", "Volume Types")
_RESTRICTED_ONLY = ("Volume Types", "Privilege Escalation", "Running as Non-root", "Running as Non-root user")


def exclusion_errors(entry: Mapping[str, Any], level: str | None) -> list[tuple[str, str]]:
    """kk PodSecurityStandard.Validate (and, for a rule's `exclude`, Rule.ValidatePSaControlNames with the
    rule's level): (field, message) for each reason Kyverno refuses the entry."""
    control = str(entry.get("controlName") or "")
    images, values = _strings(entry, "images"), _strings(entry, "values")
    errors = []
    if control in _CONTAINER_LEVEL and not images:
        errors.append(("controlName", f"Invalid value: {control!r}: exclude.images must be specified for the "
                                      "container level control"))
    elif control in _POD_LEVEL and images:
        errors.append(("controlName", f"Invalid value: {control!r}: exclude.images must not be specified for the "
                                      "pod level control"))
    if entry.get("restrictedField") and not values:
        errors.append(("values", "Forbidden: values is required"))
    if not entry.get("restrictedField") and values:
        errors.append(("restrictedField", "Forbidden: restrictedField is required"))
    if level == "baseline" and control in _RESTRICTED_ONLY:
        errors.append(("controlName", f"Invalid value: {control!r}: Invalid control name defined at the given "
                                      "level"))
    return errors


def _strings(entry: Mapping[str, Any], key: str) -> list[str]:
    value = entry.get(key)
    return [str(v) for v in value] if isinstance(value, list) else []
