"""Shell completion: `kyrec completion bash|zsh|fish`, and kubectl's plugin completion protocol.

kubectl (>= 1.26) runs `kubectl_complete-kyrec __complete <words...> <partial>` and expects Cobra's
format: one candidate per line, then `:<directive>` (4 = no file completion, 0 = default).
"""

from __future__ import annotations

import click

SHELLS = {
    "bash": "bash_source",
    "zsh": "zsh_source",
    "fish": "fish_source",
}

_DIRECTIVE_NO_FILES = 4
_DIRECTIVE_DEFAULT = 0
_PATH_FLAGS = {"-p", "--policy", "-r", "--resource", "-e", "--exception", "--state", "--crd", "--values",
               "--context-file", "--kyverno-config", "--exclusions", "--base-policy", "--kubeconfig"}


def complete_words(words: list[str]) -> list[str]:
    """Candidates for the last word given the ones before it (kubectl's __complete protocol)."""
    from kubectl_kyrec.cli.main import COMMANDS, cli

    partial = words[-1] if words else ""
    before = words[:-1]
    if before and before[-1] in _PATH_FLAGS:
        return [f":{_DIRECTIVE_DEFAULT}"]
    command_name = next((w for w in before if not w.startswith("-")), None)
    if command_name is None:
        names = [f"{n}\t{COMMANDS[n][2]}" for n in COMMANDS if n.startswith(partial)]
        return [*names, f":{_DIRECTIVE_NO_FILES}"]
    ctx = click.Context(cli)
    command = cli.get_command(ctx, command_name)
    if command is None:
        return [f":{_DIRECTIVE_NO_FILES}"]
    out = []
    for param in command.params:
        if isinstance(param, click.Option):
            for opt in param.opts:
                if opt.startswith(partial) and opt.startswith("--"):
                    out.append(f"{opt}\t{(param.help or '').splitlines()[0] if param.help else ''}".rstrip())
    return [*out, f":{_DIRECTIVE_NO_FILES if partial.startswith('-') else _DIRECTIVE_DEFAULT}"]


@click.command("completion")
@click.argument("shell", type=click.Choice(sorted(SHELLS)))
def completion_command(shell: str) -> None:
    """Print the completion script for SHELL (source it, or save it under completions/)."""
    from click.shell_completion import get_completion_class

    from kubectl_kyrec.cli.main import cli

    cls = get_completion_class(shell)
    assert cls is not None
    comp = cls(cli, {}, "kubectl-kyrec", "_KUBECTL_KYREC_COMPLETE")
    click.echo(comp.source())
