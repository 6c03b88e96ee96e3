"""Error types carrying a Source, and the exit-code table (DESIGN section 3).

Exit codes, first match wins when several apply:

=====  ==========================================================================
code   meaning
=====  ==========================================================================
2      usage error (bad flags; `apply` without `--yes` and without a terminal)
3      input error (unreadable file, bad YAML, a policy that does not compile, ...)
5      cluster error (unreachable, forbidden, retries exhausted)
4      apply partly failed
1      findings (failing results, drift, coverage gaps, failing test rows)
0      clean
=====  ==========================================================================
"""

from __future__ import annotations

import enum

from kubectl_kyrec.model import Source


class ExitCode(enum.IntEnum):
    CLEAN = 0
    FINDINGS = 1
    USAGE = 2
    INPUT = 3
    APPLY_FAILED = 4
    CLUSTER = 5


# Precedence when several outcomes apply to one run (DESIGN section 3).
PRECEDENCE = (ExitCode.USAGE, ExitCode.INPUT, ExitCode.CLUSTER, ExitCode.APPLY_FAILED,
              ExitCode.FINDINGS, ExitCode.CLEAN)


def worst(*codes: ExitCode) -> ExitCode:
    """The code that wins among several, by the table's order."""
    for code in PRECEDENCE:
        if code in codes:
            return code
    return ExitCode.CLEAN


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
