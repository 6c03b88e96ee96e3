"""Which variables each policy kind binds, and a cache of environments built from the libraries.

docs/semantics/cel-libraries.md#variables-each-kind-binds (vpol: object, oldObject, request, namespaceObject,
variables, exceptions; gpol adds `generator` through its library) and admissionregistration/v1 (VAP adds params and
authorizer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from kubectl_kyrec.cel.decl import Library
from kubectl_kyrec.cel.engine import Environment

POLICY_VARIABLES: dict[str, tuple[str, ...]] = {
    "ValidatingPolicy": ("object", "oldObject", "request", "namespaceObject", "exceptions"),
    "NamespacedValidatingPolicy": ("object", "oldObject", "request", "namespaceObject", "exceptions"),
    "GeneratingPolicy": ("object", "oldObject", "request", "namespaceObject", "exceptions"),
    "NamespacedGeneratingPolicy": ("object", "oldObject", "request", "namespaceObject", "exceptions"),
    # declared as the dpol compiler declares them (kk: pkg/cel/policies/dpol/compiler/compiler.go); only
    # object and namespaceObject are bound when it evaluates (policy.go Evaluate)
    "DeletingPolicy": ("object", "oldObject", "request", "namespaceObject", "exceptions"),
    "NamespacedDeletingPolicy": ("object", "oldObject", "request", "namespaceObject", "exceptions"),
    "ValidatingAdmissionPolicy": ("object", "oldObject", "request", "namespaceObject", "params",
                                  "authorizer"),
    # kk: pkg/imageverification/evaluator/compiler.go createBaseIvpolEnv; the JSON mode binds `object` only
    "ImageValidatingPolicy": ("object", "oldObject", "request", "namespaceObject", "images", "attestors",
                              "attestations"),
    "NamespacedImageValidatingPolicy": ("object", "oldObject", "request", "namespaceObject", "images",
                                        "attestors", "attestations"),
    # kk: pkg/cel/policies/mpol/compiler/compiler.go (no `exceptions`: a MutatingPolicy has no
    # allowedValues); MutatingAdmissionPolicy as k8s.io/apiserver admission/plugin/cel compiles it
    "MutatingPolicy": ("object", "oldObject", "request", "namespaceObject"),
    "NamespacedMutatingPolicy": ("object", "oldObject", "request", "namespaceObject"),
    "MutatingAdmissionPolicy": ("object", "oldObject", "request", "namespaceObject", "params", "authorizer"),
    # exceptions' matchConditions see no variables (docs/semantics/exceptions.md)
    "PolicyException": ("object", "oldObject", "request", "namespaceObject"),
}

LibraryFactory = Callable[[str, str], Sequence[Library]]   # (policy kind, policy namespace) -> libraries
T = TypeVar("T")


class Environments:
    """One pair of environments per (policy kind, namespace): the real one and the error-checking one.

    The checking environment declares `variables` as a dynamic value so compile errors point at the
    text as written (see compiler.py); building an environment costs well under a millisecond.
    """

    def __init__(self, libraries: LibraryFactory) -> None:
        self._libraries = libraries
        self._cache: dict[tuple[str, str], tuple[Environment, Environment]] = {}
        # by id(owner): (owner, inputs, what was built); see bound_to
        self._bound: dict[int, tuple[object, tuple[object, ...], Any]] = {}

    def get(self, kind: str, namespace: str = "") -> tuple[Environment, Environment]:
        key = (kind, namespace)
        if key not in self._cache:
            libs = list(self._libraries(kind, namespace))
            names = POLICY_VARIABLES[kind]
            self._cache[key] = (Environment(libs, names), Environment(libs, (*names, "variables")))
        return self._cache[key]

    def extended(self, kind: str, namespace: str, extra: Sequence[Library]) -> tuple[Environment, Environment]:
        """The pair for `kind` with `extra` libraries added, not cached: a library bound to one policy (an
        ImageValidatingPolicy's image verification functions know its matchImageReferences)."""
        libs = [*self._libraries(kind, namespace), *extra]
        names = POLICY_VARIABLES[kind]
        return Environment(libs, names), Environment(libs, (*names, "variables"))

    def bound_to(self, owner: object, inputs: tuple[object, ...], build: Callable[[], T]) -> T:
        """`build()`, made once per `owner` and `inputs` (each the same object, or equal): for a policy that
        compiles in environments of its own (`extended`, functions bound to it), where the texts compiled
        once per environment would all be compiled again. The run's policy validation and its evaluation
        share these Environments (evaluate/policy_validation.py), so the run gets what the validation built."""
        held = self._bound.get(id(owner))
        if held is not None and held[0] is owner and len(held[1]) == len(inputs) and \
                all(a is b or a == b for a, b in zip(held[1], inputs)):
            return held[2]  # type: ignore[no-any-return]
        made = build()
        # the owner and inputs kept with it: their ids stay theirs while the entry lives
        self._bound[id(owner)] = (owner, inputs, made)
        return made
