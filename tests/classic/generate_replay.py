"""Replay of Kyverno's classic generate chainsaw scenarios (../shared/corpus/kyverno-conformance-legacy/
generate, read in place) over kyrec's expected downstreams.

A small model of the cluster and of Kyverno's reactions, each from the code docs/semantics/classic.md#generate cites:
- trigger CREATE/UPDATE: every matching generate rule writes its downstreams (create when absent; an
  existing target is updated only with sync on, without an ownership check);
- trigger UPDATE that stops matching (match, or preconditions true before and false now) and trigger
  DELETE: with sync on, the policy+trigger downstreams of the rule's kinds are deleted (no rule-name);
  on DELETE a rule whose match names DELETE generates from the deleted object instead;
- downstream edited or deleted, rule with sync on: regenerated from its trigger;
- a downstream Kyverno creates is itself a trigger for rules with skipBackgroundRequests: false;
- useServerSideApply: a sync update keeps the fields other managers set;
- clone source updated / deleted: sync clones follow it / are deleted;
- policy create/update: generateExisting (rule over spec) runs over existing triggers; on update, sync
  data rules are regenerated for the triggers their downstreams name, deleted rules (sync on, no
  orphanDownstreamOnPolicyDelete) delete their downstreams, changed targets are unlabelled;
- policy delete: sync rules without orphanDownstreamOnPolicyDelete delete their downstreams (clones too).

What it cannot replay it says, scenario by scenario (`NotReplayable`): scripts and commands, steps that
expect an error (webhook rejections), mutate rules, PolicyExceptions.
"""

from __future__ import annotations

import copy
import datetime
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kubectl_kyrec.evaluate.classic.generate_objects import (
    LABEL_CLONE_SOURCE,
    LABEL_RULE_NAME,
    LABEL_SOURCE_UID,
    ClassicGenerateRule,
    generate_rules,
    matches_delete,
)
from kubectl_kyrec.evaluate.classic.generate_triggers import run_classic_generate
from kubectl_kyrec.evaluate.generating.downstreams import (
    LABEL_POLICY_NAME,
    LABEL_POLICY_NAMESPACE,
    LABEL_TRIGGER_UID,
    identity,
    labels_of,
)
from kubectl_kyrec.evaluate.generating.engine import GenerateOptions
from kubectl_kyrec.evaluate.generating.outcomes import TriggerStatus
from kubectl_kyrec.load.policy.classic import ClassicPolicy, is_classic_policy, parse_classic_policy
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Document, Source

NOW = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)
Identity = tuple[str, str, str, str]


class NotReplayable(Exception):
    pass


def subset(expected: Any, actual: Any) -> bool:
    """chainsaw's assert: maps by the asserted keys, lists item by item with the same length."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(k in actual and subset(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(
            subset(e, a) for e, a in zip(expected, actual))
    if expected is None:
        return actual is None
    return bool(expected == actual or str(expected) == str(actual))


def _merge(base: Any, patch: Any) -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            out[k] = _merge(base.get(k), v) if k in base else copy.deepcopy(v)
        return out
    return copy.deepcopy(patch)


def _encode_secret(obj: dict[str, Any]) -> dict[str, Any]:
    # the API server turns stringData into data
    if obj.get("kind") == "Secret" and obj.get("stringData"):
        import base64

        data = dict(obj.get("data") or {})
        for k, v in obj.pop("stringData").items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        obj["data"] = data
    return obj


@dataclass
class Cluster:
    kinds: KindTable = field(default_factory=KindTable)
    objects: dict[Identity, dict[str, Any]] = field(default_factory=dict)
    policies: dict[str, tuple[ClassicPolicy, dict[str, Any]]] = field(default_factory=dict)
    clock: itertools.count = field(default_factory=lambda: itertools.count(1))

    # ---- plumbing ---------------------------------------------------------------------------------------
    def _tick(self) -> str:
        return (NOW + datetime.timedelta(seconds=next(self.clock))).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _normalize(self, obj: dict[str, Any]) -> dict[str, Any]:
        obj = _encode_secret(copy.deepcopy(obj))
        meta = obj.setdefault("metadata", {}) or {}
        obj["metadata"] = meta
        info = self.kinds.by_kind(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
        namespaced = bool(info.namespaced) if info is not None else bool(meta.get("namespace"))
        if namespaced and not meta.get("namespace"):
            meta["namespace"] = "default"
        if not namespaced:
            meta.pop("namespace", None)
        return obj

    def _store(self, obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        meta = obj["metadata"]
        if old is None:
            meta["uid"] = f"uid-{next(self.clock)}"
            meta["creationTimestamp"] = self._tick()
        else:
            meta["uid"] = old["metadata"]["uid"]
            meta["creationTimestamp"] = old["metadata"]["creationTimestamp"]
        self.objects[identity(obj)] = obj
        return obj

    def _docs(self) -> list[Document]:
        return [Document(o, Source("cluster", 0)) for o in self.objects.values()]

    def _units(self) -> list[ClassicPolicy]:
        return [p for p, _ in self.policies.values()]

    def by_uid(self, uid: str) -> dict[str, Any] | None:
        return next((o for o in self.objects.values() if o["metadata"].get("uid") == uid), None)

    # ---- Kyverno's reactions ----------------------------------------------------------------------------
    def _evaluate(self, trigger: dict[str, Any], operation: str, policies: list[ClassicPolicy] | None = None
                  ) -> list[Any]:
        out = run_classic_generate(policies if policies is not None else self._units(),
                                   [Document(trigger, Source("trigger", 0))], self._docs(), kinds=self.kinds,
                                   options=GenerateOptions(now=NOW, operation=operation, user_info_known=True))
        return out.outcomes

    def _write(self, unit: ClassicGenerateRule, objects: tuple[dict[str, Any], ...]) -> None:
        for obj in objects:
            key = identity(obj)
            live = self.objects.get(key)
            if live is None:
                created = self._store(copy.deepcopy(obj), None)
                # the background controller's create is admitted too: it triggers the rules whose
                # skipBackgroundRequests is false (default true; webhooks/resource/utils.go)
                for o in self._evaluate(created, "CREATE"):
                    rule = o.policy.rule
                    if (o.status is TriggerStatus.GENERATED and rule is not None
                            and rule.raw.get("skipBackgroundRequests") is False):
                        self._write(o.policy, o.objects)
            elif unit.synchronize and unit.use_server_side_apply:
                # ApplyResource (server-side apply, force): fields set by other managers stay
                self._store(_merge(live, obj), live)
            elif unit.synchronize:
                self._store(copy.deepcopy(obj), live)

    def generate(self, trigger: dict[str, Any], operation: str, policies: list[ClassicPolicy] | None = None,
                 rule: str | None = None) -> None:
        for o in self._evaluate(trigger, operation, policies):
            if o.status is TriggerStatus.GENERATED and (rule is None or o.policy.rule_name == rule):
                self._write(o.policy, o.objects)

    def _delete_for_trigger(self, unit: ClassicGenerateRule, trigger_uid: str) -> None:
        """cleanup.go handleNonPolicyChanges: policy+trigger labels of the rule's kinds, no rule-name."""
        kinds = {k for _, k in unit.kinds()}
        for key, obj in list(self.objects.items()):
            labels = labels_of(obj)
            if (labels.get(LABEL_POLICY_NAME) == unit.meta.name
                    and str(labels.get(LABEL_POLICY_NAMESPACE) or "") == unit.policy_namespace
                    and labels.get(LABEL_TRIGGER_UID) == trigger_uid and obj.get("kind") in kinds):
                del self.objects[key]

    def _delete_for_rule(self, unit: ClassicGenerateRule) -> None:
        kinds = {k for _, k in unit.kinds()}
        for key, obj in list(self.objects.items()):
            labels = labels_of(obj)
            if (labels.get(LABEL_POLICY_NAME) == unit.meta.name and labels.get(LABEL_RULE_NAME) == unit.rule_name
                    and str(labels.get(LABEL_POLICY_NAMESPACE) or "") == unit.policy_namespace
                    and obj.get("kind") in kinds):
                del self.objects[key]

    def _downstream_unit(self, obj: Mapping[str, Any]) -> ClassicGenerateRule | None:
        labels = labels_of(obj)
        if LABEL_RULE_NAME not in labels:
            return None
        ns = str(labels.get(LABEL_POLICY_NAMESPACE) or "")
        key = f"{ns}/{labels.get(LABEL_POLICY_NAME)}" if ns else str(labels.get(LABEL_POLICY_NAME))
        entry = self.policies.get(key)
        if entry is None:
            return None
        return next((u for u in generate_rules(entry[0]) if u.rule_name == labels.get(LABEL_RULE_NAME)), None)

    def _resync_downstream(self, obj: Mapping[str, Any]) -> None:
        unit = self._downstream_unit(obj)
        if unit is None or not unit.synchronize:
            return
        trigger = self.by_uid(str(labels_of(obj).get(LABEL_TRIGGER_UID) or ""))
        if trigger is not None:
            self.generate(trigger, "UPDATE", [unit.classic] if unit.classic else None, unit.rule_name)

    def _source_changed(self, source: Mapping[str, Any], deleted: bool) -> None:
        uid = source["metadata"].get("uid")
        for key, obj in list(self.objects.items()):
            if labels_of(obj).get(LABEL_SOURCE_UID) != uid or key == identity(source):
                continue
            unit = self._downstream_unit(obj)
            if unit is None or not unit.synchronize:
                continue
            if deleted:
                del self.objects[key]
            else:
                self._resync_downstream(obj)

    # ---- chainsaw operations ----------------------------------------------------------------------------
    def apply(self, doc: dict[str, Any], create: bool = False) -> None:
        if is_classic_policy(Document(doc, Source("policy", 0))):
            self._apply_policy(doc)
            return
        if doc.get("apiVersion", "").startswith("kyverno.io/") or doc.get("kind") in ("PolicyException",):
            raise NotReplayable(f"{doc.get('kind')} objects are not modelled")
        obj = self._normalize(doc)
        old = self.objects.get(identity(obj))
        if old is None:
            new = self._store(obj, None)
            self.generate(new, "CREATE")
            return
        merged = self._normalize(_merge(old, obj))
        new = self._store(merged, old)
        self._trigger_updated(old, new)
        if LABEL_RULE_NAME in labels_of(old):
            self._resync_downstream(old)
        if LABEL_CLONE_SOURCE in labels_of(old) or any(
                labels_of(o).get(LABEL_SOURCE_UID) == old["metadata"]["uid"] for o in self.objects.values()):
            self._source_changed(new, deleted=False)

    def _trigger_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        before = {(o.policy.meta.key, o.policy.rule_name): o for o in self._evaluate(old, "CREATE")}
        after = {(o.policy.meta.key, o.policy.rule_name): o for o in self._evaluate(new, "UPDATE")}
        for key, o in before.items():
            now = after.get(key)
            stopped = o.status is TriggerStatus.GENERATED and (now is None or now.status is TriggerStatus.SKIPPED)
            if stopped and o.policy.synchronize:
                self._delete_for_trigger(o.policy, new["metadata"]["uid"])
        for o in after.values():
            if o.status is TriggerStatus.GENERATED:
                self._write(o.policy, o.objects)

    def _apply_policy(self, doc: dict[str, Any]) -> None:
        doc = copy.deepcopy(doc)
        meta = doc.setdefault("metadata", {})
        if doc.get("kind") == "Policy" and not meta.get("namespace"):
            meta["namespace"] = "default"
        key = f"{meta['namespace']}/{meta['name']}" if doc.get("kind") == "Policy" else meta["name"]
        old = self.policies.get(key)
        if old is not None:
            meta["creationTimestamp"] = old[1]["metadata"]["creationTimestamp"]
            doc = _merge(old[1], doc)
            doc["spec"]["rules"] = copy.deepcopy(doc_rules(doc, meta, old))
        else:
            meta["creationTimestamp"] = self._tick()
        policy = parse_classic_policy(Document(doc, Source("policy", 0)))
        self.policies[key] = (policy, doc)
        if old is not None:
            self._policy_updated(old[0], policy)
        self._generate_existing(policy)

    def _policy_updated(self, old: ClassicPolicy, new: ClassicPolicy) -> None:
        new_units = {u.rule_name: u for u in generate_rules(new)}
        for unit in generate_rules(old):
            now = new_units.get(unit.rule_name)
            if now is None:
                if unit.synchronize and not unit.orphan_on_policy_delete:
                    self._delete_for_rule(unit)
                continue
            g_old, g_new = unit.generation, now.generation
            target = ("apiVersion", "kind", "name", "namespace", "clone", "cloneList")
            if any(g_old.get(k) != g_new.get(k) for k in target):
                for obj in self.objects.values():
                    labels = labels_of(obj)
                    if (labels.get(LABEL_POLICY_NAME) == unit.meta.name
                            and labels.get(LABEL_RULE_NAME) == unit.rule_name):
                        for k in (LABEL_POLICY_NAME, LABEL_POLICY_NAMESPACE, LABEL_RULE_NAME):
                            obj["metadata"]["labels"].pop(k, None)
        for unit in new_units.values():
            if not unit.synchronize or unit.is_clone:
                continue
            triggers = {labels_of(o).get(LABEL_TRIGGER_UID) for o in self.objects.values()
                        if labels_of(o).get(LABEL_POLICY_NAME) == unit.meta.name
                        and labels_of(o).get(LABEL_RULE_NAME) == unit.rule_name}
            for uid in triggers:
                trigger = self.by_uid(str(uid))
                if trigger is not None:
                    self.generate(trigger, "UPDATE", [new], unit.rule_name)

    def _generate_existing(self, policy: ClassicPolicy) -> None:
        for unit in generate_rules(policy):
            if not unit.generate_existing:
                continue
            for obj in list(self.objects.values()):
                if identity(obj) in self.objects:
                    self.generate(self.objects[identity(obj)], "CREATE", [policy], unit.rule_name)

    def delete(self, ref: Mapping[str, Any]) -> None:
        kind, name = ref.get("kind"), ref.get("name")
        if kind in ("ClusterPolicy", "Policy"):
            key = f"{ref.get('namespace') or 'default'}/{name}" if kind == "Policy" else str(name)
            entry = self.policies.pop(key, None)
            if entry is not None:
                for unit in generate_rules(entry[0]):
                    if unit.synchronize and not unit.orphan_on_policy_delete:
                        self._delete_for_rule(unit)
            return
        namespace = ref.get("namespace")
        info = self.kinds.by_kind(str(ref.get("apiVersion") or ""), str(kind or ""))
        if not namespace and info is not None and info.namespaced:
            namespace = "default"   # chainsaw's test namespace, where _normalize puts namespace-less objects too
        found = [k for k, o in self.objects.items() if o.get("kind") == kind and o["metadata"].get("name") == name
                 and (not namespace or o["metadata"].get("namespace") == namespace)]
        for key in found:
            obj = self.objects.pop(key)
            # syncTriggerAction: a rule naming DELETE generates from the deleted trigger; another sync rule
            # that matched it deletes its downstreams
            for o in self._evaluate(obj, "CREATE"):
                if o.status is TriggerStatus.GENERATED and o.policy.synchronize and not (
                        o.policy.rule is not None and matches_delete(o.policy.rule)):
                    self._delete_for_trigger(o.policy, obj["metadata"]["uid"])
            for o in self._evaluate(obj, "DELETE"):
                if o.status is TriggerStatus.GENERATED:
                    self._write(o.policy, o.objects)
            if LABEL_RULE_NAME in labels_of(obj):
                self._resync_downstream(obj)
            self._source_changed(obj, deleted=True)

    def find(self, expected: Mapping[str, Any]) -> list[dict[str, Any]]:
        meta = expected.get("metadata") or {}
        out = []
        for obj in self.objects.values():
            if obj.get("kind") != expected.get("kind") or obj.get("apiVersion") != expected.get("apiVersion"):
                continue
            if meta.get("name") and obj["metadata"].get("name") != meta["name"]:
                continue
            if meta.get("namespace") and obj["metadata"].get("namespace") != meta["namespace"]:
                continue
            out.append(obj)
        return out


def doc_rules(doc: Mapping[str, Any], meta: Mapping[str, Any], old: Any) -> list[Any]:
    # an apply replaces the rules list as a whole (lists are atomic in a merge patch)
    return list((doc.get("spec") or {}).get("rules") or [])


@dataclass
class Replay:
    checks: int = 0
    failures: list[str] = field(default_factory=list)


def _load(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def replay(folder: Path) -> Replay:
    """Run the scenario; NotReplayable when it uses what the model does not cover."""
    spec = yaml.safe_load((folder / "chainsaw-test.yaml").read_text())
    cluster = Cluster()
    out = Replay()
    for step in spec["spec"]["steps"]:
        ops: list[Mapping[str, Any]] = []
        if "use" in step:
            template = step["use"]["template"].rsplit("/", 1)[-1]
            bindings = {b["name"]: b["value"] for b in (step["use"].get("with") or {}).get("bindings") or []}
            if template in ("create-policy.yaml", "update-policy.yaml"):
                ops = [{"apply": {"file": bindings["file"]}}]
            elif template.endswith("-ready.yaml"):
                continue
            else:
                raise NotReplayable(f"step template {template}")
        ops = [*ops, *(step.get("try") or [])]
        for op in ops:
            (verb, body), = op.items()
            body = body or {}
            if verb in ("script", "command"):
                raise NotReplayable(f"a {verb} step")
            if verb == "sleep":
                continue
            if isinstance(body, Mapping) and body.get("expect"):
                raise NotReplayable("a step that expects an error")
            if verb in ("apply", "create", "update", "patch"):
                for doc in _load(folder / body["file"]):
                    if (doc.get("spec") or {}).get("rules") and any(
                            r.get("mutate") for r in doc["spec"]["rules"] if isinstance(r, Mapping)):
                        raise NotReplayable("a mutate rule")
                    cluster.apply(doc, create=verb == "create")
            elif verb == "delete":
                if "ref" in body:
                    cluster.delete(body["ref"])
                else:
                    for doc in _load(folder / body["file"]):
                        cluster.delete({"kind": doc.get("kind"), "name": (doc.get("metadata") or {}).get("name"),
                                        "namespace": (doc.get("metadata") or {}).get("namespace")})
            elif verb in ("assert", "error"):
                for doc in _load(folder / body["file"]):
                    if doc.get("kind") in ("ClusterPolicy", "Policy", "UpdateRequest") or \
                            str(doc.get("apiVersion", "")).startswith(("kyverno.io", "wgpolicyk8s.io",
                                                                        "reports.kyverno.io", "v1/Event")) \
                            or doc.get("kind") == "Event":
                        continue        # readiness, URs, reports and events are not modelled
                    found = [o for o in cluster.find(doc) if subset(doc, o)]
                    out.checks += 1
                    name = f"{doc.get('kind')} {(doc.get('metadata') or {}).get('namespace', '')}/" \
                           f"{(doc.get('metadata') or {}).get('name', '')}"
                    if verb == "assert" and not found:
                        near = cluster.find(doc)
                        out.failures.append(f"{step.get('name')}: expected {name}"
                                            + (f" (differs: {near[0]!r})" if near else " (absent)"))
                    if verb == "error" and found:
                        out.failures.append(f"{step.get('name')}: {name} should not exist")
            else:
                raise NotReplayable(f"chainsaw operation {verb}")
    return out
