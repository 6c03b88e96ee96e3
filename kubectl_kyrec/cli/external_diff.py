"""`KUBECTL_EXTERNAL_DIFF`: the unified diffs of `kyrec diff` shown by the user's own diff program, run as
kubectl diff runs it (kubernetes/kubectl pkg/cmd/diff/diff.go).

- Two temporary directories, `LIVE-*` and `MERGED-*` (os.MkdirTemp("", "LIVE-"), so under `$TMPDIR`), one
  file per drifted object or stale report in each (mode 0700, as kubectl opens them), named as kubectl
  names them, `<group>.<version>.<Kind>.<namespace>.<name>`, holding the masked YAML the built-in diff
  compares (render/unified_diff.py `document`; a report's file holds its results). Removed afterwards.
- The variable is split on single spaces: the first word is the program, the others are extra arguments,
  kept only when made of letters, digits, `-` and `=` (kubectl drops the rest silently, so nothing shell-like
  reaches the program) and passed after the two directories: `colordiff -N -u` runs
  `colordiff LIVE-x MERGED-y -N -u`. Unset or empty: kyrec's built-in unified diff (kubectl would run
  `diff -u -N`; the built-in text is that, with kyrec's `live/` and `merged/` names and no timestamps).
- Exit status: kubectl diff's convention is 0 no differences, 1 differences, >1 failure. kyrec keeps its own
  exit code for 0 and 1 (its findings decide it: a drift Kyverno will not act on is shown but is no
  finding); a program that exits above 1, dies of a signal or cannot be started is an output error, one line
  with kubectl's wording (`failed to run "colordiff": exit status 2`) and exit 74.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from typing import IO

import click

from kubectl_kyrec.errors import OutputError
from kubectl_kyrec.reconcile.diff_pair import DiffPair
from kubectl_kyrec.render.unified_diff import document

ENV = "KUBECTL_EXTERNAL_DIFF"
# kubectl: regexp.MustCompile(`^[a-zA-Z0-9-=]+$`): letters, digits, '-' and '='
_ARGUMENT = re.compile(r"[a-zA-Z0-9=-]+")

Command = tuple[str, tuple[str, ...]]


def command(environ: Mapping[str, str]) -> Command | None:
    """(program, extra arguments) from the variable, split as kubectl splits it; None when unset or empty."""
    value = environ.get(ENV, "")
    if not value:
        return None
    program, *words = value.split(" ")
    return program, tuple(w for w in words if _ARGUMENT.fullmatch(w))


def _fileno(stream: IO[str]) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):     # io.UnsupportedOperation is an OSError
        return None


def _write(directory: str, pair: DiffPair, side: object) -> None:
    fd = os.open(os.path.join(directory, pair.name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o700)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(document(side, pair.layout))


def _status(returncode: int) -> str:
    # Go's exec.ExitError text
    if returncode < 0:
        import signal

        try:
            return f"signal: {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal: {-returncode}"
    return f"exit status {returncode}"


def run_external(cmd: Command, pairs: Sequence[DiffPair], *, inherit: bool) -> str:
    """Run the program over LIVE-/MERGED- directories of `pairs`. `inherit`: the program writes to kyrec's own
    stdout and stderr (flushed first, so it follows what kyrec printed); else its stdout is returned and its
    stderr passed on."""
    program, extra = cmd
    live = tempfile.mkdtemp(prefix="LIVE-")
    try:
        merged = tempfile.mkdtemp(prefix="MERGED-")
        try:
            for pair in pairs:
                _write(live, pair, pair.before)
                _write(merged, pair, pair.after)
            argv = [program, live, merged, *extra]
            try:
                if inherit:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    returncode, out = subprocess.run(argv, check=False).returncode, ""
                else:
                    done = subprocess.run(argv, check=False, capture_output=True, text=True)
                    returncode, out = done.returncode, done.stdout
                    if done.stderr:
                        click.echo(done.stderr, err=True, nl=False)
            except OSError as exc:
                raise OutputError(f'failed to run "{program}": {exc.strerror or exc}') from None
        finally:
            shutil.rmtree(merged, ignore_errors=True)
    finally:
        shutil.rmtree(live, ignore_errors=True)
    if returncode > 1 or returncode < 0:
        raise OutputError(f'failed to run "{program}": {_status(returncode)}')
    return out


def can_inherit() -> bool:
    """Whether the program can write to kyrec's stdout and stderr directly (not under a test runner's
    captured streams)."""
    return _fileno(sys.stdout) is not None and _fileno(sys.stderr) is not None
