"""The EvalResult document's `results` entries (docs/output.md) as six parts, and the JSON and YAML text of
spilled results written straight from their records' columns (issue 36).

An entry is six mappings one after the other (the `*_part` functions below): the policy's (`policy`, `source`,
`rule`), the subject's, the outcome's (`result` to `validationActions`), the properties', and the two
locations'. Most entries differ from the others only in which subject, outcome and properties they join, so
each distinct part is written once and an entry's text is its parts' texts put together (the YAML writer does
so with render/joined.Joined; tests/render/test_eval_writers.py holds the parts to eval_output.result_json).

The spilled results (render/result_spill.py) are read back as columns (evaluate/pipeline.py read_columns), and
an entry's text is made without a Python step per result: the columns are mapped to their parts' texts and
joined at C speed. Each part's text is what the document's own encoder writes of the part (envelope.dumps for
JSON, yaml_emit for YAML), so the text is byte for byte what those encoders write of the whole entry: made
per result (a Result, its entry's mapping, the encoder's walk of it), `-o json` cost the reading process about
1.15 million instructions per Pod more than the table (bench/RESULTS.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.model import Ref, Result
from kubectl_kyrec.render import yaml_emit
from kubectl_kyrec.render.envelope import dumps

if TYPE_CHECKING:
    from kubectl_kyrec.evaluate.pipeline import PairsColumns
    from kubectl_kyrec.model import Source

_F = {name: i for i, name in enumerate(Result._fields)}
_POLICY, _SOURCE, _RULE, _RESULT, _MESSAGE, _SUBJECT = (_F[n] for n in ("policy", "source", "rule", "result",
                                                                          "message", "subject"))
_SCORED, _CATEGORY, _SEVERITY, _PROPERTIES, _ACTIONS = (_F[n] for n in ("scored", "category", "severity",
                                                                          "properties", "validation_actions"))
_LOCATION, _POLICY_LOCATION = _F["location"], _F["policy_location"]


def _loc(source: Source | None) -> dict[str, Any] | None:
    return source.as_location() if source is not None else None


def head_part(policy: str, source: str, rule: str) -> dict[str, Any]:
    return {"policy": policy, "source": source, "rule": rule}


def subject_part(ref: Ref) -> dict[str, Any]:
    return {"subject": ref.to_json()}


def outcome_part(result: str, message: str, scored: bool, category: str, severity: str,
                 actions: Sequence[str]) -> dict[str, Any]:
    # the encoders write a tuple as a list: no copy
    return {"result": result, "message": message, "scored": scored, "category": category, "severity": severity,
            "validationActions": actions}


def properties_part(properties: Mapping[str, str]) -> dict[str, Any]:
    return {"properties": properties if type(properties) is dict else dict(properties)}


def location_part(source: Source | None) -> dict[str, Any]:
    return {"location": _loc(source)}


def policy_location_part(source: Source | None) -> dict[str, Any]:
    return {"policyLocation": _loc(source)}


# the parts' texts kept across records, up to this many of each kind (a run whose messages all differ)
_PARTS_MAX = 20_000


class _Texts:
    """A format's text of each distinct part: `inner(part)` its text, `first(part)` the text of the entry's
    first part (with what opens the entry), `last(part)` of its last (with what closes it and separates it
    from the next)."""

    def __init__(self, inner: Callable[[dict[str, Any]], str], first: Callable[[dict[str, Any]], str],
                 last: Callable[[dict[str, Any]], str], subject: Callable[[Ref], str] | None = None,
                 location: Callable[[Source | None], str] | None = None) -> None:
        self.inner, self.first, self.last = inner, first, last
        # a subject's and a location's part text (`inner`'s of their parts), made a faster way: one of each
        # per subject
        self.subject = subject if subject is not None else (lambda ref: inner(subject_part(ref)))
        self.location = location if location is not None else (lambda source: inner(location_part(source)))
        self.heads: dict[tuple[str, str, str], str] = {}
        self.outcomes: dict[tuple[Any, ...], str] = {}

    def record(self, record: PairsColumns) -> list[str]:
        """The texts of a record's entries' parts, in order (six per entry): joined, its entries' text."""
        columns = record.columns
        inner = self.inner
        heads = self.heads
        head_keys = list(zip(columns[_POLICY], columns[_SOURCE], columns[_RULE]))
        missing = set(head_keys).difference(heads)
        if missing:
            if len(heads) + len(missing) > _PARTS_MAX:
                heads.clear()
                missing = set(head_keys)
            first = self.first
            for key in missing:
                heads[key] = first(head_part(*key))
        outcomes = self.outcomes
        outcome_keys = list(zip(columns[_RESULT], columns[_MESSAGE], columns[_SCORED], columns[_CATEGORY],
                                columns[_SEVERITY], columns[_ACTIONS]))
        new = set(outcome_keys).difference(outcomes)
        if new:
            if len(outcomes) + len(new) > _PARTS_MAX:
                outcomes.clear()
                new = set(outcome_keys)
            for outcome in new:
                outcomes[outcome] = inner(outcome_part(*outcome))
        # the tables are the record's own: their texts are made for the entries that use them
        subject = self.subject
        subjects = {i: subject(record.refs[i]) for i in set(columns[_SUBJECT])}
        properties = {i: inner(properties_part(record.properties[i])) for i in set(columns[_PROPERTIES])}
        sources = record.sources
        location = self.location
        locations = {i: location(sources[i]) for i in set(columns[_LOCATION])}
        last = self.last
        policy_locations = {i: last(policy_location_part(sources[i])) for i in set(columns[_POLICY_LOCATION])}
        return list(chain.from_iterable(zip(
            map(heads.__getitem__, head_keys), map(subjects.__getitem__, columns[_SUBJECT]),
            map(outcomes.__getitem__, outcome_keys), map(properties.__getitem__, columns[_PROPERTIES]),
            map(locations.__getitem__, columns[_LOCATION]),
            map(policy_locations.__getitem__, columns[_POLICY_LOCATION]))))


def json_entries(records: Iterable[PairsColumns], indent: str) -> Iterator[str]:
    """The entries of each record (with any) as the items of a JSON array at `indent` (spaces, two a level)
    are written inside it, separated by `,` and a new line: the array's text without its brackets, a
    record at a time (envelope.write_json_array writes what goes between them)."""
    item = indent + "  "
    # a part's keys as they stand in an entry: the part's own text without its braces, joined by commas
    # (the encoder puts nothing else between an entry's keys)
    cut = len(item) + 2

    def inner(part: dict[str, Any]) -> str:
        return dumps(part, item)[1:-cut] + ","

    def first(part: dict[str, Any]) -> str:
        return item + "{" + inner(part)

    def last(part: dict[str, Any]) -> str:
        return dumps(part, item)[1:] + ",\n"

    texts = _Texts(inner, first, last)
    for record in records:
        if not len(record.columns[0]):
            continue
        parts = texts.record(record)
        parts[-1] = parts[-1][:-2]      # no separator after the record's last entry
        yield "".join(parts)


def yaml_entries(records: Iterable[PairsColumns]) -> Iterator[str]:
    """The entries of each record (with any) as the items of a YAML block sequence at the top level
    (yaml_emit.write_sequence's), a record at a time."""
    texts = _Texts(lambda part: yaml_emit.block(part, "  "), yaml_emit.item, lambda part: yaml_emit.block(part, "  "),
                   _yaml_subject(), _yaml_location())
    for record in records:
        if len(record.columns[0]):
            yield "".join(texts.record(record))


def _yaml_subject() -> Callable[[Ref], str]:
    """A subject part's YAML (as an entry's, at two spaces) by the template of its shape (yaml_emit.template):
    a record's subjects are a thousand or more, each written once."""
    slot = yaml_emit.slot
    templates = {synthetic: yaml_emit.template(yaml_emit.block(subject_part(Ref(slot(0), slot(1), slot(2), slot(3),
                                                                                 slot(4), synthetic)), "  "))
                 for synthetic in (False, True)}

    def text(ref: Ref) -> str:
        values = yaml_emit.slot_values((ref.api_version, ref.kind, ref.namespace, ref.name, ref.uid))
        if values is None:
            return yaml_emit.block(subject_part(ref), "  ")
        return templates[ref.synthetic](values)

    return text


def _yaml_location() -> Callable[[Source | None], str]:
    """A location part's YAML (as an entry's, at two spaces) by its template (yaml_emit.template)."""
    slot = yaml_emit.slot
    template = yaml_emit.template(yaml_emit.block({"location": {"file": slot(0), "line": slot(1)}}, "  "))

    def text(source: Source | None) -> str:
        values = yaml_emit.slot_values((source.file,)) if source is not None and type(source.line) is int else None
        if source is None or values is None:
            return yaml_emit.block(location_part(source), "  ")
        return template((*values, str(source.line)))

    return text
