"""validate.podSecurity: the Pod Security Standards checks (k8s.io/pod-security-admission policy/check_*.go,
`latest` level semantics) as Kyverno wraps them (kk: pkg/pss/evaluate.go, handlers/validation/validate_pss.go).

Scope (honest): the checks of the `latest` version for baseline and restricted; a v1.x `version` is evaluated
with the same checks. `exclude` by controlName, where an entry without `images` excludes the control's
pod-level findings and an entry with `images` (go-wildcards) the findings of containers whose image matches,
as Kyverno splits pod- and container-level exemptions. `restrictedField`/`values` exclusions and Kyverno's
exact failure-message detail are not reproduced; failures name the controls that failed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.classic.validate import FAIL, PASS, Response
from kubectl_kyrec.classic.wildcard import match as wildcard_match

_BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                  "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
_SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                 "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                 "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                 "net.ipv4.tcp_keepalive_probes"}
_SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
_RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                       "projected", "secret"}


@dataclass(frozen=True)
class Finding:
    control: str
    image: str | None       # None: a pod-level finding


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(key) or []:
            if isinstance(container, Mapping):
                yield container


def _sc(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    sc = obj.get("securityContext")
    return sc if isinstance(sc, Mapping) else {}


def _baseline(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Iterator[Finding]:
    psc = _sc(spec)
    if spec.get("hostNetwork") or spec.get("hostPID") or spec.get("hostIPC"):
        yield Finding("Host Namespaces", None)
    if any(isinstance(v, Mapping) and v.get("hostPath") is not None for v in spec.get("volumes") or []):
        yield Finding("HostPath Volumes", None)
    annotations = meta.get("annotations") or {}
    for key, value in annotations.items():
        if str(key).startswith("container.apparmor.security.beta.kubernetes.io/") and \
                not (value == "runtime/default" or str(value).startswith("localhost/")):
            yield Finding("AppArmor", None)
            break
    if (psc.get("appArmorProfile") or {}).get("type") == "Unconfined":
        yield Finding("AppArmor", None)
    if not _selinux_ok(psc.get("seLinuxOptions")):
        yield Finding("SELinux", None)
    if (psc.get("seccompProfile") or {}).get("type") == "Unconfined":
        yield Finding("Seccomp", None)
    if any(isinstance(s, Mapping) and s.get("name") not in _SAFE_SYSCTLS for s in psc.get("sysctls") or []):
        yield Finding("Sysctls", None)
    if (psc.get("windowsOptions") or {}).get("hostProcess") is True:
        yield Finding("HostProcess", None)
    for c in _containers(spec):
        image, sc = str(c.get("image", "")), _sc(c)
        if sc.get("privileged") is True:
            yield Finding("Privileged Containers", image)
        added = (sc.get("capabilities") or {}).get("add") or []
        if any(cap not in _BASELINE_CAPS for cap in added):
            yield Finding("Capabilities", image)
        if any(isinstance(p, Mapping) and p.get("hostPort") for p in c.get("ports") or []):
            yield Finding("Host Ports", image)
        if (sc.get("appArmorProfile") or {}).get("type") == "Unconfined":
            yield Finding("AppArmor", image)
        if not _selinux_ok(sc.get("seLinuxOptions")):
            yield Finding("SELinux", image)
        if sc.get("procMount") not in (None, "Default"):
            yield Finding("/proc Mount Type", image)
        if (sc.get("seccompProfile") or {}).get("type") == "Unconfined":
            yield Finding("Seccomp", image)
        if (sc.get("windowsOptions") or {}).get("hostProcess") is True:
            yield Finding("HostProcess", image)


def _selinux_ok(opts: Any) -> bool:
    if not isinstance(opts, Mapping):
        return True
    return opts.get("type", "") in _SELINUX_TYPES and not opts.get("user") and not opts.get("role")


def _restricted(spec: Mapping[str, Any]) -> Iterator[Finding]:
    psc = _sc(spec)
    for v in spec.get("volumes") or []:
        if isinstance(v, Mapping) and not any(k in _RESTRICTED_VOLUMES for k in v if k != "name"):
            yield Finding("Volume Types", None)
            break
    windows = (spec.get("os") or {}).get("name") == "windows"
    pod_nonroot = psc.get("runAsNonRoot")
    if pod_nonroot is False:
        yield Finding("Running as Non-root", None)
    if psc.get("runAsUser") == 0:
        yield Finding("Running as Non-root user", None)
    pod_seccomp = (psc.get("seccompProfile") or {}).get("type")
    for c in _containers(spec):
        image, sc = str(c.get("image", "")), _sc(c)
        if not windows and sc.get("allowPrivilegeEscalation") is not False:
            yield Finding("Privilege Escalation", image)
        nonroot = sc.get("runAsNonRoot")
        if nonroot is False or (nonroot is None and pod_nonroot is not True):
            yield Finding("Running as Non-root", image)
        if sc.get("runAsUser") == 0:
            yield Finding("Running as Non-root user", image)
        seccomp = (sc.get("seccompProfile") or {}).get("type")
        if not windows and seccomp not in ("RuntimeDefault", "Localhost") and \
                (seccomp is not None or pod_seccomp not in ("RuntimeDefault", "Localhost")):
            yield Finding("Seccomp", image)
        if not windows:
            caps = sc.get("capabilities") or {}
            if "ALL" not in (caps.get("drop") or []) or \
                    any(cap != "NET_BIND_SERVICE" for cap in caps.get("add") or []):
                yield Finding("Capabilities", image)


def findings(pod_like: Mapping[str, Any], level: str) -> list[Finding]:
    """The PSS findings for a Pod's metadata and spec at `level` (restricted includes baseline)."""
    meta = pod_like.get("metadata") or {}
    spec = pod_like.get("spec") or {}
    found = list(_baseline(meta, spec))
    if level == "restricted":
        found.extend(_restricted(spec))
    return found


def _excluded(finding: Finding, exclude: Sequence[Mapping[str, Any]]) -> bool:
    for entry in exclude:
        if entry.get("controlName") != finding.control:
            continue
        patterns = entry.get("images") or []
        if finding.image is None and not patterns:
            return True
        if finding.image is not None and any(wildcard_match(str(p), finding.image) for p in patterns):
            return True
    return False


def evaluate(rule_name: str, spec: Mapping[str, Any], resource: Mapping[str, Any]) -> Response | None:
    """kk: validatePss. None when the resource carries no pod spec (Kyverno gives no result either)."""
    pod_like = _pod_like(resource)
    if pod_like is None:
        return None
    level = str(spec.get("level") or "baseline")
    version = str(spec.get("version") or "latest")
    remaining = [f for f in findings(pod_like, level) if not _excluded(f, spec.get("exclude") or [])]
    if not remaining:
        return Response(PASS, f"Validation rule '{rule_name}' passed.")
    controls = sorted({f.control for f in remaining})
    return Response(FAIL, f"Validation rule '{rule_name}' failed. It violates PodSecurity \"{level}:{version}\": "
                          f"{', '.join(controls)}")


def _pod_like(resource: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A Pod, or the pod template of a controller (CronJob: the job template's)."""
    kind = resource.get("kind")
    if kind == "Pod":
        return resource
    spec = resource.get("spec") or {}
    if kind == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    template = spec.get("template")
    return template if isinstance(template, Mapping) else None
