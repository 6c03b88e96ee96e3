"""Read every input a command names (the loading edge of the pipeline), through an input source.

A source turns what the user named into `Inputs`. `FileSource` reads files; a live source (reading the
cluster for the state) replaces only `read_state`, so policies, resources and values load the same way.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kubectl_kyrec.errors import InputError, UsageError
from kubectl_kyrec.load.policy.policies import PolicySet, classify, is_policy_document, is_policy_kind
from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState, repeats_notice
from kubectl_kyrec.load.run_inputs.duplicates import POLICY_RULE, each_once, first_of_each
from kubectl_kyrec.load.run_inputs.values import Values, parse_values
from kubectl_kyrec.load.schema import SchemaCheck
from kubectl_kyrec.model import Document, Notice, Source

if TYPE_CHECKING:
    from kubectl_kyrec.load.run_inputs.state import Beside, StateStream


@dataclass
class Inputs:
    policies: PolicySet
    resources: list[Document]
    state: ClusterState
    values: Values
    kinds: Any
    context_file: dict[str, Any] | None = None
    notices: list[Notice] = field(default_factory=list)
    # the context provider over the state, built once per run (see providers.provider_for)
    provider: Any = field(default=None, repr=False)
    # the CEL environments over that provider, built once per run (see providers.environments_for)
    environments: Any = field(default=None, repr=False)
    # a live run's access reviews (cluster/access_review.py SubjectAccessReviews: `allowed(request)`,
    # `failure`): Kyverno's permissions as the cluster answers them, for the causes of findings
    access: Any = field(default=None, repr=False)
    # -r was given (its manifests may all have turned out to be policies)
    resources_named: bool = False
    # the policies are the state's (a live cluster's, or a capture's without -p): whether one is absent then
    # depends on the LISTs of the policy kinds (reconcile/reads.py)
    policies_from_state: bool = False
    # the -r documents not yet read (FileSource.stream_resources): read once, as they are consumed, with
    # `resources` left empty; `materialize` reads them whole instead
    resource_stream: Iterator[Document] | None = field(default=None, repr=False)
    # how many documents the stream holds, as the peek at its files counted them (repeats and kyrec's own
    # outputs included): a progress line's total
    resource_count: int = 0
    # the state's objects not yet read (FileSource.stream_resources without -r): read once, as they are consumed,
    # with `state` holding the whole read's record and only the objects the run looks up (load/run_inputs/state.py
    # peek_state); `state_whole` reads the state whole instead, with the notice of its repeats
    state_stream: Iterator[Document] | None = field(default=None, repr=False)
    state_whole: Callable[[], tuple[ClusterState, list[Notice]]] | None = field(default=None, repr=False)
    # where the whole read puts the notice of the state's repeats among `notices`
    state_notice_at: int = 0

    def materialize(self) -> None:
        """`resources` read whole from `resource_stream` (a stage that needs them all: generation, --kind
        names resolved from the resources), and the state from the files again when it was to be streamed;
        the same documents and notices as reading them whole at first. The state must be materialized before
        anything is built over it (run/providers.py): only the run decides, before it validates."""
        if self.resource_stream is not None:
            stream, self.resource_stream = self.resource_stream, None
            self.resources = list(stream)
        if self.state_stream is not None and self.state_whole is not None:
            self.state_stream = None
            self.state, repeats = self.state_whole()
            self.notices[self.state_notice_at:self.state_notice_at] = repeats

    @property
    def subjects(self) -> list[Document]:
        """What a command evaluates and what triggers generation: the -r manifests when -r was given (even
        when all of them turned out to be policies: the state is never evaluated in their place), else the
        objects of the state. The one rule for every command and every policy kind."""
        return self.resources if self.resources_named else self.state.objects


class InputSource(Protocol):
    """Where a run's inputs come from."""

    def read(self) -> Inputs:
        """Load everything; raise KyrecError (InputError, UsageError) on bad input."""


def _docs(paths: Sequence[str]) -> list[Document]:
    from kubectl_kyrec.load.documents import load_documents

    return load_documents(list(paths), stdin=sys.stdin) if paths else []


@dataclass(frozen=True)
class FileSource:
    """Inputs named on the command line: files, directories, '-' for stdin."""

    policy_paths: Sequence[str] = ()
    resource_paths: Sequence[str] = ()
    exception_paths: Sequence[str] = ()
    state_paths: Sequence[str] = ()
    crd_paths: Sequence[str] = ()
    values_path: str | None = None
    context_path: str | None = None
    kustomize_dirs: Sequence[str] = ()          # -k: kustomizations, rendered (load/kustomize.py)
    # the policies' schema check (load/schema): always on for files; the commands hand in the CEL layer's
    # evaluator of the CRDs' x-kubernetes-validations (cel/schema_rules.py)
    schema: SchemaCheck = SchemaCheck()
    # documents of the policy paths that are no policies are passed over, even in files named explicitly, and
    # a run may find no policy at all (`lint --skip-non-policies`, as a pre-commit hook runs it)
    skip_non_policies: bool = False
    # eval's table (issue 36): the -r documents are read as the run consumes them (Inputs.resource_stream)
    # when every one is plainly of a kind nothing else in the run reads (`_streamable`)
    stream_resources: bool = False
    # where the state's first pass may read half of a large file in another process meanwhile (a command
    # running with workers hands evaluate/fan_out.py call_beside in: load/run_inputs/state.py peek_state)
    beside: Beside | None = None

    def _resource_docs(self) -> tuple[list[Document], list[Notice]]:
        """The -r documents, then the objects each -k kustomization renders, and a notice per -r directory
        holding kyrec's own outputs (passed over). A path that holds none (an empty file or directory, empty
        stdin, only comments and `---`) is an input error: an empty kustomize or Helm render would otherwise
        pass every check."""
        from kubectl_kyrec.load.documents import load_manifests

        docs: list[Document] = []
        notices: list[Notice] = []
        for path in self.resource_paths:
            found, outputs = load_manifests(path, stdin=sys.stdin)
            if outputs:
                notices.append(Notice(f"passed over {len(outputs)} of kyrec's own output file(s) below "
                                      f"-r {path}, which are no manifests: {', '.join(outputs)}"))
            if not found:
                raise InputError(f"no resources in {_named([path])} (0 documents): nothing would be checked")
            docs.extend(found)
        for directory in self.kustomize_dirs:
            from kubectl_kyrec.load import kustomize
            from kubectl_kyrec.load.documents import documents_from_text

            found = kustomize.locate(directory, documents_from_text(kustomize.render(directory),
                                                                    kustomize.stream_name(directory)))
            if not found:
                raise InputError(f"no resources in -k {directory} (0 documents): nothing would be checked")
            docs.extend(found)
        return docs, notices

    def read_state(self) -> ClusterState:
        from kubectl_kyrec.load.run_inputs.state import read_state

        return read_state(list(self.state_paths)) if self.state_paths else ClusterState()

    def read(self) -> Inputs:
        from kubectl_kyrec.load.documents import load_policy_documents
        from kubectl_kyrec.load.run_inputs.kinds import KindTable

        if sum(1 for paths in (self.policy_paths, self.resource_paths, self.exception_paths, self.crd_paths)
               for p in paths if p == "-") > 1:
            raise UsageError("only one input can be read from stdin ('-')")
        named = [*self.policy_paths, *self.exception_paths]
        files = load_policy_documents(named, is_policy_document, stdin=sys.stdin, pass_over=self.skip_non_policies)
        lines = {item.document.source: item.lines for item in files.documents}
        peeked = _streamable(self.resource_paths, self.kustomize_dirs) if self.stream_resources else None
        streamed = peeked is not None
        resource_docs, output_notices = ([], []) if streamed else self._resource_docs()
        state_stream = self._peek_state([item.document for item in files.documents]) \
            if self.stream_resources and not (self.resource_paths or self.kustomize_dirs) else None
        state = state_stream.state if state_stream is not None else self.read_state()
        kinds = KindTable()
        for doc in [*_docs(self.crd_paths), *state.objects, *resource_docs]:
            if doc.kind == "CustomResourceDefinition" and doc.api_version.startswith("apiextensions.k8s.io/"):
                kinds.add_crd(doc.obj, source=doc.source)
        # the same object twice (in one file or across several): the first counts, as in `kyverno test`
        def namespaced(doc: Document) -> bool | None:
            return kinds.is_namespaced(doc.api_version, doc.kind)

        # manifests given with -r may carry policies too (a directory of everything): sorted out beside -p's
        named_docs = [item.document for item in files.documents]
        manifest_policies = [d for d in resource_docs if is_policy_document(d)]
        kept, policy_repeats = first_of_each([*named_docs, *manifest_policies], namespaced, what="policy document",
                                             why=POLICY_RULE)
        once = {id(d) for d in kept}
        policies = classify([d for d in named_docs if id(d) in once], lines, schema=self.schema)
        # -r is read without field lines (a large manifest set pays nothing); a refused policy's are read
        policies.extend(classify([d for d in manifest_policies if id(d) in once], schema=self.schema)
                        .read_error_lines())
        resources, notices = first_of_each([doc for doc in resource_docs if not is_policy_document(doc)], namespaced)
        if (self.resource_paths or self.kustomize_dirs) and not resources and not streamed:
            # a directory of everything (policies and manifests) whose manifests are missing: nothing is checked
            count = f"{len(resource_docs)} document{'s' if len(resource_docs) > 1 else ''}"
            raise InputError(f"no resources in {_named([*self.resource_paths, *self.kustomize_dirs])} ({count}, all "
                             "policies): nothing would be checked")
        notices[:0] = policy_repeats
        # state files that overlap (two captures of one cluster) follow the same rule
        state, state_repeats = state.first_of_each(namespaced)
        state_at = len(notices)
        if state_stream is None:
            notices.extend(state_repeats)       # else the stream's (its kept objects' repeats are among them)
        passed_over = []
        if files.skipped:
            where = "of the files" if self.skip_non_policies else "below the -p directories"
            passed_over.append(Notice(f"passed over {files.skipped} document(s) {where} that are "
                                      f"not policies: {', '.join(sorted(files.skipped_kinds))}"))
        skipped = sorted({f"{d.api_version}/{d.kind}" for d in policies.others})
        if skipped:
            passed_over.append(Notice(f"passed over {len(policies.others)} document(s) of kinds kyrec does not "
                                      f"evaluate as policies: {', '.join(skipped)}"))
        notices.extend(passed_over)
        notices.extend(output_notices)
        values = parse_values(_docs([self.values_path])) if self.values_path else Values()
        context = None
        if self.context_path:
            ctx_docs = _docs([self.context_path])
            if len(ctx_docs) != 1 or ctx_docs[0].kind != "Context":
                found = f"{len(ctx_docs)} documents" if len(ctx_docs) != 1 else f"a {ctx_docs[0].kind}"
                raise InputError(f"--context-file: expected one cli.kyverno.io/v1alpha1 Context document, found "
                                 f"{found}", ctx_docs[0].source if ctx_docs else Source(self.context_path))
            context = ctx_docs[0].obj
        from kubectl_kyrec.load.run_inputs.secret_digests import secret_digest_notice

        digests = secret_digest_notice(policies, state)
        if digests:
            notices.append(Notice(digests))
        if self.policy_paths and not policies.has_policies and not self.skip_non_policies:
            raise InputError(f"no policy found in {', '.join(self.policy_paths)}"
                             + "".join(f" ({n})" for n in passed_over))
        # where the whole read puts the -r repeats and the passed-over outputs among the notices
        at = (len(policy_repeats), len(notices) - (1 if digests else 0))
        inputs = Inputs(policies, resources, state, values, kinds, context, notices,
                        resources_named=bool(self.resource_paths or self.kustomize_dirs),
                        resource_stream=self._stream(namespaced, notices, at) if streamed else None,
                        resource_count=peeked or 0)
        if state_stream is not None:
            inputs.state_stream = self._state_objects(state_stream.objects(), namespaced, notices, state_at)
            inputs.state_whole = lambda: self.read_state().first_of_each(namespaced)
            inputs.state_notice_at = state_at
            inputs.resource_count = state_stream.count
        return inputs

    def _peek_state(self, named: Sequence[Document]) -> StateStream | None:
        """The state read as it is evaluated (load/run_inputs/state.py peek_state), when -p is given (else the
        policies are the state's) and its policies look up only resources they name (`_looked_up`); the objects
        kept whole: Namespaces (namespaceObject, namespace selectors), CustomResourceDefinitions (the kinds),
        policies and exceptions, and the kinds looked up. None: the state is read whole. (A run that generates
        reads it whole too: run/eval.py materializes it before anything is built over it.)"""
        from kubectl_kyrec.load.run_inputs.kinds import KindTable, guess_plural
        from kubectl_kyrec.load.run_inputs.state import peek_state

        looked_up = _looked_up([d.obj for d in named]) if self.state_paths and self.policy_paths else None
        if looked_up is None:
            return None
        builtin = KindTable()

        def keep(api_version: str, kind: str) -> bool:
            if kind == "Namespace" or is_policy_kind(api_version, kind) or (
                    kind == "CustomResourceDefinition" and api_version.startswith("apiextensions.k8s.io/")):
                return True
            # a kind a policy looks up, named by its resource whatever the group (keeping too many costs memory only)
            info = builtin.by_kind(api_version, kind)
            return bool(looked_up) and bool({kind.lower(), guess_plural(kind).lower(),
                                             info.resource if info is not None else ""} & looked_up)

        return peek_state(list(self.state_paths), keep, self.beside)

    @staticmethod
    def _state_objects(objects: Iterator[Document], namespaced: Any, notices: list[Notice], at: int
                       ) -> Iterator[Document]:
        """The state's objects read again one at a time, repeats passed over as `ClusterState.first_of_each`
        passes them; once all are read, its notice is put among `notices` where the whole read puts it."""
        repeats: list[Notice] = []
        yield from each_once(objects, repeats, namespaced)
        notices[at:at] = repeats_notice(repeats)

    def _stream(self, namespaced: Any, notices: list[Notice], at: tuple[int, int]) -> Iterator[Document]:
        """The -r documents of `_resource_docs`, read one at a time (load/documents.py iter_manifests),
        repeats passed over as `first_of_each` passes them (only their keys kept); once all are read, the
        notices are put among `notices` where the whole read puts them (`at`)."""
        from kubectl_kyrec.load.documents import iter_manifests

        outputs: list[str] = []
        output_notices: list[Notice] = []

        def of_path(path: str) -> Iterator[Document]:
            count = len(outputs)
            found = 0
            for doc in iter_manifests(path, stdin=sys.stdin, passed_over=outputs):
                found += 1
                yield doc
            if len(outputs) > count:
                output_notices.append(Notice(f"passed over {len(outputs) - count} of kyrec's own output file(s) "
                                             f"below -r {path}, which are no manifests: {', '.join(outputs[count:])}"))
            if not found:
                raise InputError(f"no resources in {_named([path])} (0 documents): nothing would be checked")

        repeats: list[Notice] = []
        yield from each_once((doc for path in self.resource_paths for doc in of_path(path)), repeats, namespaced)
        notices[at[1]:at[1]] = output_notices
        notices[at[0]:at[0]] = repeats


def _streamable(resource_paths: Sequence[str], kustomize_dirs: Sequence[str]) -> int | None:
    """How many documents the -r files hold, when they can be read as they are evaluated (else None): files
    (not stdin, no -k) whose documents are each plainly of a kind (load/yaml_peek.py, looked at a piece at a
    time) that no stage reads before the evaluation: no policy or exception (the run's policies), no
    CustomResourceDefinition (the kinds), no Namespace (namespaceObject, namespace selectors), no List (its
    items are not looked at), and at least one per path (an empty one is an input error, which the whole read
    raises before anything is evaluated)."""
    from kubectl_kyrec.load.files import STDIN, expand_paths
    from kubectl_kyrec.load.yaml_peek import plain_stream_kinds

    if kustomize_dirs or not resource_paths or STDIN in resource_paths:
        return None
    count = 0
    for given in resource_paths:
        kinds: dict[tuple[str, str], int] = {}
        try:
            for path in expand_paths([given]):
                with open(path, "rb") as stream:
                    found = plain_stream_kinds(stream)
                if found is None:
                    return None
                kinds.update((kind, kinds.get(kind, 0) + n) for kind, n in found.items())
        except (OSError, InputError):
            return None         # the whole read says why
        if not kinds or any(kind.endswith("List") or kind in ("Namespace", "CustomResourceDefinition")
                            or is_policy_kind(api_version, kind) for api_version, kind in kinds):
            return None
        count += sum(kinds.values())
    return count


# what a policy may look objects up with, beyond its subject and the Namespaces: CEL's resource library and global
# context (kyverno pkg/cel/libs/resource, globalcontext), a classic rule's context entries (apiCall,
# configMap, globalReference), mutate-existing targets and generate clones, a ValidatingAdmissionPolicy's params
_LOOKUP = re.compile(r"(?<![\w.])(?:resource|globalContext)\s*\.|\b(?:apiCall|configMap|globalReference|targets|clone"
                     r"|cloneList|paramKind|paramRef)\b")
# a resource library call that names its resource in literals: resource.Get("v1", "configmaps", ...), List alike
_NAMED_LOOKUP = re.compile(r"""resource\s*\.\s*(?:Get|List|get|list)\s*\(\s*(["'])[\w./-]*\1\s*,\s*(["'])([\w.-]+)\2""")


def strings_in(value: Any) -> Iterator[str]:
    """Every string of a decoded document, keys included, depth first: where a policy may name what it reads."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def _looked_up(policies: Sequence[Any]) -> set[str] | None:
    """The resources (plural names) the policy documents look up by name (`_NAMED_LOOKUP`), or None when any
    of them may look up something else (`_LOOKUP` found where no such call is, in a key or a string): the
    state's objects of every kind must then stay whole. Naming one where none is used costs only the stream."""
    found: set[str] = set()
    for policy in policies:
        for text in strings_in(policy):
            for match in _LOOKUP.finditer(text):
                named = _NAMED_LOOKUP.match(text, match.start())
                if named is None:
                    return None
                found.add(named.group(3).lower())
    return found


def _named(paths: Sequence[str]) -> str:
    from kubectl_kyrec.load.files import STDIN

    return ", ".join("standard input" if p == STDIN else p for p in paths)
