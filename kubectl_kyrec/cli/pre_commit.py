"""The `kyrec-eval` pre-commit hook (.pre-commit-hooks.yaml): `python -m kubectl_kyrec.cli.pre_commit eval
ARGS... FILES...`. pre-commit appends the changed files to the hook's arguments, and `eval` takes manifests
with `-r`: each argument that is no option and no option's value becomes `-r FILE`, and the rest runs as
`kubectl-kyrec eval` (cli/console.py main: exit codes and messages as always)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def eval_argv(args: Sequence[str]) -> list[str]:
    """`-p policies/ a.yaml b.yaml` -> `eval -p policies/ -r a.yaml -r b.yaml`."""
    import click

    from kubectl_kyrec.cli.main import cli

    command = cli.get_command(click.Context(cli), "eval")
    assert command is not None
    takes_value = {name for param in command.params if isinstance(param, click.Option)
                   and not param.is_flag and not param.count for name in param.opts}
    out = ["eval"]
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            for name in rest:
                out += ["-r", name]
        elif arg.startswith("-") and arg != "-":
            out.append(arg)
            if arg in takes_value:
                out.append(next(rest, ""))
        else:
            out += ["-r", arg]
    return out


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "eval":
        sys.exit("usage: python -m kubectl_kyrec.cli.pre_commit eval [EVAL FLAGS...] FILE...")
    from kubectl_kyrec.cli.console import main as kyrec

    sys.argv = [sys.argv[0], *eval_argv(args[1:])]
    kyrec()


if __name__ == "__main__":
    main()
