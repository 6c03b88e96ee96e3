"""A run that could not read everything ends with exit 5 (DESIGN section 3), after the results it could
compute: a live read that met unreadable kinds (said on stderr, one line each), and an offline run on a
capture that recorded such reads (the capture exited 5 too; the file keeps the record, and a run on it must
not look complete)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from kubectl_kyrec.errors import ExitCode, worst


def live_exit_code(code: ExitCode, source: Any, recorded: Mapping[Any, str] | None = None) -> ExitCode:
    """`code`, or 5 when `source` is a live source that met unreadable kinds, or (offline) `recorded`, the
    state's record of the reads that failed when it was captured, holds any; each message printed once."""
    unreadable = getattr(source, "unreadable", None)
    if unreadable:
        for message in dict.fromkeys(unreadable.values()):
            sys.stderr.write(f"error: {message}\n")
        return worst(code, ExitCode.CLUSTER)
    if recorded:
        for message in dict.fromkeys(recorded.values()):
            sys.stderr.write(f"error: the state records a read that failed when it was captured: {message}\n")
        return worst(code, ExitCode.CLUSTER)
    return code
