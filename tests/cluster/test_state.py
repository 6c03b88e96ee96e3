"""ClusterState: what was listed is recorded, not guessed; the files reader reads the capture record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState, ListedKind
from kubectl_kyrec.load.run_inputs.state import read_state
from kubectl_kyrec.model import Document, Source


def _doc(api_version: str, kind: str, name: str, namespace: str = "", **meta: object) -> Document:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {}), **meta}
    return Document({"apiVersion": api_version, "kind": kind, "metadata": metadata}, Source("s.json"))


def test_is_listed_distinguishes_listed_unreadable_and_unknown() -> None:
    state = ClusterState.from_objects(
        [], listed=[ListedKind("apps/v1", "Deployment", ""), ListedKind("v1", "Secret", "team-a")],
        unreadable={ListedKind("v1", "Secret", ""): "forbidden"})
    assert state.is_listed("apps/v1", "Deployment", "any") is True
    assert state.is_listed("apps/v1beta1", "Deployment") is True   # same group: same objects
    assert state.is_listed("v1", "Secret", "team-a") is True
    assert state.is_listed("v1", "Secret", "team-b") is False
    assert state.unreadable_message("v1", "Secret", "team-b") == "forbidden"
    assert state.is_listed("v1", "Pod") is None
    assert state.is_listed("apps/v1", "StatefulSet") is None


class _CountedSet(set[ListedKind]):
    """A record that counts how often it is walked through."""

    walks = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        _CountedSet.walks += 1
        return super().__iter__()


def test_is_listed_answers_from_an_index_not_a_scan_per_question() -> None:
    # apply's planning asks is_listed about every object several times (27,000 questions for 3,000 creates):
    # a walk through the whole record per question was a second of its CPU
    listed = _CountedSet(ListedKind(f"g{n}.example/v1", "Thing", "") for n in range(200))
    state = ClusterState([], listed)
    _CountedSet.walks = 0
    for n in range(1000):
        assert state.is_listed(f"g{n % 200}.example/v2", "Thing", f"ns-{n}") is True
        assert state.is_listed("v1", "ConfigMap", f"ns-{n}") is None
    assert _CountedSet.walks <= 1


def test_is_listed_index_follows_the_record_as_it_grows() -> None:
    state = ClusterState.from_objects([], listed=[ListedKind("v1", "Secret", "team-a")],
                                      unreadable={ListedKind("v1", "ConfigMap", "team-b"): "forbidden"})
    assert state.is_listed("v1", "Secret", "team-b") is None
    assert state.is_listed("v1", "ConfigMap", "team-b") is False
    state.listed.add(ListedKind("v1", "Secret", ""))
    state.listed.add(ListedKind("v1", "ConfigMap", ""))
    assert state.is_listed("v1", "Secret", "team-b") is True
    assert state.is_listed("v1", "ConfigMap", "team-b") is True       # listed cluster-wide wins
    assert state.is_listed("v1", "Secret", exact_version=True) is True
    assert state.is_listed("v2", "Secret", exact_version=True) is None
    assert state.is_listed("v2", "Secret") is True


def test_lookups_and_managed_fields() -> None:
    a = _doc("v1", "ConfigMap", "a", "ns1")
    b = _doc("v1", "ConfigMap", "b", "ns2", managedFields=[{"manager": "kubectl"}])
    state = ClusterState.from_objects([a, b])
    assert state.get_object("v1", "ConfigMap", "ns2", "b") is b
    assert state.get_object("v1", "ConfigMap", "ns1", "b") is None
    assert state.list_objects("v1", "ConfigMap") == [a, b]
    assert state.list_objects("v1", "ConfigMap", "ns1") == [a]
    assert state.has_managed_fields
    assert not ClusterState.from_objects([a]).has_managed_fields


def test_files_reader_lists_kinds_it_holds_objects_of(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "x"}}]}))
    state = read_state([str(path)])
    assert state.source == "files"
    assert [d.name for d in state.objects] == ["d"]
    assert state.is_listed("apps/v1", "Deployment", "y") is True
    assert state.is_listed("v1", "Pod") is None


def test_capture_file_records_empty_and_unreadable_kinds(tmp_path: Path) -> None:
    listed = [{"apiVersion": "v1", "kind": "Pod", "namespace": ""},
              {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "team-a"}]
    unreadable = [{"apiVersion": "v1", "kind": "Secret", "namespace": "", "message": "secrets is forbidden"}]
    path = tmp_path / "capture.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "metadata": {"annotations": {
        "kyrec.io/listed": json.dumps(listed), "kyrec.io/unreadable": json.dumps(unreadable)}}, "items": []}))
    state = read_state([str(path)])
    assert state.objects == []
    assert state.is_listed("v1", "Pod", "anywhere") is True
    assert state.is_listed("apps/v1", "Deployment", "team-a") is True
    assert state.is_listed("apps/v1", "Deployment", "team-b") is None
    assert state.is_listed("v1", "Secret") is False
    assert state.unreadable_message("v1", "Secret") == "secrets is forbidden"


def test_capture_record_in_yaml(tmp_path: Path) -> None:
    path = tmp_path / "capture.yaml"
    path.write_text("apiVersion: v1\nkind: List\nmetadata:\n  annotations:\n    kyrec.io/listed: "
                    "'[{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"namespace\": \"\"}]'\nitems: []\n")
    assert read_state([str(path)]).is_listed("v1", "Pod") is True


def test_malformed_capture_record_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "capture.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                "metadata": {"annotations": {"kyrec.io/listed": "[{\"kind\": 3}]"}}, "items": []}))
    with pytest.raises(InputError, match="kyrec.io/listed"):
        read_state([str(path)])
