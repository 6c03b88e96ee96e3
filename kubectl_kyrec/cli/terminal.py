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


TABLE_WIDTH = 80      # a pipe or a file: what a reader of a log or a CI page gets without wrapping


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def _terminal_columns() -> int:
    return shutil.get_terminal_size((TABLE_WIDTH, 24)).columns


def table_width(*, is_tty: bool | None = None, environ: Mapping[str, str] | None = None,
                size: Callable[[], int] = _terminal_columns) -> int:
    """The width tables are fitted to: on a terminal, `COLUMNS` when it is a positive number, else the
    terminal's own width (what shutil.get_terminal_size reads, as kubectl-like tools do); on a pipe or
    in a file 80, so that logs and CI pages read the same whatever terminal ran them."""
    if not (stdout_is_terminal() if is_tty is None else is_tty):
        return TABLE_WIDTH
    env = os.environ if environ is None else environ
    columns = env.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return size() or TABLE_WIDTH


def output_width(path: str | None) -> int:
    """`table_width` for an output: a `-o table=FILE` target always gets 80."""
    return table_width() if path is None else TABLE_WIDTH
