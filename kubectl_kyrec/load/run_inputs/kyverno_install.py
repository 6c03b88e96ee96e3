"""Kyverno's installation as a state shows it: its controllers' Deployments (their flags) and the service
accounts the background and reports controllers run as.

The Deployments are those of Kyverno's Helm chart (charts/kyverno/templates/*-controller/deployment.yaml):
labelled `app.kubernetes.io/component: <component>-controller` (with `app.kubernetes.io/part-of`), or named
`kyverno-<component>-controller` as the chart names them for a release `kyverno`. Flags are read from the
first container's `command` and `args` as Go's flag package reads them (`-name=value`, `--name=value`, a
bare boolean `--name` for true). A flag the Deployment does not give has Kyverno's default; a state without
the Deployment says nothing, and nothing is assumed from it.

Service accounts: the admission controller's `--backgroundServiceAccountName` / `--reportsServiceAccountName`
(the chart sets them to `system:serviceaccount:<namespace>:<account>`), else the controller Deployment's
`serviceAccountName` in its namespace (`default` when it names none), else the chart's defaults
(`kyverno-background-controller`, `kyverno-reports-controller` in `kyverno`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.model import Ref, ref_of

KYVERNO_NAMESPACE = "kyverno"
BACKGROUND = "background-controller"
REPORTS = "reports-controller"
ADMISSION = "admission-controller"
DEFAULT_ACCOUNTS = {BACKGROUND: (KYVERNO_NAMESPACE, "kyverno-background-controller"),
                    REPORTS: (KYVERNO_NAMESPACE, "kyverno-reports-controller")}
_ACCOUNT_FLAGS = {BACKGROUND: "backgroundServiceAccountName", REPORTS: "reportsServiceAccountName"}

# the boolean flags read here (a bare `--name` is true; others take the next argument when not `name=value`)
_BOOL_FLAGS = frozenset({"backgroundScan", "admissionReports", "aggregateReports", "policyReports",
                         "validatingAdmissionPolicyReports", "mutatingAdmissionPolicyReports",
                         "skipResourceFilters", "reportsCRDsSanityChecks"})


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def parse_go_flags(argv: Sequence[str]) -> dict[str, str]:
    """Go's flag package, as far as the values go: the last of a repeated flag wins; parsing stops at the
    first argument that is not a flag, or at `--`."""
    out: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--" or not arg.startswith("-") or arg == "-":
            break
        name, eq, value = arg.lstrip("-").partition("=")
        if not eq:
            if name in _BOOL_FLAGS:
                value = "true"
            elif i < len(argv):
                value = argv[i]
                i += 1
        out[name] = value
    return out


def parse_go_bool(text: str) -> bool | None:
    """strconv.ParseBool; None for anything else."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


@dataclass(frozen=True)
class Controller:
    """One Kyverno controller's Deployment and its flags."""

    component: str
    deployment: Ref
    flags: Mapping[str, str] = field(default_factory=dict)
    service_account: str = ""

    def flag(self, name: str) -> str | None:
        return self.flags.get(name)

    def bool_flag(self, name: str) -> bool | None:
        """The flag's value when the Deployment gives it (None: not given, or not a boolean)."""
        text = self.flags.get(name)
        return None if text is None else parse_go_bool(text)

    def given(self, name: str) -> str:
        """How the Deployment gives it: `--name=value`."""
        return f"--{name}={self.flags.get(name, '')}"


def _controller(obj: Mapping[str, Any], component: str) -> Controller | None:
    if obj.get("kind") != "Deployment" or not str(obj.get("apiVersion") or "").startswith("apps/"):
        return None
    meta = _map(obj.get("metadata"))
    labels = _map(meta.get("labels"))
    ours = labels.get("app.kubernetes.io/component") == component and "app.kubernetes.io/part-of" in labels
    if not ours and meta.get("name") != f"kyverno-{component}":
        return None
    pod = _map(_map(_map(obj.get("spec")).get("template")).get("spec"))
    containers = pod.get("containers") if isinstance(pod.get("containers"), list) else []
    first = _map(containers[0]) if containers else {}
    argv = [str(a) for a in [*(first.get("command") or [])[1:], *(first.get("args") or [])]]
    return Controller(component, ref_of(obj), parse_go_flags(argv), str(pod.get("serviceAccountName") or ""))


@dataclass(frozen=True)
class KyvernoInstall:
    controllers: Mapping[str, Controller] = field(default_factory=dict)

    @classmethod
    def of(cls, objects: Iterable[Mapping[str, Any]]) -> KyvernoInstall:
        found: dict[str, Controller] = {}
        for obj in objects:
            if obj.get("kind") != "Deployment":
                continue
            for component in (ADMISSION, BACKGROUND, REPORTS):
                controller = _controller(obj, component)
                if controller is not None and component not in found:
                    found[component] = controller
        return cls(found)

    def controller(self, component: str) -> Controller | None:
        return self.controllers.get(component)

    def account_seen(self, component: str) -> bool:
        """Whether a Deployment of the state says which account `component` runs as (rather than the chart's
        defaults standing in for it)."""
        admission = self.controllers.get(ADMISSION)
        return component in self.controllers or bool(admission and admission.flag(_ACCOUNT_FLAGS[component]))

    def account(self, component: str) -> tuple[str, str]:
        """(namespace, name) of the service account `component` (BACKGROUND or REPORTS) runs as."""
        admission = self.controllers.get(ADMISSION)
        given = admission.flag(_ACCOUNT_FLAGS[component]) if admission is not None else None
        if given:
            parts = given.split(":")
            if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"] and parts[2] and parts[3]:
                return parts[2], parts[3]
        own = self.controllers.get(component)
        if own is not None:
            # a pod without serviceAccountName runs as `default` (the ServiceAccount admission plugin)
            return own.deployment.namespace or KYVERNO_NAMESPACE, own.service_account or "default"
        return DEFAULT_ACCOUNTS[component]
