"""Fixtures for the live adapter's tests: the API server double and a kyrec client connected to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kubectl_kyrec.cluster.client import KubeClient, connect
from kubectl_kyrec.cluster.connection import ConnectionOptions
from tests.kubeapi.server import ApiServer


@pytest.fixture()
def api() -> Iterator[ApiServer]:
    with ApiServer() as server:
        server.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
        server.clear_log()
        yield server


@pytest.fixture()
def kubeconfig(api: ApiServer, tmp_path: Path) -> Path:
    return api.kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture()
def kube(kubeconfig: Path) -> KubeClient:
    sleeps: list[float] = []
    client = connect(ConnectionOptions(kubeconfig=str(kubeconfig)), sleep=sleeps.append)
    client.sleeps = sleeps  # type: ignore[attr-defined]  # the test reads how long the client waited
    return client
