"""One face for the two API servers the live tests run on: the loopback double (tests/kubeapi) and the real
kube-apiserver (tests/realapi). A test parametrised with `backend` speaks only the Kubernetes API through
this face (seed, GET, PUT as a manager, server-side apply as a manager, DELETE), so the same assertions hold
for both, and the real server is the reference when they disagree.

The real server is shared by the session: every name a test makes comes from `unique`, so tests never see
each other's objects (see fixture.py). The double is fresh per test; it takes names from `unique` too, so a
test reads the same on both.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.kubeapi.server import ApiServer
from tests.realapi.fixture import Answer, Kube, RealServer, plural_path


class Backend:
    name: str
    kubeconfig: Path
    kube: Kube

    def seed(self, *objs: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def unique(self, prefix: str = "t") -> str:
        raise NotImplementedError

    def namespace(self, prefix: str = "ns") -> str:
        name = self.unique(prefix)
        self.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        return name

    # ---- through the API, the same on both ---------------------------------------------------------------

    def get(self, api_version: str, plural: str, namespace: str, name: str) -> Any:
        return self.kube.get(plural_path(api_version, plural, namespace, name))

    def edit(self, api_version: str, plural: str, namespace: str, name: str, change: Callable[[dict[str, Any]], None],
             *, manager: str = "kubectl-edit") -> dict[str, Any]:
        """What `kubectl edit` does: GET, change, PUT as `manager` (an Update in managedFields)."""
        path = plural_path(api_version, plural, namespace, name)
        obj = copy.deepcopy(self.kube.get(path))
        change(obj)
        obj["metadata"].pop("managedFields", None)
        answer = self.kube.request("PUT", path, obj, query={"fieldManager": manager})
        assert answer.status == 200, answer
        result: dict[str, Any] = answer.json()
        return result

    def apply_as(self, manager: str, obj: Mapping[str, Any], plural: str, *, force: bool = False) -> Answer:
        meta = obj["metadata"]
        path = plural_path(obj["apiVersion"], plural, meta.get("namespace", ""), meta["name"])
        return self.kube.apply(path, obj, manager, force=force)

    def delete(self, api_version: str, plural: str, namespace: str, name: str) -> None:
        answer = self.kube.delete(plural_path(api_version, plural, namespace, name))
        assert answer.status in (200, 202, 404), answer


class DoubleBackend(Backend):
    name = "double"

    def __init__(self, api: ApiServer, tmp_path: Path) -> None:
        self.api = api
        self.kubeconfig = api.kubeconfig(tmp_path / "kubeconfig", context="admin")
        self.kube = Kube(self.kubeconfig)
        self._names = itertools.count(1)

    def seed(self, *objs: Mapping[str, Any]) -> None:
        # as the real server's seeding does: server-side apply as the first managedFields manager, else kubectl
        for obj in objs:
            manager = ((obj.get("metadata") or {}).get("managedFields") or [{}])[0].get("manager") or "kubectl"
            body = copy.deepcopy(dict(obj))
            body.get("metadata", {}).pop("managedFields", None)
            self.api.seed(body, manager=manager, operation="Apply")

    def unique(self, prefix: str = "t") -> str:
        return f"{prefix}-{next(self._names)}"


class RealBackend(Backend):
    name = "real"

    def __init__(self, server: RealServer) -> None:
        self.server = server
        self.kubeconfig = server.kubeconfig
        self.kube = server.kube

    def seed(self, *objs: Mapping[str, Any]) -> None:
        self.server.seed(*objs)

    def unique(self, prefix: str = "t") -> str:
        return self.server.unique(prefix)


@pytest.fixture(params=["double", "real"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "double":
        with ApiServer() as api:
            api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
            yield DoubleBackend(api, tmp_path)
    else:
        yield RealBackend(request.getfixturevalue("realapi"))
