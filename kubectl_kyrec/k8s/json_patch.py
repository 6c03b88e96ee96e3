"""RFC 6902 JSON Patch: applying one to a JSON value, and writing the one that turns a value into another.

One place for both, used by every mutation engine (classic patchesJson6902, MutatingPolicy and
MutatingAdmissionPolicy JSONPatch) and by what `eval` reports of a mutation ("the JSON patch of what
changed"). Values are plain JSON data (dicts, lists, str, int, float, bool, None); nothing is changed in
place: `apply_patch` returns a new value sharing the untouched parts.

`make_patch` writes what gomodules.xyz/jsonpatch/v2 CreatePatch writes for the same two values where it
matters to a reader (object keys compared one by one, `replace` for a changed scalar, whole-value `add` and
`remove` for a key only one side has); for lists whose lengths differ it compares the common prefix and
then adds or removes at the end, which is a correct patch but not always CreatePatch's own choice of ops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.errors import EngineError


class PatchError(ValueError, EngineError):
    """A patch that cannot be applied: a path that does not resolve, a failed `test`, a bad op."""


class TestFailed(PatchError):
    """A `test` operation that did not hold (evanphx/json-patch ErrTestFailed): Kubernetes' JSONPatch
    patcher then leaves the object as it was, where any other error fails the patch."""

    __test__ = False        # not a pytest test class


def escape(token: str) -> str:
    """One JSON-pointer reference token: `~` as `~0`, `/` as `~1` (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def pointer_tokens(path: str) -> list[str]:
    """A JSON pointer's reference tokens; "" is the whole document."""
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}: it must start with '/'")
    return [unescape(t) for t in path[1:].split("/")]


def make_patch(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """The ops that turn `before` into `after` (none when they are equal)."""
    ops: list[dict[str, Any]] = []
    _diff(before, after, path, ops)
    return ops


def _same(a: Any, b: Any) -> bool:
    # JSON equality: True is not 1, 1 is 1.0
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


def _diff(a: Any, b: Any, path: str, ops: list[dict[str, Any]]) -> None:
    if a is b:
        # the patchers share what they leave alone with their input: nothing below changed
        return
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in a:
            if key not in b:
                ops.append({"op": "remove", "path": f"{path}/{escape(str(key))}"})
        for key in b:
            child = f"{path}/{escape(str(key))}"
            if key not in a:
                ops.append({"op": "add", "path": child, "value": b[key]})
            else:
                _diff(a[key], b[key], child, ops)
        return
    if isinstance(a, list) and isinstance(b, list):
        common = min(len(a), len(b))
        for i in range(common):
            _diff(a[i], b[i], f"{path}/{i}", ops)
        # removals from the end first, so each index still names the element meant
        for i in range(len(a) - 1, common - 1, -1):
            ops.append({"op": "remove", "path": f"{path}/{i}"})
        for i in range(common, len(b)):
            ops.append({"op": "add", "path": f"{path}/{i}", "value": b[i]})
        return
    if not _same(a, b):
        ops.append({"op": "replace", "path": path, "value": b})


def apply_patch(doc: Any, ops: Sequence[Mapping[str, Any]], *, ensure_path_exists_on_add: bool = False,
                support_negative_indices: bool = False, allow_missing_path_on_remove: bool = False) -> Any:
    """`doc` with `ops` applied in order. `ensure_path_exists_on_add`: an `add` whose parents are missing
    creates them (objects, or a list for a `0`/`-` token), as evanphx/json-patch does with its option of that
    name; without it such an add is an error, as RFC 6902 says. `support_negative_indices`: a list index -n
    counts from the end (for `add`, from the end of the list one longer). `allow_missing_path_on_remove`: a
    `remove` of a path that does not exist does nothing (evanphx/json-patch v5 ApplyOptions of those names)."""
    for op in ops:
        doc = _apply_one(doc, op, ensure_path_exists_on_add, allow_missing_path_on_remove, support_negative_indices)
    return doc


def _apply_one(doc: Any, op: Mapping[str, Any], ensure: bool, allow_missing: bool = False, neg: bool = False) -> Any:
    kind = op.get("op")
    path = op.get("path")
    if not isinstance(path, str):
        raise PatchError(f"patch op {kind!r} has no path")
    if kind == "add":
        return _set(doc, pointer_tokens(path), _value(op), insert=True, ensure=ensure, neg=neg)
    if kind == "replace":
        _get(doc, pointer_tokens(path), neg)     # must exist
        return _set(doc, pointer_tokens(path), _value(op), insert=False, ensure=False, neg=neg)
    if kind == "remove":
        if allow_missing:
            try:
                _get(doc, pointer_tokens(path), neg)
            except PatchError:
                return doc
        return _remove(doc, pointer_tokens(path), neg)
    if kind in ("move", "copy"):
        source = op.get("from")
        if not isinstance(source, str):
            raise PatchError(f"patch op {kind!r} has no from")
        value = _get(doc, pointer_tokens(source), neg)
        if kind == "move":
            if path.startswith(source + "/"):
                raise PatchError(f"cannot move {source!r} into its own child {path!r}")
            doc = _remove(doc, pointer_tokens(source), neg)
        return _set(doc, pointer_tokens(path), value, insert=True, ensure=False, neg=neg)
    if kind == "test":
        found = _get(doc, pointer_tokens(path), neg)
        if not _equal(found, _value(op)):
            raise TestFailed(f"test failed at {path!r}")
        return doc
    raise PatchError(f"unknown patch op {kind!r}")


def _value(op: Mapping[str, Any]) -> Any:
    if "value" not in op:
        raise PatchError(f"patch op {op.get('op')!r} at {op.get('path')!r} has no value")
    return op["value"]


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return _same(a, b)


def _index(token: str, size: int, *, insert: bool, neg: bool = False) -> int:
    if token == "-" and insert:
        return size
    if neg and token.startswith("-") and token[1:].isdigit() and not token[1:].startswith("0"):
        i = int(token)
        bound = size + 1 if insert else size
        if i < -bound:
            raise PatchError(f"list index {i} out of range")
        return i + bound
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise PatchError(f"invalid list index {token!r}")
    i = int(token)
    if i > size or (i == size and not insert):
        raise PatchError(f"list index {i} out of range")
    return i


def _is_int(token: str) -> bool:
    return token.lstrip("-").isdigit() and token.count("-") <= 1 and not token.endswith("-")


def _get(doc: Any, tokens: list[str], neg: bool = False) -> Any:
    for token in tokens:
        if isinstance(doc, Mapping):
            if token not in doc:
                raise PatchError(f"path element {token!r} not found")
            doc = doc[token]
        elif isinstance(doc, list):
            doc = doc[_index(token, len(doc), insert=False, neg=neg)]
        else:
            raise PatchError(f"path element {token!r} not found")
    return doc


def _set(doc: Any, tokens: list[str], value: Any, *, insert: bool, ensure: bool, neg: bool = False) -> Any:
    if not tokens:
        return value
    head, rest = tokens[0], tokens[1:]
    if doc is None and ensure:
        # evanphx ensurePathExists: a list when the token is an index or "-", else an object
        doc = [] if head == "-" or _is_int(head) else {}
    if isinstance(doc, Mapping):
        out = dict(doc)
        if rest:
            if head not in doc and not ensure:
                raise PatchError(f"path element {head!r} not found")
            out[head] = _set(doc.get(head), rest, value, insert=insert, ensure=ensure, neg=neg)
        else:
            out[head] = value
        return out
    if isinstance(doc, list):
        out_list = list(doc)
        if rest:
            try:
                i = _index(head, len(doc), insert=False, neg=neg)
            except PatchError:
                if not ensure:
                    raise
                # ensurePathExists: pad with nulls up to the index, then a new container at the end
                # (an index past -1 from the end cannot be made)
                if _is_int(head) and int(head) < 0 and (not neg or int(head) < -1):
                    raise PatchError(f"unable to ensure path for invalid index {head}") from None
                if _is_int(head) and int(head) > len(out_list):
                    out_list.extend([None] * (int(head) - len(out_list)))
                out_list.append(_set(None, rest, value, insert=insert, ensure=ensure, neg=neg))
                return out_list
            out_list[i] = _set(out_list[i], rest, value, insert=insert, ensure=ensure, neg=neg)
        else:
            i = _index(head, len(doc), insert=insert, neg=neg)
            if insert:
                out_list.insert(i, value)
            else:
                out_list[i] = value
        return out_list
    raise PatchError(f"path element {head!r} not found")


def _remove(doc: Any, tokens: list[str], neg: bool = False) -> Any:
    if not tokens:
        raise PatchError("cannot remove the whole document")
    head, rest = tokens[0], tokens[1:]
    if isinstance(doc, Mapping):
        if head not in doc:
            raise PatchError(f"path element {head!r} not found")
        out = dict(doc)
        if rest:
            out[head] = _remove(doc[head], rest, neg)
        else:
            del out[head]
        return out
    if isinstance(doc, list):
        i = _index(head, len(doc), insert=False, neg=neg)
        out_list = list(doc)
        if rest:
            out_list[i] = _remove(doc[i], rest, neg)
        else:
            del out_list[i]
        return out_list
    raise PatchError(f"path element {head!r} not found")
