"""The machine output contract (docs/output.md): one envelope, rendered as JSON or YAML.

JSON is encoded with orjson: `json.dumps(indent=2)` never uses CPython's C encoder (only the compact form
does), and on 50,000 eval results orjson's indented output took 0.73 s where the standard library took
9.1 s indented and 3.3 s compact, byte for byte the same text as `json.dumps(indent=2, ensure_ascii=False)`
(measured in bench/e2e.py's run; see docs/performance.md). Without orjson the standard library is used.
YAML goes through `yaml_emit`, which writes JSON-shaped data without PyYAML's node objects.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from kubectl_kyrec import __version__
from kubectl_kyrec.render import yaml_emit
from kubectl_kyrec.render.items import Items

if TYPE_CHECKING:
    from kubectl_kyrec.errors import FailedRead, RunResult
    from kubectl_kyrec.model import EvalError

orjson: Any
try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; the fallback keeps a broken install working
    orjson = None


def error_entries(errors: Iterable[EvalError]) -> list[dict[str, Any]]:
    """Every document's `errors` (docs/output.md's *error*): the inputs that could not be used, with where."""
    return [{"message": e.message, "location": e.source.as_location() if e.source is not None else None}
            for e in errors]


def envelope(kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kyrec/v1", "kind": kind, "kyrecVersion": __version__, **body}


# the documents whose `summary` (coverage: `counts`) counts the failed reads; a test run reads no cluster
COUNTS_READS = frozenset(("EvalResult", "DiffResult", "CoverageResult", "ApplyResult"))


def run_document(result: RunResult) -> tuple[str, Iterable[tuple[str, Any]]]:
    """A run's document (errors.RunResult.document) with its failed reads in it, the same way for every
    command (docs/output.md): each read an entry of `errors` (errors.FailedRead.to_json), after the inputs
    that could not be used, and `failedReads`, how many, in the `summary` (`counts` for coverage)."""
    kind, parts = result.document()
    return kind, _with_reads(kind, parts, list(result.failed_reads))


def _with_reads(kind: str, parts: Iterable[tuple[str, Any]], reads: list[FailedRead]) -> Iterator[tuple[str, Any]]:
    counted = "counts" if kind == "CoverageResult" else "summary"
    for key, value in parts:
        if key == "errors":
            value = [*value, *(r.to_json() for r in reads)]
        elif key == counted and kind in COUNTS_READS and isinstance(value, Mapping):
            value = {**value, "failedReads": len(reads)}
        yield key, value


def whole_document(document: tuple[str, Iterable[tuple[str, Any]]],
                   extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A run's document (errors.RunResult.document) as one mapping, for the outputs written as one text;
    `extra`: keys after the run's own (the baseline's)."""
    kind, parts = document
    return envelope(kind, {**dict(parts), **(extra or {})})


def _default(value: Any) -> Any:
    return str(value)


def _orjson(value: Any) -> bytes:
    return orjson.dumps(value, default=_default, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)  # type: ignore[no-any-return]


def dumps(value: Any, indent: str = "") -> str:
    """`value` as indented JSON (2 spaces a level, kubectl's key order kept); lines after the first start
    with `indent`, so the text can be placed inside a document being written."""
    if orjson is not None:
        text = _orjson(value).decode("utf-8")
    else:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return text.replace("\n", "\n" + indent) if indent else text


def to_json(doc: Any) -> str:
    return dumps(doc) + "\n"


def to_yaml(doc: Any) -> str:
    return yaml_emit.to_yaml(doc)


def to_yaml_stream(docs: list[Any]) -> str:
    return "".join(("---\n" if i else "") + to_yaml(d) for i, d in enumerate(docs))


def write_json_document(kind: str, parts: Iterable[tuple[str, Any]], write: Callable[[str], object]) -> None:
    """The envelope as indented JSON, written key by key: a part whose value is an iterator (not a list or
    a mapping) is written item by item as a JSON array, so it is never held whole."""
    write("{\n" + ",\n".join(f"  {json.dumps(k)}: {dumps(v, '  ')}"
                             for k, v in envelope(kind, {}).items()))
    for key, value in parts:
        write(f",\n  {json.dumps(key)}: ")
        if isinstance(value, (list, tuple, Mapping, str, int, float, bool)) or value is None:
            write(dumps(value, "  "))
            continue
        write_json_array(value, write, "  ")
    write("\n}\n")


def write_json_array(items: Iterable[Any], write: Callable[[str], object], indent: str, chunk: int = 1000) -> int:
    """A JSON array, item by item, laid out as `json.dumps(indent=2)` would inside a document.

    Items are encoded `chunk` at a time, as one array (`array_items`): one encoder call per chunk rather
    than per item (a run writes hundreds of thousands of results).
    """
    write("[")
    if isinstance(items, Items) and items.json is not None:
        # the items as text already (render/result_entries.py)
        first = True
        for text in items.json(indent):
            write("\n" if first else ",\n")
            write(text)
            first = False
        count = items.count
    else:
        count = write_array_items(items, write, indent, chunk, "\n")
    write(f"\n{indent}]" if count else "]")
    return count


def write_array_items(items: Iterable[Any], write: Callable[[str], object], indent: str, chunk: int,
                      first: str = "", encode: Callable[[Any], str] = dumps) -> int:
    """The array's items separated by `,` and a new line, `first` before the first one, `chunk` to an
    encoder call (`array_items` with `encode`); returns how many."""
    count = 0
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) >= chunk:
            # the separator written apart: joined to the chunk's text, the whole chunk was copied once more
            write(first if not count else ",\n")
            write(array_items(batch, indent, encode))
            count += len(batch)
            batch.clear()
    if batch:
        write(first if not count else ",\n")
        write(array_items(batch, indent, encode))
        count += len(batch)
    return count


def array_items(batch: list[Any], indent: str, encode: Callable[[Any], str] = dumps) -> str:
    """The items of a non-empty array as they stand inside it at `indent` (spaces, two a level): the
    array's text without its brackets, as `encode` (indented by two) writes it.

    The batch is encoded nested as deep as the array stands (`{"": [...]}` for an array at two spaces), so
    the encoder itself indents the items: no pass over the text to re-indent it.
    """
    value: Any = batch
    for _ in range(len(indent) // 2):
        value = {"": value}
    if encode is dumps and orjson is not None:
        # the items cut out of orjson's bytes and decoded once: decoding the whole text, then slicing it,
        # copied each chunk (a thousand results) twice
        raw = _orjson(value)
        return str(memoryview(raw)[raw.index(b"[\n") + 2:raw.rindex(f"\n{indent}]".encode())], "utf-8")
    text = encode(value)
    return text[text.index("[\n") + 2:text.rindex(f"\n{indent}]")]


def write_yaml_document(kind: str, parts: Iterable[tuple[str, Any]], write: Callable[[str], object]) -> None:
    """The envelope as YAML, key by key; iterator parts are written item by item as a sequence."""
    write(to_yaml(envelope(kind, {})))
    for key, value in parts:
        if isinstance(value, (list, tuple, Mapping, str, int, float, bool)) or value is None:
            write(to_yaml({key: value}))
        else:
            yaml_emit.write_sequence(key, value, write)
