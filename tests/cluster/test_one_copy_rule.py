"""The same object twice: one rule (the first copy counts, with a notice) for `-r` manifests, state files and
live reads alike (issue 8: "One rule, with a notice, everywhere"); only the Kubescape producer keeps both
copies of a summary, because its two reads are two copies on purpose."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState
from kubectl_kyrec.model import Document, Source
from tests.kubeapi.server import ApiServer

POLICY = str(Path(__file__).parent / "data" / "gpol-configmap.yaml")


def _doc(name: str, value: str, line: int, kind: str = "ConfigMap", namespace: str | None = "a") -> Document:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return Document({"apiVersion": "v1", "kind": kind, "metadata": meta, "data": {"v": value}},
                    Source("state.yaml", line))


def test_state_keeps_the_first_copy_and_says_so_once() -> None:
    state = ClusterState.from_objects([_doc("x", "first", 1), _doc("y", "only", 5), _doc("x", "second", 9),
                                       _doc("x", "third", 12)])
    kept, notices = state.first_of_each()
    assert [d.obj["data"]["v"] for d in kept] == ["first", "only"]
    assert len(notices) == 1 and "2 object(s) appear more than once" in str(notices[0])
    assert "state.yaml:1" in str(notices[0])          # names where the copy that counts was read
    found = kept.get_object("v1", "ConfigMap", "a", "x")
    assert found is not None and found.obj["data"]["v"] == "first"
    single = ClusterState.from_objects([_doc("z", "", 1)])
    assert single.first_of_each() == (single, [])


def test_a_namespaced_object_without_a_namespace_is_the_one_in_default() -> None:
    state = ClusterState.from_objects([_doc("x", "first", 1, namespace="default"), _doc("x", "second", 3,
                                                                                        namespace=None)])
    kept, notices = state.first_of_each(lambda doc: True)
    assert [d.obj["data"]["v"] for d in kept] == ["first"] and len(notices) == 1
    cluster_scoped = ClusterState.from_objects([_doc("n", "1", 1, "Namespace", None), _doc("n", "2", 2, "Namespace",
                                                                                           "ignored")])
    assert len(cluster_scoped.first_of_each(lambda doc: False)[0]) == 1


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[ApiServer]:
    with ApiServer() as api:
        for name in ("default", "team-a"):
            api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        api.kubeconfig(tmp_path / "kubeconfig")
        yield api


def test_live_reads_that_meet_an_object_twice_follow_the_same_rule(cluster: ApiServer, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Every LIST made twice (as when a kind is read both whole and under a selector): one copy of each
    object, and the state notice `--state` files give."""
    from kubectl_kyrec.cluster import live
    from kubectl_kyrec.cluster.connection import ConnectionOptions
    from kubectl_kyrec.cluster.live_source import LiveSource
    from kubectl_kyrec.load.run_inputs.sources import FileSource

    plan = live.plan_reads
    monkeypatch.setattr(live, "plan_reads", lambda needs, found: [r for r in plan(needs, found) for _ in (1, 2)])
    source = LiveSource(FileSource(policy_paths=(POLICY,)), ConnectionOptions(kubeconfig=str(tmp_path / "kubeconfig")),
                        cache_dir=tmp_path / "cache")
    inputs = source.read()
    namespaces = [d.name for d in inputs.state.objects if d.kind == "Namespace"]
    assert sorted(namespaces) == ["default", "team-a"]
    assert [str(n) for n in inputs.notices if "appear more than once in the state" in str(n)] != []
