"""Flags every command shares, `-o FORMAT[=FILE]` parsing, and turning errors into one line + exit code.

kubectl passes nothing to a plugin, so the kubectl connection flags are parsed here
(docs/architecture.md#the-command-line).
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

import kubectl_kyrec.cli.quick_exit as quick_exit
from kubectl_kyrec.errors import REPORT_BUGS, ExitCode, FailedRead, InputError, KyrecError, RunResult, UsageError
from kubectl_kyrec.interrupts import Interrupted, swallowed
from kubectl_kyrec.load.gc_pause import gc_paused
from kubectl_kyrec.render.dispatch import OutputFormat, OutputSpec

if TYPE_CHECKING:
    from kubectl_kyrec.k8s.labels import Selector
    from kubectl_kyrec.load.run_inputs.selection import Selection
    from kubectl_kyrec.load.run_inputs.sources import FileSource
    from kubectl_kyrec.model import EvalError

F = TypeVar("F", bound=Callable[..., Any])


def parse_outputs(values: Sequence[str], allowed: Sequence[OutputFormat],
                  default: OutputFormat = OutputFormat.TABLE) -> list[OutputSpec]:
    """`-o json -o junit=out.xml` -> specs; at most one of them may go to stdout."""
    specs = []
    for value in values or [default.value]:
        name, _, path = value.partition("=")
        try:
            fmt = OutputFormat(name.strip().lower())
        except ValueError:
            fmt = None
        if fmt is None or fmt not in allowed:
            raise UsageError(f"unknown output format {name!r} (choose from "
                             f"{', '.join(f.value for f in allowed)})")
        specs.append(OutputSpec(fmt, path or None))
    if sum(1 for s in specs if s.path is None) > 1:
        raise UsageError("only one -o format can go to stdout; give the others a file: -o FORMAT=FILE")
    context = click.get_current_context(silent=True)
    if context is not None:     # a command's own inputs may not be overwritten (output_targets)
        from kubectl_kyrec.cli.output_targets import check_output_targets

        targets = [(f"-o {s.format.value}={s.path}", s.path) for s in specs if s.path]
        baseline = context.params.get("write_baseline_path")
        if baseline:
            targets.append((f"--write-baseline {baseline}", baseline))
        check_output_targets(targets, context.params)
    return specs


def write_output(spec: OutputSpec, text: str, *, color: bool = False) -> None:
    from kubectl_kyrec.render.sink import write_text

    write_text(spec.path, text, color=color)


def emit_notices(notices: Sequence[object]) -> None:
    """Each notice once, on stderr, in the order first given. Several stages of one run can notice the
    same thing (an unknown kind is seen by the validating and by the generating pipeline, each reading
    the same resources): what the user reads is said once."""
    for notice in dict.fromkeys(str(n) for n in notices):
        click.echo(f"notice: {notice}", err=True)


def emit_warnings(warnings: Sequence[str]) -> None:
    """What Kyverno accepts in a policy with a warning, each once, on stderr: `warning: file:line: ...` (as
    kubectl prints an API server's warnings); the exit code is not changed."""
    for warning in dict.fromkeys(warnings):
        click.echo(f"warning: {warning}", err=True)


def state_source(files: FileSource, kube: Mapping[str, Any], *, reports: bool, downstreams: bool,
                 all_policies: bool, needs: str = "needs policies: -p PATH") -> tuple[Any, bool]:
    """Where `diff` and `coverage` read the state, and whether the policies are the complete set.

    As kubectl does, no --state means the cluster of the current context (its policies without -p); a state
    that holds policies (a capture) needs no -p either: they are the complete set. `needs`: the usage error
    when neither -p nor the state gives a policy."""
    if not files.state_paths:
        from kubectl_kyrec.cluster.live_source import live_source

        # the RBAC objects too: where the cluster answers no SubjectAccessReview, Kyverno's permissions are decided
        # from them, as an offline run of a capture (which holds them) decides them
        return (live_source(files, kube, reports=reports, downstreams=downstreams, causes=True, rbac_objects=True),
                all_policies or not files.policy_paths)
    if not files.policy_paths:
        from kubectl_kyrec.run.state_policies import StatePoliciesSource

        return StatePoliciesSource(files, needs), True
    return files, all_policies


class _ThenEvaluating:
    """A source whose read, once complete, moves the terminal's progress on to `evaluating`."""

    def __init__(self, source: Any, phase: Callable[[str], None]) -> None:
        self.source = source
        self.phase = phase

    def read(self) -> Any:
        inputs = self.source.read()
        self.phase("evaluating")
        return inputs


@contextlib.contextmanager
def input_phases(source: Any) -> Iterator[Any]:
    """`diff`'s and `coverage`'s phases on a terminal (stderr; render/progress.py): `loading N files` as the
    source opens its files (a live source's LISTs follow on the same line), then `evaluating` once it has read
    everything, cleared before anything else is printed. Off a terminal, the source itself."""
    from kubectl_kyrec.load.files import reading_files
    from kubectl_kyrec.render.progress import Progress

    with Progress.on_terminal("evaluated", phase="loading inputs") as progress, reading_files(progress.loading):
        yield source if progress.phase is None else _ThenEvaluating(source, progress.phase)


def report_run(result: RunResult) -> None:
    """What the run has to say before its outputs: its notices, then the inputs it could not use."""
    emit_notices(result.notices)
    emit_errors(result.errors)


def emit_errors(errors: Sequence[EvalError]) -> None:
    """Each input the run could not use, on stderr: `error: file:line: message`."""
    for error in errors:
        click.echo(f"error: {error.source}: {error.message}" if error.source else f"error: {error.message}",
                   err=True)


def parse_now(value: str | None) -> datetime.datetime:
    if not value:
        return datetime.datetime.now(datetime.timezone.utc)
    from kubectl_kyrec.k8s.times import parse_rfc3339

    parsed = parse_rfc3339(value)
    if parsed is None:
        raise UsageError(f"--now: {value!r} is not an RFC 3339 time (e.g. 2026-01-02T03:04:05Z)")
    return parsed


def parse_selector(text: str | None) -> Selector | None:
    """`-l TEXT` in kubectl's whole grammar; a malformed selector is a usage error (exit 2), as in kubectl."""
    from kubectl_kyrec.k8s.labels import SelectorError
    from kubectl_kyrec.k8s.labels import parse_selector as parse

    if text is None:
        return None
    try:
        return parse(text)
    except SelectorError as exc:
        raise UsageError(f"-l {text!r}: {exc}") from None


def selection_of(kube: Mapping[str, Any], selector: str | None, policy_names: Sequence[str],
                 kinds: Sequence[str]) -> Selection:
    """-n (kubectl's flag, in `kube`), -l, --policy-name and --kind as one Selection."""
    from kubectl_kyrec.load.run_inputs.selection import Selection

    return Selection(policy_names=tuple(policy_names), namespace=str(kube.get("namespace") or "") or None,
                     kinds=tuple(kinds), selector=parse_selector(selector))


def kubectl_flags(func: F | None = None, *, hidden: bool = False) -> Any:
    """The kubectl connection flags (accepted everywhere; used by commands that reach a cluster).

    `hidden`: accepted but left out of the command's help, for a command that never reads a cluster
    (`test`): its help lists only flags that do something for it, while a kubectl habit such as `-n` in a
    script still parses. `@kubectl_flags` or `@kubectl_flags(hidden=True)`."""
    if func is None:
        return functools.partial(_kubectl_flags, hidden=hidden)
    return _kubectl_flags(func, hidden=hidden)


def _kubectl_flags(func: F, *, hidden: bool) -> F:
    options = [
        click.option("--kubeconfig", envvar="KUBECONFIG", help="Path to the kubeconfig file.", hidden=hidden),
        click.option("--context", "kube_context", help="The kubeconfig context to use.", hidden=hidden),
        click.option("-n", "--namespace", help="Only subjects in this namespace.", hidden=hidden),
        click.option("-A", "--all-namespaces", is_flag=True, help="All namespaces (the default offline).",
                     hidden=hidden),
        click.option("--as", "as_user", help="Username to impersonate.", hidden=hidden),
        click.option("--as-group", multiple=True, help="Group to impersonate (repeatable).", hidden=hidden),
        click.option("--request-timeout", default="0", help="Timeout of a single API request.", hidden=hidden),
    ]
    inner = func

    @functools.wraps(inner)
    def all_namespaces_wins(*args: Any, **kwargs: Any) -> Any:
        # as kubectl: with -A, a namespace from -n is ignored
        if kwargs.get("all_namespaces"):
            kwargs["namespace"] = None
        return inner(*args, **kwargs)

    func = all_namespaces_wins  # type: ignore[assignment]
    for option in reversed(options):
        func = option(func)
    return func


def handle_errors(func: F) -> F:
    """Run a command body; any KyrecError becomes `error: file:line: message` and its exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            # A run builds many small objects that live until it ends (documents, results, reports), and
            # the cyclic collector keeps walking them: in an eval of 10,000 subjects x 102 policies its
            # passes took 5.0 s of 19.4 s (measured with gc.callbacks). Nothing kyrec builds forms
            # cycles and the process ends with the command, so the collector stays off for the run.
            # The console command leaves without freeing anything (quick_exit): there it never comes
            # back on, since its first pass would walk every object the run made (0.25 s at 10,000 Pods).
            with quick_exit.collector_off() if quick_exit.enabled() else gc_paused():
                try:
                    return func(*args, **kwargs)
                except SystemExit as exc:
                    # how a command ends (exit_with): keep the code, drop the traceback. It holds every frame
                    # of the run, and so all the run built, alive until the exception is gone; the collector,
                    # back on, would first walk it all once (1.0 s at the end of a 50,000-subject coverage).
                    # The console command leaves without freeing any of it (quick_exit): kept till then.
                    code = exc.code
                    quick_exit.keep(exc)
            sys.exit(code)
        except Interrupted as exc:       # the console command's SIGINT (kubectl_kyrec.interrupts)
            click.echo(exc.line, err=True)
            sys.exit(int(exc.exit_code))
        except KeyboardInterrupt:        # Python's own SIGINT handler (a command run in-process)
            click.echo("interrupted", err=True)
            sys.exit(int(ExitCode.INTERRUPTED))
        except Exception as exc:
            dropped = swallowed()
            if dropped is not None:
                # a Ctrl-C raised where Python wraps it (a class body's __set_name__ makes it a RuntimeError)
                # or drops it, and this failure came of it: an interrupted run, not a bug nor bad input
                click.echo(dropped.line, err=True)
                sys.exit(int(dropped.exit_code))
            if isinstance(exc, KyrecError):
                click.echo(f"error: {exc}", err=True)
                sys.exit(int(exc.exit_code))
            if isinstance(exc, BrokenPipeError):
                # the reader went away (`| head`): quiet, and not 0, so `set -o pipefail` still sees it
                from kubectl_kyrec.render.sink import flush_stdout_quietly

                flush_stdout_quietly()
                sys.exit(int(ExitCode.BROKEN_PIPE))
            # a bug in kyrec: still one line, no traceback (KYREC_DEBUG=1 shows it)
            if os.environ.get("KYREC_DEBUG"):
                raise
            click.echo(f"error: internal error: {type(exc).__name__}: {exc} (a bug in kyrec, not in your "
                       f"input; {REPORT_BUGS})", err=True)
            sys.exit(int(ExitCode.INTERNAL))

    return wrapper  # type: ignore[return-value]


def exit_with(code: ExitCode, exit_code_flag: bool = True, failed_reads: Sequence[FailedRead] = ()) -> None:
    """`--exit-code=false` turns findings (1) into 0; every other code stands. `failed_reads`: the run's
    reads that failed (RunResult.failed_reads, counted in its code), said last, where the code is read."""
    for read in failed_reads:
        click.echo(read.line(), err=True)
    if code == ExitCode.FINDINGS and not exit_code_flag:
        code = ExitCode.CLEAN
    sys.exit(int(code))


# `--jobs 0` (the default): one process per usable CPU, at most this many; each worker holds its own
# copy of what it touches, so memory grows with the count
AUTO_JOBS_MAX = 8


def jobs_flag(func: F) -> F:
    return click.option(
        "--jobs", type=int, default=0, show_default=True, metavar="N",
        help="Processes to evaluate in: 0 for one per CPU (at most 8), 1 for this process alone, never more "
             "than the CPUs. Used on runs of 20,000 (resource, policy) pairs or more; the results do not "
             "change.")(func)


def registry_access(enabled: bool, insecure: Sequence[str], config: str | None = None,
                    now: datetime.datetime | None = None) -> Any:
    """`--registry` (with `--insecure-registry`, `--registry-config`): the run's registry access, None without
    the switch (kyrec contacts no registry unless asked); `now`, the run's time, is when a signing
    certificate must be valid."""
    if not enabled:
        if insecure or config:
            raise UsageError(f"{'--insecure-registry' if insecure else '--registry-config'} needs --registry")
        return None
    from kubectl_kyrec.load.files import read_text
    from kubectl_kyrec.load.registry import Registry, docker_credentials
    from kubectl_kyrec.model import Source

    registry = Registry(insecure=frozenset(insecure), now=now)
    if config:
        name, text = read_text(config)
        try:
            registry.credentials = docker_credentials(text, name)
        except ValueError as err:
            raise InputError(str(err), Source(name)) from None
    return registry


def resolve_jobs(jobs: int) -> int:
    if jobs < 0:
        raise UsageError(f"--jobs must be 0 (one per CPU) or more, not {jobs}")
    from kubectl_kyrec.evaluate.fan_out import usable_cpus

    # a process beyond the CPUs adds only its memory (each worker copies the pages it touches)
    return min(usable_cpus(), AUTO_JOBS_MAX) if jobs == 0 else min(jobs, usable_cpus())
