"""State files (`--state`): what exists, as `kubectl get -o json|yaml` wrote it; often tens of thousands of
objects, so this is the fast path.

JSON goes through the json module (a List, one object, several concatenated objects, or a top-level array
of objects). YAML goes through libyaml's C composer with go-yaml's scalar rules (`yaml_nodes`); timestamps
stay strings and `yes`/`on` are booleans, as kubectl reads them. No YAML nodes are kept after a document is
converted. Errors are InputErrors with file:line, as for manifests.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.documents import iter_objects
from kubectl_kyrec.load.files import expand_paths, read_text
from kubectl_kyrec.load.gc_pause import gc_paused
from kubectl_kyrec.load.json_stream import iter_json_documents, looks_like_json
from kubectl_kyrec.load.yaml_nodes import iter_yaml_documents
from kubectl_kyrec.model import Document, Source

__all__ = ["load_state", "state_from_text"]


def load_state(paths: Sequence[str]) -> list[Document]:
    """Every object in the state files and directories `paths`, in reading order."""
    out: list[Document] = []
    for path in expand_paths(paths):
        name, text = read_text(path)
        out.extend(state_from_text(text, name))
    return out


def state_from_text(text: str, file: str) -> list[Document]:
    """The objects of one state file already read; `file` is the name messages use."""
    with gc_paused():  # see gc_pause: the whole file, so that the collector never walks a half-built tree
        return _state_documents(text, file)


def _state_documents(text: str, file: str) -> list[Document]:
    out: list[Document] = []
    if looks_like_json(text):
        for value, line in iter_json_documents(text, file):
            for item in _top_level_items(value, line, file):
                out.extend(Document(obj, Source(file, obj_line)) for obj, obj_line, _ in
                           iter_objects(item, line, None, file))
    else:
        for doc in iter_yaml_documents(text, file):
            out.extend(Document(obj, Source(file, obj_line)) for obj, obj_line, _ in
                       iter_objects(doc.value, doc.line, doc.node, file))
    return out


def _top_level_items(value: Any, line: int, file: str) -> Iterator[Any]:
    # `jq -s`, and some exporters, write a bare array of objects.
    if isinstance(value, list):
        if not all(isinstance(item, dict) for item in value):
            raise InputError("a top-level JSON array must hold only objects", Source(file, line))
        yield from value
    else:
        yield value
