import gc
import json
from pathlib import Path

import pytest
import yaml

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.run_inputs.state import load_state, state_from_text


def deployment(i: int) -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": f"app-{i}", "namespace": "team", "uid": f"uid-{i}",
                     "creationTimestamp": "2024-05-01T12:00:00Z", "labels": {"app": f"app-{i}"},
                     "annotations": {"enabled": "true", "switch": "on"}},
        "spec": {"replicas": i, "paused": i % 2 == 1, "progressDeadlineSeconds": 600,
                 "template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.25",
                                                       "resources": {"limits": {"cpu": "0.5"}}}]}}},
        "status": {"conditions": [{"type": "Available", "status": "True",
                                   "lastTransitionTime": "2024-05-01T12:01:00Z"}]},
    }


def as_list(objs: list[dict]) -> dict:
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": objs}


def test_kubectl_get_json_list(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(as_list([deployment(i) for i in range(3)]), indent=4))
    docs = load_state([str(path)])
    assert [d.name for d in docs] == ["app-0", "app-1", "app-2"]
    assert docs[1].obj == deployment(1)
    # each item of a JSON List is at its own line (that of its first key), as YAML items are
    lines = path.read_text().splitlines()
    assert [d.source.file for d in docs] == [str(path)] * 3
    for doc in docs:
        assert lines[doc.source.line - 1].strip() == '"apiVersion": "apps/v1",'
    assert lines[docs[1].source.line + 2].strip() == '"name": "app-1",'


def test_json_list_item_lines_compact_repeated_keys_and_nested(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    # one line per item, a repeated `items` key (the last one wins, as json.loads), a typed List
    path.write_text('{"kind": "List", "apiVersion": "v1", "items": [],\n"items": [\n'
                    + ",\n".join(json.dumps(deployment(i)) for i in range(3)) + "\n]}\n"
                    + json.dumps({"apiVersion": "v1", "kind": "PodList", "items": [
                        {"metadata": {"name": "p"}}]}, indent=1))
    docs = load_state([str(path)])
    assert [(d.name, d.source.line) for d in docs] == [("app-0", 3), ("app-1", 4), ("app-2", 5), ("p", 12)]
    assert [d.obj for d in docs[:3]] == [deployment(i) for i in range(3)]


def test_json_and_yaml_state_are_equal(tmp_path: Path) -> None:
    objs = [deployment(i) for i in range(20)]
    (tmp_path / "s.json").write_text(json.dumps(as_list(objs), indent=4))
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(as_list(objs), sort_keys=False))
    from_json = load_state([str(tmp_path / "s.json")])
    from_yaml = load_state([str(tmp_path / "s.yaml")])
    assert [d.obj for d in from_json] == [d.obj for d in from_yaml] == objs
    assert [list(d.obj["metadata"]) for d in from_yaml] == [list(o["metadata"]) for o in objs]


def test_yaml_state_keeps_timestamps_as_strings_and_reads_1_1_booleans(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems:\n"
                    "- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: a\n"
                    "    creationTimestamp: 2024-05-01T12:00:00Z\n    labels: {on: yes, off: 'no'}\n"
                    "- apiVersion: v1\n  kind: Namespace\n  metadata: {name: b}\n")
    docs = load_state([str(path)])
    assert docs[0].obj["metadata"]["creationTimestamp"] == "2024-05-01T12:00:00Z"
    assert docs[0].obj["metadata"]["labels"] == {"true": True, "false": "no"}
    assert [d.source.line for d in docs] == [4, 10]


def test_single_concatenated_and_array_json(tmp_path: Path) -> None:
    single = tmp_path / "one.json"
    single.write_text(json.dumps(deployment(0)))
    concatenated = tmp_path / "many.json"
    concatenated.write_text(json.dumps(deployment(1), indent=2) + "\n" + json.dumps(deployment(2), indent=2))
    array = tmp_path / "array.json"
    array.write_text(json.dumps([deployment(3), deployment(4)]))
    docs = load_state([str(single), str(concatenated), str(array)])
    assert [d.name for d in docs] == ["app-0", "app-1", "app-2", "app-3", "app-4"]
    first_of_second = 2 + json.dumps(deployment(1), indent=2).count("\n") + 1
    assert [d.source.line for d in docs[1:3]] == [2, first_of_second]


def test_typed_list_items_take_their_kind_from_the_list() -> None:
    text = json.dumps({"apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": {},
                       "items": [{"metadata": {"name": "x"}}]})
    [doc] = state_from_text(text, "raw.json")
    assert (doc.api_version, doc.kind, doc.name) == ("apps/v1", "Deployment", "x")


def test_directories_mix_json_and_yaml(tmp_path: Path) -> None:
    (tmp_path / "ns").mkdir()
    (tmp_path / "ns" / "a.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n")
    (tmp_path / "b.json").write_text(json.dumps({"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": "b"}}))
    (tmp_path / "README.md").write_text("# not state\n")
    assert [d.name for d in load_state([str(tmp_path)])] == ["b", "a"]


@pytest.mark.parametrize(("name", "text", "expected"), [
    ("s.json", '{"apiVersion": "v1",\n "kind": }', "s.json:2: invalid JSON: Expecting value (column 10)"),
    ("s.json", '[{"apiVersion": "v1", "kind": "X"}, 3]',
     "s.json:1: a top-level JSON array must hold only objects"),
    ("s.json", '{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod"}]}',
     "s.json:1: missing apiVersion"),
    ("s.yaml", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n- 7\n",
     "s.yaml:6: document is a number, not a mapping (a Kubernetes object)"),
    ("s.yaml", "apiVersion: v1\nkind: Pod\n metadata: {}\n",
     "s.yaml:3: invalid YAML: mapping values are not allowed in this context at column 10"),
])
def test_state_errors_name_file_and_line(name: str, text: str, expected: str) -> None:
    with pytest.raises(InputError) as info:
        state_from_text(text, name)
    assert str(info.value) == expected


def test_missing_state_file() -> None:
    with pytest.raises(InputError) as info:
        load_state(["/no/such/state.json"])
    assert str(info.value) == "/no/such/state.json: no such file or directory"


def test_the_garbage_collector_is_back_on_after_loading_and_after_errors() -> None:
    assert gc.isenabled()
    state_from_text("apiVersion: v1\nkind: List\nitems: []\n", "s.yaml")
    assert gc.isenabled()
    with pytest.raises(InputError):
        state_from_text("apiVersion: v1\nkind: [\n", "s.yaml")
    assert gc.isenabled()
    gc.disable()
    try:
        state_from_text('{"apiVersion": "v1", "kind": "X"}', "s.json")
        assert not gc.isenabled()  # a caller's choice is left alone
    finally:
        gc.enable()


def test_json_list_items_share_keys_and_short_strings_and_equal_json_loads(tmp_path: Path) -> None:
    long = "x" * 100
    objs = [deployment(i) | {"data": {"long": long}} for i in range(3)]
    path = tmp_path / "state.json"
    path.write_text(json.dumps(as_list(objs), indent=4))
    loaded = [d.obj for d in load_state([str(path)])]
    assert loaded == json.loads(path.read_text())["items"]
    first, second = loaded[0], loaded[1]
    key_a = next(k for k in first["metadata"] if k == "namespace")
    key_b = next(k for k in second["metadata"] if k == "namespace")
    assert key_a is key_b
    assert first["metadata"]["namespace"] is second["metadata"]["namespace"]
    # long values are left as decoded: one copy each, as before
    assert first["data"]["long"] == second["data"]["long"]
    assert first["data"]["long"] is not second["data"]["long"]
