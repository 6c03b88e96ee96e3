"""How kyrec ends on SIGINT (Ctrl-C) and SIGTERM (DESIGN sections 3 and 6).

- Every command run from the console: SIGINT raises `Interrupted`, which ends it with one line on stderr
  and exit 130. Not KeyboardInterrupt: click turns that into a blank line, `Aborted!` and exit 1, and
  library code (click.confirm among others) catches it.
- A signal ignored when kyrec started (a background job of a shell without job control, `nohup`) stays
  ignored, and whatever disposition kyrec found is put back when it is done with it: the process that
  started kyrec chose it, and a test suite running kyrec in-process must find its own handler again.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any


class Interrupted(BaseException):
    """A signal ended the command. A BaseException, as KeyboardInterrupt is, so `except Exception` lets it
    through."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal, as a shell reports a process the signal ended (errors.ExitCode: 130, 143)."""
        return 128 + self.signum

    @property
    def line(self) -> str:
        return "terminated (SIGTERM)" if self.signum == signal.SIGTERM else "interrupted"


# the SIGINT the console handler raised, kept in case whatever it was raised in dropped it (below)
_received: list[int] = []


def _raise(signum: int, frame: Any) -> None:
    _received[:] = [signum]
    raise Interrupted(signum)


def raise_on_sigint() -> None:
    """The console command's SIGINT handling, for the rest of the process: `Interrupted` instead of
    KeyboardInterrupt. Only over Python's own default handler: an ignored SIGINT stays ignored.

    A handler's exception is raised in whatever Python code runs next, and some code drops it: a weakref
    or atexit callback (Python prints `Exception ignored in ...` and goes on), a CEL function called by the
    engine (which turns it into an error value). Those are silenced here, and `swallowed()` tells the
    command to end as interrupted all the same."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return
    signal.signal(signal.SIGINT, _raise)
    default_hook = sys.unraisablehook

    def quiet(unraisable: Any) -> None:
        if not isinstance(unraisable.exc_value, Interrupted | KeyboardInterrupt):
            default_hook(unraisable)

    sys.unraisablehook = quiet


def swallowed() -> Interrupted | None:
    """The Interrupted the console handler raised, when the command did not end by it."""
    return Interrupted(_received[0]) if _received else None


def note_sigint() -> list[int]:
    """For the last moments of the process (its output written, atexit handlers to run, a line to print):
    SIGINT only noted, in the list returned, so that nothing is stopped halfway. Not over an ignored
    SIGINT, nor outside the main thread (which cannot set handlers)."""
    noted: list[int] = []
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
    return noted
