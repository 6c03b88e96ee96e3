"""Kyverno's JMESPath dialect (kyverno/go-jmespath + pkg/engine/jmespath) on the maintained `jmespath` package.

The parser is jmespath.py's; a TreeInterpreter subclass gives go-jmespath's NotFound semantics (a missing map
key on a path raises, turned into null only where the fork does) and Go's number rules, and the function set is
Kyverno's (classic/jmespath_functions.py).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any


class JMESPathError(Exception):
    """A JMESPath failure; str() is the text Kyverno's Go error carries (e.g. `Unknown key "x" in path`)."""


class JMESPathCompileError(JMESPathError):
    """The expression does not parse (Kyverno: `incorrect query <q>: <err>` at the context layer)."""


class NotFoundError(JMESPathError):
    """go-jmespath NotFoundError: a missing key on a path (`Unknown key "name1" in path`)."""


class Engine:
    """A configured Kyverno JMESPath: the clock for time_now*/time_since, the random source for `random`.

    `now` returns the current time (UTC-aware); tests inject a fixed clock. `external_url` decides
    is_external_url offline (default: Kyverno's syntactic check without DNS).
    """

    def __init__(self, *, now: Callable[[], datetime.datetime] | None = None, seed: int | None = None) -> None:
        raise NotImplementedError

    def compile(self, expression: str) -> Any:
        """Parse once; the result has `.search(data) -> Any`. Raises JMESPathCompileError."""
        raise NotImplementedError

    def search(self, expression: str, data: Any) -> Any:
        """Evaluate `expression` over `data` (plain JSON values). Raises JMESPathError subclasses."""
        raise NotImplementedError


def default_engine() -> Engine:
    """The process-wide engine with the real clock."""
    raise NotImplementedError


def search(expression: str, data: Any) -> Any:
    """`default_engine().search(expression, data)`: Kyverno's jmespath.Search."""
    return default_engine().search(expression, data)
