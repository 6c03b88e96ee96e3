"""Leaving the process without taking apart what the run built.

A run ends holding everything it made: documents, subjects, results, reports, millions of small objects
at 10,000 Pods. Python's normal exit frees them one at a time, 0.2-0.3 s that nobody waits for on
purpose. The console command (`main`) instead flushes its streams, runs the atexit handlers and leaves
with os._exit; the operating system takes the memory back at once. Callers in the same process (the
tests, through click's CliRunner) never turn it on: for them a command ends as any function does.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import sys
from collections.abc import Iterator
from typing import NoReturn

from kubectl_kyrec.errors import ExitCode
from kubectl_kyrec.interrupts import note_sigint

_state = {"enabled": False}
# what must not be freed before the process leaves (a command's traceback holds every frame of its run)
_kept: list[object] = []


def enable() -> None:
    _state["enabled"] = True


def enabled() -> bool:
    return _state["enabled"]


@contextlib.contextmanager
def collector_off() -> Iterator[None]:
    """The cyclic collector off from here until the process leaves (never turned back on)."""
    gc.disable()
    yield


def keep(value: object) -> None:
    """Keep `value` alive until the process leaves, when leaving quickly (else let it go now)."""
    if _state["enabled"]:
        _kept.append(value)


def leave(code: object) -> NoReturn:
    """End the process as `sys.exit(code)` would, without freeing the run's objects first."""
    gc.disable()        # nothing is freed from here on: a collection would only walk it all
    # a Ctrl-C from here on must not stop an atexit handler halfway (a traceback, a temporary credentials
    # file of the kubernetes client left behind): it is noted, and the exit is 130 all the same
    late = note_sigint()
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:               # sys.exit("text"): printed, and exit 1
        sys.stderr.write(f"{code}\n")
        status = 1
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):     # the reader left (or stdout was closed): as handle_errors says
        status = int(ExitCode.BROKEN_PIPE)
    atexit._run_exitfuncs()
    if late and status != int(ExitCode.INTERRUPTED):
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write("interrupted\n")
        status = int(ExitCode.INTERRUPTED)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)
