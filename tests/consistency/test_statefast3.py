"""Issue 36, `eval --state` reading cost, third step: the collector's pause is a plain context manager
(entered once per List item in both passes over a state), and `-o json` writes each chunk of items as
orjson's bytes decoded once. The output is the same text: the byte tests of every format
(test_streamed_formats.py, test_statefast*.py) hold it; these pin what changed. The evaluation pass keeps
sharing its objects' strings: without, the peak at 10,000 Pods rose by 18 % (load/run_inputs/state.py).
"""

from __future__ import annotations

import gc
import io
import json
from pathlib import Path
from typing import Any

import pytest

from kubectl_kyrec.load.gc_pause import gc_paused
from kubectl_kyrec.load.run_inputs.state import peek_state
from kubectl_kyrec.render.envelope import array_items, write_array_items, write_json_array

LIST = {
    "apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
    "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "team-a"},
               "spec": {"n": 1.0}} for i in range(3)],
}


def test_the_evaluation_pass_shares_the_objects_strings(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(LIST, indent=4))
    stream = peek_state([str(path)], lambda api_version, kind: False)
    assert stream is not None
    objects = [d.obj for d in stream.objects()]
    assert objects == LIST["items"] and type(objects[0]["spec"]["n"]) is int
    first, second = (o["metadata"]["namespace"] for o in objects[:2])
    # the sharing decoder (load/json_stream.py _decoder): the slices held cost less memory
    assert first is second


def test_the_collector_pause_nests_and_survives_an_exception() -> None:
    assert gc.isenabled()
    with pytest.raises(KeyError), gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()       # the outer pause still holds
        raise KeyError("x")
    assert gc.isenabled()


ITEMS: list[Any] = [{"message": "naïve \u2713 \"quoted\"\n", "n": i, "l": [1, {"k": None}], "e": {}}
                    for i in range(7)]


@pytest.mark.parametrize("indent", ["", "  ", "      "])
def test_array_items_are_the_standard_librarys_text(indent: str) -> None:
    whole = json.dumps({"a": ITEMS} if indent else ITEMS, indent=2, ensure_ascii=False)
    for _ in range(len(indent) // 2 - 1):
        whole = whole.replace("\n", "\n  ")
    inner = array_items(ITEMS, indent)
    assert f"[\n{inner}\n{indent}]" in whole


def test_a_chunk_is_written_apart_from_its_separator() -> None:
    writes: list[str] = []
    assert write_json_array(iter(ITEMS), writes.append, "  ", chunk=3) == 7
    text = "".join(writes)
    assert json.loads("{\"a\": " + text + "}")["a"] == ITEMS
    assert text == "[\n" + ",\n".join(array_items(ITEMS[i:i + 3], "  ") for i in (0, 3, 6)) + "\n  ]"
    # each chunk's text written as orjson gave it, not copied once more onto the separator
    assert writes[1:7] == ["\n", array_items(ITEMS[:3], "  "), ",\n", array_items(ITEMS[3:6], "  "), ",\n",
                           array_items(ITEMS[6:], "  ")]
    out = io.StringIO()
    assert write_array_items(iter(()), out.write, "  ", 3) == 0 and out.getvalue() == ""
