"""The text of the expected reports of spilled results (issue 36): the documents' `reports` (`-o json`,
`-o yaml`) and `-o reports`' stream, made from each report's subject and entries (expect/reports.py
spilled_groups) without walking each report in Python.

A report's entries hold nothing of its subject, and one outcome of a policy is the same mapping in every report
that has it (expect/reports.py SharedEntries): each entry's text is made once, by the format's own encoder
(envelope.dumps, yaml_emit), and kept with its `result`. A report is then its head's text (the mapping up to
`summary`, one encoder call), then its entries' texts joined at C speed, its summary counted from their
`result`s at C speed. Walking each whole report (envelope.shared_items_json, yaml_emit.emit with shared
blocks) took a Python step per entry of every report: 230,000 at 10,000 Pods. Byte for byte the text the
encoders write of each whole report (tests/consistency/test_jsonfmt.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any

from kubectl_kyrec.expect.reports import STATUSES, report_head, status_summary
from kubectl_kyrec.model import Ref
from kubectl_kyrec.render import yaml_emit
from kubectl_kyrec.render.envelope import dumps

Groups = Iterable[tuple[Ref, list[dict[str, Any]]]]

# the entries' texts kept, by id with the entry (alive, so its id stays its own), up to this many
_TEXTS_MAX = 20_000
# reports joined into one piece of text
_PIECE = 200

_TEXT, _STATUS = itemgetter(1), itemgetter(2)


class _EntryTexts:
    """Each shared entry's text (`make`'s) and `result`, made the first time the entry is met."""

    def __init__(self, make: Callable[[dict[str, Any]], str]) -> None:
        self.make = make
        self.found: dict[int, tuple[dict[str, Any], str, str]] = {}

    def of(self, entries: list[dict[str, Any]]) -> tuple[list[str], dict[str, int]]:
        """The texts of a report's entries, in order, and the report's summary."""
        found: list[Any] = list(map(self.found.get, map(id, entries)))
        if None in found:
            for i, known in enumerate(found):
                if known is None:
                    found[i] = self._made(entries[i])
        return list(map(_TEXT, found)), status_summary(map(_STATUS, found))

    def _made(self, entry: dict[str, Any]) -> tuple[dict[str, Any], str, str]:
        # looked up again: the entry may stand twice in one report
        known = self.found.get(id(entry))
        if known is None:
            if len(self.found) >= _TEXTS_MAX:
                self.found.clear()
            known = self.found[id(entry)] = (entry, self.make(entry), str(entry.get("result", "")))
        return known


def _pieces(texts: Iterator[str], separator: str) -> Iterator[str]:
    out: list[str] = []
    for text in texts:
        out.append(text)
        if len(out) >= _PIECE:
            yield separator.join(out)
            out.clear()
    if out:
        yield separator.join(out)


def json_reports(groups: Groups, api: str, indent: str) -> Iterator[str]:
    """The reports as the items of a JSON array at `indent` (spaces, two a level), in pieces (Items.json's)."""
    item = indent + "  "
    key_indent = "\n" + item + "  "
    entry_indent = key_indent + "  "
    # the head's text ends with the empty `results` the entries' text replaces
    empty = "[]\n" + item + "}"
    close = key_indent + "]\n" + item + "}"
    texts = _EntryTexts(lambda entry: dumps(entry, entry_indent[1:]))

    def reports() -> Iterator[str]:
        for subject, entries in groups:
            encoded, counts = texts.of(entries)
            head = report_head(subject, api)
            head["summary"] = counts
            head["results"] = []
            text = dumps(head, item)
            if encoded:
                text = text[:-len(empty)] + "[" + entry_indent + ("," + entry_indent).join(encoded) + close
            yield item + text

    return _pieces(reports(), ",\n")


def _yaml_reports(groups: Groups, api: str, indent: str,
                  head_text: Callable[[dict[str, Any]], str]) -> Iterator[str]:
    """Each report's block YAML, its `results` at `indent`, its head written by `head_text`."""
    results, empty = f"{indent}results:\n", f"{indent}results: []\n"
    texts = _EntryTexts(lambda entry: yaml_emit.item(entry, indent))
    templates: dict[tuple[bool, bool], Callable[[Sequence[str]], str]] = {}
    for subject, entries in groups:
        encoded, counts = texts.of(entries)
        values = yaml_emit.slot_values((subject.uid, subject.namespace, subject.api_version, subject.kind,
                                        subject.name))
        if values is None:
            head = report_head(subject, api)
            head["summary"] = counts
            text = head_text(head)
        else:
            shape = (bool(subject.namespace), subject.synthetic)
            template = templates.get(shape)
            if template is None:
                template = templates[shape] = _head_template(api, shape, head_text)
            text = template([*values, *map(str, counts.values())])
        # PyYAML's layout: a sequence under a key is not indented
        yield text + (results + "".join(encoded) if encoded else empty)


def _head_template(api: str, shape: tuple[bool, bool], head_text: Callable[[dict[str, Any]], str]
                   ) -> Callable[[Sequence[str]], str]:
    """The YAML head of every report of a `shape` (namespaced, synthetic uid) as a function of its fields'
    scalars (uid, namespace, apiVersion, kind, name, then the summary's counts; yaml_emit.template): a head
    written per report was a Python step per line, about 25 a report."""
    namespaced, synthetic = shape
    slot = yaml_emit.slot
    stand_in = Ref(slot(2), slot(3), slot(1) if namespaced else "", slot(4), slot(0), synthetic)
    head = report_head(stand_in, api)
    head["summary"] = {status: slot(5 + i) for i, status in enumerate(STATUSES)}
    return yaml_emit.template(head_text(head))


def yaml_reports(groups: Groups, api: str) -> Iterator[str]:
    """The reports as the items of a YAML block sequence at the top level, in pieces (Items.yaml's)."""
    return _pieces(_yaml_reports(groups, api, "  ", lambda head: yaml_emit.item(head, "")), "")


def yaml_documents(groups: Groups, api: str) -> Iterator[str]:
    """Each report as a YAML document of its own (Items.documents')."""
    return _yaml_reports(groups, api, "", lambda head: yaml_emit.block(head, ""))
