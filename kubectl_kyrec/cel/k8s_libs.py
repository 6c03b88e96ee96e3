"""The Kubernetes CEL libraries Kyverno binds (docs/semantics/cel-libraries.md#kubernetes-and-cel-gos-libraries), ready
for ``Environment``.

Kyverno's environment adds, from k8s.io/apiserver ``pkg/cel/library``: Lists, Regex, URLs, Quantity,
IP, CIDR, SemverLib(v1) and Format. Member names that several Kubernetes types share are joined into
one dispatching overload here (see :mod:`kubectl_kyrec.cel.k8s_dispatch`).
"""

from __future__ import annotations

from kubectl_kyrec.cel import (
    k8s_format,
    k8s_lists,
    k8s_net,
    k8s_quantity,
    k8s_regex,
    k8s_semver,
    k8s_url,
)
from kubectl_kyrec.cel.decl import Library
from kubectl_kyrec.cel.k8s_dispatch import shared_library


def kubernetes_libraries() -> list[Library]:
    """Every Kubernetes CEL library, plus the overloads for member names that types share."""
    shared = shared_library([*k8s_quantity.SHARED, *k8s_semver.SHARED, *k8s_net.SHARED])
    return [
        k8s_lists.LIBRARY,
        k8s_regex.LIBRARY,
        k8s_url.LIBRARY,
        k8s_quantity.LIBRARY,
        k8s_net.LIBRARY,
        k8s_semver.LIBRARY,
        k8s_format.LIBRARY,
        shared,
    ]
