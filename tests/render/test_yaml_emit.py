"""The fast YAML emitter gives back exactly the data it was given, through a YAML 1.1 reader."""

from __future__ import annotations

import random
from typing import Any

import pytest
import yaml

from kubectl_kyrec.render.yaml_emit import to_yaml, write_sequence

TRICKY = ["yes", "no", "on", "off", "Off", "null", "~", "true", "y", "N", "1", "1.0", "0x1f", "1_000", "12:30",
          "2026-01-01", "a: b", "a #b", "#x", "-x", "- x", "x ", "  x", "x\n", "x\ny\n", "x\n\n", "\ny", " x\ny",
          "é", "\u2028", "\x85", "\t", "a\tb", "it's", '"q"', "", "-", "?", "@x", "`x", "!x", "&a", "*a", "|",
          "%x", ".inf", "-.inf", ".nan", "NaN", "x\r\ny", "x \ny", "\x00", "<none>", "a,b", "x:y", "http://x.y",
          "1e5", "+1", "0o17", "0b101", "=", "<<", "\ufeffx", "1:2:3", "plain words", "/path/to.yaml"]


def value(rng: random.Random, depth: int = 0) -> object:
    roll = rng.random()
    if depth > 3 or roll < 0.5:
        return rng.choice([rng.choice(TRICKY), rng.randint(-5, 10**12), 1e16, 1.5, -0.0, True, False, None])
    if roll < 0.75:
        return {rng.choice(TRICKY): value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    return [value(rng, depth + 1) for _ in range(rng.randint(0, 4))]


@pytest.mark.parametrize("seed", range(5))
def test_round_trip(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(200):
        data = {"top": value(rng)}
        assert yaml.safe_load(to_yaml(data)) == data


def test_layout_is_pyyaml_block_style() -> None:
    data = {"a": [{"b": 1, "c": []}, "x"], "d": {}, "e": {"f": "two\nlines\n"}, "g": "0"}
    assert to_yaml(data) == "a:\n- b: 1\n  c: []\n- x\nd: {}\ne:\n  f: |\n    two\n    lines\ng: '0'\n"


def test_sequence_written_in_chunks_is_one_sequence() -> None:
    pieces: list[str] = []
    assert write_sequence("items", ({"n": i} for i in range(7)), pieces.append, chunk=2) == 7
    assert len(pieces) > 2
    assert yaml.safe_load("".join(pieces)) == {"items": [{"n": i} for i in range(7)]}
    empty: list[str] = []
    write_sequence("items", iter(()), empty.append)
    assert yaml.safe_load("".join(empty)) == {"items": []}


def test_shared_parts_write_what_plain_items_write() -> None:
    # items sharing nested mappings and sequences (a subject's ref under each of its results), at several
    # depths: their lines are reused, and the text is the same as when each is written out
    from kubectl_kyrec.render.items import Items

    rng = random.Random(3)
    shared = [value(rng, 1) for _ in range(6)] + [{"ref": {"kind": "Pod", "name": "x"}}, ["Deny", "Audit"], {}]
    items = []
    for i in range(400):
        picks = [rng.choice(shared) for _ in range(3)]
        items.append({"n": i, "a": picks[0], "nested": {"b": picks[1], "list": [picks[2], picks[0]]}})
        items.append([picks[1], {"c": picks[2]}])
    plain: list[str] = []
    fast: list[str] = []
    assert write_sequence("items", iter(items), plain.append, chunk=50) == 800
    shared_items = Items(len(items), lambda a, b: iter(items[a:b]), shared=True)
    assert write_sequence("items", shared_items, fast.append, chunk=50) == 800
    assert "".join(fast) == "".join(plain)
    assert yaml.safe_load("".join(fast)) == {"items": items}


def _joined_items(rng: random.Random) -> tuple[list[Any], list[Any]]:
    """Items as Joined mappings whose parts are shared between items, and the same items merged."""
    from kubectl_kyrec.render.joined import Joined

    keys = iter(f"k{i}" for i in range(10**6))
    # parts with distinct keys; values of every shape, sequences and shared nested mappings among them
    shared_value = {"ref": {"kind": "Pod", "name": "x"}}
    pools = [[{next(keys): value(rng, 1) for _ in range(rng.randint(1, 3))} for _ in range(4)] for _ in range(4)]
    for pool in pools:
        pool.append({next(keys): shared_value})
    joined: list[Any] = []
    merged: list[Any] = []
    for _ in range(300):
        # in any order: a part is first in some items (after "- "), further in in others
        parts = tuple(rng.choice(pool) for pool in rng.sample(pools, len(pools)))
        joined.append(Joined(parts))
        whole: dict[str, Any] = {}
        for part in parts:
            whole.update(part)
        merged.append(whole)
    return joined, merged


@pytest.mark.parametrize("seed", range(3))
def test_a_joined_mapping_is_written_as_its_parts_merged(seed: int) -> None:
    from kubectl_kyrec.render.items import Items

    joined, merged = _joined_items(random.Random(seed))
    plain: list[str] = []
    assert write_sequence("items", iter(merged), plain.append, chunk=50) == 300
    for shared in (True, False):
        fast: list[str] = []
        items = Items(len(joined), lambda a, b: iter(joined[a:b]), shared=shared)
        assert write_sequence("items", items, fast.append, chunk=50) == 300
        assert "".join(fast) == "".join(plain)
        assert len(fast) > 300 * 4 // 50 // 2     # written a chunk at a time, never held whole
    # nested at depth, under a key and in a sequence, the same text as the merged mappings
    nested = {"a": {"b": joined[:20], "c": joined[0], "d": [joined[:3], joined[1]]}}
    expected = to_yaml({"a": {"b": merged[:20], "c": merged[0], "d": [merged[:3], merged[1]]}})
    for blocks in (None, {}, {}):
        assert to_yaml(nested, blocks) == expected
    blocks = {}
    assert to_yaml(nested, blocks) == to_yaml(nested, blocks) == expected      # a second time from `blocks`
    assert yaml.safe_load("".join(plain)) == {"items": merged}


def test_an_items_part_with_parts_is_written_from_them() -> None:
    from kubectl_kyrec.render.items import Items
    from kubectl_kyrec.render.joined import Joined

    items = Items(2, lambda a, b: [{"json": i} for i in range(a, b)],
                   parts=lambda a, b: [Joined(({"yaml": i}, {"x": i})) for i in range(a, b)])
    out: list[str] = []
    write_sequence("items", items, out.append)
    assert "".join(out) == "items:\n- yaml: 0\n  x: 0\n- yaml: 1\n  x: 1\n"
