"""A long sequence of a document, made a range at a time as it is written, and what the YAML writer may
assume of it.

Eval's results and expected reports are the long parts (230,000 results at 10,000 Pods): each is made
when written, never held as a list of output mappings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any


class Items:
    """`count` items made a range at a time by `make(start, stop)`; iterates as all of them.

    `shared`: the items' nested sequence items (a report's entries) and Joined parts may be shared between
    items and never change (yaml_emit writes each once and reuses its lines). `parts`: the same items, made
    by range as `make` makes them, as render/joined.Joined mappings whose parts are shared between items and
    never change (the YAML writer writes each part once and reuses its text).

    `json(indent)`, `yaml()`: all the items as the text the JSON and YAML writers would write of them, in
    pieces: JSON as the items of an array at `indent` separated by `,` and a new line (each piece one or more
    items, no separator before or after it), YAML as the items of a block sequence at the top level. Given by
    a sequence that can write its items' text faster than the writers make it of the items
    (render/result_entries.py); the writers use it instead of the items. `documents()`: each item as a YAML
    document of its own, in order (a stream of them: `-o reports`, render/report_text.py).
    """

    __slots__ = ("count", "make", "shared", "parts", "json", "yaml", "documents")

    def __init__(self, count: int, make: Callable[[int, int], Iterable[Any]], *, shared: bool = False,
                 parts: Callable[[int, int], Iterable[Any]] | None = None,
                 json: Callable[[str], Iterable[str]] | None = None,
                 yaml: Callable[[], Iterable[str]] | None = None,
                 documents: Callable[[], Iterable[str]] | None = None) -> None:
        self.count = count
        self.make = make
        self.shared = shared
        self.parts = parts
        self.json = json
        self.yaml = yaml
        self.documents = documents

    def __iter__(self) -> Iterator[Any]:
        return iter(self.make(0, self.count))
