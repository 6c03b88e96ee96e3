"""Kyverno CLI test suites (`kyverno-test.yaml`): discovery, the file model, and loading what a test names.

The format is Kyverno's `cli.kyverno.io/v1alpha1` `Test` (kk: cmd/cli/kubectl-kyverno/apis/v1alpha1/test.go,
test_result.go; docs/semantics/test-suites.md#kyverno-test). Paths inside a test are relative to the test file's
directory. Like Kyverno, a file without apiVersion/kind or with the deprecated top-level `name` is a hard error, and so
is a userinfo file without apiVersion/kind (kk: cmd/cli/kubectl-kyverno/deprecations); a `kind: Test` under
another apiVersion is read, with a notice, since Kyverno does not check it.

Loading is the only I/O of `kyrec test`; testsuite/rows.py gets everything as data.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.cel.schema_rules import policy_schema_check
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.line_index import LineIndex
from kubectl_kyrec.load.policy.policies import PolicySet, classify
from kubectl_kyrec.load.run_inputs.authz_requests import ENVOY, HTTP, AuthzPayload, load_authz_payload
from kubectl_kyrec.load.run_inputs.duplicates import first_of_each
from kubectl_kyrec.load.run_inputs.payloads import Payload, load_payloads
from kubectl_kyrec.load.run_inputs.values import OPERATIONS, Values, parse_user_info, parse_values_object
from kubectl_kyrec.model import Document, Notice, Obj, Source
from kubectl_kyrec.testsuite.mocks import TestMocks, parse_mocks

TEST_API_VERSION = "cli.kyverno.io/v1alpha1"
DEFAULT_FILE_NAME = "kyverno-test.yaml"
RESULTS = ("pass", "fail", "warn", "error", "skip")

# results[].is<Kind> flags -> the policy kind they announce
POLICY_FLAGS = {
    "isValidatingPolicy": "ValidatingPolicy",
    "isGeneratingPolicy": "GeneratingPolicy",
    "isValidatingAdmissionPolicy": "ValidatingAdmissionPolicy",
    "isMutatingPolicy": "MutatingPolicy",
    "isImageValidatingPolicy": "ImageValidatingPolicy",
    "isDeletingPolicy": "DeletingPolicy",
    "isMutatingAdmissionPolicy": "MutatingAdmissionPolicy",
}
# Test fields kyrec reads but does not evaluate; a test that uses them gets a notice.
UNEVALUATED_FIELDS = ("checks",)
KNOWN_FIELDS = frozenset(("apiVersion", "kind", "metadata", "policies", "resources", "exceptions",
                          "variables", "values", "userinfo", "context", "clusterResources", "paramResources",
                          "results", "jsonPayload", "jsonPayloads", "httpPayloads", "envoyPayloads",
                          "apiCallResponses", "globalContextEntries", "targetResources", *UNEVALUATED_FIELDS))


@dataclass(frozen=True)
class ResourceSpec:
    """results[].resourceSpecs[]: a resource named by group/version/kind/namespace/name."""

    group: str = ""
    version: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""
    subresource: str = ""

    def display(self) -> str:
        gv = f"{self.group}/{self.version}" if self.group else self.version
        return "/".join(p for p in (gv, self.kind, self.namespace, self.name) if p)


@dataclass(frozen=True)
class TestResultEntry:
    """One `results[]` entry; each resource it names becomes one row."""

    __test__ = False   # not a pytest class, whatever its name

    index: int
    policy: str
    rule: str
    kind: str
    result: str
    resources: tuple[str, ...]
    resource_specs: tuple[ResourceSpec, ...]
    operation: str
    flags: tuple[str, ...]                 # the policy kinds announced by is<Kind>: true
    generated: tuple[str, ...]             # generatedResource, then generatedResources[]
    patched_resources: str
    source: Source
    clone_source: str = ""                 # cloneSourceResource: a clone rule's source, for the CLI's fake cluster

    @property
    def policy_name(self) -> str:
        """Kyverno compares only the name part of `policy` (`ns/name` is allowed)."""
        return self.policy.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class TestSuite:
    __test__ = False   # not a pytest class, whatever its name

    path: str
    name: str
    source: Source
    policies: tuple[str, ...]
    resources: tuple[str, ...]
    exceptions: tuple[str, ...]
    variables: str
    values: Mapping[str, Any] | None
    userinfo: str
    context: str
    cluster_resources: tuple[str, ...]
    param_resources: tuple[str, ...]
    results: tuple[TestResultEntry, ...]
    notices: tuple[Notice, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict)    # the Test as written (apiCallResponses, ...)
    json_payloads: tuple[str, ...] = ()       # jsonPayloads (and the older jsonPayload)
    http_payloads: tuple[str, ...] = ()       # httpPayloads: check requests for HTTP-mode policies
    envoy_payloads: tuple[str, ...] = ()      # envoyPayloads: check requests for Envoy-mode policies
    target_resources: tuple[str, ...] = ()    # targetResources: the objects mutate-existing rules change

    @property
    def directory(self) -> str:
        return os.path.dirname(self.path) or "."

    def resolve(self, relative: str) -> str:
        if os.path.isabs(relative):
            return relative
        return os.path.normpath(os.path.join(self.directory, relative))


def find_test_files(paths: Sequence[str], file_name: str = DEFAULT_FILE_NAME) -> list[str]:
    """Every `file_name` below the paths (hidden directories such as `.kyverno-test` included), sorted.

    A path naming a file is taken as a test file whatever its name.
    """
    found: list[str] = []
    for path in paths:
        if os.path.isfile(path):
            found.append(path)
            continue
        if not os.path.isdir(path):
            raise InputError(f"{path}: no such file or directory")
        for root, dirs, files in os.walk(path):
            dirs.sort()
            if file_name in files:
                found.append(os.path.join(root, file_name))
    unique: dict[str, str] = {}
    for p in found:
        unique.setdefault(os.path.abspath(p), p)
    return list(unique.values())


class _Fields:
    """Typed reads of one mapping of the test file, failing with file:line and the field path."""

    def __init__(self, file: str, node: Mapping[str, Any], path: tuple[str | int, ...],
                 lines: LineIndex) -> None:
        self.file = file
        self.node = node
        self.path = path
        self.lines = lines

    def where(self, key: str | int) -> str:
        text = ""
        for step in (*self.path, key):
            text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
        return text

    def fail(self, key: str | int, message: str) -> InputError:
        line = self.lines.line_of((*self.path, key))
        return InputError(f"{self.where(key)}: {message}", Source(self.file, line))

    def child(self, key: str | int, node: Mapping[str, Any]) -> _Fields:
        return _Fields(self.file, node, (*self.path, key), self.lines)

    def string(self, key: str, *, required: bool = False) -> str:
        value = self.node.get(key)
        if value is None:
            if required:
                raise self.fail(key, "required field is missing")
            return ""
        if isinstance(value, (Mapping, list)):
            raise self.fail(key, "expected a string")
        return str(value)

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.node.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or any(isinstance(v, (Mapping, list)) or v is None for v in value):
            raise self.fail(key, "expected a list of strings")
        return tuple(str(v) for v in value)

    def flag(self, key: str) -> bool:
        value = self.node.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.fail(key, "expected true or false")
        return value


def _parse_entry(results: _Fields, node: Any, index: int) -> TestResultEntry:
    if not isinstance(node, Mapping):
        raise results.fail(index, "expected a mapping")
    f = results.child(index, node)
    for deprecated in ("resource", "status", "namespace", "patchedResource"):
        if deprecated in node:
            raise f.fail(deprecated, "deprecated field (Kyverno refuses it too); use resources, result, "
                                     "'<namespace>/<name>' or patchedResources")
    result = f.string("result", required=True)
    if result not in RESULTS:
        raise f.fail("result", f"unknown result {result!r} ({', '.join(RESULTS)})")
    operation = f.string("operation").upper()
    if operation and operation not in OPERATIONS:
        raise f.fail("operation", f"unknown operation {operation!r} ({', '.join(OPERATIONS)})")
    specs = []
    raw_specs = node.get("resourceSpecs")
    raw_specs = [] if raw_specs is None else raw_specs
    if not isinstance(raw_specs, list):
        raise f.fail("resourceSpecs", "expected a list")
    for j, spec in enumerate(raw_specs):
        if not isinstance(spec, Mapping):
            raise f.child("resourceSpecs", {}).fail(j, "expected a mapping")
        s = f.child("resourceSpecs", {}).child(j, spec)
        specs.append(ResourceSpec(s.string("group"), s.string("version"), s.string("kind"),
                                  s.string("namespace"), s.string("name", required=True),
                                  s.string("subresource")))
    generated = tuple(p for p in (f.string("generatedResource"),) if p) + f.strings("generatedResources")
    return TestResultEntry(
        index=index, policy=f.string("policy", required=True), rule=f.string("rule"), kind=f.string("kind"),
        result=result, resources=f.strings("resources"), resource_specs=tuple(specs), operation=operation,
        flags=tuple(kind for flag, kind in POLICY_FLAGS.items() if f.flag(flag)), generated=generated,
        patched_resources=f.string("patchedResources"),
        source=Source(f.file, f.lines.line_of(f.path)), clone_source=f.string("cloneSourceResource"))


_DEPRECATED_SCHEMA = ("the test uses Kyverno's deprecated schema (no apiVersion/kind, or a top-level name), "
                      "which Kyverno refuses too: set apiVersion: cli.kyverno.io/v1alpha1, kind: Test and "
                      "metadata.name")


def parse_test_file(path: str) -> TestSuite:
    """Read a test file holding one Test; InputError (file:line) when it is unreadable or not a valid Test."""
    suites = parse_test_documents(path)
    if len(suites) != 1:
        raise InputError(f"expected one Test document, found {len(suites)}", Source(path, 1))
    return suites[0]


def parse_test_documents(path: str) -> list[TestSuite]:
    """Every `---`-separated Test of a file, in order: Kyverno runs each as its own test
    (kk: cmd/cli/kubectl-kyverno/test/load.go LoadTest). InputError (file:line) on the first bad one."""
    from kubectl_kyrec.load.documents import load_documents_with_lines

    try:
        docs = load_documents_with_lines([path])
    except InputError as exc:
        if exc.message in ("missing apiVersion", "missing kind"):
            raise InputError(_DEPRECATED_SCHEMA, exc.source) from None
        raise
    if not docs:
        raise InputError("expected a Test document, found none", Source(path, 1))
    return [_parse_test_document(path, d.document, d.lines) for d in docs]


def _parse_test_document(path: str, doc: Document, lines: LineIndex) -> TestSuite:
    root = doc.obj
    f = _Fields(path, root, (), lines)
    if "name" in root:
        raise InputError(_DEPRECATED_SCHEMA, Source(path, lines.line_of(("name",))))
    if doc.kind != "Test":
        raise f.fail("kind", f"expected apiVersion {TEST_API_VERSION}, kind Test; "
                             f"got {doc.api_version}, {doc.kind}")
    notices = []
    if doc.api_version != TEST_API_VERSION:
        # Kyverno decodes the document as a Test whatever its apiVersion (kk: test/load.go LoadTest;
        # deprecations.CheckTest only wants it set), as its own MutatingAdmissionPolicy suites rely on
        notices.append(Notice(f"test {doc.name!r}: apiVersion {doc.api_version} read as {TEST_API_VERSION}, "
                              "as Kyverno does", Source(path, lines.line_of(("apiVersion",)))))
    raw_results = root.get("results")
    raw_results = [] if raw_results is None else raw_results
    if not isinstance(raw_results, list):
        raise f.fail("results", "expected a list")
    results = f.child("results", {})
    entries = [_parse_entry(results, node, i) for i, node in enumerate(raw_results)]
    values = root.get("values")
    if values is not None and not isinstance(values, Mapping):
        raise f.fail("values", "expected a mapping")
    name = doc.name
    unevaluated = [k for k in UNEVALUATED_FIELDS if root.get(k)]
    if unevaluated:
        notices.append(Notice(f"test {name!r}: kyrec does not evaluate {', '.join(unevaluated)}", doc.source))
    unknown = sorted(str(k) for k in root if str(k) not in KNOWN_FIELDS)
    if unknown:
        notices.append(Notice(f"test {name!r}: unknown field(s) {', '.join(unknown)} ignored", doc.source))
    return TestSuite(
        path=path, name=name, source=doc.source, policies=f.strings("policies"),
        resources=f.strings("resources"), exceptions=f.strings("exceptions"), variables=f.string("variables"),
        values=values, userinfo=f.string("userinfo"), context=f.string("context"),
        cluster_resources=f.strings("clusterResources"), param_resources=f.strings("paramResources"),
        target_resources=f.strings("targetResources"),
        results=tuple(entries), notices=tuple(notices), raw=root,
        # the older single jsonPayload counts when jsonPayloads is empty (kk: test/load.go cleanTest)
        json_payloads=tuple(dict.fromkeys(f.strings("jsonPayloads") or
                                          ((f.string("jsonPayload"),) if f.string("jsonPayload") else ()))),
        # the CLI keys each by its file: a file named twice is one request (kk: commands/test/test.go)
        http_payloads=tuple(dict.fromkeys(f.strings("httpPayloads"))),
        envoy_payloads=tuple(dict.fromkeys(f.strings("envoyPayloads"))))


# ---------------------------------------------------------------------------------------------------------
# What a test names, loaded


@dataclass
class LoadedSuite:
    suite: TestSuite
    policies: PolicySet = field(default_factory=PolicySet)
    resources: list[Document] = field(default_factory=list)
    cluster_objects: list[Document] = field(default_factory=list)   # clusterResources' resources
    target_objects: list[Document] = field(default_factory=list)    # targetResources' resources
    param_objects: list[Document] = field(default_factory=list)
    crds: list[Obj] = field(default_factory=list)
    values: Values = field(default_factory=Values)
    user_info: dict[str, Any] = field(default_factory=dict)
    roles: tuple[str, ...] = ()              # the userinfo file's roles / clusterRoles (classic match)
    cluster_roles: tuple[str, ...] = ()
    context: Obj | None = None
    context_source: Source | None = None
    generated: dict[int, list[Document]] = field(default_factory=dict)
    patched: dict[int, list[Document]] = field(default_factory=dict)     # patchedResources by entry
    clone_sources: dict[int, list[Document]] = field(default_factory=dict)   # cloneSourceResource by entry
    entry_errors: dict[int, str] = field(default_factory=dict)
    payloads: list[Payload] = field(default_factory=list)
    authz_payloads: list[AuthzPayload] = field(default_factory=list)
    mocks: TestMocks = field(default_factory=TestMocks)   # apiCallResponses, globalContextEntries
    error: InputError | None = None        # the inputs could not be loaded: every row is a load-error
    notices: list[Notice] = field(default_factory=list)


DocumentLoader = Callable[[list[str]], list[Document]]


def _default_loader(paths: list[str]) -> list[Document]:
    from kubectl_kyrec.load.documents import load_documents

    return load_documents(paths)


def load_suite(suite: TestSuite, loader: DocumentLoader | None = None) -> LoadedSuite:
    """Load every file the test names. A failure is kept in `.error`, not raised: the rows still appear."""
    load = loader or _default_loader
    out = LoadedSuite(suite, notices=list(suite.notices))
    try:
        _load_inputs(suite, load, out)
    except InputError as exc:
        out.error = exc
    for entry in suite.results:
        if not entry.generated:
            continue
        try:
            out.generated[entry.index] = load([suite.resolve(p) for p in entry.generated])
        except InputError as exc:
            out.entry_errors[entry.index] = f"cannot load generated resources: {exc}"
    for entry in suite.results:
        if not entry.patched_resources:
            continue
        try:
            out.patched[entry.index] = load([suite.resolve(entry.patched_resources)])
        except InputError as exc:
            out.entry_errors.setdefault(entry.index, f"cannot load patchedResources: {exc}")
    for entry in suite.results:
        if not entry.clone_source:
            continue
        try:
            out.clone_sources[entry.index] = load([suite.resolve(entry.clone_source)])
        except InputError as exc:
            out.entry_errors.setdefault(entry.index, f"cannot load cloneSourceResource: {exc}")
    return out


def _load_inputs(suite: TestSuite, load: DocumentLoader, out: LoadedSuite) -> None:
    def named(paths: Sequence[str]) -> list[str]:
        for p in paths:
            # a file the test names that is not there is the test file's mistake: point at the test
            if not os.path.exists(suite.resolve(p)):
                raise InputError(f"{p}: no such file or directory (the test names it; looked for "
                                 f"{suite.resolve(p)})", suite.source)
        return [suite.resolve(p) for p in paths]

    def docs(paths: Sequence[str]) -> list[Document]:
        return load(named(paths)) if paths else []

    schema = policy_schema_check()

    def policies(paths: Sequence[str]) -> PolicySet:
        if load is not _default_loader:
            return classify(docs(paths), schema=schema).read_error_lines()
        # the lines of their fields kept, so that a policy Kyverno refuses is shown at the offending field
        from kubectl_kyrec.load.documents import load_documents_with_lines

        located = load_documents_with_lines(named(paths))
        return classify([d.document for d in located], {d.document.source: d.lines for d in located}, schema=schema)

    if not suite.policies:
        raise InputError("the test names no policies", suite.source)
    # one bad policy makes the whole test file unloadable, as in Kyverno's CLI
    # checked against the cluster's schema as `-p` is (a policy the cluster refuses is not tested)
    out.policies = policies(suite.policies).raise_errors()
    exceptions = policies(suite.exceptions).raise_errors()
    out.policies.exceptions = list(exceptions.exceptions)
    out.policies.classic_exceptions = list(exceptions.classic_exceptions)
    out.policies.lines.update(exceptions.lines)
    out.resources, duplicates = first_of_each(docs(suite.resources))
    out.notices.extend(duplicates)
    out.param_objects = docs(suite.param_resources)
    for name in suite.json_payloads:
        out.payloads.extend(load_payloads(suite.resolve(name), name))
    for mode, names in ((HTTP, suite.http_payloads), (ENVOY, suite.envoy_payloads)):
        out.authz_payloads.extend(load_authz_payload(suite.resolve(name), name, mode) for name in names)
    out.target_objects.extend(docs(suite.target_resources))
    for doc in docs(suite.cluster_resources):
        spec = doc.obj.get("spec") or {}
        if doc.kind == "ClusterResource":
            out.cluster_objects.extend(Document(r, doc.source) for r in spec.get("resources") or [])
            out.crds.extend(d.obj for d in docs(list(spec.get("crds") or [])))
        elif doc.kind == "CustomResourceDefinition":
            out.crds.append(doc.obj)
        else:
            out.cluster_objects.append(doc)
    if suite.values is not None:
        # inline values win over the variables file (kk: variables.New)
        out.values = parse_values_object(suite.values, suite.source)
    elif suite.variables:
        value_docs = docs([suite.variables])
        if len(value_docs) != 1:
            raise InputError("variables: expected one Values document", suite.source)
        out.values = parse_values_object(value_docs[0].obj, value_docs[0].source)
    if suite.userinfo:
        info_docs = docs([suite.userinfo])
        if len(info_docs) != 1 or not info_docs[0].api_version or not info_docs[0].kind:
            raise InputError("userinfo: expected one cli.kyverno.io/v1alpha1 UserInfo document (Kyverno "
                             "refuses the deprecated schema without apiVersion/kind)",
                             info_docs[0].source if info_docs else suite.source)
        out.user_info = parse_user_info(info_docs[0])
        out.roles = tuple(str(r) for r in info_docs[0].obj.get("roles") or [])
        out.cluster_roles = tuple(str(r) for r in info_docs[0].obj.get("clusterRoles") or [])
    if suite.context:
        ctx_docs = docs([suite.context])
        if len(ctx_docs) != 1 or ctx_docs[0].kind != "Context":
            raise InputError("context: expected one cli.kyverno.io/v1alpha1 Context document",
                             ctx_docs[0].source if ctx_docs else suite.source)
        out.context, out.context_source = ctx_docs[0].obj, ctx_docs[0].source
    # checked after everything else is loaded, as the CLI does (kk: commands/test/test.go runTest)
    out.mocks = parse_mocks(suite.raw, suite.source, suite.resolve, load)
