"""`random()` and `random(pattern)`, also spelled `random.random` (sdk: random/, goregen).

`random()` is `random("[0-9a-z]{8}")`; strings are drawn by golang/regen.py from the library context's
random source, so a seeded context gives reproducible output.
"""

from __future__ import annotations

import random

from kubectl_kyrec.cel.decl import Library, Overload, fn
from kubectl_kyrec.golang.regen import DEFAULT_PATTERN, generate


def random_library(rng: random.Random) -> Library:
    def with_pattern(pattern: str) -> str:
        return generate(pattern, rng)

    def default() -> str:
        return generate(DEFAULT_PATTERN, rng)

    def overloads(suffix: str) -> list[Overload]:
        return [Overload(f"random_string_{suffix}", ["string"], "string", with_pattern),
                Overload(f"random_string_default_expr_{suffix}", [], "string", default)]

    return Library("kyverno.random", [
        fn("random", *overloads("non_prefixed")),
        fn("random.random", *overloads("prefixed")),
    ])
