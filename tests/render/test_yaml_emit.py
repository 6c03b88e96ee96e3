"""The fast YAML emitter gives back exactly the data it was given, through a YAML 1.1 reader."""

from __future__ import annotations

import random

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
    from kubectl_kyrec.render.sliced import Sliced

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
    shared_items = Sliced(len(items), lambda a, b: iter(items[a:b]), shared=True)
    assert write_sequence("items", shared_items, fast.append, chunk=50) == 800
    assert "".join(fast) == "".join(plain)
    assert yaml.safe_load("".join(fast)) == {"items": items}
