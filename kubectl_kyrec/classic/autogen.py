"""Autogen v1: the pod-controller rules Kyverno derives from Pod rules (kk: pkg/autogen/v1).

`compute_rules(policy, kind)` is ComputeRules: for a resource of a controller kind the policy's rules plus
`autogen-<rule>` (DaemonSet, Deployment, Job, StatefulSet, ReplicaSet, ReplicationController) and
`autogen-cronjob-<rule>` (CronJob); for any other kind the rules as written. The derived rule is built as
Kyverno builds it: patterns wrapped in `spec.template` (twice more for CronJob: `spec.jobTemplate.spec.
template`), kinds replaced, then the JSON text rewritten byte for byte (`request.object.spec` ->
`request.object.spec.template.spec`, `object.spec` for CEL rules, ...); `$(...)` references in the message
are shifted by the template path as Kyverno shifts them (FindAndShiftReferences).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.classic.variables import REGEX_REFERENCES
from kubectl_kyrec.load.policy.classic import ClassicPolicy, ClassicRule
from kubectl_kyrec.load.run_inputs.kyverno_config import SELECTOR_VERSION as VERSION

ANNOTATION = "pod-policies.kyverno.io/autogen-controllers"
POD_CONTROLLERS = ("DaemonSet", "Deployment", "Job", "StatefulSet", "ReplicaSet", "ReplicationController",
                   "CronJob")
_NON_CRON = ("DaemonSet", "Deployment", "Job", "StatefulSet", "ReplicaSet", "ReplicationController")
_GVK = {"DaemonSet": "apps/v1/DaemonSet", "Deployment": "apps/v1/Deployment", "Job": "batch/v1/Job",
        "StatefulSet": "apps/v1/StatefulSet", "ReplicaSet": "apps/v1/ReplicaSet",
        "ReplicationController": "v1/ReplicationController", "CronJob": "batch/v1/CronJob", "Pod": "v1/Pod"}

_POD = (("request.object.spec", "request.object.spec.template.spec"),
        ("request.oldObject.spec", "request.oldObject.spec.template.spec"),
        ("request.object.metadata", "request.object.spec.template.metadata"),
        ("request.oldObject.metadata", "request.oldObject.spec.template.metadata"))
_POD_CEL = (("object.spec", "object.spec.template.spec"), ("oldObject.spec", "oldObject.spec.template.spec"),
            ("object.metadata", "object.spec.template.metadata"),
            ("oldObject.metadata", "oldObject.spec.template.metadata"))
_CRON = (("request.object.spec", "request.object.spec.jobTemplate.spec.template.spec"),
         ("request.oldObject.spec", "request.oldObject.spec.jobTemplate.spec.template.spec"),
         ("request.object.metadata", "request.object.spec.jobTemplate.spec.template.metadata"),
         ("request.oldObject.metadata", "request.oldObject.spec.jobTemplate.spec.template.metadata"))
_CRON_CEL = (("object.spec", "object.spec.jobTemplate.spec.template.spec"),
             ("oldObject.spec", "oldObject.spec.jobTemplate.spec.template.spec"),
             ("object.metadata", "object.spec.jobTemplate.spec.template.metadata"),
             ("oldObject.metadata", "oldObject.spec.jobTemplate.spec.template.metadata"))


def contains_kind(kinds: Sequence[Any], kind: str) -> bool:
    """kk: kubeutils.ContainsKind (GetKindFromGVK, then the part before a subresource)."""
    for k in kinds:
        parts = str(k).split("/")
        if len(parts) == 1:
            name = parts[0].replace(".", "/", 1)
        elif len(parts) == 2:
            name = parts[1].replace(".", "/", 1) if VERSION.match(parts[0]) else f"{parts[0]}/{parts[1]}"
        elif len(parts) == 3:
            name = f"{parts[1]}/{parts[2]}" if VERSION.match(parts[0]) else parts[2].replace(".", "/", 1)
        elif len(parts) == 4:
            name = f"{parts[2]}/{parts[3]}"
        else:
            continue
        if name.split("/", 1)[0] == kind:
            return True
    return False


def _descriptions(block: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    if not block:
        return []
    out = [block.get("resources") or {}]
    out.extend((f or {}).get("resources") or {} for f in (block.get("any") or []))
    out.extend((f or {}).get("resources") or {} for f in (block.get("all") or []))
    return out


def _kinds(block: Mapping[str, Any] | None) -> list[Any]:
    return [k for d in _descriptions(block) for k in (d.get("kinds") or [])]


def can_autogen(policy: ClassicPolicy) -> bool:
    """kk: CanAutoGen: no generate or JSON6902 rule; only Pod (no names, selectors, annotations)."""
    needed = False
    for rule in policy.rules:
        if rule.type == "generate":
            return False
        mutate = rule.raw.get("mutate") or {}
        if mutate.get("patchesJson6902") or any((f or {}).get("patchesJson6902")
                                                 for f in mutate.get("foreach") or []):
            return False
        for desc in [*_descriptions(rule.raw.get("match")), *_descriptions(rule.raw.get("exclude"))]:
            kinds = [str(k) for k in desc.get("kinds") or []]
            if desc.get("name") or desc.get("names") or desc.get("selector") is not None \
                    or desc.get("annotations") is not None or (len(kinds) > 1 and contains_kind(kinds, "Pod")):
                return False
            needed = needed or any(k in (*POD_CONTROLLERS, "Pod") for k in kinds)
    return needed


def _controllers(policy: ClassicPolicy) -> frozenset[str]:
    if not can_autogen(policy):
        return frozenset({"none"})
    annotation = policy.meta.annotations.get(ANNOTATION)
    if annotation is None:
        return frozenset(POD_CONTROLLERS)
    return frozenset(annotation.split(","))


def _convert_kinds(kinds: Sequence[str]) -> list[str]:
    return [_GVK.get(k, k) for k in kinds]


def _replace_filters(filters: list[Any], kinds: Sequence[str], only_pod: bool) -> list[Any]:
    out = copy.deepcopy(filters)
    for f in out:
        if not isinstance(f, dict):
            continue
        res = f.setdefault("resources", {})
        if not only_pod or contains_kind(res.get("kinds") or [], "Pod"):
            res["kinds"] = _convert_kinds(kinds)
    return out


def shift_references(value: str, shift: str, pivot: str) -> str:
    """kk: variables.FindAndShiftReferences: `$(...)` references in a message that name `pivot` get `shift`
    inserted after it (after `anyPattern/<i>` for anyPattern). Kept as Kyverno has it: the anyPattern pivot
    keeps the first reference's index for the rest of the message, and a reference without the pivot reads
    its "index" from a fixed offset (where Go would panic past the end, this reads an empty one)."""
    for reference in REGEX_REFERENCES.findall(value):
        initial = reference[:2] == "$("
        old = reference
        if not initial:
            reference = reference[1:]
        index = reference.find(pivot)
        if pivot == "anyPattern":
            pivot = pivot + "/" + reference[index + len(pivot) + 1:].split("/")[0]
        shifted = reference.replace(pivot, pivot + "/" + shift)
        value = value.replace(old, ("" if initial else old[0]) + shifted, 1)
    return value


def _generate_rule(name: str, rule: dict[str, Any], tpl_key: str, kinds: Sequence[str],
                   only_pod: bool) -> dict[str, Any] | None:
    rule = copy.deepcopy(rule)
    rule["name"] = name
    match = rule.setdefault("match", {})
    if match.get("any"):
        match["any"] = _replace_filters(match["any"], kinds, only_pod)
    elif match.get("all"):
        match["all"] = _replace_filters(match["all"], kinds, only_pod)
    else:
        match.setdefault("resources", {})["kinds"] = _convert_kinds(kinds)
    exclude = rule.get("exclude")
    if exclude:
        if exclude.get("any"):
            exclude["any"] = _replace_filters(exclude["any"], kinds, only_pod)
        elif exclude.get("all"):
            exclude["all"] = _replace_filters(exclude["all"], kinds, only_pod)
        elif (exclude.get("resources") or {}).get("kinds"):
            exclude["resources"]["kinds"] = _convert_kinds(kinds)
    validate = rule.get("validate")
    if isinstance(validate, dict):
        kept = {k: validate[k] for k in ("message", "failureAction", "failureActionOverrides",
                                         "allowExistingViolations") if k in validate}
        shift = "spec/jobTemplate/spec/template" if tpl_key == "jobTemplate" else "spec/template"

        def shifted(pivot: str) -> dict[str, Any]:
            if isinstance(kept.get("message"), str):
                return {**kept, "message": shift_references(kept["message"], shift, pivot)}
            return kept

        if validate.get("pattern") is not None:
            rule["validate"] = {**shifted("pattern"), "pattern": {"spec": {tpl_key: validate["pattern"]}}}
        elif validate.get("deny") is not None:
            rule["validate"] = {**shifted("deny"), "deny": validate["deny"]}
        elif validate.get("podSecurity") is not None:
            rule["validate"] = {**shifted("podSecurity"), "podSecurity": validate["podSecurity"]}
        elif validate.get("anyPattern") is not None:
            rule["validate"] = {**shifted("anyPattern"),
                                "anyPattern": [{"spec": {tpl_key: p}} for p in validate["anyPattern"]]}
        elif validate.get("foreach"):
            # kk passes the pivot "pattern" for foreach rules too
            rule["validate"] = {**shifted("pattern"), "foreach": validate["foreach"]}
        elif validate.get("cel") is None:
            return None
        return rule
    mutate = rule.get("mutate")
    if isinstance(mutate, dict):
        # kk: a patchStrategicMerge wrapped in the template (the rule's other mutate fields dropped); else
        # each foreach's, keeping only its list, context and preconditions (a foreach without a patch gets
        # a null template)
        if mutate.get("patchStrategicMerge") is not None:
            rule["mutate"] = {"patchStrategicMerge": {"spec": {tpl_key: mutate["patchStrategicMerge"]}}}
            return rule
        if mutate.get("foreach"):
            entries = []
            for foreach in mutate["foreach"]:
                entry = {k: foreach[k] for k in ("list", "context", "preconditions") if foreach.get(k)}
                entry["patchStrategicMerge"] = {"spec": {tpl_key: foreach.get("patchStrategicMerge")}}
                entries.append(entry)
            rule["mutate"] = {"foreach": entries}
            return rule
    if rule.get("verifyImages") or rule.get("mutate"):
        return rule
    return None


def _for_controllers(rule: dict[str, Any], controllers: str) -> dict[str, Any] | None:
    """kk: generateRuleForControllers."""
    name = str(rule.get("name", ""))
    if name.startswith("autogen-") or not controllers:
        return None
    exclude_kinds = _kinds(rule.get("exclude"))
    if not contains_kind(_kinds(rule.get("match")), "Pod") or (exclude_kinds and
                                                                 not contains_kind(exclude_kinds, "Pod")):
        return None
    kinds = sorted(controllers.split(","))
    if controllers == "all":
        kinds = sorted(_NON_CRON)
    elif controllers != "none":
        validated = [k for k in kinds if k in _NON_CRON]
        if validated:
            kinds = validated
    return _generate_rule(_autogen_name("autogen", name), rule, "template", kinds, only_pod=True)


def _autogen_name(prefix: str, name: str) -> str:
    return f"{prefix}-{name}"[:63]


def _convert(rule: dict[str, Any], replacements: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    text = json.dumps(rule)
    for old, new in replacements:
        text = text.replace(old, new)
    out: dict[str, Any] = json.loads(text)
    return out


def _generate(policy: ClassicPolicy, controllers: str) -> list[ClassicRule]:
    out = []
    for rule in policy.rules:
        raw = _plain(rule.raw)
        is_cel = bool((raw.get("validate") or {}).get("cel"))
        strip = ",".join(c for c in sorted(controllers.split(",")) if c != "CronJob")
        gen = _for_controllers(raw, strip)
        if gen is not None:
            out.append(ClassicRule(gen["name"], rule.index, rule.type,
                                   _convert(gen, _POD_CEL if is_cel else _POD)))
        if "CronJob" in controllers or "all" in controllers:
            base = _for_controllers(raw, controllers)
            if base is not None:
                cron = _generate_rule(_autogen_name("autogen-cronjob", rule.name), base, "jobTemplate",
                                      ["CronJob"], only_pod=False)
                if cron is not None:
                    out.append(ClassicRule(cron["name"], rule.index, rule.type,
                                           _convert(cron, _CRON_CEL if is_cel else _CRON)))
    return out


def _plain(value: Any) -> Any:
    """The rule as JSON data (ruamel-free), so it can be copied and marshalled."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


_CACHE: dict[tuple[int, str], tuple[ClassicPolicy, tuple[ClassicRule, ...]]] = {}


def compute_rules(policy: ClassicPolicy, kind: str) -> tuple[ClassicRule, ...]:
    """kk: ComputeRules(policy, kind): the rules Kyverno evaluates for a resource of `kind`."""
    cached = _CACHE.get((id(policy), kind))
    if cached is not None and cached[0] is policy:
        return cached[1]
    controllers = _controllers(policy)
    rules = policy.rules
    if kind in controllers and "none" not in controllers:
        generated = _generate(policy, kind)
        if generated:
            rules = (*(r for r in policy.rules if not r.name.startswith("autogen-")), *generated)
    _CACHE[(id(policy), kind)] = (policy, rules)
    return rules


def compute_rules_every_controller(policy: ClassicPolicy) -> tuple[ClassicRule, ...]:
    """kk: ComputeRules(policy, ""), as the mutate engine calls it: the rules plus the autogen rules of every
    controller the policy generates for (whatever the resource's kind)."""
    cached = _CACHE.get((id(policy), ""))
    if cached is not None and cached[0] is policy:
        return cached[1]
    controllers = _controllers(policy)
    rules = policy.rules
    if "none" not in controllers:
        generated = _generate(policy, ",".join(sorted(controllers)))
        if generated:
            rules = (*(r for r in policy.rules if not r.name.startswith("autogen-")), *generated)
    _CACHE[(id(policy), "")] = (policy, rules)
    return rules
