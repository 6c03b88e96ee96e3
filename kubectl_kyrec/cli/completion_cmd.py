"""Shell completion: `kyrec completion bash|zsh|fish`, and kubectl's plugin completion protocol.

kubectl (>= 1.26) runs `kubectl_complete-kyrec __complete <words...> <partial>` and expects Cobra's
format: one candidate per line (`value<TAB>help`), then `:<directive>`. The shell scripts printed by
`completion` are click's; they reach the same `complete_words` through `ClickAdapter`, so the plugin
and the standalone executable complete alike.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import click
from click.shell_completion import (
    BashComplete,
    CompletionItem,
    FishComplete,
    ShellComplete,
    ZshComplete,
    add_completion_class,
)

SHELLS = {
    "bash": "bash_source",
    "zsh": "zsh_source",
    "fish": "fish_source",
}

# Cobra's ShellCompDirective values
DIRECTIVE_DEFAULT = 0          # the shell completes file names
DIRECTIVE_NO_FILES = 4
DIRECTIVE_NO_SPACE = 2

PATH_FLAGS = frozenset({
    "-p", "--policy", "-r", "--resource", "-k", "--kustomize", "-e", "--exception", "--state", "--crd", "--values",
    "--context-file", "--kyverno-config", "--exclusions", "--base-policy", "--kubeconfig", "--baseline",
    "--write-baseline", "--sarif-root", "--capture", "-f", "--filename",
})

# Commands that other branches add: completion offers them as soon as the name is typed, and their flags
# once their module is installed (the table in main.py lists only commands present).
LATER_COMMANDS = {
    "apply": "Carry out the plan with server-side apply and preconditioned deletes.",
    "capture": "Write the state a later offline run needs, as one JSON List.",
}

@dataclass(frozen=True)
class Candidates:
    values: list[tuple[str, str]]      # (value, help)
    directive: int

    def lines(self) -> list[str]:
        return [f"{v}\t{h}" if h else v for v, h in self.values] + [f":{self.directive}"]


def command_table() -> dict[str, str]:
    """Every subcommand name -> one-line help, including those not installed yet."""
    from kubectl_kyrec.cli.main import COMMANDS

    table = {name: entry[2] for name, entry in COMMANDS.items()}
    for name, text in LATER_COMMANDS.items():
        table.setdefault(name, text)
    return table


def _command(name: str) -> click.Command | None:
    from kubectl_kyrec.cli.main import cli

    try:
        return cli.get_command(click.Context(cli), name)
    except Exception:   # a command module that fails to import must not break completion of the others
        return None


def output_formats(command: click.Command) -> list[str] | None:
    """The `-o` values a command accepts: the tuple of OutputFormat its module declares; None when it
    declares none (`capture -o` names a file)."""
    from kubectl_kyrec.cli.common import OutputFormat

    module = inspect.getmodule(command.callback) if command.callback else None
    tuples = [value for value in vars(module).values()
              if isinstance(value, tuple) and value and all(isinstance(v, OutputFormat) for v in value)] \
        if module else []
    if len(tuples) != 1:
        return None
    return [f.value for f in tuples[0]]


def kube_contexts(words: Sequence[str]) -> list[tuple[str, str]]:
    """Context names (with their cluster) from the kubeconfig files; quietly none when unreadable."""
    # imported here, as below: every key press runs completion, and most never read a kubeconfig
    from kubectl_kyrec.cluster.connection import context_names

    return context_names(_flag_value(words, "--kubeconfig"))


def _flag_value(words: Sequence[str], *names: str) -> str | None:
    for i, word in enumerate(words):
        if word in names and i + 1 < len(words):
            return words[i + 1]
        for name in names:
            if name.startswith("--") and word.startswith(name + "="):
                return word.split("=", 1)[1]
    return None


def cluster_namespaces(words: Sequence[str], *,
                       prepare: Callable[[str | None, str | None], Callable[[], list[str]]] | None = None,
                       timeout: float | None = None, setup_timeout: float | None = None) -> list[str]:
    """The namespaces of the cluster the words name (--kubeconfig, --context), if it answers in time
    (cluster/namespaces.py's budgets unless given)."""
    from kubectl_kyrec.cluster import namespaces

    return namespaces.namespaces_in_time(
        _flag_value(words, "--kubeconfig"), _flag_value(words, "--context"),
        prepare=prepare or namespaces.live_namespace_lister,
        timeout=namespaces.NAMESPACE_TIMEOUT_S if timeout is None else timeout,
        setup_timeout=namespaces.SETUP_TIMEOUT_S if setup_timeout is None else setup_timeout)


def _option_for(command: click.Command, flag: str) -> click.Option | None:
    for param in command.params:
        if isinstance(param, click.Option) and flag in (*param.opts, *param.secondary_opts):
            return param
    return None


def _flag_help(param: click.Option) -> str:
    return (param.help or "").splitlines()[0] if param.help else ""


def _value_candidates(command: click.Command, param: click.Option, words: Sequence[str], partial: str,
                      namespaces: Callable[[Sequence[str]], list[str]]) -> Candidates:
    names = set(param.opts)
    if names & PATH_FLAGS:
        return Candidates([], DIRECTIVE_DEFAULT)
    if "--context" in names:
        return _match(kube_contexts(words), partial)
    if "--namespace" in names:
        return _match([(n, "") for n in namespaces(words)], partial)
    if isinstance(param.type, click.Choice):
        return _match([(str(c), "") for c in param.type.choices], partial)
    if "--output" in names:
        formats = output_formats(command)
        return Candidates([], DIRECTIVE_DEFAULT) if formats is None else _match([(f, "") for f in formats], partial)
    if isinstance(param.type, click.types.BoolParamType):
        return _match([("true", ""), ("false", "")], partial)
    return Candidates([], DIRECTIVE_NO_FILES)


def _match(values: list[tuple[str, str]], partial: str) -> Candidates:
    return Candidates([(v, h) for v, h in values if v.startswith(partial)], DIRECTIVE_NO_FILES)


def _flags(command: click.Command, before: Sequence[str], partial: str) -> Candidates:
    out = []
    for param in command.params:
        if not isinstance(param, click.Option) or param.hidden:
            continue
        # a flag already given once is not offered again unless it repeats
        if not param.multiple and any(w in param.opts or w.split("=", 1)[0] in param.opts for w in before):
            continue
        for opt in param.opts:
            if opt.startswith("--") and opt.startswith(partial):
                out.append((opt, _flag_help(param)))
    for opt in ("--help",):
        if opt.startswith(partial):
            out.append((opt, "Show the help and an example."))
    return Candidates(out, DIRECTIVE_NO_FILES)


def _argument(command: click.Command, partial: str) -> Candidates | None:
    """The first positional argument: its choices, or file names; None when the command takes none."""
    for param in command.params:
        if isinstance(param, click.Argument):
            if isinstance(param.type, click.Choice):
                return _match([(str(c), "") for c in param.type.choices], partial)
            return Candidates([], DIRECTIVE_DEFAULT)
    return None


def complete_words(words: list[str], *,
                   namespaces: Callable[[Sequence[str]], list[str]] | None = None) -> list[str]:
    """Candidates for the last word given the ones before it, as Cobra prints them."""
    return complete(words, namespaces=namespaces).lines()


def complete(words: list[str], *, namespaces: Callable[[Sequence[str]], list[str]] | None = None) -> Candidates:
    namespaces = namespaces or cluster_namespaces
    partial = words[-1] if words else ""
    before = list(words[:-1])
    table = command_table()
    name = next((w for w in before if not w.startswith("-")), None)
    if name is None:
        return _match(list(table.items()), partial)
    command = _command(name) if name in table else None
    if command is None:
        return Candidates([], DIRECTIVE_NO_FILES)
    rest = before[before.index(name) + 1:]
    # `--flag=partial`: complete the value after the equals sign
    if partial.startswith("--") and "=" in partial:
        flag, _, value = partial.partition("=")
        param = _option_for(command, flag)
        if param is None or param.is_flag:
            return Candidates([], DIRECTIVE_NO_FILES)
        found = _value_candidates(command, param, rest, value, namespaces)
        return Candidates([(f"{flag}={v}", h) for v, h in found.values], found.directive)
    if rest:
        param = _option_for(command, rest[-1])
        if param is not None and not param.is_flag and not param.count:
            return _value_candidates(command, param, rest, partial, namespaces)
    if partial.startswith("-"):
        return _flags(command, rest, partial)
    argument = _argument(command, partial)
    if argument is not None:
        return argument
    return _flags(command, rest, partial)


def _items(words: list[str], incomplete: str) -> list[CompletionItem]:
    found = complete([*words, incomplete])
    if found.directive == DIRECTIVE_DEFAULT and not found.values:
        return [CompletionItem(incomplete, type="file")]
    return [CompletionItem(v, help=h or None) for v, h in found.values]


class _Adapter(ShellComplete):
    """click's shell scripts, answered by `complete` (so both entry points offer the same words)."""

    def get_completions(self, args: list[str], incomplete: str) -> list[CompletionItem]:
        return _items(args, incomplete)


class BashAdapter(_Adapter, BashComplete):
    pass


class ZshAdapter(_Adapter, ZshComplete):
    pass


class FishAdapter(_Adapter, FishComplete):
    pass


def register_adapters() -> None:
    for cls in (BashAdapter, ZshAdapter, FishAdapter):
        add_completion_class(cls, cls.name)  # type: ignore[arg-type]


def completion_script(shell: str) -> str:
    """The script `completion SHELL` prints; the copies under completions/ must equal it."""
    from click.shell_completion import get_completion_class

    from kubectl_kyrec.cli.main import cli

    cls = get_completion_class(shell)
    assert cls is not None
    return str(cls(cli, {}, "kubectl-kyrec", "_KUBECTL_KYREC_COMPLETE").source())


@click.command("completion")
@click.argument("shell", type=click.Choice(sorted(SHELLS)))
def completion_command(shell: str) -> None:
    """Print the completion script for SHELL.

    \b
    Example:
      source <(kubectl kyrec completion bash)
      kubectl kyrec completion zsh > "${fpath[1]}/_kubectl-kyrec"

    kubectl >= 1.26 also completes `kubectl kyrec ...` through the `kubectl_complete-kyrec` executable,
    installed beside `kubectl-kyrec`.
    """
    click.echo(completion_script(shell))
