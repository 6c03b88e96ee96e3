"""validate.podSecurity as Kyverno's handler runs it (kk pkg/engine/handlers/validation/validate_pss.go), with
the report properties kk pkg/utils/report/results.go addPodSecurityProperties writes.

The checks are in pss_checks (PSA's, per version), the exemptions in pss_exemptions. Here: the pod read from
a Pod, a pod controller's template or a CronJob's job template (anything else is an error, as in Kyverno),
the rule's `exclude`, PolicyExceptions (one without `podSecurity` skips the rule; the `podSecurity` of all
matched ones exempt controls from a failure), and the failure message with PSA's forbidden reasons and field
errors (fields renamed for controllers as Kyverno's convertChecks does, `metadata` included).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.classic.pss_checks import (
    FORBIDDEN,
    CheckFailure,
    CheckResult,
    FieldError,
    Version,
    VersionError,
    evaluate_pod,
    parse_version,
)
from kubectl_kyrec.classic.pss_exemptions import CONTROL_NAMES, apply_exclusions
from kubectl_kyrec.classic.request import containers
from kubectl_kyrec.classic.validate import ERROR, FAIL, PASS, SKIP, Response

_TEMPLATE_KINDS = ("DaemonSet", "Deployment", "Job", "StatefulSet", "ReplicaSet", "ReplicationController")
EXISTING_VIOLATIONS = "skipping the rule evaluation as pre-existing violations are allowed"


@dataclass(frozen=True)
class PssException:
    """What the handler reads of a matched PolicyException."""

    key: str                                    # ns/name
    name: str
    pod_security: tuple[Mapping[str, Any], ...]


@dataclass
class PssOutcome:
    response: Response
    properties: dict[str, str] = field(default_factory=dict)    # added to the rule's reportProperties


def _pod(resource: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
    """kk getSpec: (metadata, pod spec). A CronJob gives its job template's metadata, not the pod template's."""
    kind = resource.get("kind")
    spec = _map(resource.get("spec"))
    if kind in _TEMPLATE_KINDS:
        template = _map(spec.get("template"))
        return _map(template.get("metadata")), _map(template.get("spec"))
    if kind == "CronJob":
        job = _map(spec.get("jobTemplate"))
        template = _map(_map(job.get("spec")).get("template"))
        return _map(job.get("metadata")), _map(template.get("spec"))
    if kind == "Pod":
        return _map(resource.get("metadata")), spec
    return None


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def format_checks(failures: Sequence[CheckFailure]) -> str:
    """kk pss.FormatChecksPrint."""
    out = []
    for failure in failures:
        parts = []
        for err in failure.result.errors or []:
            has_value = not (isinstance(err.bad_value, str) and err.bad_value == "")
            if err.type == FORBIDDEN and has_value:
                parts.append(f"{err.field} is forbidden, forbidden values found: {_go_value(err.bad_value)}")
            else:
                parts.append(err.error())
        out.append(f"(Forbidden reason: {failure.result.reason}, field error list: [{', '.join(parts)}])")
    return "".join(out)


def _go_value(value: Any) -> str:
    """fmt's %+v of the bad values the checks set."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + " ".join(str(v) for v in value) + "]"
    return str(value)


def _convert_fields(failures: Sequence[CheckFailure], kind: str) -> None:
    """kk convertChecks: plain string replacement, as Kyverno does (every `spec` and `metadata` in a field,
    an annotation key's included; `metadata` becomes `spec.template.metadata` for every kind, Pods too)."""
    for failure in failures:
        for err in failure.result.errors or []:
            if kind in _TEMPLATE_KINDS:
                err.field = err.field.replace("spec", "spec.template.spec")
            elif kind == "CronJob":
                err.field = err.field.replace("spec", "spec.jobTemplate.spec.template.spec")
            err.field = err.field.replace("metadata", "spec.template.metadata")


_CONTAINER_NAMES = re.compile(r"container(?:s)?\s*(.*?)\s*must")


def _add_images(failures: Sequence[CheckFailure], images: Mapping[str, Any] | None) -> None:
    """kk addImages: the containers named in the forbidden detail, as their images' references (the name
    itself when the container has no image info)."""
    for failure in failures:
        found = _CONTAINER_NAMES.search(failure.result.detail)
        if found is None:
            continue
        names = found.group(1).replace('"', "").replace(" ", "").split(",")
        failure.images = [_image_reference(n, images or {}) for n in names]


def _image_reference(name: str, images: Mapping[str, Any]) -> str:
    for kind in ("containers", "initContainers", "ephemeralContainers"):
        info = _map(images.get(kind)).get(name)
        if isinstance(info, Mapping):
            image = info.get("image")
            if isinstance(image, str):
                return _reference(image) or name
    return name


@functools.lru_cache(maxsize=4096)
def _reference(image: str) -> str | None:
    """ImageInfo.String() of a container's image (None when Kyverno cannot parse it)."""
    from kubectl_kyrec.classic.image_info import ImageError, get_image_info

    try:
        return str(get_image_info(image))
    except ImageError:
        return None


def container_images(pod_spec: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The containers' images by list and name (what kk's JSON context ImageInfo holds for the resource)."""
    out: dict[str, dict[str, Any]] = {}
    for kind, _, c in containers(pod_spec):
        if isinstance(c.get("image"), str):
            out.setdefault(kind, {})[str(c.get("name", ""))] = {"image": c["image"]}
    return out


# one encoder for every call: json.dumps builds one each time it is given options
_CONTROLS_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def _go_json(value: Any) -> str:
    """encoding/json.Marshal of the controls, Go structs (fields in declaration order, so not gojson.marshal,
    which sorts map keys) holding strings only: compact, HTML characters escaped."""
    text = _CONTROLS_ENCODER.encode(value)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") \
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def properties(level: str, version: str, failures: Sequence[CheckFailure]) -> dict[str, str]:
    """kk addPodSecurityProperties (only when some check failed)."""
    if not failures:
        return {}
    controls = [{"ID": f.id, "Name": CONTROL_NAMES.get(f.id, ""), "Images": f.images} for f in failures]
    return {"standard": level, "version": version, "controls": ",".join(f.id for f in failures),
            "controlsJSON": _go_json(controls)}


# the checks' failures for (level, version, pod metadata, pod spec) of one subject (see `evaluate`)
ChecksMemo = dict[tuple[str, str, int, int], tuple[Mapping[str, Any], Mapping[str, Any], list[CheckFailure]]]


def _fresh(failures: Sequence[CheckFailure]) -> list[CheckFailure]:
    """Copies the exemptions, field renaming and image listing may change (the bad values are only read)."""
    return [CheckFailure(f.id, CheckResult(f.result.reason, f.result.detail, None if f.result.errors is None else
                                           [FieldError(e.type, e.field, e.bad_value) for e in f.result.errors]))
            for f in failures]


def _checked(level: str, version: Version, version_text: str, meta: Mapping[str, Any], pod_spec: Mapping[str, Any],
             memo: ChecksMemo | None) -> list[CheckFailure]:
    """evaluate_pod, once per pod, level and version within a memo: several podSecurity rules of the same
    level (a rule per exclusion is common) check the same pod. Never changed: callers copy (`_fresh`)."""
    if memo is None:
        return evaluate_pod(level, version, meta, pod_spec)
    key = (level, version_text, id(meta), id(pod_spec))
    entry = memo.get(key)
    # the memo holds the objects, so their ids cannot be reused while it lives
    if entry is None or entry[0] is not meta or entry[1] is not pod_spec:
        entry = (meta, pod_spec, evaluate_pod(level, version, meta, pod_spec))
        memo[key] = entry
    return entry[2]


def evaluate(rule_name: str, spec: Mapping[str, Any], resource: Mapping[str, Any],
             exceptions: Sequence[PssException] = (), memo: ChecksMemo | None = None) -> PssOutcome:
    """kk validatePssHandler.validate for a resource that is not being deleted, with the PolicyExceptions
    that matched it. `memo`: shared by the calls for one subject (whose objects do not change meanwhile)."""
    for exc in exceptions:
        if not exc.pod_security:
            return PssOutcome(Response(SKIP, "rule is skipped due to policy exception " + exc.key),
                              {"exceptions": exc.name})
    pod = _pod(resource)
    if pod is None:
        return PssOutcome(Response(ERROR, "Error while getting new resource: could not find correct resource type"))
    meta, pod_spec = pod
    level = str(spec.get("level") or "")
    version_text = str(spec.get("version") or "")
    try:
        version = parse_version(version_text)
    except VersionError as exc:
        return PssOutcome(Response(ERROR, f"failed to parse pod security api version: {exc}"))
    excludes = [e for e in spec.get("exclude") or [] if isinstance(e, Mapping)]
    failures = _checked(level, version, version_text, meta, pod_spec, memo)
    if not failures:
        return PssOutcome(Response(PASS, f"Validation rule '{rule_name}' passed."))
    failures = _fresh(failures)
    if excludes:
        failures = apply_exclusions(level, version, excludes, failures, meta, pod_spec)
    if not failures:
        return PssOutcome(Response(PASS, f"Validation rule '{rule_name}' passed."))
    exempting = [e for exc in exceptions for e in exc.pod_security]
    if exempting:
        failures = apply_exclusions(level, version, exempting, failures, meta, pod_spec)
        if not failures:
            return PssOutcome(Response(SKIP, "rule is skipped due to policy exceptions "
                                       + ", ".join(e.key for e in exceptions)),
                              {"exceptions": ",".join(e.name for e in exceptions)})
    _convert_fields(failures, str(resource.get("kind")))
    _add_images(failures, container_images(pod_spec))
    message = (f"Validation rule '{rule_name}' failed. It violates PodSecurity \"{level}:{version_text}\": "
               f"{format_checks(failures)}")
    return PssOutcome(Response(FAIL, message), properties(level, version_text, failures))
