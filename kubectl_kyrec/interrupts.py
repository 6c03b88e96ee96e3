"""How kyrec ends on SIGINT (Ctrl-C) and SIGTERM (docs/architecture.md#exit-codes, #writing-corrections).

- Every command run from the console: SIGINT raises `Interrupted`, which ends it with one line on stderr
  and exit 130. Not KeyboardInterrupt: click turns that into a blank line, `Aborted!` and exit 1, and
  library code (click.confirm among others) catches it.
- `apply` (`Interrupt`): SIGINT and SIGTERM alike. While it reads and plans, a signal raises `Interrupted`;
  from its first write on, signals are only recorded: the writer sends no new request, and the summary is
  always printed before the exit (130 for SIGINT, 143 for SIGTERM).
- A signal ignored when kyrec started (a background job of a shell without job control, `nohup`) stays
  ignored, and whatever disposition kyrec found is put back when it is done with it: the process that
  started kyrec chose it, and a test suite running kyrec in-process must find its own handler again.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

# the signals apply answers; every other command only SIGINT (SIGTERM's default already exits 143, quietly)
SIGNALS = (signal.SIGINT, signal.SIGTERM)

# How long a first signal lets the request in flight finish: its answer tells whether the object was
# written. A write answers in milliseconds unless an admission webhook is slow (they time out after 10 s by
# default); a second signal stops waiting at once.
GRACE_SECONDS = 3.0


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
    or atexit callback (Python prints `Exception ignored in ...` and goes on). Those are silenced here, and
    `swallowed()` tells the command to end as interrupted all the same. (A CEL function called by the engine,
    which makes any exception an error value, has it raised again by cel/engine.py once the call returns.)"""
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


class Interrupt:
    """apply's signal handling. Recording by default (`signum`, and `hard` for a second signal); `arm()`
    makes the next signal raise `Interrupted` instead, until `defer()`. A first signal always defers what
    follows, so that a second one cannot cut the summary short."""

    def __init__(self, *, grace: float = GRACE_SECONDS, notify: Callable[[str], None] | None = None) -> None:
        self.signum: int | None = None
        self.hard = False
        self.grace = grace
        self.notify = notify        # told once when a signal finds a request in flight (the writer's wait)
        self._raising = False
        self._installed = False

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def _handler(self, signum: int, frame: Any) -> None:
        if self.signum is not None:
            self.hard = True
            return
        self.signum = signum
        if self._raising:
            self._raising = False
            raise Interrupted(signum)

    def arm(self) -> None:
        """From here, a signal raises Interrupted (reading and planning: nothing to finish)."""
        self._raising = True
        if self.signum is not None:     # it came before: raise it now
            self._raising = False
            raise Interrupted(self.signum)

    def defer(self) -> None:
        """From here, a signal is only recorded (writing, and printing what was written)."""
        self._raising = False

    @contextlib.contextmanager
    def installed(self) -> Iterator[Interrupt]:
        """Its handler for SIGINT and SIGTERM, in the main thread (the only one that can have handlers),
        except for a signal the process ignores; the previous handlers put back afterwards. Nested uses
        keep the outer installation."""
        if self._installed or threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous: dict[int, Any] = {}
        for signum in SIGNALS:
            current = signal.getsignal(signum)
            if current is signal.SIG_IGN:
                continue
            # None: a handler installed outside Python, which cannot be put back; the default is closest
            previous[signum] = signal.SIG_DFL if current is None else current
            signal.signal(signum, self._handler)
        self._installed = True
        try:
            yield self
        finally:
            self._installed = False
            for number, handler in previous.items():
                signal.signal(number, handler)
