"""Terminal manners: when colour is used (https://no-color.org and kubectl's habits)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping


def color_enabled(choice: str = "auto", *, is_tty: bool | None = None,
                  environ: Mapping[str, str] | None = None) -> bool:
    """`--color always|never|auto` (`--no-color` is never). auto: only on a terminal, and never when
    `NO_COLOR` is set to anything non-empty or `TERM=dumb`. An explicit `always` wins over `NO_COLOR`, as
    no-color.org asks (a command-line choice overrides the environment)."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    return sys.stdout.isatty() if is_tty is None else is_tty


FALLBACK_WIDTH = 80    # a terminal that does not say its size


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def _terminal_columns() -> int:
    return shutil.get_terminal_size((FALLBACK_WIDTH, 24)).columns


def _columns(environ: Mapping[str, str] | None) -> int | None:
    columns = (os.environ if environ is None else environ).get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def table_width(*, is_tty: bool | None = None, environ: Mapping[str, str] | None = None,
                size: Callable[[], int] | None = None) -> int | None:
    """The width tables are fitted to (render/fit.py), as kubectl decides it: `COLUMNS` when it is a
    positive number, wherever the output goes (it is how a user or a CI job asks for a width); else on a
    terminal the terminal's own width (what shutil.get_terminal_size reads); else, on a pipe or in a
    file, None: no limit, so that what a log or a script reads holds every row on one line."""
    columns = _columns(environ)
    if columns is not None:
        return columns
    if not (stdout_is_terminal() if is_tty is None else is_tty):
        return None
    return (size or _terminal_columns)() or FALLBACK_WIDTH


def output_width(path: str | None, environ: Mapping[str, str] | None = None) -> int | None:
    """`table_width` for an output: a `-o table=FILE` target is a file, whatever stdout is (COLUMNS still
    rules it)."""
    return table_width(environ=environ) if path is None else _columns(environ)
