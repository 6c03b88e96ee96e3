"""Terminal manners: when colour is used (https://no-color.org and kubectl's habits)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping


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
