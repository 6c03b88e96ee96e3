"""What CI needs around a run, for every command: `--baseline`, `--write-baseline`, `--sarif-root`, the
`junit|sarif|github` formats over the run's findings, and GitHub's step summary.

Commands call `ci_flags` (the options), `CiRun.prepare` (findings marked against the baseline) and
`CiRun.render` / `CiRun.finish`; the formats and the baseline logic themselves are pure modules
(render/junit.py, render/sarif.py, render/github.py, reconcile/baseline.py).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import click

from kubectl_kyrec.errors import ExitCode, FailedRead, InputError, OutputError
from kubectl_kyrec.golang import json as go_json
from kubectl_kyrec.model import Source
from kubectl_kyrec.reconcile.findings import Finding
from kubectl_kyrec.reconcile.findings import summary as count_findings
from kubectl_kyrec.render import github
from kubectl_kyrec.render.dispatch import Output, OutputFormat

if TYPE_CHECKING:
    # the baseline logic is imported where --baseline or --write-baseline is read or written, as in
    # read_baseline: a run with neither never uses it
    from kubectl_kyrec.reconcile.baseline import BaselineEntry

F = TypeVar("F", bound=Callable[..., Any])


def ci_flags(func: F) -> F:
    """The CI options shared by eval, diff and coverage."""
    options = [
        click.option("--baseline", "baseline_path", metavar="FILE",
                     help="Accepted findings (from --write-baseline): shown as baselined, not failing."),
        click.option("--write-baseline", "write_baseline_path", metavar="FILE",
                     help="Record this run's findings as the accepted ones (entries of other commands kept)."),
        click.option("--sarif-root", metavar="DIR",
                     help="Repository root: SARIF paths are made relative to it (for code scanning)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@dataclass(frozen=True)
class CiOptions:
    baseline_path: str | None = None
    write_baseline_path: str | None = None
    sarif_root: str | None = None

    @classmethod
    def from_flags(cls, flags: Mapping[str, Any]) -> CiOptions:
        return cls(flags.get("baseline_path"), flags.get("write_baseline_path"), flags.get("sarif_root"))


def read_baseline(path: str) -> list[BaselineEntry]:
    """A baseline file (JSON, or YAML by hand); a missing file is an input error, not an empty baseline."""
    from kubectl_kyrec.load.files import read_text

    try:
        _, text = read_text(path)
    except InputError as exc:
        raise InputError(f"cannot read baseline: {exc.message.removeprefix('cannot read: ')}", Source(path)) from None
    try:
        doc = go_json.loads(text)
    except RecursionError:
        raise InputError("not a kyrec baseline: nested too deeply", Source(path, 1)) from None
    except json.JSONDecodeError as exc:
        import yaml

        try:
            doc = yaml.safe_load(text)
        except (yaml.YAMLError, RecursionError):
            raise InputError(f"not JSON: {exc.msg}", Source(path, exc.lineno)) from None
    from kubectl_kyrec.reconcile.baseline import parse_baseline

    return parse_baseline(doc, Source(path))


@dataclass
class CiRun:
    """A command's findings after the baseline, and what it says about the exit code."""

    command: str
    options: CiOptions
    # held, or made anew each time they are read (eval's spilled results: render/result_spill.py)
    findings: Collection[Finding]
    fixed: list[BaselineEntry] = field(default_factory=list)
    kept: list[BaselineEntry] = field(default_factory=list)     # other commands' entries of the baseline file
    # the run's reads that failed (errors.RunResult.failed_reads): every CI format says the run is incomplete;
    # they are no findings, so a baseline never accepts one
    failed_reads: Sequence[FailedRead] = ()

    @classmethod
    def prepare(cls, command: str, findings: Collection[Finding], options: CiOptions,
                failed_reads: Sequence[FailedRead] = ()) -> CiRun:
        if not options.baseline_path:
            return cls(command, options, findings, failed_reads=failed_reads)
        from kubectl_kyrec.reconcile.baseline import apply_baseline

        entries = read_baseline(options.baseline_path)
        outcome = apply_baseline(findings if isinstance(findings, Sequence) else list(findings), entries, command)
        return cls(command, options, outcome.findings, outcome.fixed,
                   [e for e in entries if e.command != command], failed_reads)

    @property
    def baseline_used(self) -> bool:
        return bool(self.options.baseline_path)

    def exit_code(self, code: ExitCode, still_failing: bool | None = None) -> ExitCode:
        """The run's code with baselined findings no longer counted: FINDINGS becomes CLEAN when every
        failing finding is in the baseline. `still_failing` is the command's own answer (eval: --fail-on)."""
        if not self.baseline_used or code is not ExitCode.FINDINGS:
            return code
        if still_failing is None:
            still_failing = any(f.outcome in ("fail", "error") and not f.baselined for f in self.findings)
        return ExitCode.FINDINGS if still_failing else ExitCode.CLEAN

    def baselined(self, rows: Sequence[object]) -> frozenset[int]:
        """The ids of the table rows whose finding the baseline accepts, for the tables to mark them
        `baselined`. `rows`: what the command's findings were made from, one finding per row and in the
        same order (eval's results, diff_rows, coverage's subjects)."""
        if not self.baseline_used:
            return frozenset()
        return frozenset(id(row) for row, finding in zip(rows, self.findings) if finding.baselined)

    def document_extra(self) -> dict[str, Any]:
        """The documents' keys after the run's own: `baseline` when one was given."""
        if not self.baseline_used:
            return {}
        from kubectl_kyrec.render.baseline_state import baseline_json

        findings = self.findings if isinstance(self.findings, Sequence) else list(self.findings)
        return {"baseline": baseline_json(str(self.options.baseline_path), findings, self.fixed)}

    def title(self) -> str:
        return f"kyrec {self.command}"

    def write(self, fmt: str, stream: TextIO) -> None:
        """junit and sarif written into the stream as they are made, never held as one string."""
        from kubectl_kyrec.render import junit, sarif

        if fmt == "junit":
            junit.write(self.findings, stream, name=self.title(), failed_reads=self.failed_reads)
        elif fmt == "sarif":
            sarif.write(self.findings, stream, root=self.options.sarif_root, baseline_used=self.baseline_used,
                        failed_reads=self.failed_reads)
        else:
            stream.write(self.render(fmt))

    def outputs(self, formats: Sequence[str] = ("junit", "sarif", "github")) -> dict[OutputFormat, Output]:
        """The CI formats as the output seam takes them (render/dispatch.py), each written as it is made."""
        return {OutputFormat(fmt): lambda spec: functools.partial(self.write, spec.format.value)
                for fmt in formats}

    def render(self, fmt: str) -> str:
        from kubectl_kyrec.render import junit, sarif

        if fmt == "junit":
            return junit.render(self.findings, name=self.title(), failed_reads=self.failed_reads)
        if fmt == "sarif":
            return sarif.render(self.findings, root=self.options.sarif_root, baseline_used=self.baseline_used,
                                failed_reads=self.failed_reads)
        if fmt == "github":
            append_step_summary(self.findings, title=self.title(), fixed=[e.display() for e in self.fixed],
                                failed_reads=self.failed_reads)
            return github.render(self.findings, self.failed_reads)
        raise ValueError(fmt)

    def finish(self, specs: Sequence[Any] = (), counts: str | None = None) -> None:
        """After the outputs: a summary line when every output went to a file (else nothing would reach
        the terminal), the baseline's news on stderr, and --write-baseline. `counts`: the command's own
        words for what it found (diff's classes, coverage's statuses); the findings' outcomes otherwise."""
        # the findings' counts only when the line is written: a run printing to stdout never reads them
        files_only_summary(self.title(), counts if counts is not None else
                           lambda: nonzero_counts(count_findings(self.findings), ("pass", "fail")), specs)
        if self.baseline_used:
            accepted = sum(f.baselined for f in self.findings)
            new = sum(f.is_finding and not f.baselined for f in self.findings)
            click.echo(f"baseline: {accepted} finding(s) baselined, {new} new, {len(self.fixed)} baseline "
                       "entr" + ("y" if len(self.fixed) == 1 else "ies") + " fixed", err=True)
            for entry in self.fixed:
                click.echo(f"baseline: fixed (no longer found): {entry.display()}", err=True)
        if self.options.write_baseline_path:
            kept = self.kept
            if not self.baseline_used and os.path.exists(self.options.write_baseline_path):
                kept = [e for e in read_baseline(self.options.write_baseline_path) if e.command != self.command]
            from kubectl_kyrec.reconcile.baseline import baseline_document

            document = baseline_document(self.findings, keep=kept)
            _write_atomically(self.options.write_baseline_path, json.dumps(document, indent=2) + "\n")
            own = sum(1 for e in document["entries"] if e.get("command") == self.command)
            others = len(document["entries"]) - own
            click.echo(f"baseline: wrote {own} {self.command} entr{'y' if own == 1 else 'ies'} to "
                       f"{self.options.write_baseline_path}"
                       + (f" ({others} of other commands kept)" if others else ""), err=True)


def files_only_summary(title: str, counts: str | Callable[[], str], specs: Sequence[Any]) -> None:
    """`kyrec eval: 4 pass, 2 fail; wrote out.json` on stderr when every output went to a file, so that a
    run with `-o json=FILE` alone still says something on the terminal. `counts`: the text, or what makes it."""
    if specs and all(spec.path is not None for spec in specs):
        if callable(counts):
            counts = counts()
        click.echo(f"{title}: {counts}; wrote {', '.join(str(spec.path) for spec in specs)}", err=True)


def nonzero_counts(counts: Mapping[str, int], always: Sequence[str] = ()) -> str:
    """`3 missing, 1 stale`: the counts that are not zero (and those in `always`), in their order."""
    return ", ".join(f"{value} {key}" for key, value in counts.items() if value or key in always)


def _write_atomically(path: str, text: str) -> None:
    tmp = f"{path}.kyrec-tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None


def append_step_summary(findings: Collection[Finding], *, title: str, fixed: Sequence[str] = (),
                        environ: Mapping[str, str] | None = None, failed_reads: Sequence[FailedRead] = ()) -> None:
    """Append the Markdown summary to `$GITHUB_STEP_SUMMARY` when GitHub set it (other steps write there too)."""
    path = (os.environ if environ is None else environ).get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as fh:
            # GitHub's 1 MiB holds for the step: what earlier commands of the step wrote counts too
            limit = max(0, github.STEP_SUMMARY_BYTES - os.fstat(fh.fileno()).st_size)
            fh.write(github.step_summary(findings, title=title, fixed=fixed, limit=limit, failed_reads=failed_reads))
    except OSError as exc:
        raise OutputError(f"$GITHUB_STEP_SUMMARY {path}: cannot write: {exc.strerror or exc}") from None


def _located(locate: Callable[..., Source | None] | None) -> Callable[..., Source | None]:
    return locate if locate is not None else (lambda _ref: None)


def diff_findings(run: Any) -> list[Finding]:
    """A `run.diff.DiffResult` as findings: downstream changes, scheduled deletions, then report changes."""
    from kubectl_kyrec.reconcile.findings import from_deletions, from_downstreams, from_reports

    locate = _located(run.locate)
    out = from_downstreams(run.downstreams, locate) if run.downstreams is not None else []
    if run.deletions is not None:
        out += from_deletions(run.deletions, locate)
    if run.reports is not None:
        out += from_reports(run.reports, locate)
    out += [Finding(command="diff", suite="errors", policy="", rule="", subject=None, outcome="error",
                    message=e.message, message_class="error", location=e.source) for e in run.errors]
    return out


def diff_rows(run: Any) -> list[object]:
    """The changes `diff_findings` makes a finding of, in its order (report changes out of scope make none)."""
    rows: list[object] = list(run.downstreams.changes) if run.downstreams is not None else []
    if run.deletions is not None:
        rows += list(run.deletions.changes)
    if run.reports is not None:
        rows += [c for c in run.reports.changes if c.in_scope]
    return rows


def coverage_findings(run: Any) -> list[Finding]:
    from kubectl_kyrec.reconcile.findings import from_coverage

    return from_coverage(run.coverage, _located(run.locate))


def test_findings(run: Any) -> list[Finding]:
    from kubectl_kyrec.testsuite.findings import from_test_runs

    out = from_test_runs(run.runs)
    out += [Finding(command="test", suite=str(where.file) if where else "test files", policy="", rule="",
                    subject=None, outcome="error", message=message, message_class="load-error", location=where)
            for message, where in run.load_errors]
    return out
