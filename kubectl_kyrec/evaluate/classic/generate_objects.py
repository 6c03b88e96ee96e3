"""Classic generate rules (ClusterPolicy / Policy `generate`): the downstreams Kyverno's background
controller writes for one trigger, rule by rule (docs/semantics/classic.md#generate).

kk: pkg/background/generate/controller.go ApplyGeneratePolicy (rule context, applyRules One), generator.go
generate/generateForeach (context, `generate.preconditions`, SubstituteAllInType over the pattern, then one
of clone / cloneList / data), clone.go manageClone/manageCloneList, data.go manageData, source.go (the
copy carries `clone-source: ""` and the source-* labels), common/labels.go ManageLabels.

Each (policy, generate rule, trigger) that matches gives one TriggerOutcome whose `policy` is a
ClassicGenerateRule: a GeneratingPolicy view of that one rule (its synchronize, generateExisting with the
rule's setting over the spec's, orphanDownstreamOnPolicyDelete, the spec's useServerSideApply), so eval,
its impact and the report checks list classic downstreams beside GeneratingPolicy ones unchanged.

What the objects are: the desired content, whatever the cluster holds at that identity. Whether Kyverno
would write it (create when absent; with sync off an existing target is skipped; with sync on it is
updated *without an ownership check*) is the diff's question (reconcile/classic_downstreams.py).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.evaluate.generating.downstreams import (
    LABEL_MANAGED_BY,
    LABEL_POLICY_NAME,
    LABEL_POLICY_NAMESPACE,
    LABEL_TRIGGER_GROUP,
    LABEL_TRIGGER_KIND,
    LABEL_TRIGGER_NAMESPACE,
    LABEL_TRIGGER_UID,
    LABEL_TRIGGER_VERSION,
    MANAGED_BY_KYVERNO,
    canonical_order,
    identity,
    normalize_numbers,
)
from kubectl_kyrec.evaluate.generating.engine import dedupe, generated_resources_property
from kubectl_kyrec.evaluate.generating.outcomes import UNREAD_LOOKUP, TriggerOutcome, TriggerStatus
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.evaluate.validating.engine import make_result
from kubectl_kyrec.k8s.labels import SelectorError, matches_selector
from kubectl_kyrec.load.policy.generating import GeneratingPolicy
from kubectl_kyrec.model import UNDETERMINED, Result, group_version

if TYPE_CHECKING:
    # annotations only: the classic model is loaded with the first ClusterPolicy (load/policy/policies.py)
    from kubectl_kyrec.load.policy.classic import ClassicPolicy, ClassicRule

LABEL_RULE_NAME = "generate.kyverno.io/rule-name"
LABEL_CLONE_SOURCE = "generate.kyverno.io/clone-source"
LABEL_SOURCE_GROUP = "generate.kyverno.io/source-group"
LABEL_SOURCE_VERSION = "generate.kyverno.io/source-version"
LABEL_SOURCE_KIND = "generate.kyverno.io/source-kind"
LABEL_SOURCE_NAMESPACE = "generate.kyverno.io/source-namespace"
LABEL_SOURCE_UID = "generate.kyverno.io/source-uid"

# the fields of a GeneratePattern SubstituteAllInType walks (ResourceSpec inline, data, clone, cloneList)
PATTERN_KEYS = ("apiVersion", "kind", "name", "namespace", "uid", "data", "clone", "cloneList")
_CLONE_STRIPPED = ("uid", "selfLink", "creationTimestamp", "managedFields", "resourceVersion")
_USER_INFO = re.compile(r"\{\{[^}]*\b(request\.userInfo|serviceAccountName|serviceAccountNamespace|request\.roles|"
                        r"request\.clusterRoles)\b")


@dataclass(frozen=True)
class ClassicGenerateRule(GeneratingPolicy):
    """One generate rule of a ClusterPolicy/Policy, seen as a GeneratingPolicy (the module docstring)."""

    classic: ClassicPolicy | None = None
    rule: ClassicRule | None = None

    @property
    def namespaced(self) -> bool:
        return self.meta.kind == "Policy"

    @property
    def rule_name(self) -> str:
        return self.rule.name if self.rule is not None else ""

    @property
    def generation(self) -> Mapping[str, Any]:
        """The rule's `generate` block (the GeneratingPolicy field `generate` stays empty)."""
        raw = self.rule.raw.get("generate") if self.rule is not None else None
        return raw if isinstance(raw, Mapping) else {}

    @property
    def policy_namespace(self) -> str:
        return self.meta.namespace if self.namespaced else ""

    @property
    def is_clone(self) -> bool:
        """clone, cloneList, or a foreach with either: the downstreams carry source labels."""
        g = self.generation
        entries = [g, *(f for f in g.get("foreach") or [] if isinstance(f, Mapping))]
        return any((e.get("clone") or {}).get("name") or (e.get("cloneList") or {}).get("kinds") for e in entries)

    def kinds(self) -> list[tuple[str, str]]:
        """(apiVersion, kind) of the downstreams the rule can write (cleanupPatterns)."""
        g = self.generation
        out: list[tuple[str, str]] = []
        for e in [g, *(f for f in g.get("foreach") or [] if isinstance(f, Mapping))]:
            if e.get("kind"):
                out.append((str(e.get("apiVersion") or ""), str(e["kind"])))
            for k in (e.get("cloneList") or {}).get("kinds") or []:
                out.append(kind_from_gvk(str(k)))
        return out


def generate_rules(policy: ClassicPolicy) -> list[ClassicGenerateRule]:
    """A ClassicGenerateRule per generate rule of the policy (autogen never applies: a generate rule
    disables it for the whole policy)."""
    spec = policy.raw.get("spec") or {}
    out = []
    for rule in policy.rules:
        if rule.type != "generate":
            continue
        g = rule.raw.get("generate") or {}
        existing = g.get("generateExisting")
        if existing is None:
            # pkg/policy/generate.go handleGenerateForExisting: the rule's setting, else the spec's
            # (generateExistingOnPolicyUpdate is the deprecated spelling the CRD still accepts)
            existing = bool(spec.get("generateExisting") or spec.get("generateExistingOnPolicyUpdate"))
        out.append(ClassicGenerateRule(
            meta=policy.meta, match_constraints=None, match_conditions=(), variables=(), audit_annotations=(),
            generate=(), admission=policy.admission, generate_existing=bool(existing),
            synchronize=bool(g.get("synchronize")),
            orphan_on_policy_delete=bool(g.get("orphanDownstreamOnPolicyDelete")),
            skip_background_requests=False, use_server_side_apply=bool(spec.get("useServerSideApply")),
            raw=policy.raw, classic=policy, rule=rule))
    return out


def kind_from_gvk(text: str) -> tuple[str, str]:
    """kk: kubeutils.GetKindFromGVK: `v1/Secret` -> (v1, Secret), `apps/v1/Deployment`, bare `Secret`."""
    parts = text.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    return "/".join(parts[:-1]), parts[-1]


# ---- the cluster as the generator reads it (GET of clone sources, LIST for cloneList) -----------------------

class ObjectStore:
    """The objects the background controller would GET and LIST: the state, then the triggers."""

    def __init__(self, objects: Iterable[Mapping[str, Any]]) -> None:
        self.by_identity: dict[tuple[str, str, str, str], Mapping[str, Any]] = {}
        self.by_kind: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        seen: set[int] = set()
        for obj in objects:
            if id(obj) in seen:
                continue        # diff passes the state as the triggers too: the same objects twice
            seen.add(id(obj))
            key = identity(obj)
            if key not in self.by_identity:
                self.by_kind.setdefault((key[0], key[1]), []).append(obj)
            self.by_identity[key] = obj

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        group, _ = group_version(api_version)
        return self.by_identity.get((group, kind, namespace, name))

    def list(self, api_version: str, kind: str, namespace: str, selector: Any) -> list[Mapping[str, Any]]:
        group, _ = group_version(api_version)
        out = []
        for obj in self.by_kind.get((group, kind), []):
            key = identity(obj)
            if namespace and key[2] != namespace:
                continue
            obj = self.by_identity[key]
            labels = (obj.get("metadata") or {}).get("labels") or {}
            if selector and not matches_selector(selector, labels):
                continue
            out.append(obj)
        return sorted(out, key=lambda o: identity(o))      # the API lists by namespace, then name


class GenerateFailed(EngineError):
    """A generate rule failed for the trigger: Kyverno's UR fails, writes nothing for this rule."""


# ---- labels --------------------------------------------------------------------------------------------------

def trigger_labels(trigger: Mapping[str, Any], kind: str, uid: str) -> dict[str, str]:
    group, version = group_version(str(trigger.get("apiVersion") or ""))
    meta = trigger.get("metadata") or {}
    return {
        "generate.kyverno.io/trigger-version": version, LABEL_TRIGGER_GROUP: group, LABEL_TRIGGER_KIND: kind,
        LABEL_TRIGGER_NAMESPACE: str(meta.get("namespace") or ""), LABEL_TRIGGER_UID: uid,
    }


def manage_labels(obj: dict[str, Any], unit: ClassicGenerateRule, trigger_set: Mapping[str, str]) -> None:
    """common/labels.go ManageLabels: managed-by, policy-name, policy-namespace ("" for a ClusterPolicy),
    rule-name, trigger-{version,group,kind,namespace,uid}. Never trigger-name (docs/semantics/classic.md#generate)."""
    meta = obj.setdefault("metadata", {})
    labels = dict(meta.get("labels") or {})
    labels[LABEL_MANAGED_BY] = MANAGED_BY_KYVERNO
    labels[LABEL_POLICY_NAME] = unit.meta.name
    labels[LABEL_POLICY_NAMESPACE] = unit.policy_namespace
    labels[LABEL_RULE_NAME] = unit.rule_name
    labels.update(trigger_set)
    meta["labels"] = labels
    assert LABEL_TRIGGER_VERSION in labels


# ---- one pattern -> downstreams ------------------------------------------------------------------------------

@dataclass
class _Target:
    api_version: str
    kind: str
    namespace: str
    name: str

    def text(self) -> str:
        # kk: ResourceSpec.String()
        return "/".join(p for p in (self.api_version, self.kind, self.namespace, self.name))


def _fresh(value: Any) -> Any:
    """normalize_numbers(copy.deepcopy(value)) in one walk: JSON-shaped objects (dicts, lists, scalars) are
    copied while their numbers are normalized; anything else goes the long way."""
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    if isinstance(value, str | bool | int | bytes) or value is None:
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) < 2 ** 63 else value
    return normalize_numbers(copy.deepcopy(value))


def _clone_copy(source: Mapping[str, Any], target: _Target) -> dict[str, Any]:
    """manageClone: the source (labelled clone-source by updateSourceLabel before the copy) with source-*
    labels, ownerReferences dropped across namespaces, server metadata stripped."""
    obj: dict[str, Any] = _fresh(dict(source))
    meta = obj.setdefault("metadata", {})
    labels = dict(meta.get("labels") or {})
    labels[LABEL_CLONE_SOURCE] = ""
    group, version = group_version(str(source.get("apiVersion") or ""))
    labels[LABEL_SOURCE_GROUP] = group
    labels[LABEL_SOURCE_VERSION] = version
    labels[LABEL_SOURCE_KIND] = str(source.get("kind") or "")
    labels[LABEL_SOURCE_NAMESPACE] = str(meta.get("namespace") or "")
    labels[LABEL_SOURCE_UID] = str(meta.get("uid") or "")
    meta["labels"] = labels
    if str(meta.get("namespace") or "") != target.namespace and meta.get("ownerReferences") is not None:
        del meta["ownerReferences"]
    for key in _CLONE_STRIPPED:
        meta.pop(key, None)
    # the API server drops status on create and keeps its own on update
    obj.pop("status", None)
    return obj


def _finish(data: Mapping[str, Any], target: _Target, unit: ClassicGenerateRule, trigger_set: Mapping[str, str],
            namespaced: Callable[[str, str], bool], *, owned: bool = False) -> dict[str, Any]:
    """generator.go: name, namespace, kind (when empty) and apiVersion from the target, then the labels.
    `owned`: `data` is already a private copy (_clone_copy's), changed in place."""
    obj: dict[str, Any] = data if owned and isinstance(data, dict) else _fresh(dict(data))
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    meta["name"] = target.name
    namespace = target.namespace
    if namespace and not namespaced(target.api_version, target.kind or str(obj.get("kind") or "")):
        namespace = ""      # the API server ignores a namespace on a cluster-scoped kind
    if namespace:
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    if not obj.get("kind"):
        obj["kind"] = target.kind
    obj["apiVersion"] = target.api_version
    manage_labels(obj, unit, trigger_set)
    return canonical_order(obj)


def _target_of(pattern: Mapping[str, Any]) -> _Target:
    return _Target(str(pattern.get("apiVersion") or ""), str(pattern.get("kind") or ""),
                   str(pattern.get("namespace") or ""), str(pattern.get("name") or ""))


def pattern_downstreams(pattern: Mapping[str, Any], unit: ClassicGenerateRule, trigger_set: Mapping[str, str],
                        store: ObjectStore, namespaced: Callable[[str, str], bool]) -> list[dict[str, Any]]:
    """One substituted GeneratePattern: clone (clone.name set), else cloneList (kinds set), else data."""
    target = _target_of(pattern)
    raw_clone, raw_list = pattern.get("clone"), pattern.get("cloneList")
    clone: Mapping[str, Any] = raw_clone if isinstance(raw_clone, Mapping) else {}
    clone_list: Mapping[str, Any] = raw_list if isinstance(raw_list, Mapping) else {}
    if clone.get("name"):
        source_ns, source_name = str(clone.get("namespace") or ""), str(clone["name"])
        if source_ns == target.namespace and source_name == target.name:
            return []       # "skip resource self-clone"
        source = store.get(target.api_version, target.kind, source_ns, source_name)
        if source is None:
            raise GenerateFailed(f"source resource {target.text()} not found: {target.kind} "
                                 f"{source_ns + '/' if source_ns else ''}{source_name} is not in the state")
        return [_finish(_clone_copy(source, target), target, unit, trigger_set, namespaced, owned=True)]
    if clone_list.get("kinds"):
        out = []
        selector = clone_list.get("selector")
        for text in clone_list.get("kinds") or []:
            api_version, kind = kind_from_gvk(str(text))
            try:
                sources = store.list(api_version, kind, str(clone_list.get("namespace") or ""), selector)
            except SelectorError as exc:
                raise GenerateFailed(f"failed to list source resource for cloneList {api_version} {kind}/"
                                     f"{clone_list.get('namespace') or ''}. {exc}") from None
            for source in sources:
                meta = source.get("metadata") or {}
                each = _Target(str(source.get("apiVersion") or ""), str(source.get("kind") or ""),
                               target.namespace, str(meta.get("name") or ""))
                if str(meta.get("namespace") or "") == each.namespace:
                    continue    # self-clone
                out.append(_finish(_clone_copy(source, each), each, unit, trigger_set, namespaced, owned=True))
        return out
    data = pattern.get("data")
    if data is None:
        # manageData's "data is nil" never fires from the generator: it passes the pattern's *JSON field, a
        # typed nil inside a non-nil interface, which ToMap turns into an empty object, so the target is
        # written with only apiVersion, kind and metadata (conformance existing-with-wildcard-name-matching)
        data = {}
    if not isinstance(data, Mapping):
        raise GenerateFailed("failed to convert data: expected an object")
    return [_finish(data, target, unit, trigger_set, namespaced)]


# ---- one rule x one trigger ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class RuleRun:
    status: TriggerStatus
    objects: tuple[dict[str, Any], ...] = ()
    message: str = ""


def matches_delete(rule: ClassicRule) -> bool:
    """kk: webhooks/utils MatchDeleteOperation: DELETE among the operations of the rule's match (old form,
    any and all blocks). On a trigger's deletion such a rule generates (from the deleted object) instead of
    deleting its downstreams (webhooks/resource/generation syncTriggerAction)."""
    match = rule.raw.get("match")
    if not isinstance(match, Mapping):
        return False
    blocks = [match, *(match.get("any") or []), *(match.get("all") or [])]
    for block in blocks:
        desc = block.get("resources") if isinstance(block, Mapping) else None
        if isinstance(desc, Mapping) and "DELETE" in (desc.get("operations") or []):
            return True
    return False


def uses_user_info(rule: ClassicRule) -> bool:
    """Whether the rule's output (or its preconditions) reads request data --values may not give."""
    return bool(_USER_INFO.search(json.dumps(rule.raw, default=str)))


def evaluate_rule(unit: ClassicGenerateRule, ctx: Any, core: Any, load_context: Callable[[Sequence[Any], Any], None],
                  trigger_set: Mapping[str, str], store: ObjectStore,
                  namespaced: Callable[[str, str], bool]) -> RuleRun:
    """ApplyGeneratePolicy + generator.generate/generateForeach for one matched rule (ctx already holds the
    trigger). Preconditions false: SKIPPED (Kyverno's filterRule fails the rule; with sync on that is the
    'stops matching' cleanup); any failure: ERROR with Kyverno's wording where it has one."""
    assert unit.rule is not None
    raw = unit.rule.raw
    g = unit.generation
    try:
        load_context(raw.get("context") or [], ctx)
    except EngineError as exc:
        return RuleRun(TriggerStatus.ERROR, message=f"failed to load rule level context: {exc}")
    try:
        ok, msg = core.conditions(ctx, raw.get("preconditions"))
    except EngineError as exc:
        return RuleRun(TriggerStatus.ERROR, message=f"failed to evaluate preconditions: {exc}")
    if not ok:
        return RuleRun(TriggerStatus.SKIPPED, message="preconditions not met" + (f"; {msg}" if msg else ""))
    objects: list[dict[str, Any]] = []
    try:
        if g.get("foreach"):
            errors = []
            for i, foreach in enumerate(g.get("foreach") or []):
                if not isinstance(foreach, Mapping):
                    continue
                try:
                    elements = core.query(ctx, str(foreach.get("list") or ""))
                except EngineError as exc:
                    errors.append(f"failed to evaluate {i} foreach list: {exc}")
                    continue
                if not isinstance(elements, list):
                    errors.append(f"failed to evaluate {i} foreach list: expected a list, "
                                  f"got {type(elements).__name__}")
                    continue
                for index, element in enumerate(elements):
                    if element is None:
                        continue
                    ctx.checkpoint()
                    try:
                        ctx.add_element(element, index, 0)
                        objects.extend(_one_pattern(foreach, unit, ctx, core, load_context, trigger_set, store,
                                                    namespaced, foreach=True))
                    except GenerateFailed as exc:
                        errors.append(f"failed to process {i} foreach in rule {unit.rule_name}: "
                                      f"failed to process {index} element: {exc}")
                    finally:
                        ctx.restore()
            if errors:
                return RuleRun(TriggerStatus.ERROR, tuple(objects), "; ".join(errors))
        else:
            objects.extend(_one_pattern(g, unit, ctx, core, load_context, trigger_set, store, namespaced,
                                        foreach=False))
    except GenerateFailed as exc:
        return RuleRun(TriggerStatus.ERROR, message=str(exc))
    return RuleRun(TriggerStatus.GENERATED, dedupe(objects))


def _one_pattern(pattern: Mapping[str, Any], unit: ClassicGenerateRule, ctx: Any, core: Any,
                 load_context: Callable[[Sequence[Any], Any], None], trigger_set: Mapping[str, str],
                 store: ObjectStore, namespaced: Callable[[str, str], bool], *, foreach: bool) -> list[dict[str, Any]]:
    if foreach:
        # a foreach entry has its own context and preconditions (generator.generate loads them again)
        try:
            load_context(pattern.get("context") or [], ctx)
        except EngineError as exc:
            raise GenerateFailed(f"failed to load context: {exc}") from None
        try:
            ok, _ = core.conditions(ctx, pattern.get("preconditions"))
        except EngineError as exc:
            raise GenerateFailed(f"failed to evaluate preconditions: {exc}") from None
        if not ok:
            return []
    constant, variable = _split_pattern(pattern)
    try:
        substituted = {**constant, **core.substitute(ctx, variable)} if variable else constant
    except EngineError as exc:
        raise GenerateFailed(str(exc)) from None
    return pattern_downstreams(substituted, unit, trigger_set, store, namespaced)


# a rule's pattern is substituted once per trigger: which of its fields hold no variable is worked out once
_SPLITS: dict[int, tuple[Mapping[str, Any], dict[str, Any], dict[str, Any]]] = {}


def _split_pattern(pattern: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(fields without `{{`/`$(`, fields with one) of the GeneratePattern's substituted fields. Substitution
    leaves the first unchanged, and each string is substituted on its own at its own path, so only the second
    goes through it; a `$(...)` reference can point at a sibling field, so with one every field goes."""
    entry = _SPLITS.get(id(pattern))
    if entry is not None and entry[0] is pattern:
        return entry[1], entry[2]
    fields = {k: pattern[k] for k in PATTERN_KEYS if k in pattern}
    if "$(" in json.dumps(fields, default=str):
        constant, variable = {}, fields
    else:
        # here, not at the top: the variables module brings the JMESPath engine, which a run whose
        # policies have no classic generate rule (one importing ClassicGenerateRule only) never uses
        from kubectl_kyrec.classic.variables import has_markers

        constant = {k: v for k, v in fields.items() if not has_markers(v)}
        variable = {k: v for k, v in fields.items() if k not in constant}
    if len(_SPLITS) > 4096:
        _SPLITS.clear()
    _SPLITS[id(pattern)] = (pattern, constant, variable)
    return constant, variable


def rule_result(unit: ClassicGenerateRule, sctx: SubjectContext, run: RuleRun) -> Result | None:
    """The report result the background controller writes for the rule (engine/background.go filterRule,
    then BuildGenerateReport): pass with an empty message and `generated-resources`, skip (preconditions
    false, or a PolicyException), error with the failure."""
    meta = unit.meta
    background = unit.classic.background if unit.classic is not None else True
    props = dict(unit.rule.report_properties) if unit.rule is not None else {}
    if run.status is TriggerStatus.GENERATED:
        if run.objects:
            props["generated-resources"] = generated_resources_property(run.objects)
        return make_result(meta, "kyverno", sctx, unit.rule_name, "pass", "", props, (), background)
    if run.status is TriggerStatus.SKIPPED:
        return make_result(meta, "kyverno", sctx, unit.rule_name, "skip", "", props, (), background)
    if run.status is TriggerStatus.ERROR:
        return make_result(meta, "kyverno", sctx, unit.rule_name, "error", run.message, props, (), background)
    if run.status in (TriggerStatus.NEEDS_REQUEST, TriggerStatus.NEEDS_REGISTRY) or run.status in UNREAD_LOOKUP:
        return make_result(meta, "kyverno", sctx, unit.rule_name, UNDETERMINED, run.message, props, (), background)
    if run.status is TriggerStatus.EXEMPT:
        return make_result(meta, "kyverno", sctx, unit.rule_name, "skip", run.message, props, (), background)
    return None


def outcome(unit: ClassicGenerateRule, sctx: SubjectContext, run: RuleRun, *, owed: bool,
            age_known: bool = True) -> TriggerOutcome:
    return TriggerOutcome(unit, sctx.subject, run.status, run.objects, run.message, rule_result(unit, sctx, run),
                          owed, sctx.request.operation, age_known)
