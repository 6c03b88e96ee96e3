"""The libraries each policy kind gets: Kubernetes' and Kyverno's (docs/semantics/cel-libraries.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kubectl_kyrec.cel.context import LibraryContext
from kubectl_kyrec.cel.decl import Library
from kubectl_kyrec.cel.environment import LibraryFactory
from kubectl_kyrec.cel.k8s_jsonpatch import LIBRARY as JSONPATCH_LIBRARY
from kubectl_kyrec.cel.k8s_libs import kubernetes_libraries
from kubectl_kyrec.cel.kyverno_libs import kyverno_libraries

Extra = Callable[[str, str], Sequence[Library]]

# the kinds compiled with the patch types (k8s.io/apiserver admission/plugin/cel compile.go hasPatchTypes)
MUTATING_KINDS = frozenset({"MutatingPolicy", "NamespacedMutatingPolicy", "MutatingAdmissionPolicy"})
# Kubernetes compiles these itself, with its own libraries only
KUBERNETES_KINDS = frozenset({"ValidatingAdmissionPolicy", "MutatingAdmissionPolicy"})


def library_factory(context: LibraryContext, extra: Extra | None = None) -> LibraryFactory:
    """(policy kind, policy namespace) -> libraries; `extra` adds kind-specific ones (generator)."""
    k8s = list(kubernetes_libraries())

    def factory(kind: str, namespace: str) -> Sequence[Library]:
        if kind == "PolicyException":
            return k8s
        ctx = LibraryContext(now=context.now, provider=context.provider, policy_namespace=namespace)
        libs = [*k8s]
        if kind not in KUBERNETES_KINDS:
            libs.extend(kyverno_libraries(ctx, policy_kind=kind))
        if kind in MUTATING_KINDS:
            libs.append(JSONPATCH_LIBRARY)
        if extra is not None:
            libs.extend(extra(kind, namespace))
        return libs

    return factory
