"""Where a state says a kind was listed (load/run_inputs/state.py): a capture's record says it, as the live run
that wrote it knew; a plain `kubectl get` dump lists whole kinds (and so does a kind no record names, which
hand-written states rely on). A capture holding the ConfigMaps of the one
namespace a lookup names must not stand for every namespace's, or a lookup elsewhere would be "not found"
offline where the live run said the ConfigMaps there were not read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState, ListedKind
from kubectl_kyrec.load.run_inputs.state import peek_state, read_state
from kubectl_kyrec.model import Document, Source
from kubectl_kyrec.run.capture_state import capture_document

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "teams", "namespace": "platform"},
      "data": {"allowed": "blue"}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "shop"}}


def _read(paths: list[str], how: str) -> ClusterState:
    if how == "whole":
        return read_state(paths)
    stream = peek_state(paths, lambda api_version, kind: True)
    assert stream is not None
    return stream.state


@pytest.mark.parametrize("how", ["whole", "streamed"])
def test_a_capture_s_objects_are_listed_where_its_record_says(tmp_path: Path, how: str) -> None:
    live = ClusterState.from_objects([Document(CM, Source("c"))],
                                     listed=[ListedKind("v1", "ConfigMap", "platform")], source="live")
    path = tmp_path / "capture.json"
    path.write_text(json.dumps(capture_document(live)))
    offline = _read([str(path)], how)
    for state in (live, offline):
        assert state.is_listed("v1", "ConfigMap", "platform") is True
        assert state.is_listed("v1", "ConfigMap", "other") is None
        assert state.is_listed("v1", "ConfigMap", "") is None


@pytest.mark.parametrize("how", ["whole", "streamed"])
def test_a_plain_dump_lists_whole_kinds_beside_a_capture(tmp_path: Path, how: str) -> None:
    live = ClusterState.from_objects([Document(CM, Source("c"))],
                                     listed=[ListedKind("v1", "ConfigMap", "platform")], source="live")
    capture = tmp_path / "capture.json"
    capture.write_text(json.dumps(capture_document(live)))
    dump: dict[str, Any] = {"apiVersion": "v1", "kind": "List", "items": [POD]}
    (tmp_path / "pods.json").write_text(json.dumps(dump))
    state = _read([str(capture), str(tmp_path / "pods.json")], how)
    assert state.is_listed("v1", "Pod", "other") is True          # kubectl get pods -A
    assert state.is_listed("v1", "ConfigMap", "other") is None
    # ConfigMaps dumped too (kubectl get configmaps -A): the dump stands for every namespace's
    cms: dict[str, Any] = {"apiVersion": "v1", "kind": "List", "items": [{**CM, "metadata": {
        "name": "x", "namespace": "shop"}}]}
    (tmp_path / "cms.json").write_text(json.dumps(cms))
    state = _read([str(capture), str(tmp_path / "cms.json")], how)
    assert state.is_listed("v1", "ConfigMap", "other") is True
