"""Each test file: parsed, loaded, given its own cluster and CEL libraries, and run row by row."""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.model import Source

if TYPE_CHECKING:
    from kubectl_kyrec.cel.environment import LibraryFactory
    from kubectl_kyrec.load.run_inputs.kinds import KindTable
    from kubectl_kyrec.testsuite.row_types import GenerateFn, Mode, SuiteRun
    from kubectl_kyrec.testsuite.suite import LoadedSuite


def run_files(files: Sequence[str], *, now: datetime.datetime, mode: Mode,
              registry: Any = None) -> tuple[list[SuiteRun], list[tuple[str, Source | None]]]:
    """Parse, load and run each test file; files that do not parse are returned as load errors.
    `registry`: `--registry` (load.registry.Registry), None offline."""
    from kubectl_kyrec.testsuite.rows import run_suite
    from kubectl_kyrec.testsuite.suite import load_suite, parse_test_documents

    runs: list[SuiteRun] = []
    load_errors: list[tuple[str, Source | None]] = []
    for path in files:
        try:
            suites = parse_test_documents(path)
        except InputError as exc:
            load_errors.append((exc.message, exc.source))
            continue
        for suite in suites:        # a file may hold several Test documents; each is its own test
            loaded = load_suite(suite)
            kinds, libraries, generate, other_libraries = suite_environment(loaded, now, mode, registry)
            runs.append(run_suite(loaded, kinds=kinds, libraries=libraries, now=now, mode=mode,
                                  generate=generate, other_libraries=other_libraries,
                                  other_generate=other_generating_hook(loaded, kinds, now, mode, registry),
                                  target_libraries=target_libraries(loaded, kinds, now, mode),
                                  registry=registry))
    return runs, load_errors


def suite_environment(loaded: LoadedSuite, now: datetime.datetime, mode: Mode, registry: Any = None
                      ) -> tuple[KindTable, LibraryFactory, GenerateFn | None, LibraryFactory | None]:
    """The kind table, CEL libraries and generation hook one suite evaluates with, and the libraries of the
    other mode when they differ (None when they do not).

    `resource.Get/List` see the Context file's resources, the clusterResources and paramResources, and,
    when the test sets clusterResources, its resources too: the objects Kyverno's CLI puts in its fake
    cluster (docs/semantics/test-suites.md#kyvernos-cli-offline). A Context file that does not load becomes the suite's
    load error. The test's apiCallResponses answer `http.Get/Post` as a server would in strict mode, wrapped as
    Kyverno's CLI wraps them by default (docs/compatibility.md). `image.GetMetadata` of an image the Context
    file does not hold is Kyverno's CLI's error by default (its fake provider, `--registry` or not); in strict
    mode a cluster reads the registry: `registry` (`--registry`) answers, else the result is needs-registry.
    """
    from kubectl_kyrec.cel.context import ContextProvider, EmptyProvider, LibraryContext
    from kubectl_kyrec.cel.generator_lib import GeneratorSink, generator_extra
    from kubectl_kyrec.cel.libraries import library_factory
    from kubectl_kyrec.load.run_inputs.kinds import KindTable
    from kubectl_kyrec.testsuite.rows import generating_hook

    kinds = KindTable(crd_hint="add its CustomResourceDefinition to the test's resources or clusterResources")
    try:
        for crd in loaded.crds:
            kinds.add_crd(crd)
        for doc in loaded.resources:
            if doc.kind == "CustomResourceDefinition" and doc.api_version.startswith("apiextensions.k8s.io/"):
                kinds.add_crd(doc.obj, doc.source)
    except InputError as exc:
        loaded.error = loaded.error or exc

    def provider_for(mode: Mode) -> ContextProvider:
        provider = _objects_provider(loaded, kinds, mode, registry=registry)
        return provider if provider is not None else EmptyProvider(kinds.resource_of, kind_of=kinds.kind_of)

    context = LibraryContext(now=now, provider=provider_for(mode))
    sink = GeneratorSink()
    generate = generating_hook(kinds=kinds, libraries=library_factory(context, extra=generator_extra(sink)),
                               sink=sink, now=now)
    # only mocked HTTP responses (the CLI wraps them) and image data (the CLI's fake provider, a cluster's
    # registry) read differently in the other mode
    other = (library_factory(LibraryContext(now=now, provider=provider_for(mode.other)))
             if (loaded.mocks.http or _reads_image_metadata(loaded)) and loaded.error is None else None)
    return kinds, library_factory(context), generate, other


def other_generating_hook(loaded: LoadedSuite, kinds: KindTable, now: datetime.datetime, mode: Mode,
                          registry: Any = None) -> GenerateFn | None:
    """The generation hook of the other mode, for the suite's warnings, when the GeneratingPolicies read image
    data (the CLI's fake provider errs where a cluster reads the registry); None when generation does not
    depend on the mode."""
    from kubectl_kyrec.cel.context import LibraryContext
    from kubectl_kyrec.cel.generator_lib import GeneratorSink, generator_extra
    from kubectl_kyrec.cel.libraries import library_factory
    from kubectl_kyrec.testsuite.rows import generating_hook

    if loaded.error is not None or not loaded.policies.generating or not _reads_image_metadata(loaded):
        return None
    provider = _objects_provider(loaded, kinds, mode.other, registry=registry)
    if provider is None:
        return None
    sink = GeneratorSink()
    return generating_hook(kinds=kinds, libraries=library_factory(LibraryContext(now=now, provider=provider),
                                                                  extra=generator_extra(sink)), sink=sink, now=now)


def target_libraries(loaded: LoadedSuite, kinds: KindTable, now: datetime.datetime, mode: Mode
                     ) -> LibraryFactory | None:
    """The libraries of the mutateExisting MutatingPolicies' pass on the targetResources: `resource.*` sees
    what it sees for the other policies and the targets too (kk 111e07bb: policy_processor.go adds the
    targets to its FakeContextProvider before that pass). None when the suite has no such pass."""
    from kubectl_kyrec.cel.context import LibraryContext
    from kubectl_kyrec.cel.libraries import library_factory

    if loaded.error is not None or not loaded.target_objects \
            or not any(p.mutate_existing for p in loaded.policies.mutating):
        return None
    provider = _objects_provider(loaded, kinds, mode, extra=[d.obj for d in loaded.target_objects])
    return library_factory(LibraryContext(now=now, provider=provider)) if provider is not None else None


def _reads_image_metadata(loaded: LoadedSuite) -> bool:
    """Whether a CEL policy of the suite calls `image.GetMetadata` (its text anywhere in the policy)."""
    def reads(value: Any) -> bool:
        if isinstance(value, str):
            return "image.GetMetadata" in value or "image.getMetadata" in value
        if isinstance(value, Mapping):
            return any(reads(v) for v in value.values())
        if isinstance(value, list):
            return any(reads(v) for v in value)
        return False

    policies = loaded.policies
    return any(reads(getattr(p, "raw", None)) for group in (
        policies.validating, policies.image_validating, policies.mutating, policies.generating, policies.deleting)
        for p in group)


def _objects_provider(loaded: LoadedSuite, kinds: KindTable, mode: Mode, extra: Sequence[Any] = (),
                      registry: Any = None) -> Any:
    """The suite's cluster for `resource.*` (an ObjectsProvider), with `extra` objects; None when the
    Context file does not load (then the suite's load error). `registry` (`--registry`) answers
    `image.GetMetadata` in strict mode only (suite_environment)."""
    from kubectl_kyrec.cel.context import ObjectsProvider
    from kubectl_kyrec.load.documents import load_documents
    from kubectl_kyrec.testsuite.row_types import Mode

    def read_file(path: str) -> Any:
        # files a Context names are relative to the Context file
        base = loaded.context_source.file if loaded.context_source else loaded.suite.path
        docs = load_documents([os.path.join(os.path.dirname(base), path)])
        return docs[0].obj if len(docs) == 1 else [d.obj for d in docs]

    objects = [d.obj for d in [*loaded.cluster_objects, *loaded.param_objects]]
    if loaded.suite.cluster_resources:
        objects.extend(d.obj for d in loaded.resources)
    objects.extend(extra)
    if loaded.error is not None:
        return None
    try:
        return ObjectsProvider(objects, kinds.resource_of, loaded.context, kind_of=kinds.kind_of, read_file=read_file,
                               http_mocks=loaded.mocks.http, global_mocks=loaded.mocks.global_entries,
                               cli_http_mocks=mode is Mode.KYVERNO,
                               registry=registry if mode is Mode.STRICT else None, cluster_images=mode is Mode.STRICT)
    except (ValueError, InputError) as exc:
        loaded.error = InputError(f"context: {exc}", loaded.context_source or loaded.suite.source)
    return None
