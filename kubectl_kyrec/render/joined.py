"""Mappings given as the mappings they are made of: the shape the YAML writer reuses text by.

An eval run writes 230,000 results that differ from one another in a few fields: the policy's fields
are the same for every subject, a subject's ref and location for every policy, the outcome for most
pairs. Written key by key, each result costs a line of Python per key; given as a Joined of shared
parts, each part is written once and every result is its parts' texts put together (yaml_emit).

JSON does not use it: orjson encodes a whole result mapping faster than Python joins the parts' texts
(230,000 results: 0.75-0.93 s from mappings, 0.93-1.38 s from cached part texts, the same bytes). Spilled
results are written from the spill's columns instead, in both formats (render/result_entries.py: the parts'
texts joined at C speed, no Python step per result).
"""

from __future__ import annotations


class Joined(tuple):  # type: ignore[type-arg]
    """A mapping given as the non-empty mappings it is made of, one after the other: its keys are their
    keys in order (none twice). In block YAML a mapping's lines are the lines of its keys one after the
    other, and a key's lines depend on nothing else, so a Joined is written as the merged mapping would be.

    Only the writers that know it may be given one (a JSON encoder would write a tuple as an array):
    Items.parts (render/items.py) is where it is offered, beside the plain items of the same sequence."""

    __slots__ = ()
