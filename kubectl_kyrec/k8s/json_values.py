"""Decoded JSON values (dicts, lists and scalars, as a manifest or a CEL result decodes): one deep copy.

`copy.deepcopy` keeps a memo of every object it copies and dispatches on each type through Python code;
a decoded JSON value has no shared or cyclic parts and only two container types, so copying it needs
neither. Measured on a defaulted Pod: about a third of copy.deepcopy's time.
"""

from __future__ import annotations

from typing import Any


def copy_json(value: Any) -> Any:
    """A deep copy of the dicts and lists of `value` (subclasses copied as plain ones); anything else
    (scalars, tuples) is shared, as a JSON value's scalars are immutable."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value
