"""A live read that could not read everything ends the run with exit 5 (DESIGN section 3), after the
results it could compute; the unreadable reads were said on stderr, one line each."""

from __future__ import annotations

import sys
from typing import Any

from kubectl_kyrec.errors import ExitCode, worst


def live_exit_code(code: ExitCode, source: Any) -> ExitCode:
    """`code`, or 5 when `source` is a live source that met unreadable kinds (each printed once here)."""
    unreadable = getattr(source, "unreadable", None)
    if not unreadable:
        return code
    for message in dict.fromkeys(unreadable.values()):
        sys.stderr.write(f"error: {message}\n")
    return worst(code, ExitCode.CLUSTER)
