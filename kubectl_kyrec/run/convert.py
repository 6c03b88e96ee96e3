"""`convert`: ClusterPolicies/Policies -> CEL policies (convert/), and the proof that they decide the same.

Verification evaluates the original and the converted policies with kyrec's own engines (eval's one path,
run/eval.py) on the given resources and on variants made from them: each label removed, the namespace
changed, each leaf field under `spec` (and `metadata.labels`/`annotations`) removed or changed. A subject's
verdict is `fail`, `error` or `pass`; a skipped rule and a policy that does not match count as `pass`, since
both admit the resource and Kyverno reports neither as a violation (docs/convert.md)."""

from __future__ import annotations

import copy
import datetime
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from kubectl_kyrec.convert.cleanup import CLEANUP_KINDS
from kubectl_kyrec.convert.policy import Conversion, convert_policy, header
from kubectl_kyrec.errors import ExitCode, FailedRead, InputError
from kubectl_kyrec.k8s.list_keys import required_item_key
from kubectl_kyrec.load.policy.policies import is_policy_kind
from kubectl_kyrec.model import UNDETERMINED, Result

if TYPE_CHECKING:
    from kubectl_kyrec.cluster.live_source import LiveSource
    from kubectl_kyrec.load.run_inputs.sources import Inputs, InputSource

CONVERTED_KINDS = ("ClusterPolicy", "Policy", *CLEANUP_KINDS, "PolicyException")
# variants per resource: enough to reach every leaf of a Pod spec, few enough for a corpus run
MAX_VARIANTS = 40
# the time both sides are evaluated at (time.now(), exception expiry, a signing certificate's validity)
VERIFY_NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


@dataclass
class Difference:
    policy: str
    subject: str                  # kind/namespace/name of the (variant) resource
    variant: str                  # what was changed: "as given", "removed spec.x", ...
    original: str
    converted: str
    original_message: str = ""
    converted_message: str = ""
    mutation: str = ""            # for a difference in the mutated object: the first path where they differ
    downstream: str = ""          # for a difference in what a trigger generates: the first path where they differ
    undecided: bool = False       # both sides undetermined (no registry, ...): no difference, and no proof

    @property
    def verdict(self) -> bool:
        """A difference in what the policies decide: the verdict, or the object a mutation leaves."""
        return self.original != self.converted

    def line(self) -> str:
        if self.undecided:
            return (f"{self.policy}: {self.subject} ({self.variant}): undetermined on both sides, not verified: "
                    f"{self.original_message}")
        if self.downstream:
            return (f"{self.policy}: {self.subject} ({self.variant}): generated downstreams differ at "
                    f"{self.downstream}: original {self.original}, converted {self.converted}")
        if self.mutation:
            return (f"{self.policy}: {self.subject} ({self.variant}): mutated object differs at {self.mutation}: "
                    f"original {self.original}, converted {self.converted}")
        if self.verdict:
            return (f"{self.policy}: {self.subject} ({self.variant}): original {self.original}, converted "
                    f"{self.converted}")
        return (f"{self.policy}: {self.subject} ({self.variant}): message differs: original "
                f"{self.original_message!r}, converted {self.converted_message!r}")


@dataclass
class ConvertResult:
    conversions: list[Conversion]
    written: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    subjects: int = 0             # subjects compared per policy, summed
    suites_written: list[str] = field(default_factory=list)
    suite_refusals: list[str] = field(default_factory=list)   # `<suite file>: <field>: <why>`
    suite_differences: list[str] = field(default_factory=list)  # rows a written suite could not state
    # `--live`: the LISTs that failed; the subjects are then a partial picture, and the run exits 5
    failed_reads: list[FailedRead] = field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        from kubectl_kyrec.run.unreadable import with_failed_reads

        if (any(c.refusals for c in self.conversions) or any(d.verdict for d in self.differences)
                or self.suite_refusals):
            return with_failed_reads(ExitCode.FINDINGS, self.failed_reads)
        return with_failed_reads(ExitCode.CLEAN, self.failed_reads)


def _documents(paths: Sequence[str], skip_hidden: bool = False) -> Iterator[tuple[dict[str, Any], str]]:
    """Every mapping document with a kind below the paths (others, like artifacthub-pkg.yml, passed over),
    with `file:line`; YAML that does not parse is an input error at its line."""
    from kubectl_kyrec.load.files import expand_paths

    for name in expand_paths(list(paths), skip_hidden=skip_hidden):
        try:
            with open(name) as f:
                loaded = list(yaml.compose_all(f))
            with open(name) as f:
                values = list(yaml.safe_load_all(f))
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            raise InputError(f"{name}:{mark.line + 1 if mark else 1}: {getattr(err, 'problem', err)}") from None
        for node, value in zip(loaded, values):
            if isinstance(value, dict) and value.get("kind"):
                yield value, f"{name}:{node.start_mark.line + 1 if node is not None else 1}"


def read_policies(paths: Sequence[str]) -> list[tuple[dict[str, Any], str]]:
    """Every ClusterPolicy/Policy, ClusterCleanupPolicy/CleanupPolicy and PolicyException (kyverno.io/v2) below
    the paths, with `file:line`."""
    found = _documents(paths, skip_hidden=True)
    out = [(doc, where) for doc, where in found if doc.get("kind") in CONVERTED_KINDS
           and str(doc.get("apiVersion", "")).startswith("kyverno.io/")]
    if not out:
        raise InputError(f"no {', '.join(CONVERTED_KINDS)} in {', '.join(paths)}")
    return out


def run_convert(paths: Sequence[str], out_dir: str | None, resource_paths: Sequence[str] = (),
                state_paths: Sequence[str] = (), crd_paths: Sequence[str] = (), registry: Any = None,
                live: LiveSource | None = None) -> ConvertResult:
    """`crd_paths`: CustomResourceDefinitions, so that rules on their kinds name the right resources (the
    plural is the CRD's own; guessing it would match nothing, or another resource). `registry`: `--registry`
    (load.registry.Registry): both sides verify images against the registries (verifyImages rules and their
    ImageValidatingPolicies); None: offline, where such verdicts are undetermined. `live`: verify on the
    cluster it reads (`--verify --live`, verify_on_live)."""
    from kubectl_kyrec.load.run_inputs.kinds import KindTable

    if live is not None:
        return verify_on_live(live, paths, lambda read: run_convert(paths, out_dir, resource_paths,
                                                                    [*state_paths, read], crd_paths, registry))
    policies = read_policies(paths)
    kinds = KindTable()
    crd_docs = [(d, w) for d, w in _documents(crd_paths) if d.get("kind") == "CustomResourceDefinition"]
    crds = [d for d, _ in crd_docs]
    for crd, where in crd_docs:
        try:
            kinds.add_crd(crd)
        except InputError as err:
            raise InputError(f"{where}: {err.message}") from None
    result = ConvertResult([compile_check(convert_policy(doc, kinds)) if doc.get("kind") != "PolicyException"
                            else Conversion(str((doc.get("metadata") or {}).get("name", "")), "PolicyException")
                            for doc, _ in policies])
    if out_dir is not None:
        _refuse_shared_targets(policies, result.conversions)
    # exceptions convert with the policies they name: their policyRefs are the conversions' names
    by_key = {_policy_key(doc): conv for (doc, _), conv in zip(policies, result.conversions)
              if doc.get("kind") != "PolicyException"}
    originals = {_policy_key(doc): doc for doc, _ in policies if doc.get("kind") != "PolicyException"}
    refers: dict[int, list[str]] = {}
    for i, ((doc, _), conv) in enumerate(zip(policies, result.conversions)):
        if doc.get("kind") == "PolicyException":
            refers[i] = _convert_exception(doc, conv, by_key)
    if out_dir is not None:
        _refuse_shared_targets(policies, result.conversions)    # an exception of a policy's name
        for i, keys in refers.items():
            lost = [key for key in keys if not by_key[key].documents]
            if lost and result.conversions[i].documents:
                result.conversions[i].refusals.append(f"spec.exceptions: the policies {lost} it names are not "
                                                      "written")
                result.conversions[i].documents = []
    for (_, where), conv in zip(policies, result.conversions):
        if not conv.documents or out_dir is None:
            continue
        os.makedirs(out_dir, exist_ok=True)
        target = os.path.join(out_dir, f"{conv.name}.yaml")
        with open(target, "w") as f:
            f.write(header(conv, where))
            f.write(yaml.dump_all(conv.documents, Dumper=_PlainDumper, sort_keys=False, width=120))
        result.written.append(target)
    if out_dir is not None:
        _convert_suites(paths, out_dir, policies, result)
    if resource_paths or state_paths:
        if state_paths:
            from kubectl_kyrec.load.run_inputs.state import read_state
            from kubectl_kyrec.run.unreadable import failed_reads

            # a capture's record of the LISTs that failed: the verdicts on what it holds are partial, so the
            # run says so and exits 5 as eval on the same capture does (a live run's reads arrive here too)
            result.failed_reads = failed_reads(read_state(state_paths))
        resources = _resources(resource_paths, state_paths)
        for i, ((doc, _), conv) in enumerate(zip(policies, result.conversions)):
            if conv.documents and i in refers:
                # the exception beside each policy it names, on both sides: a verdict differs where the two
                # exceptions exempt different subjects (each policy's own conversion is verified alone)
                for key in refers[i]:
                    diffs, count = verify(originals[key], by_key[key].documents, resources, crds,
                                          extra=([doc], conv.documents), label=f"{conv.name} (exception) on {key}",
                                          state_paths=state_paths, registry=registry)
                    result.differences.extend(diffs)
                    result.subjects += count
            elif conv.documents:
                diffs, count = verify(doc, conv.documents, resources, crds, state_paths=state_paths,
                                      registry=registry)
                result.differences.extend(diffs)
                result.subjects += count
    return result


def verify_on_live(live: LiveSource, paths: Sequence[str], convert: Callable[[str], ConvertResult]) -> ConvertResult:
    """`--verify --live`: the cluster read as `eval --live` reads it (cluster/live_source.py: the kinds the
    policies match and those their context entries look up), written as `capture` writes a state and handed
    to `convert` as a `--state` file: the objects read are the subjects and the cluster both sides look up,
    on the one path a capture of the same cluster takes, so the source cannot change the answer. Read
    before anything is converted or written: a connection that fails ends the run (exit 5) with nothing
    written. The LISTs that failed are the result's (exit 5 after the differences found on what was read)."""
    from kubectl_kyrec.run.capture_state import capture_document
    from kubectl_kyrec.run.unreadable import failed_reads

    # the read plan takes the kinds eval's policies match (live.files); cleanup policies are none of eval's,
    # so the kinds they match are named to it, as `--kind` names kinds (ReadNeeds.kinds)
    cleanup = [str(kind).rsplit("/", 1)[-1] for doc, _ in read_policies(paths) if doc.get("kind") in CLEANUP_KINDS
               for block in _match_blocks(doc) for kind in (block.get("resources") or {}).get("kinds") or []]
    live.kinds = (*live.kinds, *dict.fromkeys(k for k in cleanup if k != "*"))
    state = live.read().state
    # Secret values as read, unlike a kept capture: a policy may read them; the file lives as long as the run
    with tempfile.TemporaryDirectory(prefix="kyrec-convert-live-") as workdir:
        path = os.path.join(workdir, "live-state.json")
        with open(path, "w") as f:
            json.dump(capture_document(state), f)
        result = convert(path)
    result.failed_reads = failed_reads(state)
    return result


def _match_blocks(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """A cleanup policy's `spec.match` and its `any`/`all` filters."""
    match = (doc.get("spec") or {}).get("match") or {}
    blocks = [match, *(match.get("any") or []), *(match.get("all") or [])] if isinstance(match, dict) else []
    return [b for b in blocks if isinstance(b, dict)]


def _refuse_shared_targets(policies: list[tuple[dict[str, Any], str]], conversions: list[Conversion]) -> None:
    """Two conversions of one name would write one DIR/<name>.yaml (a ClusterPolicy and a Policy, Policies in
    two namespaces, a policy and an exception): the later would overwrite the earlier, and a test suite of the
    one would test the other. Neither is written; each is refused naming the other. Each is a valid policy
    with no file of its own, so this is a conversion refused (exit 1), not bad input (exit 3)."""
    held: dict[str, list[int]] = {}
    for i, conv in enumerate(conversions):
        if conv.documents:
            held.setdefault(conv.name, []).append(i)
    for name, indexes in held.items():
        if len(indexes) < 2:
            continue
        for i in indexes:
            others = ", ".join(f"{conversions[j].kind} {name!r} ({policies[j][1]})" for j in indexes if j != i)
            conversions[i].refusals.append(f"metadata.name: {name}.yaml would also hold {others}; neither is written "
                                           "(one name, one output file)")
            conversions[i].documents = []


def _policy_key(doc: dict[str, Any]) -> str:
    """How an exception names a policy: `name`, `ns/name` for a namespaced Policy (kk: Exception.Contains)."""
    meta = doc.get("metadata") or {}
    name = str(meta.get("name", ""))
    return f"{meta.get('namespace')}/{name}" if doc.get("kind") == "Policy" and meta.get("namespace") else name


def _convert_exception(doc: dict[str, Any], conv: Conversion, by_key: dict[str, Conversion]) -> list[str]:
    """Fill `conv` with the exception's conversion (convert/exception.py), checked to load with its policies;
    -> the keys of the policies it names."""
    from kubectl_kyrec.convert.cel_text import Unconvertible
    from kubectl_kyrec.convert.exception import convert_exception

    try:
        conv.documents, keys = convert_exception(doc, by_key)
    except Unconvertible as err:
        conv.refusals.append(str(err))
        return []
    checked = compile_check(Conversion(conv.name, conv.kind, documents=[
        *(d for key in keys for d in by_key[key].documents), *conv.documents]))
    if checked.refusals:
        conv.refusals.extend(checked.refusals)
        conv.documents = []
        return []
    return keys


def _convert_suites(paths: Sequence[str], out_dir: str, policies: list[tuple[dict[str, Any], str]],
                    result: ConvertResult) -> None:
    """Every kyverno-test.yaml below a directory of -p, written to the same place below DIR with its policy
    files, names and kinds those of the conversions (convert/suite.py); a suite that cannot be converted is
    not written, and its refusal names the field."""
    from kubectl_kyrec.convert.cel_text import Unconvertible
    from kubectl_kyrec.convert.suite import Converted, convert_suite
    from kubectl_kyrec.testsuite.suite import find_test_files

    written: dict[str, list[Converted]] = {}
    refused: set[str] = set()
    for (_, where), conv in zip(policies, result.conversions):
        source = os.path.normpath(os.path.abspath(where.rsplit(":", 1)[0]))
        if conv.refusals:
            refused.add(source)
        else:
            target = os.path.abspath(os.path.join(out_dir, f"{conv.name}.yaml"))
            written.setdefault(source, []).append(Converted(target, conv.name, conv.rule_policies, conv.rule_skips))
    files = {k: v for k, v in written.items() if k not in refused}

    def read_values(path: str) -> Any:
        with open(path) as f:
            return yaml.safe_load(f)

    for root in (p for p in paths if os.path.isdir(p)):
        for suite_file in find_test_files([root]):
            old_dir = os.path.dirname(os.path.abspath(suite_file))
            new_dir = os.path.join(os.path.abspath(out_dir), os.path.relpath(old_dir, os.path.abspath(root)))
            try:
                with open(suite_file) as f:
                    suites = [d for d in yaml.safe_load_all(f) if d is not None]
                if len(suites) != 1 or not isinstance(suites[0], dict) or suites[0].get("kind") != "Test":
                    raise Unconvertible("kind", "expected one Test document")
                converted, differences = convert_suite(suites[0], old_dir, new_dir, files, read_values)
            except Unconvertible as err:
                result.suite_refusals.append(f"{suite_file}: {err}")
                continue
            except yaml.YAMLError as err:
                raise InputError(f"{suite_file}:1: {err}") from None
            os.makedirs(new_dir, exist_ok=True)
            target = os.path.join(new_dir, os.path.basename(suite_file))
            with open(target, "w") as f:
                f.write(f"# converted by kubectl kyrec convert from {suite_file}\n")
                f.write("".join(f"# difference: {d}\n" for d in differences))
                f.write(yaml.dump(converted, Dumper=_PlainDumper, sort_keys=False, width=120))
            result.suites_written.append(target)
            result.suite_differences.extend(f"{target}: {d}" for d in differences)


class _PlainDumper(yaml.SafeDumper):
    """No `&id001` anchors where two fields share a list: every policy reads as written out."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def compile_check(conv: Conversion) -> Conversion:
    """A conversion kyrec's own loader refuses (a CEL text its parser or checker rejects) is not written:
    its refusal says why. Checked by evaluating it once, on a Pod, through eval's one path."""
    if not conv.documents:
        return conv
    probe = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "namespace": "default"},
             "spec": {"containers": [{"name": "c", "image": "i"}]}}
    try:
        with tempfile.TemporaryDirectory(prefix="kyrec-convert-") as workdir:
            _verdicts(conv.documents, [probe], workdir, "check")
    except InputError as err:
        conv.refusals.append(f"the converted CEL does not load in kyrec: {err}")
        conv.documents = []
    return conv


def _resources(resource_paths: Sequence[str], state_paths: Sequence[str]) -> list[dict[str, Any]]:
    """The objects to verify on: policies are what is compared, never subjects, whether they sit beside the
    manifests, in a List or among a captured state's items (varied, they would be loaded as policies)."""
    out: list[dict[str, Any]] = []
    for doc, _ in _documents([*resource_paths, *state_paths]):
        items = doc.get("items") if str(doc.get("kind")).endswith("List") else None
        out.extend(item for item in (items if isinstance(items, list) else [doc])
                   if isinstance(item, dict) and not _policy_or_suite(item))
    return out


def _policy_or_suite(doc: dict[str, Any]) -> bool:
    api_version = str(doc.get("apiVersion", ""))
    return api_version.startswith(("cli.kyverno.io", "kyverno.io", "policies.kyverno.io")) \
        or is_policy_kind(api_version, str(doc.get("kind", "")))


def _leaves(value: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*path, str(k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, str(i)))
    else:
        yield path, value


def _apply(obj: dict[str, Any], path: tuple[str, ...], change: Any, remove: bool) -> None:
    node: Any = obj
    for step in path[:-1]:
        node = node[int(step)] if isinstance(node, list) else node[step]
    last = path[-1]
    if isinstance(node, list):
        if remove:
            del node[int(last)]
        else:
            node[int(last)] = change
    elif remove:
        del node[last]
    else:
        node[last] = change


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1 if value < 1000 else 0
    if isinstance(value, float):
        return value * 2 + 1
    if isinstance(value, str):
        return "kyrec-changed" if value != "kyrec-changed" else "x"
    return "kyrec-changed"


def variants(resource: dict[str, Any], refused: list[str] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """The resource as given, then the variants (each a new name, so that every one is its own subject): the
    namespace changed, each label, annotation and leaf under `spec` removed and changed, then each string leaf
    under `spec` made a wildcard that matches it.
    A variant the API server refuses for a reason of its own is not made: a keyed list's item without the key
    validation requires (a container without `name`, a Service port without `port`) is refused by the object's
    validation, before validating webhooks (Kyverno never validates it; what its mutating webhook makes of it
    is refused in turn, unless a mutation adds the key), and no stored object is one (k8s/list_keys.py
    required_item_key). Its label goes to `refused`, when given, so that a report can count it."""
    yield "as given", resource
    kind = str(resource.get("kind", ""))
    made: list[tuple[str, dict[str, Any]]] = []
    meta = resource.get("metadata") or {}
    if resource.get("kind") != "Namespace" and meta.get("namespace"):
        other = copy.deepcopy(resource)
        other["metadata"]["namespace"] = "kyrec-variant"
        made.append(("namespace changed", other))
    for root in ("spec", "metadata"):
        leaves = list(_leaves(resource.get(root), (root,)))
        for path, value in leaves:
            if root == "metadata" and path[:2] not in (("metadata", "labels"), ("metadata", "annotations")):
                continue
            for remove in (True, False):
                if not remove and value is None:
                    continue            # a null's change would be a string where a map or list belongs
                if remove and required_item_key(kind, path):
                    if refused is not None:
                        refused.append(f"removed {'.'.join(path)}")
                    continue
                other = copy.deepcopy(resource)
                try:
                    _apply(other, path, _changed(value), remove)
                except (KeyError, IndexError, TypeError):
                    continue
                made.append((f"{'removed' if remove else 'changed'} {'.'.join(path)}", other))
    # after the others (they fill what the cap leaves): each string leaf under `spec` as a wildcard matching it
    # (`nginx` -> `ngin*`), which Kyverno's operators read as a pattern where a `{{ }}` value brings it
    for path, value in _leaves(resource.get("spec"), ("spec",)):
        if isinstance(value, str) and len(value) > 1 and not any(c in value for c in "*?"):
            other = copy.deepcopy(resource)
            _apply(other, path, value[:-1] + "*", False)
            made.append((f"wildcard {'.'.join(path)}", other))
    for i, (what, other) in enumerate(made[:MAX_VARIANTS]):
        other.setdefault("metadata", {})
        other["metadata"]["name"] = f"{meta.get('name', 'x')}-v{i}"
        other["metadata"].pop("uid", None)
        yield what, other


def _verdicts(policy_docs: list[dict[str, Any]], resources: list[dict[str, Any]],
              workdir: str, tag: str, state_paths: Sequence[str] = (), reads: dict[str, Inputs] | None = None,
              registry: Any = None) -> dict[tuple[str, str, str], tuple[str, str]]:
    return aggregate(_run(policy_docs, resources, workdir, tag, mutate=False, state_paths=state_paths,
                          reads=reads, registry=registry).results)


# the labels Kyverno writes on a downstream to record who generated it: a ClusterPolicy's name its rule and
# the clone source, a GeneratingPolicy's its policy (evaluate/generating/downstreams.py, classic/generate_objects.py)
_OWNERSHIP_LABEL_PREFIXES = ("generate.kyverno.io/", "app.kubernetes.io/managed-by")
_GENERATE_STATUS = {"generated": "generated", "error": "error", "needs-request": "needs-request"}


def _downstreams(policy_docs: list[dict[str, Any]], resources: list[dict[str, Any]],
                 workdir: str, tag: str, state_paths: Sequence[str] = (), reads: dict[str, Inputs] | None = None
                 ) -> dict[tuple[str, str, str], Any]:
    """(kind, namespace, name) of each trigger -> what its policies generate: the status (`generated`,
    `error`, ...; no match and a false condition are `none`, both generate nothing) and the downstreams
    without Kyverno's ownership labels, which name the policy kind's own bookkeeping."""
    result = _run(policy_docs, resources, workdir, tag, mutate=False, state_paths=state_paths, reads=reads)
    out: dict[tuple[str, str, str], Any] = {}
    for outcome in result.generated.outcomes:
        ref = outcome.trigger.ref
        key = (ref.kind, ref.namespace, ref.name)
        status = _GENERATE_STATUS.get(str(outcome.status), "none")
        held = out.setdefault(key, {"status": "none", "objects": []})
        if status != "none" and held["status"] in ("none", "generated"):
            held["status"] = status
        held["objects"].extend(_unlabelled(obj) for obj in outcome.objects)
    for held in out.values():
        held["objects"].sort(key=lambda o: json.dumps(o, sort_keys=True))
    return out


def _unlabelled(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    meta = out.get("metadata") or {}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if not k.startswith(_OWNERSHIP_LABEL_PREFIXES)}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    return out


def _mutated(policy_docs: list[dict[str, Any]], resources: list[dict[str, Any]],
             workdir: str, tag: str, state_paths: Sequence[str] = (), reads: dict[str, Inputs] | None = None
             ) -> dict[tuple[str, str, str], Any]:
    """(kind, namespace, name) -> the object as admission stores it after the policies' mutations (eval's
    admission chain: the API server's defaults, then the mutations)."""
    result = _run(policy_docs, resources, workdir, tag, mutate=True, state_paths=state_paths, reads=reads)
    out: dict[tuple[str, str, str], Any] = {}
    for admission in result.admissions:
        ref = admission.subject.ref
        out[(ref.kind, ref.namespace, ref.name)] = (
            {"undetermined": list(admission.undetermined)} if admission.undetermined else admission.subject.obj)
    return out


class _ReadOnce:
    """A source read once per key of `reads`: the runs of one side of a comparison (its verdicts, mutations
    and downstreams) evaluate the same inputs, so they share its CEL environments (run/providers.py
    environments_for) and each expression of the side is compiled once."""

    def __init__(self, source: InputSource, reads: dict[str, Inputs], key: str) -> None:
        self._source, self._reads, self._key = source, reads, key

    def read(self) -> Inputs:
        if self._key not in self._reads:
            self._reads[self._key] = self._source.read()
        return self._reads[self._key]


def _run(policy_docs: list[dict[str, Any]], resources: list[dict[str, Any]], workdir: str, tag: str,
         mutate: bool, state_paths: Sequence[str] = (), reads: dict[str, Inputs] | None = None,
         registry: Any = None) -> Any:
    """eval of the documents on the resources; `state_paths`: the captured cluster both sides read (context
    entries, `resource.Get`/`List`); `reads`: the inputs already read, by tag (_ReadOnce); `registry`: the
    run's `--registry` (image verification on both sides)."""
    from kubectl_kyrec.load.run_inputs.sources import FileSource
    from kubectl_kyrec.run.eval import EvalRunOptions, run_eval

    policy_file = os.path.join(workdir, f"{tag}-policies.yaml")
    resource_file = os.path.join(workdir, "resources.yaml")
    with open(policy_file, "w") as f:
        yaml.safe_dump_all(policy_docs, f, sort_keys=False)
    if not os.path.exists(resource_file):
        with open(resource_file, "w") as f:
            yaml.safe_dump_all(resources, f, sort_keys=False)
    source: InputSource = FileSource(policy_paths=[policy_file], resource_paths=[resource_file],
                                     state_paths=list(state_paths))
    if reads is not None:
        source = _ReadOnce(source, reads, tag)
    result = run_eval(EvalRunOptions(now=VERIFY_NOW, mutate=mutate, registry=registry), source)
    if result.errors:
        raise InputError("; ".join(e.message for e in result.errors))
    return result


def aggregate(results: Sequence[Result]) -> dict[tuple[str, str, str], tuple[str, str]]:
    """(kind, namespace, name) -> (verdict, first failing message). `undetermined` (kyrec could not decide:
    a signature with no `--registry`, ...) is a verdict of its own, never a pass: a conversion is not shown
    to agree where one side was not decided."""
    out: dict[tuple[str, str, str], tuple[str, str]] = {}
    for r in results:
        key = (r.subject.kind, r.subject.namespace, r.subject.name)
        verdict = {"fail": "fail", "error": "error", UNDETERMINED: UNDETERMINED}.get(r.result, "pass")
        held = out.get(key, ("pass", ""))
        rank = {"pass": 0, UNDETERMINED: 1, "error": 2, "fail": 3}
        if rank[verdict] > rank[held[0]]:
            out[key] = (verdict, r.message)
        else:
            out.setdefault(key, held)
    return out


def _same_message(original: str, converted: str) -> bool:
    """The conversion's message is the rule's own: Kyverno adds `validation error: ... rule X failed at path
    /y/` around a pattern's, so the converted message need only be inside the original's (spaces folded)."""
    def fold(text: str) -> str:
        return " ".join(text.split())
    return fold(converted) in fold(original)


_ABSENT = "<absent>"


def _first_difference(a: Any, b: Any, path: str) -> tuple[str, Any, Any] | None:
    """The first JSON path where two objects differ, with both values there (`<absent>` for a missing key)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            found = _first_difference(a.get(k, _ABSENT), b.get(k, _ABSENT), f"{path}/{k}")
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            found = _first_difference(x, y, f"{path}/{i}")
            if found is not None:
                return found
        return None
    return None if a == b else (path, a, b)


def _at(found: dict[tuple[str, str, str], Any], key: tuple[str, str, str], default: Any) -> Any:
    """A subject's entry: eval puts a namespaced resource written without a namespace in `default`, as
    kubectl does, so its results are keyed there."""
    if key in found:
        return found[key]
    kind, namespace, name = key
    return found.get((kind, "default", name), default) if not namespace else default


def _verify_cleanup(name: str, original: dict[str, Any], converted: list[dict[str, Any]],
                    subjects: list[dict[str, Any]], what: dict[tuple[str, str, str], str],
                    crds: Sequence[dict[str, Any]]) -> list[Difference]:
    """Per subject, whether the cleanup controller's run would delete it (evaluate/classic/cleanup.py) and
    whether the converted DeletingPolicy's would (evaluate/deleting/engine.py, as `test` evaluates it): the
    verdict is `delete` or `keep` (not selected, a false condition and an error all keep the object)."""
    from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
    from kubectl_kyrec.cel.environment import Environments
    from kubectl_kyrec.cel.libraries import library_factory
    from kubectl_kyrec.evaluate.classic.cleanup import CleanupStatus, cleanup_decision
    from kubectl_kyrec.evaluate.deleting.engine import compile_deleting_policy, evaluate_object, subject_context
    from kubectl_kyrec.evaluate.namespaces import namespace_object, namespace_objects
    from kubectl_kyrec.evaluate.subjects import make_subject
    from kubectl_kyrec.load.policy.deleting import parse_deleting_policy
    from kubectl_kyrec.load.run_inputs.kinds import KindTable
    from kubectl_kyrec.model import Document, Source, group_version

    now = VERIFY_NOW
    envs = Environments(library_factory(LibraryContext(now=now, provider=EmptyProvider())))
    source = Source("<converted>")
    compiled = [compile_deleting_policy(parse_deleting_policy(Document(doc, source)), envs, (), now)
                for doc in converted]
    kinds = KindTable()
    for crd in crds:
        kinds.add_crd(crd)
    namespaces = namespace_objects([Document(s, source) for s in subjects], {})
    diffs: list[Difference] = []
    for obj in subjects:
        subject, _ = make_subject(obj, source, kinds)
        key = (subject.ref.kind, subject.ref.namespace, subject.ref.name)
        label = what.get(key) or what.get((key[0], "", key[2]))
        if label is None:
            continue
        ns = namespace_object(subject.ref.namespace, namespaces) if subject.namespaced else None
        labels = ((ns or {}).get("metadata") or {}).get("labels") or {} if ns is not None else None
        group, version = group_version(str(obj.get("apiVersion", "")))
        before = cleanup_decision(original, subject.obj, group, version, labels) == CleanupStatus.DELETE
        ctx = subject_context(subject, namespaces)
        # a NamespacedDeletingPolicy's run LISTs in its namespace only (evaluate/deleting/engine.py candidates)
        after = any(evaluate_object(cp, ctx).deletes for cp in compiled
                    if not cp.policy.namespaced or (subject.namespaced
                                                    and subject.ref.namespace == cp.policy.meta.namespace))
        if before != after:
            diffs.append(Difference(name, "/".join(p for p in key if p), label, "delete" if before else "keep",
                                    "delete" if after else "keep"))
    return diffs


def verify(original: dict[str, Any], converted: list[dict[str, Any]], resources: list[dict[str, Any]],
           crds: Sequence[dict[str, Any]] = (),
           extra: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], []),
           label: str = "", state_paths: Sequence[str] = (), registry: Any = None
           ) -> tuple[list[Difference], int]:
    """The differences between the original's and the conversion's verdicts on the resources and variants
    (`crds`: given to both evaluations, so that custom kinds are known; they are no subjects). `extra`:
    documents evaluated beside the original and beside the conversion (an exception and its conversion);
    `label` names the comparison in its differences (default: the policy's name). `state_paths`: captured
    states both evaluations read as the cluster (what context entries and the `resource` library answer).
    `registry`: `--registry`, the registries both sides verify images against."""
    name = label or str((original.get("metadata") or {}).get("name"))
    original_docs, converted = [original, *extra[0]], [*converted, *extra[1]]
    subjects: list[dict[str, Any]] = []
    what: dict[tuple[str, str, str], str] = {}
    for resource in resources:
        if not isinstance(resource, dict) or not resource.get("kind"):
            continue
        for label, variant in variants(resource):
            meta = variant.get("metadata") or {}
            key = (str(variant.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name") or ""))
            if key in what:
                continue
            what[key] = label
            subjects.append(variant)
    if not subjects:
        return [], 0
    if original.get("kind") in CLEANUP_KINDS:
        return _verify_cleanup(name, original, converted, subjects, what, crds), len(what)
    rules = (original.get("spec") or {}).get("rules") or []
    mutates = any(isinstance(r, dict) and r.get("mutate") for r in rules)
    generates = any(isinstance(r, dict) and r.get("generate") for r in rules)
    subjects += list(crds)
    # each side read once for its runs: its expressions compiled once (_ReadOnce)
    reads: dict[str, Inputs] = {}
    with tempfile.TemporaryDirectory(prefix="kyrec-convert-") as workdir:
        before = _verdicts(original_docs, subjects, workdir, "original", state_paths, reads, registry)
        after = _verdicts(converted, subjects, workdir, "converted", state_paths, reads, registry)
        if mutates:
            mutated_before = _mutated(original_docs, subjects, workdir, "original", state_paths, reads)
            mutated_after = _mutated(converted, subjects, workdir, "converted", state_paths, reads)
        if generates:
            generated_before = _downstreams(original_docs, subjects, workdir, "original", state_paths, reads)
            generated_after = _downstreams(converted, subjects, workdir, "converted", state_paths, reads)
    diffs = []
    if generates:
        nothing = {"status": "none", "objects": []}
        for key, label in what.items():
            where = _first_difference(_at(generated_before, key, nothing), _at(generated_after, key, nothing), "")
            if where is not None:
                path, a_value, b_value = where
                diffs.append(Difference(name, "/".join(p for p in key if p), label, json.dumps(a_value),
                                        json.dumps(b_value), downstream=path or "/"))
    if mutates:
        for key, label in what.items():
            where = _first_difference(_at(mutated_before, key, None), _at(mutated_after, key, None), "")
            if where is not None:
                path, a_value, b_value = where
                diffs.append(Difference(name, "/".join(p for p in key if p), label, json.dumps(a_value),
                                        json.dumps(b_value), mutation=path or "/"))
    for key, label in what.items():
        a = _at(before, key, ("pass", ""))
        b = _at(after, key, ("pass", ""))
        if a[0] == b[0] == UNDETERMINED:
            diffs.append(Difference(name, "/".join(p for p in key if p), label, a[0], b[0], a[1], b[1],
                                    undecided=True))
        elif a[0] != b[0] or (a[0] == "fail" and not _same_message(a[1], b[1])):
            diffs.append(Difference(name, "/".join(p for p in key if p), label, a[0], b[0], a[1], b[1]))
    return diffs, len(what)
