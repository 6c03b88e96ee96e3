"""The console scripts, `kubectl-kyrec` and `kubectl_complete-kyrec`: SIGINT handled before anything else.

Importing click and the command table takes about 0.1 s of a cold start, and a Ctrl-C in it printed an
import traceback; this module imports only kubectl_kyrec.interrupts before the handler is in place. From
then on a Ctrl-C ends any command with one line and exit 130: handle_errors for a command's body, here
for what comes before and after it (click's parsing, a command module's import, the exit).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn

from kubectl_kyrec.interrupts import Interrupted, note_sigint, raise_on_sigint, swallowed


def main() -> None:
    raise_on_sigint()
    try:
        import click

        from kubectl_kyrec.cli.main import cli, prog_name

        if "_KUBECTL_KYREC_COMPLETE" in os.environ:
            # the scripts of `completion bash|zsh|fish` call back here: answer with kyrec's own completion
            from kubectl_kyrec.cli.completion_cmd import register_adapters

            register_adapters()
        import kubectl_kyrec.cli.quick_exit as quick_exit

        quick_exit.enable()
        code: object = 0
        try:
            cli(prog_name=prog_name(), complete_var="_KUBECTL_KYREC_COMPLETE")
        except SystemExit as exc:
            code = exc.code
        dropped = swallowed()
        if dropped is not None and code != dropped.exit_code:
            # the Ctrl-C was raised where something dropped it (interrupts.raise_on_sigint): the run's
            # outcome cannot be trusted, so it ends as interrupted all the same
            click.echo(dropped.line, err=True)
            code = dropped.exit_code
        quick_exit.leave(code)
    except (Interrupted, KeyboardInterrupt) as exc:
        _interrupted(exc)


def complete() -> None:
    """`kubectl_complete-kyrec`: kubectl (>= 1.26) runs it with the words typed after `kubectl kyrec`."""
    raise_on_sigint()
    try:
        import click

        from kubectl_kyrec.cli.completion_cmd import complete_words

        words = sys.argv[1:]
        if words and words[0] in ("__complete", "__completeNoDesc"):
            words = words[1:]
        try:
            for line in complete_words(words):
                click.echo(line)
        except BrokenPipeError:     # the shell stopped reading: nothing to say
            sys.stderr.close()
    except (Interrupted, KeyboardInterrupt) as exc:
        _interrupted(exc)


def _interrupted(exc: BaseException) -> NoReturn:
    note_sigint()       # the line and the exit code, whatever else is pressed meanwhile
    interrupted = exc if isinstance(exc, Interrupted) else Interrupted(2)
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(interrupted.line + "\n")
    import kubectl_kyrec.cli.quick_exit as quick_exit

    # through the atexit handlers all the same (the kubernetes client's temporary credential files)
    quick_exit.leave(interrupted.exit_code)
