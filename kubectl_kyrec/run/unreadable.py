"""A run that could not read everything ends with exit 5 (DESIGN section 3), after the results it could
compute: a live read that met unreadable kinds, and an offline run on a capture that recorded such reads (the
capture exited 5 too; the file keeps the record, and a run on it must not look complete). Each run result
carries the lines saying so (errors.RunResult.unreadable) and counts them in its exit code."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubectl_kyrec.errors import ExitCode, worst

if TYPE_CHECKING:
    from kubectl_kyrec.load.state import ClusterState


def unreadable_lines(state: ClusterState, *, recorded: bool = True) -> list[str]:
    """The `error: ...` lines for the reads `state` could not make, each message once. `recorded`: also a
    capture file's record of them (False: only a live read's, as `eval` has always counted them)."""
    if state.source == "files":
        if not recorded:
            return []
        return [f"error: the state records a read that failed when it was captured: {message}"
                for message in dict.fromkeys(state.unreadable.values())]
    return [f"error: {message}" for message in dict.fromkeys(state.unreadable.values())]


def with_unreadable(code: ExitCode, unreadable: list[str]) -> ExitCode:
    """`code`, or 5 by the table's precedence when a read failed."""
    return worst(code, ExitCode.CLUSTER) if unreadable else code
