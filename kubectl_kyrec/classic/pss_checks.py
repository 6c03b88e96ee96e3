"""The Pod Security Standards checks as Kyverno runs them: k8s.io/pod-security-admission `policy/check_*.go`
(Kyverno's fork, github.com/kyverno/pod-security-admission 46f2077, pinned by kk's go.mod) with
`WithFieldErrors()`, each check with its per-version variants, and kk pkg/pss/evaluate.go evaluatePSS's choice
of variant and level.

A pod is read as Go's JSON decoding into corev1.Pod reads it: a missing or null object is nil, `{}` is not;
a value of the wrong JSON type counts as unset. Field errors carry the path, the type (Required/Forbidden)
and the bad value exactly as the checks set them (`""` when none), because Kyverno's exemptions and its
failure message read them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.golang.strconv import quote as _go_quote  # Go's %q, for annotation values

REQUIRED, FORBIDDEN = "Required value", "Forbidden"


@dataclass
class FieldError:
    """k8s.io/apimachinery field.Error as the checks build it (Required/Forbidden, Detail always empty)."""

    type: str
    field: str
    bad_value: Any = ""        # "" (none), a str, bool, int or list[str], as the check set it

    def error(self) -> str:
        """field.Error.Error(): `<field>: <type>` (Required and Forbidden never print the value)."""
        return f"{self.field}: {self.type}"


@dataclass
class CheckResult:
    reason: str
    detail: str
    errors: list[FieldError] | None      # None: the check gives no field errors (hostProbesAndHostLifecycle)


Version = tuple[int, int] | None         # None: "latest", newer than any v1.x


def older(v: Version, other: Version) -> bool:
    """api.Version.Older."""
    if v is None:
        return False
    if other is None:
        return True
    return v < other


_VERSION = re.compile(r"^v1\.([0-9]|[1-9][0-9]*)$")


class VersionError(ValueError, EngineError):
    pass


def parse_version(text: str) -> Version:
    """kk pss.ParseVersion: "" and "latest" are latest, else api.ParseVersion's `v1.x`."""
    if text in ("", "latest"):
        return None
    found = _VERSION.match(text)
    if found is None:
        raise VersionError('must be "latest" or "v1.x"')
    return (1, int(found.group(1)))


# -- reading the pod as Go's typed structs see it ----------------------------------------------------------

def _is_map(value: Any) -> bool:
    # dict first: the ABC check is slow and documents are dicts
    return value.__class__ is dict or isinstance(value, Mapping)


def _obj(m: Any, key: str) -> Mapping[str, Any] | None:
    # the checks' hottest call: the dict case is tested first, without a function call
    if m.__class__ is not dict and (m is None or not isinstance(m, Mapping)):
        return None
    value = m.get(key)
    if value.__class__ is dict:
        return value
    return value if value is not None and isinstance(value, Mapping) else None


def _bool(m: Any, key: str) -> bool | None:
    value = m.get(key) if m.__class__ is dict or (m is not None and _is_map(m)) else None
    return value if isinstance(value, bool) else None


def _str(m: Any, key: str) -> str:
    value = m.get(key) if m.__class__ is dict or (m is not None and _is_map(m)) else None
    return value if isinstance(value, str) else ""


def _int(m: Any, key: str) -> int | None:
    value = m.get(key) if m.__class__ is dict or (m is not None and _is_map(m)) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _list(m: Any, key: str) -> list[Any]:
    value = m.get(key) if m.__class__ is dict or (m is not None and _is_map(m)) else None
    return value if isinstance(value, list) else []


def _strings(m: Any, key: str) -> list[str]:
    return [v if isinstance(v, str) else "" for v in _list(m, key)]


def visit_containers(spec: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], str]]:
    """policy.visitContainers: init, regular, then ephemeral containers, with their field paths."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(_list(spec, key)):
            yield (c if _is_map(c) else {}), f"spec.{key}[{i}]"


class Pod:
    """The pod the checks read, its containers visited once for all checks: (container, field path, its
    securityContext as Go reads it), since nearly every check reads the latter."""

    __slots__ = ("meta", "spec", "sc", "containers")

    def __init__(self, meta: Mapping[str, Any], spec: Mapping[str, Any]) -> None:
        self.meta = meta
        self.spec = spec
        self.sc = _obj(spec, "securityContext")
        self.containers = [(c, path, _obj(c, "securityContext")) for c, path in visit_containers(spec)]


def _name(c: Mapping[str, Any]) -> str:
    return _str(c, "name")


def join_quote(items: Sequence[str]) -> str:
    return '"' + '", "'.join(items) + '"' if items else ""


def pluralize(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


class _Violations:
    """policy.Violations with field errors on."""

    def __init__(self) -> None:
        self.data: list[str] = []
        self.errs: list[FieldError] = []

    def add(self, data: str, *errs: FieldError | None) -> None:
        self.data.append(data)
        self.errs.extend(e for e in errs if e is not None)

    def __bool__(self) -> bool:
        return bool(self.data)

    def __len__(self) -> int:
        return len(self.data)


def _forbidden(path: str, bad: Any = "") -> FieldError:
    return FieldError(FORBIDDEN, path, bad)


def _required(path: str) -> FieldError:
    return FieldError(REQUIRED, path, "")


CheckFn = Callable[["Pod"], "CheckResult | None"]


# -- the checks (None: allowed) -----------------------------------------------------------------------------

def _allow_privilege_escalation_1_8(pod: Pod) -> CheckResult | None:
    bad = _Violations()
    for c, path, sc in pod.containers:
        path += ".securityContext.allowPrivilegeEscalation"
        if sc is None:
            bad.add(_name(c), _required(path))
        elif _bool(sc, "allowPrivilegeEscalation") is None:
            bad.add(_name(c), _forbidden(path, "nil"))
        elif _bool(sc, "allowPrivilegeEscalation"):
            bad.add(_name(c), _forbidden(path, True))
    if not bad:
        return None
    return CheckResult("allowPrivilegeEscalation != false",
                       f"{pluralize('container', 'containers', len(bad))} {join_quote(bad.data)} must set "
                       "securityContext.allowPrivilegeEscalation=false", bad.errs)


def _windows(spec: Mapping[str, Any]) -> bool:
    return _str(_obj(spec, "os"), "name") == "windows"


def _allow_privilege_escalation_1_25(pod: Pod) -> CheckResult | None:
    if _windows(pod.spec):
        return None
    return _allow_privilege_escalation_1_8(pod)


def _app_armor_profile_1_0(pod: Pod) -> CheckResult | None:
    allowed_types = ("RuntimeDefault", "Localhost")
    setters = _Violations()
    bad_values: set[str] = set()
    profile = _obj(pod.sc, "appArmorProfile")
    if profile is not None and _str(profile, "type") not in allowed_types:
        setters.add("pod", _forbidden("spec.securityContext.appArmorProfile.type", _str(profile, "type")))
        bad_values.add(_str(profile, "type"))
    containers: list[str] = []
    errs: list[FieldError] = []
    for c, path, sc in pod.containers:
        profile = _obj(sc, "appArmorProfile")
        if profile is not None and _str(profile, "type") not in allowed_types:
            containers.append(_name(c))
            errs.append(_forbidden(f"{path}.securityContext.appArmorProfile.type", _str(profile, "type")))
            bad_values.add(_str(profile, "type"))
    if containers:
        setters.add(f"{pluralize('container', 'containers', len(containers))} {join_quote(containers)}", *errs)
    annotations = _Violations()
    # Go ranges over the annotation map in random order; kyrec takes the keys sorted
    for key, value in sorted(_string_map(pod.meta, "annotations").items()):
        if key.startswith("container.apparmor.security.beta.kubernetes.io/") and not (
                value == "" or value == "runtime/default" or value.startswith("localhost/")):
            annotations.add(f"{key}={_go_quote(value)}", _forbidden(f"metadata.annotations[{key}]", value))
    bad_list = sorted(bad_values)
    if annotations:
        listed = sorted(annotations.data)
        bad_list.extend(listed)
        setters.add(pluralize("annotation", "annotations", len(listed)), *annotations.errs)
    if not setters:
        return None
    return CheckResult(pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", len(bad_list)),
                       f"{' and '.join(setters.data)} must not set AppArmor profile type to {join_quote(bad_list)}",
                       setters.errs)


def _string_map(m: Any, key: str) -> dict[str, str]:
    value = _obj(m, key)
    if value is None:
        return {}
    return {str(k): v if isinstance(v, str) else "" for k, v in value.items()}


_CAPABILITIES_1_0 = frozenset({"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                               "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"})


def _capabilities_baseline_1_0(pod: Pod) -> CheckResult | None:
    bad = _Violations()
    non_default: set[str] = set()
    for c, path, sc in pod.containers:
        caps = _obj(sc, "capabilities")
        if caps is None:
            continue
        forbidden = {cap for cap in _strings(caps, "add") if cap not in _CAPABILITIES_1_0}
        if forbidden:
            non_default |= forbidden
            bad.add(_name(c), _forbidden(f"{path}.securityContext.capabilities.add", sorted(forbidden)))
    if not bad:
        return None
    return CheckResult("non-default capabilities",
                       f"{pluralize('container', 'containers', len(bad))} {join_quote(bad.data)} must not include "
                       f"{join_quote(sorted(non_default))} in securityContext.capabilities.add", bad.errs)


def _capabilities_restricted_1_22(pod: Pod) -> CheckResult | None:
    forbidden_caps: set[str] = set()
    missing_drop = _Violations()
    adding = _Violations()
    for c, path, sc in pod.containers:
        caps = _obj(sc, "capabilities")
        if caps is None:
            missing_drop.add(_name(c), _required(f"{path}.securityContext.capabilities.drop"))
            continue
        drop = _strings(caps, "drop")
        if "ALL" not in drop:
            if drop:
                missing_drop.add(_name(c), _forbidden(f"{path}.securityContext.capabilities.drop", sorted(set(drop))))
            else:
                missing_drop.add(_name(c), _required(f"{path}.securityContext.capabilities.drop"))
        added = {cap for cap in _strings(caps, "add") if cap != "NET_BIND_SERVICE"}
        if added:
            forbidden_caps |= added
            adding.add(_name(c), _forbidden(f"{path}.securityContext.capabilities.add", sorted(added)))
    details = []
    if missing_drop:
        details.append(f"{pluralize('container', 'containers', len(missing_drop))} {join_quote(missing_drop.data)} "
                       'must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{pluralize('container', 'containers', len(adding))} {join_quote(adding.data)} must not "
                       f"include {join_quote(sorted(forbidden_caps))} in securityContext.capabilities.add")
    if not details:
        return None
    return CheckResult("unrestricted capabilities", "; ".join(details), missing_drop.errs + adding.errs)


def _capabilities_restricted_1_25(pod: Pod) -> CheckResult | None:
    if _windows(pod.spec):
        return None
    return _capabilities_restricted_1_22(pod)


def _host_namespaces_1_0(pod: Pod) -> CheckResult | None:
    bad = _Violations()
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if _bool(pod.spec, key):
            bad.add(f"{key}=true", _forbidden(f"spec.{key}", True))
    if not bad:
        return None
    return CheckResult("host namespaces", ", ".join(bad.data), bad.errs)


def _host_path_volumes_1_0(pod: Pod) -> CheckResult | None:
    bad = _Violations()
    for i, volume in enumerate(_list(pod.spec, "volumes")):
        host_path = _obj(volume, "hostPath")
        if host_path is not None:
            bad.add(_str(volume, "name"), _forbidden(f"spec.volumes[{i}].hostPath", _str(host_path, "path")))
    if not bad:
        return None
    return CheckResult("hostPath volumes", f"{pluralize('volume', 'volumes', len(bad))} {join_quote(bad.data)}",
                       bad.errs)


def _host_ports_1_0(pod: Pod) -> CheckResult | None:
    bad = _Violations()
    ports: set[int] = set()
    for c, path, _sc in pod.containers:
        errs = []
        for i, port in enumerate(_list(c, "ports")):
            host_port = _int(port, "hostPort") or 0
            if host_port != 0:
                ports.add(host_port)
                errs.append(_forbidden(f"{path}.ports[{i}].hostPort", host_port))
        if errs:
            bad.add(_name(c), *errs)
    if not bad:
        return None
    listed = sorted(str(p) for p in ports)       # sets.String: sorted as strings
    return CheckResult("hostPort", f"{pluralize('container', 'containers', len(bad))} {join_quote(bad.data)} "
                                   f"{pluralize('uses', 'use', len(bad))} "
                                   f"{pluralize('hostPort', 'hostPorts', len(listed))} {', '.join(listed)}", bad.errs)


def _forbidden_hosts(handler: Mapping[str, Any] | None) -> list[str]:
    hosts = []
    for key in ("httpGet", "tcpSocket"):
        host = _str(_obj(handler, key), "host")
        if _obj(handler, key) is not None and host:
            hosts.append(host)
    return hosts


_HANDLER_HOLDERS = ("livenessProbe", "readinessProbe", "startupProbe", "lifecycle")


def _host_probes_and_host_lifecycle_1_34(pod: Pod) -> CheckResult | None:
    containers: set[str] = set()
    hosts: set[str] = set()
    for c, _path, _sc in pod.containers:
        if not any(key in c for key in _HANDLER_HOLDERS):
            continue        # nothing to read (the common case)
        handlers = [_obj(c, "livenessProbe"), _obj(c, "readinessProbe"), _obj(c, "startupProbe")]
        lifecycle = _obj(c, "lifecycle")
        if lifecycle is not None:
            handlers += [_obj(lifecycle, "postStart"), _obj(lifecycle, "preStop")]
        for handler in handlers:
            bad = _forbidden_hosts(handler)
            if bad:
                containers.add(_name(c))
                hosts.update(bad)
    if not containers:
        return None
    return CheckResult("probe or lifecycle host",
                       f"{pluralize('container', 'containers', len(containers))} {join_quote(sorted(containers))} "
                       f"{pluralize('uses', 'use', len(containers))} "
                       f"{pluralize('probe or lifecycle host', 'probe or lifecycle hosts', len(hosts))} "
                       f"{join_quote(sorted(hosts))}", None)


def _privileged_1_0(pod: Pod) -> CheckResult | None:
    bad = _Violations()
    for c, path, sc in pod.containers:
        if _bool(sc, "privileged"):
            bad.add(_name(c), _forbidden(f"{path}.securityContext.privileged", True))
    if not bad:
        return None
    return CheckResult("privileged", f"{pluralize('container', 'containers', len(bad))} {join_quote(bad.data)} "
                                     "must not set securityContext.privileged=true", bad.errs)


def _proc_mount_1_0(pod: Pod) -> CheckResult | None:
    # relaxPolicyForUserNamespacePod is off: Kyverno never calls RelaxPolicyForUserNamespacePods
    bad = _Violations()
    types: set[str] = set()
    for c, path, sc in pod.containers:
        if sc is None or not isinstance(sc.get("procMount"), str):
            continue
        proc_mount = _str(sc, "procMount")
        if proc_mount != "Default":
            bad.add(_name(c), _forbidden(f"{path}.securityContext.procMount", proc_mount))
            types.add(proc_mount)
    if not bad:
        return None
    return CheckResult("procMount", f"{pluralize('container', 'containers', len(bad))} {join_quote(bad.data)} "
                                    f"must not set securityContext.procMount to {join_quote(sorted(types))}", bad.errs)


_ALLOWED_VOLUMES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim",
                    "projected", "secret")
_RESTRICTED_VOLUMES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi",
                       "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile",
                       "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO",
                       "storageos")


def _restricted_volumes_1_0(pod: Pod) -> CheckResult | None:
    bad = _Violations()
    types: set[str] = set()
    for i, volume in enumerate(_list(pod.spec, "volumes")):
        if any(_obj(volume, key) is not None for key in _ALLOWED_VOLUMES):
            continue
        kind = next((key for key in _RESTRICTED_VOLUMES if _obj(volume, key) is not None), "unknown")
        types.add(kind)
        bad.add(_str(volume, "name"), _forbidden(f"spec.volumes[{i}].{kind}"))
    if not bad:
        return None
    return CheckResult("restricted volume types",
                       f"{pluralize('volume', 'volumes', len(bad))} {join_quote(bad.data)} "
                       f"{pluralize('uses', 'use', len(bad))} "
                       f"{pluralize('restricted volume type', 'restricted volume types', len(types))} "
                       f"{join_quote(sorted(types))}", bad.errs)


def _run_as_non_root_1_0(pod: Pod) -> CheckResult | None:
    setters = _Violations()
    pod_non_root = False
    pod_value = _bool(pod.sc, "runAsNonRoot")
    if pod_value is False:
        setters.add("pod", _forbidden("spec.securityContext.runAsNonRoot", False))
    elif pod_value:
        pod_non_root = True
    explicit: list[str] = []
    explicit_errs: list[FieldError] = []
    implicit = _Violations()
    for c, path, sc in pod.containers:
        value = _bool(sc, "runAsNonRoot")
        if value is not None:
            if not value:
                explicit.append(_name(c))
                explicit_errs.append(_forbidden(f"{path}.securityContext.runAsNonRoot", False))
        elif not pod_non_root:
            implicit.add(_name(c), _required(f"{path}.securityContext.runAsNonRoot"))
    if explicit:
        setters.add(f"{pluralize('container', 'containers', len(explicit))} {join_quote(explicit)}", *explicit_errs)
    details: list[str] = []
    errors: list[FieldError] = []
    if setters:
        details.append(f"{' and '.join(setters.data)} must not set securityContext.runAsNonRoot=false")
        errors.extend(setters.errs)
    if implicit:
        details.append(f"pod or {pluralize('container', 'containers', len(implicit))} {join_quote(implicit.data)} "
                       "must set securityContext.runAsNonRoot=true")
        errors.extend(implicit.errs)
    if not details:
        return None
    return CheckResult("runAsNonRoot != true", "\n".join(details), errors)


def _run_as_user_1_23(pod: Pod) -> CheckResult | None:
    setters = _Violations()
    if _int(pod.sc, "runAsUser") == 0:
        setters.add("pod", _forbidden("spec.securityContext.runAsUser", 0))
    explicit: list[str] = []
    errs: list[FieldError] = []
    for c, path, sc in pod.containers:
        if _int(sc, "runAsUser") == 0:
            explicit.append(_name(c))
            errs.append(_forbidden(f"{path}.securityContext.runAsUser", 0))
    if explicit:
        setters.add(f"{pluralize('container', 'containers', len(explicit))} {join_quote(explicit)}", *errs)
    if not setters:
        return None
    return CheckResult("runAsUser=0", f"{' and '.join(setters.data)} must not set runAsUser=0", setters.errs)


def _se_linux_options(pod: Pod, allowed: frozenset[str]) -> CheckResult | None:
    setters = _Violations()
    bad_types: set[str] = set()
    flags = {"user": False, "role": False}

    def valid(opts: Mapping[str, Any], prefix: str, errs: list[FieldError]) -> bool:
        ok = True
        if _str(opts, "type") not in allowed:
            ok = False
            bad_types.add(_str(opts, "type"))
            errs.append(_forbidden(f"{prefix}.seLinuxOptions.type", _str(opts, "type")))
        for key in ("user", "role"):
            if _str(opts, key):
                ok = False
                flags[key] = True
                errs.append(_forbidden(f"{prefix}.seLinuxOptions.{key}", _str(opts, key)))
        return ok

    pod_opts = _obj(pod.sc, "seLinuxOptions")
    if pod_opts is not None:
        pod_errs: list[FieldError] = []
        if not valid(pod_opts, "spec.securityContext", pod_errs):
            setters.add("pod", *pod_errs)
    containers: list[str] = []
    container_errs: list[FieldError] = []
    for c, path, sc in pod.containers:
        opts = _obj(sc, "seLinuxOptions")
        if opts is not None and not valid(opts, f"{path}.securityContext", container_errs):
            containers.append(_name(c))
    if containers:
        setters.add(f"{pluralize('container', 'containers', len(containers))} {join_quote(containers)}",
                    *container_errs)
    if not setters:
        return None
    data = []
    if bad_types:
        data.append(f"{pluralize('type', 'types', len(bad_types))} {join_quote(sorted(bad_types))}")
    if flags["user"]:
        data.append("user may not be set")
    if flags["role"]:
        data.append("role may not be set")
    return CheckResult("seLinuxOptions", f"{' and '.join(setters.data)} set forbidden securityContext.seLinuxOptions: "
                                         f"{'; '.join(data)}", setters.errs)


_SELINUX_1_0 = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})
_SELINUX_1_31 = _SELINUX_1_0 | {"container_engine_t"}


def _se_linux_options_1_0(pod: Pod) -> CheckResult | None:
    return _se_linux_options(pod, _SELINUX_1_0)


def _se_linux_options_1_31(pod: Pod) -> CheckResult | None:
    return _se_linux_options(pod, _SELINUX_1_31)


def _valid_seccomp(profile_type: str) -> bool:
    return profile_type in ("Localhost", "RuntimeDefault")


def _seccomp_baseline_1_0(pod: Pod) -> CheckResult | None:
    """Before 1.19: the alpha annotations."""
    annotations = _string_map(pod.meta, "annotations")

    def valid(value: str) -> bool:
        return value in ("runtime/default", "docker/default") or value.startswith("localhost/")

    found: dict[str, list[FieldError]] = {}
    keys = ["seccomp.security.alpha.kubernetes.io/pod"]
    keys += ["container.seccomp.security.alpha.kubernetes.io/" + _name(c) for c, _, _ in pod.containers]
    for key in keys:
        if key in annotations and not valid(annotations[key]):
            text = f"{key}={_go_quote(annotations[key])}"
            found.setdefault(text, []).append(_forbidden(f"metadata.annotations[{key}]", annotations[key]))
    if not found:
        return None
    setters = _Violations()
    # Go ranges over a map here; kyrec takes the texts sorted
    for text in sorted(found):
        setters.add(text, *found[text])
    values = sorted(setters.data)
    return CheckResult("seccompProfile", f"forbidden {pluralize('annotation', 'annotations', len(values))} "
                                         f"{', '.join(values)}", setters.errs)


def _seccomp_baseline_1_19(pod: Pod) -> CheckResult | None:
    setters = _Violations()
    bad_values: set[str] = set()
    profile = _obj(pod.sc, "seccompProfile")
    if profile is not None and not _valid_seccomp(_str(profile, "type")):
        setters.add("pod", _forbidden("spec.securityContext.seccompProfile.type", _str(profile, "type")))
        bad_values.add(_str(profile, "type"))
    explicit: list[str] = []
    errs: list[FieldError] = []
    for c, path, sc in pod.containers:
        profile = _obj(sc, "seccompProfile")
        if profile is not None and not _valid_seccomp(_str(profile, "type")):
            explicit.append(_name(c))
            errs.append(_forbidden(f"{path}.securityContext.seccompProfile.type", _str(profile, "type")))
            bad_values.add(_str(profile, "type"))
    if explicit:
        setters.add(f"{pluralize('container', 'containers', len(explicit))} {join_quote(explicit)}", *errs)
    if not setters:
        return None
    return CheckResult("seccompProfile", f"{' and '.join(setters.data)} must not set "
                                         "securityContext.seccompProfile.type to "
                                         f"{join_quote(sorted(bad_values))}", setters.errs)


def _seccomp_restricted_1_19(pod: Pod) -> CheckResult | None:
    setters = _Violations()
    bad_values: set[str] = set()
    pod_set = False
    profile = _obj(pod.sc, "seccompProfile")
    if profile is not None:
        if not _valid_seccomp(_str(profile, "type")):
            setters.add("pod", _forbidden("spec.securityContext.seccompProfile.type", _str(profile, "type")))
            bad_values.add(_str(profile, "type"))
        else:
            pod_set = True
    explicit: list[str] = []
    errs: list[FieldError] = []
    implicit = _Violations()
    for c, path, sc in pod.containers:
        profile = _obj(sc, "seccompProfile")
        if profile is not None:
            if not _valid_seccomp(_str(profile, "type")):
                explicit.append(_name(c))
                errs.append(_forbidden(f"{path}.securityContext.seccompProfile.type", _str(profile, "type")))
                bad_values.add(_str(profile, "type"))
        elif not pod_set:
            implicit.add(_name(c), _required(f"{path}.securityContext.seccompProfile.type"))
    if explicit:
        setters.add(f"{pluralize('container', 'containers', len(explicit))} {join_quote(explicit)}", *errs)
    if setters:
        return CheckResult("seccompProfile", f"{' and '.join(setters.data)} must not set "
                                             "securityContext.seccompProfile.type to "
                                             f"{join_quote(sorted(bad_values))}", setters.errs)
    if implicit:
        return CheckResult("seccompProfile", f"pod or {pluralize('container', 'containers', len(implicit))} "
                                             f"{join_quote(implicit.data)} must set "
                                             'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"',
                           implicit.errs)
    return None


def _seccomp_restricted_1_25(pod: Pod) -> CheckResult | None:
    if _windows(pod.spec):
        return None
    return _seccomp_restricted_1_19(pod)


_SYSCTLS_1_0 = frozenset({"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
                          "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"})
_SYSCTLS_1_27 = _SYSCTLS_1_0 | {"net.ipv4.ip_local_reserved_ports"}
_SYSCTLS_1_29 = _SYSCTLS_1_27 | {"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                                 "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
_SYSCTLS_1_32 = _SYSCTLS_1_29 | {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}


def _sysctls(allowed: frozenset[str]) -> CheckFn:
    def check(pod: Pod) -> CheckResult | None:
        bad = _Violations()
        sc = pod.sc
        if sc is not None:
            for i, sysctl in enumerate(_list(sc, "sysctls")):
                name = _str(sysctl, "name")
                if name not in allowed:
                    bad.add(name, _forbidden(f"spec.securityContext.sysctls[{i}].name", name))
        if not bad:
            return None
        return CheckResult("forbidden sysctls", ", ".join(bad.data), bad.errs)
    return check


def _windows_host_process_1_0(pod: Pod) -> CheckResult | None:
    containers: list[str] = []
    errs: list[FieldError] = []
    for c, path, sc in pod.containers:
        if _bool(_obj(sc, "windowsOptions"), "hostProcess"):
            containers.append(_name(c))
            errs.append(_forbidden(f"{path}.securityContext.windowsOptions.hostProcess", True))
    setters = _Violations()
    if _bool(_obj(pod.sc, "windowsOptions"), "hostProcess"):
        setters.add("pod", _forbidden("spec.securityContext.windowsOptions.hostProcess", True))
    if containers:
        setters.add(f"{pluralize('container', 'containers', len(containers))} {join_quote(containers)}", *errs)
    if not setters:
        return None
    return CheckResult("hostProcess", f"{' and '.join(setters.data)} must not set "
                                      "securityContext.windowsOptions.hostProcess=true", setters.errs)


@dataclass(frozen=True)
class Check:
    id: str
    level: str
    versions: tuple[tuple[tuple[int, int], CheckFn], ...]     # (minimum version, check), increasing

    def variant(self, version: Version) -> CheckFn:
        """kk evaluatePSS: the newest variant whose minimum is not newer than the version, but the first one
        when the version predates them all (Kyverno never skips a check for an old version)."""
        selected = self.versions[0]
        for candidate in self.versions[1:]:
            if not older(version, candidate[0]) and older(selected[0], candidate[0]):
                selected = candidate
        return selected[1]


# policy.DefaultChecks() order: each check_*.go file registers in init(), which Go runs in file-name order
CHECKS: tuple[Check, ...] = (
    Check("allowPrivilegeEscalation", "restricted",
          (((1, 8), _allow_privilege_escalation_1_8), ((1, 25), _allow_privilege_escalation_1_25))),
    Check("appArmorProfile", "baseline", (((1, 0), _app_armor_profile_1_0),)),
    Check("capabilities_baseline", "baseline", (((1, 0), _capabilities_baseline_1_0),)),
    Check("capabilities_restricted", "restricted",
          (((1, 22), _capabilities_restricted_1_22), ((1, 25), _capabilities_restricted_1_25))),
    Check("hostNamespaces", "baseline", (((1, 0), _host_namespaces_1_0),)),
    Check("hostPathVolumes", "baseline", (((1, 0), _host_path_volumes_1_0),)),
    Check("hostPorts", "baseline", (((1, 0), _host_ports_1_0),)),
    Check("hostProbesAndHostLifecycle", "baseline", (((1, 34), _host_probes_and_host_lifecycle_1_34),)),
    Check("privileged", "baseline", (((1, 0), _privileged_1_0),)),
    Check("procMount", "baseline", (((1, 0), _proc_mount_1_0),)),
    Check("restrictedVolumes", "restricted", (((1, 0), _restricted_volumes_1_0),)),
    Check("runAsNonRoot", "restricted", (((1, 0), _run_as_non_root_1_0),)),
    Check("runAsUser", "restricted", (((1, 23), _run_as_user_1_23),)),
    Check("seLinuxOptions", "baseline", (((1, 0), _se_linux_options_1_0), ((1, 31), _se_linux_options_1_31))),
    Check("seccompProfile_baseline", "baseline",
          (((1, 0), _seccomp_baseline_1_0), ((1, 19), _seccomp_baseline_1_19))),
    Check("seccompProfile_restricted", "restricted",
          (((1, 19), _seccomp_restricted_1_19), ((1, 25), _seccomp_restricted_1_25))),
    Check("sysctls", "baseline", (((1, 0), _sysctls(_SYSCTLS_1_0)), ((1, 27), _sysctls(_SYSCTLS_1_27)),
                                  ((1, 29), _sysctls(_SYSCTLS_1_29)), ((1, 32), _sysctls(_SYSCTLS_1_32)))),
    Check("windowsHostProcess", "baseline", (((1, 0), _windows_host_process_1_0),)),
)


@dataclass
class CheckFailure:
    """kk pssutils.PSSCheckResult: a check that did not allow the pod."""

    id: str
    result: CheckResult
    images: list[str] | None = None


def evaluate_pod(level: str, version: Version, meta: Mapping[str, Any], spec: Mapping[str, Any],
                 only: frozenset[str] | None = None) -> list[CheckFailure]:
    """kk evaluatePSS: every check for `level` (a baseline level skips the restricted checks; any other
    level, `privileged` too, runs them all, and restricted runs the baseline checks it overrides as well).
    `only`: the IDs of the checks whose results the caller reads (the checks are independent)."""
    pod = Pod(meta, spec)
    out = []
    for check_id, check in _selected(level, version):
        if only is not None and check_id not in only:
            continue
        result = check(pod)
        if result is not None:
            out.append(CheckFailure(check_id, result))
    return out


@functools.lru_cache(maxsize=64)
def _selected(level: str, version: Version) -> tuple[tuple[str, CheckFn], ...]:
    return tuple((c.id, c.variant(version)) for c in CHECKS if level != "baseline" or c.level == "baseline")
