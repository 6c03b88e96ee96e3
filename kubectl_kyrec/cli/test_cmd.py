"""`kubectl kyrec test`: run Kyverno CLI test suites (`kyverno-test.yaml`) unchanged."""

from __future__ import annotations

import datetime
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from kubectl_kyrec.cli.common import (
    OutputFormat,
    exit_with,
    handle_errors,
    kubectl_flags,
    parse_now,
    parse_outputs,
    write_output,
)
from kubectl_kyrec.cli.providers import kinds_adapters
from kubectl_kyrec.errors import ExitCode, InputError, worst
from kubectl_kyrec.model import Source

if TYPE_CHECKING:
    from kubectl_kyrec.cel.environment import LibraryFactory
    from kubectl_kyrec.evaluate.test_rows import GenerateFn, Mode, SuiteRun
    from kubectl_kyrec.load.kinds import KindTable
    from kubectl_kyrec.load.test_suite import LoadedSuite

TEST_FORMATS = (OutputFormat.TABLE, OutputFormat.JSON, OutputFormat.YAML, OutputFormat.JUNIT)


@click.command("test")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--file-name", default="kyverno-test.yaml", show_default=True,
              help="Name of the test files to look for below the paths.")
@click.option("--compat", type=click.Choice(["kyverno"]),
              help="Decide rows the way Kyverno's own `kyverno test` does (see docs/compatibility.md).")
@click.option("-o", "--output", "outputs", multiple=True, metavar="FORMAT[=FILE]",
              help="table (default), json, yaml, junit; repeatable.")
@click.option("--fail-only", is_flag=True, help="Show failing rows only.")
@click.option("--require-tests", is_flag=True, help="Exit 3 when no test file is found.")
@click.option("--now", "now_text", help="The time for time.now() and exception expiry (RFC 3339).")
@click.option("--exit-code", "exit_code_flag", type=bool, default=True, show_default=True,
              help="false: failing rows do not change the exit code.")
@kubectl_flags
@handle_errors
def test_command(paths: tuple[str, ...], file_name: str, compat: str | None, outputs: tuple[str, ...],
                 fail_only: bool, require_tests: bool, now_text: str | None, exit_code_flag: bool,
                 **kube: object) -> None:
    """Run every Kyverno test file below PATH... and check each row.

    A row is one (results entry, resource). Strict by default: a resource the policy gave no response
    for fails (not-matched); --compat kyverno decides rows as Kyverno's CLI does. Exit 1 when a row
    fails, 3 when a test file cannot be loaded, 0 otherwise.
    """
    from kubectl_kyrec.evaluate.test_rows import Mode
    from kubectl_kyrec.load.test_suite import find_test_files
    from kubectl_kyrec.render import test_output

    specs = parse_outputs(list(outputs), TEST_FORMATS)
    now = parse_now(now_text)
    mode = Mode.KYVERNO if compat == "kyverno" else Mode.STRICT
    files = find_test_files(list(paths), file_name)
    if not files:
        click.echo(f"notice: no {file_name} found below {', '.join(paths)}", err=True)
        if require_tests:
            raise InputError(f"no test files named {file_name} found")
    runs, load_errors = run_files(files, now=now, mode=mode)
    notices = sorted({str(n) for run in runs for n in run.notices})
    for notice in notices:
        click.echo(f"notice: {notice}", err=True)
    for message, source in [*load_errors, *((m, s) for run in runs for m, s in run.errors)]:
        click.echo(f"error: {source}: {message}" if source else f"error: {message}", err=True)
    doc = test_output.test_document(runs, mode, fail_only=fail_only, load_errors=load_errors, notices=notices)
    for spec in specs:
        if spec.format is OutputFormat.JSON:
            text = test_output.render_json(doc)
        elif spec.format is OutputFormat.YAML:
            text = test_output.render_yaml(doc)
        elif spec.format is OutputFormat.JUNIT:
            text = test_output.render_junit(runs, fail_only=fail_only, load_errors=load_errors)
        else:
            text = test_output.render_table(runs, fail_only=fail_only)
        write_output(spec, text)
    code = ExitCode.CLEAN
    if load_errors or any(run.errors for run in runs):
        code = ExitCode.INPUT
    if any(not row.passed for run in runs for row in run.rows):
        code = worst(code, ExitCode.FINDINGS)
    exit_with(code, exit_code_flag)


def run_files(files: Sequence[str], *, now: datetime.datetime,
              mode: Mode) -> tuple[list[SuiteRun], list[tuple[str, Source | None]]]:
    """Parse, load and run each test file; files that do not parse are returned as load errors."""
    from kubectl_kyrec.evaluate.test_rows import run_suite
    from kubectl_kyrec.load.test_suite import load_suite, parse_test_file

    runs: list[SuiteRun] = []
    load_errors: list[tuple[str, Source | None]] = []
    for path in files:
        try:
            suite = parse_test_file(path)
        except InputError as exc:
            load_errors.append((exc.message, exc.source))
            continue
        loaded = load_suite(suite)
        kinds, libraries, generate = suite_environment(loaded, now)
        runs.append(run_suite(loaded, kinds=kinds, libraries=libraries, now=now, mode=mode,
                              generate=generate))
    return runs, load_errors


def suite_environment(loaded: LoadedSuite, now: datetime.datetime
                      ) -> tuple[KindTable, LibraryFactory, GenerateFn | None]:
    """The kind table, CEL libraries and generation hook one suite evaluates with.

    `resource.Get/List` see the Context file's resources, the clusterResources and paramResources, and,
    when the test sets clusterResources, its resources too: the objects Kyverno's CLI puts in its fake
    cluster (SEMANTICS E.1). A Context file that does not load becomes the suite's load error.
    """
    from kubectl_kyrec.cel.context import ContextProvider, EmptyProvider, LibraryContext, ObjectsProvider
    from kubectl_kyrec.cel.generator_lib import GeneratorSink, generator_extra
    from kubectl_kyrec.cel.libraries import library_factory
    from kubectl_kyrec.evaluate.test_rows import generating_hook
    from kubectl_kyrec.load.documents import load_documents
    from kubectl_kyrec.load.kinds import KindTable

    kinds = KindTable()
    try:
        for crd in loaded.crds:
            kinds.add_crd(crd)
        for doc in loaded.resources:
            if doc.kind == "CustomResourceDefinition" and doc.api_version.startswith("apiextensions.k8s.io/"):
                kinds.add_crd(doc.obj, doc.source)
    except InputError as exc:
        loaded.error = loaded.error or exc

    resource_of, kind_of = kinds_adapters(kinds)

    def read_file(path: str) -> Any:
        # files a Context names are relative to the Context file
        base = loaded.context_source.file if loaded.context_source else loaded.suite.path
        docs = load_documents([os.path.join(os.path.dirname(base), path)])
        return docs[0].obj if len(docs) == 1 else [d.obj for d in docs]

    objects = [d.obj for d in [*loaded.cluster_objects, *loaded.param_objects]]
    if loaded.suite.cluster_resources:
        objects.extend(d.obj for d in loaded.resources)
    provider: ContextProvider = EmptyProvider(resource_of, kind_of=kind_of)
    if loaded.error is None:
        try:
            provider = ObjectsProvider(objects, resource_of, loaded.context, kind_of=kind_of,
                                       read_file=read_file)
        except (ValueError, InputError) as exc:
            loaded.error = InputError(f"context: {exc}", loaded.context_source or loaded.suite.source)
    context = LibraryContext(now=now, provider=provider)
    sink = GeneratorSink()
    generate = generating_hook(kinds=kinds, libraries=library_factory(context, extra=generator_extra(sink)),
                               sink=sink, now=now)
    return kinds, library_factory(context), generate
