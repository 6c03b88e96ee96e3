"""Error types carrying a Source, and the exit-code table (docs/architecture.md#exit-codes).

Exit codes, first match wins when several apply:

=====  ==========================================================================
code   meaning
=====  ==========================================================================
70     internal error: a bug in kyrec, not in the input (sysexits EX_SOFTWARE)
74     output error: a `-o FORMAT=FILE` target or stdout could not be written
       (no space, no permission, missing directory; sysexits EX_IOERR)
141    stdout closed early (a pipe reader such as `head` exited): 128 + SIGPIPE,
       what a shell reports for a CLI killed by SIGPIPE; nothing is printed
130    interrupted by SIGINT (Ctrl-C): one line; `apply` prints its summary first
143    ended by SIGTERM (`apply` only; other commands die of it, which a shell
       reports as 143 too): `apply` prints its summary first
2      usage error (bad flags, `--context` naming no context in the kubeconfig;
       `apply` without `--yes` and without a terminal)
3      input error (unreadable file, bad YAML, a policy that does not compile, a
       `--kind` or `--policy-name` naming nothing among the inputs, ...)
5      cluster error (unreachable, forbidden, retries exhausted)
4      apply partly failed
1      findings (failing results, drift, coverage gaps, failing test rows)
0      clean
=====  ==========================================================================

Codes 70, 74, 141, 130 and 143 end the run at once, so they are never weighed against the others. None of them
is 1 or 3: a bug or a full disk must neither look like findings nor blame the user's input.
"""

from __future__ import annotations

import enum
import http
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kubectl_kyrec.model import EvalError, Source


class ExitCode(enum.IntEnum):
    CLEAN = 0
    FINDINGS = 1
    USAGE = 2
    INPUT = 3
    APPLY_FAILED = 4
    CLUSTER = 5
    INTERNAL = 70
    OUTPUT = 74
    BROKEN_PIPE = 141
    INTERRUPTED = 130       # 128 + SIGINT
    TERMINATED = 143        # 128 + SIGTERM


# Where an internal error asks to be reported (one place, so every message says the same).
REPORT_BUGS = ("please report it on the kubectl-kyrec issue tracker with the command line and the traceback "
               "that KYREC_DEBUG=1 prints")

# Precedence when several outcomes apply to one run (docs/architecture.md#exit-codes).
PRECEDENCE = (ExitCode.USAGE, ExitCode.INPUT, ExitCode.CLUSTER, ExitCode.APPLY_FAILED,
              ExitCode.FINDINGS, ExitCode.CLEAN)


def worst(*codes: ExitCode) -> ExitCode:
    """The code that wins among several, by the table's order."""
    for code in PRECEDENCE:
        if code in codes:
            return code
    return ExitCode.CLEAN


@dataclass(frozen=True)
class FailedRead:
    """One read a run needed that failed: the one record of it, carried from the read (cluster/lister.py, or
    a capture file's record, load/run_inputs/state.py) through the run result to every output (docs/output.md: the
    `errors` of each document, SARIF's notifications, JUnit's and GitHub's errors, the table's first line).

    `verb` is the RBAC verb (`list`), `resource` the plural with its group (`deployments.apps`), `namespace`
    "" for all namespaces or a cluster-scoped kind; `status` the HTTP code of the final answer (None: none
    came, a timeout or a reset on every try), `reason` the Status reason (`Forbidden`, `NotFound`,
    `InternalError`) or `Timeout`; `recorded`: the read failed when a capture was made, not in this run."""

    verb: str
    api_version: str
    kind: str
    resource: str
    namespace: str = ""
    status: int | None = None
    reason: str = ""
    message: str = ""
    recorded: bool = False

    def what(self) -> str:
        """`list configmaps in kyverno`, `list namespaces`: the read, as kubectl's RBAC words it."""
        return f"{self.verb} {self.resource or self.kind}" + (f" in {self.namespace}" if self.namespace else "")

    def status_text(self) -> str:
        """`403 Forbidden`, `500 Internal Server Error`, `timeout`: how the read ended, in a few words."""
        if self.status is None:
            # no HTTP answer came (cluster/lister.py), or a capture recorded the failure without its status
            return {"Timeout": "timeout", "ConnectionReset": "connection reset"}.get(self.reason, "status unknown")
        try:
            return f"{self.status} {http.HTTPStatus(self.status).phrase}"
        except ValueError:
            return f"{self.status} {self.reason}".rstrip()

    def short(self) -> str:
        return f"{self.what()}: {self.status_text()}"

    def line(self) -> str:
        """The `error: ...` line on stderr, where the exit code is read."""
        if self.recorded:
            return f"error: the state records a read that failed when it was captured: {self.message}"
        return f"error: {self.message}"

    def to_json(self) -> dict[str, Any]:
        """The documents' *error* entry (docs/output.md): `message` and `location` as every error, then the
        read and how it ended."""
        return {"message": self.line().removeprefix("error: "), "location": None,
                "read": {"verb": self.verb, "apiVersion": self.api_version, "kind": self.kind,
                         "resource": self.resource, "namespace": self.namespace, "recorded": self.recorded},
                "status": {"code": self.status, "reason": self.reason}}


def incomplete_line(reads: Sequence[FailedRead], shown: int = 3) -> str:
    """The first line of a table when reads failed: the picture is incomplete, and what was not read."""
    said = [r.short() for r in reads]
    return (f"INCOMPLETE: {len(reads)} read{'s' if len(reads) != 1 else ''} failed ({'; '.join(said[:shown])}"
            + (f"; and {len(said) - shown} more" if len(said) > shown else "")
            + "); the results below cover only what was read")


class RunResult(Protocol):
    """What every command's run (run/) hands the output seam, whatever else it carries.

    `errors`: inputs that could not be used, each at its file:line (the run went on without them);
    `notices`: what the user should know, once each; `failed_reads`: the reads that failed (a live LIST, or
    one a capture records), already counted in `exit_code`, the run's code by the table above, and shown by
    every output; `document()`: the kyrec/v1 document's kind and its (key, value) parts after the envelope,
    in contract order (a value may be an iterator, written item by item: render/envelope.py)."""

    @property
    def errors(self) -> Sequence[EvalError]: ...

    @property
    def notices(self) -> Sequence[str]: ...

    @property
    def failed_reads(self) -> Sequence[FailedRead]: ...

    @property
    def exit_code(self) -> ExitCode: ...

    def document(self) -> tuple[str, Iterable[tuple[str, Any]]]: ...


class KyrecError(Exception):
    """Base for errors shown to the user as one line: `file:line: message`."""

    exit_code = ExitCode.INPUT

    def __init__(self, message: str, source: Source | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.field = field      # e.g. spec.validations[2].expression, when the error is about one field

    def __str__(self) -> str:
        if self.source is None:
            return self.message
        return f"{self.source}: {self.message}"


class InputError(KyrecError):
    """Unreadable file, bad YAML, wrong shape, unknown version, uncompilable CEL."""


class UsageError(KyrecError):
    exit_code = ExitCode.USAGE


class ClusterError(KyrecError):
    exit_code = ExitCode.CLUSTER


class OutputError(KyrecError):
    """An output could not be written: `path: cannot write: reason`."""

    exit_code = ExitCode.OUTPUT


class EngineError(Exception):
    """An error Kyverno's engine itself reports for a policy on a resource (a CEL evaluation error, a JMESPath
    error, context data that is missing, an API call that cannot be answered, a pattern or anchor error, a JSON
    patch that does not apply, a Go parse error on a value read from the resource): the engines turn it into
    an `error` result. Anything else raised inside an engine is a bug in kyrec and ends the run with exit 70
    (cli/common.py). Each engine's own error types subclass it; tests/shape/test_broad_handlers.py keeps the
    few handlers that catch everything to the boundaries that report."""


def few(names: Sequence[str], shown: int) -> str:
    """`a, b, c` or `a, b and 3 more`."""
    if len(names) <= shown:
        return ", ".join(names)
    return f"{', '.join(names[:shown])} and {len(names) - shown} more"


# why a lookup of a state read from a cluster has no answer: the kind's LIST there failed or was refused, or
# the kind was never listed there (reconcile's findings use the same words)
READ_FAILED = "read-failed"
KIND_NOT_CAPTURED = "kind-not-captured"


class LookupUnanswered(EngineError):
    """A lookup (a classic context entry, `resource.Get/List`) of a state read from a cluster (live, or a
    capture) that the read cannot answer, with its `reason` (READ_FAILED, KIND_NOT_CAPTURED). Kyverno reads
    what it looks up, so what rests on it is `undetermined` with that reason, not Kyverno's error
    (docs/architecture.md, partial reads). Python code that meets the lookup reads `reason`; past a CEL
    boundary only the text is left, which ends in `unread_mark(reason)` (lookup_unread reads it)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(f"{message} {unread_mark(reason)}")
        self.reason = reason


def unread_mark(reason: str) -> str:
    """The words a LookupUnanswered's text ends in: what survives a CEL boundary of its reason."""
    return f"(the lookup cannot be answered: {reason})"


def lookup_unread(error: str | None) -> str | None:
    """The reason a LookupUnanswered's text carries in an evaluation error (where a CEL boundary left only the
    text), else None."""
    if error is None:
        return None
    return next((reason for reason, mark in _UNREAD_MARKS if mark in error), None)


# each reason's unread_mark, made once: lookup_unread reads every CEL error of an evaluation (a policy that errs
# on every subject asks it once per pair)
_UNREAD_MARKS = tuple((reason, unread_mark(reason)) for reason in (READ_FAILED, KIND_NOT_CAPTURED))
