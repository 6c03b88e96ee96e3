"""Per-subject evaluation context: the request, the namespace object and cached activations.

The engine converts an activation's variables lazily and caches them, so one activation per
(subject, environment) is built and reused for every policy (docs/architecture.md#the-cel-engine).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_kyrec.cel.engine import Activation, Environment
from kubectl_kyrec.evaluate.request import RequestInfo
from kubectl_kyrec.model import Subject

NO_EXCEPTIONS: Mapping[str, list[str]] = {"allowedImages": [], "allowedValues": []}


class SubjectContext:
    __slots__ = ("subject", "request", "namespace_obj", "_data", "_activations", "_payload", "_cel_request")

    def __init__(self, subject: Subject, request: RequestInfo, namespace_obj: Mapping[str, Any] | None,
                 *, payload: bool = False, cel_request: Mapping[str, Any] | None = None) -> None:
        """`cel_request`: the `request` variable when it is not `request`'s own: a mutateExisting
        MutatingPolicy sees its target as `object` and the trigger's admission request as `request`
        (kk: mpol compiler/eval.go prepareData, called with the target's attributes and the trigger's
        request)."""
        self.subject = subject
        self.request = request
        self.namespace_obj = namespace_obj
        self._payload = payload
        self._cel_request = cel_request
        self._data: dict[str, Any] = {
            "object": request.obj,
            "oldObject": request.old_obj,
            # a JSON payload (JSON-mode policies) is bound as `object` alone (kk: vpol policy.go evaluateJson)
            "request": None if payload else dict(cel_request) if cel_request is not None
            else request.as_cel_request(),
            "namespaceObject": dict(namespace_obj) if namespace_obj is not None else None,
        }
        self._activations: dict[Environment, Activation] = {}

    def with_request(self, request: RequestInfo) -> SubjectContext:
        """This context around another request (a patched object), its other bindings kept."""
        return SubjectContext(self.subject, request, self.namespace_obj, payload=self._payload,
                              cel_request=self._cel_request)

    def activation(self, env: Environment, *, exceptions: Mapping[str, Any] = NO_EXCEPTIONS,
                   extra: Mapping[str, Any] | None = None) -> Activation:
        """The activation for `env`; cached unless exceptions or extra bindings make it particular."""
        particular = exceptions is not NO_EXCEPTIONS or bool(extra)
        if not particular:
            cached = self._activations.get(env)
            if cached is not None:
                return cached
        data = dict(self._data)
        if "exceptions" in env.variables:
            data["exceptions"] = dict(exceptions)
        if extra:
            data.update(extra)
        data = {k: v for k, v in data.items() if k in env.variables}
        activation = env.activation(data)
        if not particular:
            self._activations[env] = activation
        return activation
