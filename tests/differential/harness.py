"""Differential testing against the Kyverno CLI: which policies, which resources, and how answers compare.

Shared by the campaign (tests/differential/campaign.py, which runs Kyverno's CLI from `KYVERNO_BIN_DIR` and
records its answers) and the replay test (tests/differential/test_replay.py, which compares kyrec's current
answers with the recorded ones, without Kyverno).

A case is one policy file of the corpus (read in place) with the resources its `kyverno-test.yaml` files name
and seeded variants of them. An answer is a row per (policy, rule, resource): `result` and `message`, keyed by
the resource's apiVersion, kind, namespace and name.
"""

from __future__ import annotations

import copy
import io
import json
import random
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

# The corpus directories a campaign reads, relative to the shared corpus (../shared/corpus).
CORPUS_DIRS = ("kyverno-policies", "kyverno-policies-legacy")
CEL_KINDS = {"ValidatingPolicy", "NamespacedValidatingPolicy"}
CLASSIC_KINDS = {"ClusterPolicy", "Policy"}
# Rule types that change or create objects: Kyverno's CLI applies them before validating (mutate) or reports
# them with results of their own; the campaign is about validation, so policies holding one are left out.
NON_VALIDATE = ("mutate", "generate", "verifyImages")
# A variant's namespace comes from here or from the policy's own strings.
NAMESPACES = ("default", "kube-system", "prod", "staging", "team-a")
# Replacement strings for a changed value, beside the policy's own strings (which hit its branches).
STRINGS = ("", "latest", "nginx", "nginx:latest", "true", "false", "0", "privileged", "*", "RuntimeDefault",
           "Unconfined", "Always", "IfNotPresent", "NET_ADMIN", "ALL", "root", "host", "1000")
INTS = (0, 1, -1, 2, 3, 100, 1000, 65535)
CONTROLLERS = ("Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job", "CronJob")
APPS = {"Deployment": "apps/v1", "DaemonSet": "apps/v1", "StatefulSet": "apps/v1", "ReplicaSet": "apps/v1",
        "Job": "batch/v1", "CronJob": "batch/v1"}

Key = tuple[str, str, str, str, str, str]   # policy, rule, apiVersion, kind, namespace, name
Answer = dict[Key, tuple[str, str]]         # -> (result, message)


@dataclass
class Case:
    """One policy file and the resources it is run against."""

    policy: str                       # path relative to the corpus root
    base: list[dict[str, Any]]        # the resources its kyverno-test.yaml files name
    resources: list[dict[str, Any]] = field(default_factory=list)   # base + variants, unique keys


# ---- selection ---------------------------------------------------------------------------------------------

def load_yaml(path: Path) -> list[Any]:
    try:
        return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    except (yaml.YAMLError, OSError, UnicodeDecodeError):
        return []


def validating_only(docs: Sequence[Any]) -> bool:
    """Every document a validating policy kyrec and the CLI both take: CEL ValidatingPolicies on Kubernetes
    objects, or ClusterPolicy/Policy whose rules all validate."""
    if not docs:
        return False
    for doc in docs:
        if not isinstance(doc, dict):
            return False
        kind = doc.get("kind")
        spec = doc.get("spec") or {}
        if kind in CEL_KINDS:
            mode = ((spec.get("evaluation") or {}).get("mode")) or "Kubernetes"
            if mode != "Kubernetes":
                return False
        elif kind in CLASSIC_KINDS:
            rules = spec.get("rules") or []
            if not rules or any(any(t in r for t in NON_VALIDATE) or "validate" not in r for r in rules):
                return False
        else:
            return False
    return True


def select_cases(corpus: Path) -> list[Case]:
    """Every validating policy file named by a corpus kyverno-test.yaml that needs no values, context or user
    info (those inputs would have to be given to both tools alike), with the resources its tests name."""
    by_policy: dict[Path, list[dict[str, Any]]] = {}
    for sub in CORPUS_DIRS:
        for test in sorted((corpus / sub).rglob("kyverno-test.yaml")):
            for doc in load_yaml(test):
                if not isinstance(doc, dict) or any(k in doc for k in ("variables", "context", "userinfo")):
                    continue
                base = test.parent
                policies = [(base / p).resolve() for p in doc.get("policies") or []]
                resources: list[dict[str, Any]] = []
                for r in doc.get("resources") or []:
                    resources.extend(d for d in load_yaml(base / r) if _is_object(d))
                for p in policies:
                    if p.is_file() and validating_only(load_yaml(p)):
                        known = by_policy.setdefault(p, [])
                        seen = {resource_key(o) for o in known}
                        known.extend(o for o in resources if resource_key(o) not in seen and
                                     not seen.add(resource_key(o)))  # type: ignore[func-returns-value]
    root = corpus.resolve()
    return [Case(str(p.relative_to(root)), res) for p, res in sorted(by_policy.items()) if res]


def _is_object(doc: Any) -> bool:
    if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
        return False
    kind, name = doc.get("kind"), doc["metadata"].get("name")
    return (isinstance(kind, str) and isinstance(name, str) and bool(name) and kind not in CEL_KINDS
            and kind not in CLASSIC_KINDS and kind != "List" and isinstance(doc.get("apiVersion"), str))


def resource_key(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    return (str(obj.get("apiVersion", "")), str(obj.get("kind", "")), str(meta.get("namespace") or ""),
            str(meta.get("name", "")))


# ---- variants ----------------------------------------------------------------------------------------------

def policy_strings(docs: Sequence[Any]) -> list[str]:
    """Short strings of the policy (pattern values, names, label keys): changed values drawn from them reach
    the branches the policy tests."""
    out: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(k, str) and 0 < len(k) <= 63 and k not in ("apiVersion", "kind"):
                    out.add(k.strip("=()^<>+X"))
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
        elif isinstance(node, str) and len(node) <= 63 and "\n" not in node:
            out.add(node)

    for doc in docs:
        walk((doc or {}).get("spec"))
    # Not a variable: Kyverno substitutes variables again inside what a variable gave, so a resource value
    # holding the policy's own `{{ request.object... }}` expands without end (the CLI of v1.17.2 grew to 16 GB
    # within a minute on such a ClusterRole); no answer can be recorded for it.
    return sorted(s for s in out if s and "{{" not in s)


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, (*path, k))
        if path:
            yield path, node
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(v, (*path, i))
        if path:
            yield path, node
    else:
        yield path, node


def _protected(path: tuple[Any, ...]) -> bool:
    # identity stays: the key a row is compared by, and a kind both tools must recognise
    return (path[:1] in (("apiVersion",), ("kind",)) or path == ("metadata",)
            or path[:2] in (("metadata", "name"), ("metadata", "namespace")))


def _parent(obj: Any, path: tuple[Any, ...]) -> Any:
    for p in path[:-1]:
        obj = obj[p]
    return obj


def _drop(obj: dict[str, Any], rng: random.Random, strings: Sequence[str]) -> str:
    paths = [p for p, _ in _leaves(obj) if p and not _protected(p)]
    if not paths:
        return "none"
    path = rng.choice(paths)
    parent = _parent(obj, path)
    del parent[path[-1]]
    return "drop " + ".".join(map(str, path))


def _change(obj: dict[str, Any], rng: random.Random, strings: Sequence[str]) -> str:
    # a value keeps its type (a string stays a string): an object the API server would refuse is no variant
    paths = [(p, v) for p, v in _leaves(obj) if p and not _protected(p) and isinstance(v, str | int | float)]
    if not paths:
        return "none"
    path, value = rng.choice(paths)
    new: Any
    if isinstance(value, bool):
        new = not value
    elif isinstance(value, int | float):
        new = rng.choice(INTS)
    elif path[:2] == ("metadata", "labels"):
        new = _label_value(rng, strings)
    elif strings and rng.random() < 0.6:
        new = rng.choice(strings)
    else:
        new = rng.choice(STRINGS)
    _parent(obj, path)[path[-1]] = new
    return "change " + ".".join(map(str, path))


LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _label_value(rng: random.Random, strings: Sequence[str]) -> str:
    # labels an API server would accept: both tools see what a cluster can hold
    valid = [s for s in strings if len(s) <= 63 and LABEL_VALUE.match(s)]
    return rng.choice(valid) if valid and rng.random() < 0.6 else rng.choice(("a", "prod", "true", ""))


def _labels(obj: dict[str, Any], rng: random.Random, strings: Sequence[str]) -> str:
    meta = obj.setdefault("metadata", {})
    keys = [s for s in strings if len(s) <= 63 and LABEL_KEY.match(s)]
    choice = rng.random()
    if choice < 0.25:
        meta.pop("labels", None)
        return "labels removed"
    labels = dict(meta.get("labels") or {})
    for _ in range(rng.randint(1, 3)):
        key = rng.choice(keys) if keys and rng.random() < 0.7 else rng.choice(("app", "team", "env", "owner"))
        labels[key] = _label_value(rng, strings)
    meta["labels"] = labels
    if rng.random() < 0.3:
        meta["annotations"] = {**(meta.get("annotations") or {}), rng.choice(keys or ["note"]): "x"}
    return "labels"


def _namespace(obj: dict[str, Any], rng: random.Random, strings: Sequence[str]) -> str:
    meta = obj.setdefault("metadata", {})
    if not meta.get("namespace"):
        return "none"       # a cluster-scoped object stays one
    meta["namespace"] = rng.choice(NAMESPACES)
    return "namespace " + meta["namespace"]


def _autogen(obj: dict[str, Any], rng: random.Random, strings: Sequence[str]) -> str:
    """A Pod becomes a controller holding it as its template; a controller's template becomes a Pod."""
    kind = obj.get("kind")
    meta = obj.get("metadata") or {}
    if kind == "Pod":
        controller = rng.choice(CONTROLLERS)
        template = {"metadata": {k: v for k, v in meta.items() if k in ("labels", "annotations")},
                    "spec": obj.get("spec") or {}}
        spec: dict[str, Any] = {"template": template}
        if controller in ("Deployment", "DaemonSet", "StatefulSet", "ReplicaSet"):
            spec["selector"] = {"matchLabels": dict(meta.get("labels") or {"app": "x"})}
        if controller == "CronJob":
            spec = {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template}}}
        obj.clear()
        obj.update({"apiVersion": APPS[controller], "kind": controller,
                    "metadata": {k: v for k, v in meta.items() if k in ("name", "namespace", "labels",
                                                                            "annotations")},
                    "spec": spec})
        return "autogen " + controller
    held = obj.get("spec")
    template = _get(held, "jobTemplate", "spec", "template") if kind == "CronJob" else _get(held, "template")
    if kind in CONTROLLERS and isinstance(template, dict):
        tmeta = template.get("metadata") or {}
        obj.clear()
        obj.update({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {**{k: v for k, v in tmeta.items() if k in ("labels", "annotations")},
                                 "name": meta.get("name"), "namespace": meta.get("namespace") or "default"},
                    "spec": template.get("spec") if isinstance(template.get("spec"), dict) else {}})
        return "pod of " + str(kind)
    return "none"


def _get(node: Any, *path: str) -> Any:
    for p in path:
        node = node.get(p) if isinstance(node, dict) else None
    return node


OPERATORS = (_drop, _drop, _change, _change, _change, _labels, _namespace, _autogen)


def make_variants(case: Case, docs: Sequence[Any], count: int, seed: int) -> list[dict[str, Any]]:
    """The base resources and `count` variants in all, each with a key of its own; seeded per policy path so
    a case's variants do not depend on which other cases a run holds."""
    rng = random.Random(seed ^ zlib.crc32(case.policy.encode()))
    strings = policy_strings(docs)
    out = [copy.deepcopy(r) for r in case.base]
    seen = {resource_key(r) for r in out}
    attempts = 0
    while len(out) < count and attempts < count * 4:
        attempts += 1
        base = case.base[attempts % len(case.base)]
        obj = copy.deepcopy(base)
        for _ in range(rng.randint(1, 3)):
            rng.choice(OPERATORS)(obj, rng, strings)
        meta = obj.setdefault("metadata", {})
        meta["name"] = f"{str(meta.get('name'))[:40]}-v{attempts}"
        key = resource_key(obj)
        if key in seen:
            continue
        seen.add(key)
        out.append(obj)
    return out


# ---- answers -----------------------------------------------------------------------------------------------

def kyverno_answer(stdout: str) -> Answer:
    """Rows of `kubectl-kyverno apply --policy-report --output-format json`: a merged ClusterReport and a
    PolicyReport per namespaced policy, each printed as one JSON line among other text."""
    out: Answer = {}
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            report = json.loads(line)
        except ValueError:
            continue
        for r in report.get("results") or []:
            for ref in r.get("resources") or [{}]:
                key = (str(r.get("policy", "")), str(r.get("rule", "")), str(ref.get("apiVersion", "")),
                       str(ref.get("kind", "")), str(ref.get("namespace", "")), str(ref.get("name", "")))
                out[key] = (str(r.get("result", "")), str(r.get("message", "")))
    return out


def kyrec_answer(document: dict[str, Any]) -> Answer:
    """Rows of `kubectl kyrec eval -o json`: one per result. A namespaced policy is named `ns/name` by kyrec,
    by its name in Kyverno's reports."""
    out: Answer = {}
    for r in document.get("results") or []:
        s = r["subject"]
        policy = str(r["policy"]).split("/")[-1]
        out[(policy, str(r.get("rule") or ""), s["apiVersion"], s["kind"], s.get("namespace") or "", s["name"])] = (
            str(r["result"]), str(r.get("message") or ""))
    return out


def dump_yaml(objs: Sequence[dict[str, Any]]) -> str:
    buf = io.StringIO()
    yaml.safe_dump_all(objs, buf, sort_keys=False)
    return buf.getvalue()
