"""The one way a test module reads ../shared (corpus, vectors): it cannot pass by vanishing.

A parametrized test over a missing directory gets an empty parameter list, and pytest runs nothing and
stays green. Every module that reads ../shared goes through here instead:

- under `CI=true` a missing corpus or vector set fails the run (at collection, naming what is missing);
- elsewhere the group becomes one visible skip saying what was not run, and tests/conftest.py lists every
  such group at the end of the run, whatever `-r` flags were given;
- a present corpus that yields no cases is a failure everywhere (a moved folder must not look like a pass).

`KYREC_SHARED` points the tests at another copy of the shared directory (tests of this module use it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KYREC_SHARED") or ROOT.parent / "shared")

# groups not run in this session (what, where): printed by conftest.pytest_terminal_summary
NOT_RUN: dict[str, str] = {}


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def shared(relative: str) -> Path:
    """A path under the shared directory (not checked: use `present`, `cases` or `require`)."""
    return SHARED / relative


def _missing(path: Path, what: str) -> str:
    message = f"{what}: not run, {path} is missing"
    NOT_RUN[what] = str(path)
    if in_ci():
        # at collection time this is a collection error: the run fails and says why
        pytest.fail(f"CI=true and {message}", pytrace=False)
    return message


def cases(path: Path, what: str, collect: Callable[[], Sequence[Any]],
          ids: Callable[[Any], str] | None = None) -> list[Any]:
    """Parameters for a group of tests over `path`: the collected cases, or one skip when it is absent.

    Use as `@pytest.mark.parametrize("case", cases(CORPUS, "corpus ValidatingPolicies", _files, ids=...))`.
    """
    if not path.exists():
        return [pytest.param(None, id="shared-missing", marks=pytest.mark.skip(reason=_missing(path, what)))]
    found = list(collect())
    if not found:
        pytest.fail(f"{what}: {path} is present but yields no cases (moved or renamed?)", pytrace=False)
    return [pytest.param(c, id=ids(c)) if ids else c for c in found]


def present(path: Path, what: str) -> pytest.MarkDecorator:
    """A skip mark for tests that need `path` (one group): fails the run under CI when it is absent."""
    if path.exists():
        return pytest.mark.skipif(False, reason="")
    return pytest.mark.skip(reason=_missing(path, what))


def require(path: Path, what: str) -> Path:
    """Inside a test: the path, or a skip (a failure under CI) when it is absent."""
    if not path.exists():
        message = f"{what}: not run, {path} is missing"
        NOT_RUN[what] = str(path)
        if in_ci():
            pytest.fail(f"CI=true and {message}", pytrace=False)
        pytest.skip(message)
    return path
