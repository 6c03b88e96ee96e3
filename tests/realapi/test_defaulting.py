"""kyrec's port of the API server's defaulting (kubectl_kyrec/k8s/defaulting.py) against the real
kube-apiserver v1.36.3: every built-in kind the shared corpus holds, one object per kind and shape, is sent
with `dryRun=All` and the object the server answers with is compared field by field with `default_object`.

The server does more than default on a create. What it adds that is not defaulting is named in IGNORED, each
with the reason, and nothing else is skipped: a field the server writes differently from kyrec is a
difference, printed with its path, kyrec's value and the server's. Objects the server refuses (invalid in
the corpus, or a version v1.36 no longer serves) are listed with the server's reason.
"""

from __future__ import annotations

import copy
import fnmatch
import hashlib
import json
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.k8s.defaulting import default_object
from kubectl_kyrec.load.yaml_nodes import iter_yaml_documents
from tests.realapi.fixture import Answer, Kube, RealServer, plural_path
from tests.shared_inputs import require, shared

CORPUS = shared("corpus")
OWN = Path(__file__).resolve().parents[2] / "testdata" / "defaulting" / "objects.yaml"   # shapes the corpus lacks
PER_KIND = 400           # shapes sent per kind at most (chosen by a stable hash): the test stays under a minute
REFUSED_SHARE = 0.10     # the corpus holds deliberately invalid objects (policies that must reject them)


@dataclass(frozen=True)
class Ignore:
    kind: str            # "*" or a Kind
    path: str            # fnmatch pattern over the printed path, e.g. spec.ports[*].nodePort
    why: str


# What a create adds that is not scheme defaulting; default_object must not invent any of it.
IGNORED: tuple[Ignore, ...] = (
    Ignore("*", "metadata.uid", "assigned by the registry (rest.FillObjectMetaSystemFields)"),
    Ignore("*", "metadata.creationTimestamp", "assigned by the registry (rest.FillObjectMetaSystemFields)"),
    Ignore("*", "metadata.resourceVersion", "assigned by storage"),
    Ignore("*", "metadata.generation", "set to 1 by each strategy's PrepareForCreate"),
    Ignore("*", "metadata.managedFields*", "server-side apply's field tracking (fieldmanager)"),
    Ignore("*", "status*", "reset or computed by each strategy's PrepareForCreate, not by the request"),
    Ignore("Service", "spec.clusterIP", "allocated (pkg/registry/core/service/storage/alloc.go)"),
    Ignore("Service", "spec.clusterIPs*", "allocated (alloc.go)"),
    Ignore("Service", "spec.ipFamilies*", "chosen by the allocator from the cluster's service CIDRs (alloc.go)"),
    Ignore("Service", "spec.ipFamilyPolicy", "chosen by the allocator (alloc.go initIPFamilyFields)"),
    Ignore("Service", "spec.ports[*].nodePort", "allocated from the node-port range (alloc.go)"),
    Ignore("Service", "spec.healthCheckNodePort", "allocated (alloc.go)"),
    Ignore("Namespace", "spec.finalizers*", "namespace strategy PrepareForCreate adds `kubernetes`"),
    Ignore("Job", "spec.selector*", "job strategy PrepareForCreate generateSelector (holds the uid)"),
    Ignore("Job", "spec.template.metadata.labels.*controller-uid", "job strategy generateSelector (the uid)"),
    Ignore("Job", "spec.template.metadata.labels.*job-name", "job strategy generateSelector"),
    Ignore("Job", "metadata.labels.*controller-uid", "job strategy generateSelector (the template's labels)"),
    Ignore("Job", "metadata.labels.*job-name", "job strategy generateSelector (the template's labels)"),
    Ignore("DaemonSet", "metadata.annotations.deprecated.daemonset.template.generation",
           "apps/v1 conversion of the TemplateGeneration the daemonset strategy sets"),
    Ignore("Pod", "spec.priority", "Priority admission plugin"),
    Ignore("Pod", "spec.preemptionPolicy", "Priority admission plugin"),
    Ignore("Pod", "spec.tolerations[*]*", "DefaultTolerationSeconds admission plugin: appended, and only these "
           "two (PLUGIN_TOLERATIONS; the Pod's own tolerations are compared)"),
    Ignore("Pod", "spec.*ontainers[*].securityContext.appArmorProfile*",
           "pod strategy PrepareForCreate applyAppArmorVersionSkew (from the deprecated AppArmor annotations)"),
    Ignore("Node", "spec.taints*", "TaintNodesByCondition admission plugin (node.kubernetes.io/not-ready)"),
    Ignore("PersistentVolume", "metadata.finalizers*", "StorageObjectInUseProtection admission plugin"),
    Ignore("PersistentVolumeClaim", "metadata.finalizers*", "StorageObjectInUseProtection admission plugin"),
    Ignore("CertificateSigningRequest", "spec.username", "CSR strategy PrepareForCreate: the requesting user"),
    Ignore("CertificateSigningRequest", "spec.uid", "CSR strategy PrepareForCreate: the requesting user"),
    Ignore("CertificateSigningRequest", "spec.groups*", "CSR strategy PrepareForCreate: the requesting user"),
    Ignore("CertificateSigningRequest", "spec.extra*", "CSR strategy PrepareForCreate: the requesting user"),
    Ignore("*", "metadata.selfLink", "no longer stored (removed in v1.24): the server drops what a manifest says"),
)
OMITTED_ZERO = ("omitempty", "Go's encoder drops a zero value (false, \"\", 0, null, {}, []) of an omitempty field; "
                "kyrec keeps what the manifest says, and so did nothing here")
UNKNOWN_FIELD = ("unknown field", "not in the kind's schema: the server drops it and says so in a Warning header")


PLUGIN_TOLERATIONS = [{"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": "NoExecute",
                       "tolerationSeconds": 300} for key in ("not-ready", "unreachable")]


def _plugin_tolerations_only(sent: dict[str, Any], body: dict[str, Any]) -> bool:
    """Whether the server's Pod tolerations are the sent ones followed by DefaultTolerationSeconds' own."""
    given = (sent.get("spec") or {}).get("tolerations") or []
    answered = (body.get("spec") or {}).get("tolerations") or []
    return answered[:len(given)] == given and all(t in PLUGIN_TOLERATIONS for t in answered[len(given):])


def ignored(kind: str, path: str) -> Ignore | None:
    for rule in IGNORED:
        if rule.kind in ("*", kind) and fnmatch.fnmatchcase(path, rule.path.replace("[*]", "[[]*[]]")):
            return rule
    return None


# ---- the corpus ---------------------------------------------------------------------------------------------

def _files_named_under(value: Any, keys: tuple[str, ...]) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in keys and isinstance(item, dict) and isinstance(item.get("file"), str):
                yield item["file"]
            else:
                yield from _files_named_under(item, keys)
    elif isinstance(value, list):
        for item in value:
            yield from _files_named_under(item, keys)


def expectation_files() -> set[Path]:
    """Files chainsaw tests `assert` or `error` on: partial objects to match, never created."""
    found: set[Path] = set()
    for test in CORPUS.rglob("chainsaw-test.yaml"):
        try:
            docs = [d.value for d in iter_yaml_documents(test.read_text(), str(test))]
        except (OSError, UnicodeDecodeError, InputError):
            continue
        for name in _files_named_under(docs, ("assert", "error")):
            found.update(test.parent.glob(name) if "*" in name else [test.parent / name])
    return {p.resolve() for p in found}


@lru_cache(maxsize=1)
def corpus_objects() -> list[tuple[str, dict[str, Any], bool]]:
    """(file#document, object, whether the file is an expectation) for every object with an apiVersion and a
    kind in the corpus's YAML. Expectations are chainsaw's asserted files (and files named *assert*/*error* by
    its test generator): partial objects, used only for kinds no other file holds."""
    found = []
    expected = expectation_files()
    for path in sorted(CORPUS.rglob("*.y*ml")):
        expectation = path.resolve() in expected or "assert" in path.name or "error" in path.name
        try:
            text = path.read_text()
            docs = [d.value for d in iter_yaml_documents(text, str(path))] if "apiVersion" in text else []
        except (OSError, UnicodeDecodeError, InputError):
            continue
        for i, doc in enumerate(docs):
            if isinstance(doc, dict) and isinstance(doc.get("apiVersion"), str) and isinstance(doc.get("kind"), str):
                found.append((f"{path.relative_to(CORPUS)}#{i}", doc, expectation))
    return found


_VALUE_KEYS = {"type", "sessionAffinity", "hostNetwork", "restartPolicy", "protocol", "policyTypes", "kind"}


def _shape(value: Any, prefix: str = "") -> Iterator[str]:
    """The object's key paths (list items folded together), with the values defaults depend on."""
    if isinstance(value, dict):
        for key, item in value.items():
            if prefix in (".metadata.labels", ".metadata.annotations"):
                continue
            yield from _shape(item, f"{prefix}.{key}")
    elif isinstance(value, list):
        for item in value:
            yield from _shape(item, prefix + "[]")
    else:
        last = prefix.rsplit(".", 1)[-1].rstrip("[]")
        if last in _VALUE_KEYS:
            yield f"{prefix}={value}"
        elif last == "image" and isinstance(value, str):
            yield f"{prefix}:{'latest' if value.endswith(':latest') or ':' not in value.rsplit('/', 1)[-1] else 'tag'}"
        else:
            yield prefix


@dataclass
class Served:
    plural: str
    namespaced: bool


def discover(kube: Kube) -> tuple[dict[tuple[str, str], Served], set[str]]:
    """The kinds the server serves from its own code ((apiVersion, kind) -> plural, scope), and the groups of
    the installed CRDs (Kyverno's), which are not built in."""
    served: dict[tuple[str, str], Served] = {}
    versions = [("v1", "/api/v1")]
    for group in kube.get("/apis")["groups"]:
        for version in group["versions"]:
            versions.append((version["groupVersion"], f"/apis/{version['groupVersion']}"))
    for api_version, path in versions:
        for resource in kube.get(path)["resources"]:
            if "/" not in resource["name"]:
                served[(api_version, resource["kind"])] = Served(resource["name"], resource["namespaced"])
    crds = kube.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
    return served, {crd["spec"]["group"] for crd in crds}


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def select(served: dict[tuple[str, str], Served], crd_groups: set[str]) -> tuple[
        list[tuple[str, dict[str, Any]]], dict[tuple[str, str], list[str]]]:
    """One object per (kind, shape), at most PER_KIND per kind; and the built-in-group objects the server does
    not serve (old versions, other products' kinds under v1), by (apiVersion, kind)."""
    by_kind: dict[tuple[str, str], dict[frozenset[str], tuple[str, dict[str, Any]]]] = defaultdict(dict)
    groups = {_group(api_version) for api_version, _ in served}
    not_served: dict[tuple[str, str], list[str]] = defaultdict(list)
    resources = {(o["apiVersion"], o["kind"]) for _, o, expectation in corpus_objects() if not expectation}
    for source, obj, expectation in corpus_objects():
        key = (obj["apiVersion"], obj["kind"])
        if expectation and key in resources:
            continue
        if _group(key[0]) not in groups or _group(key[0]) in crd_groups:
            continue                      # custom resources: the server's own groups only
        if key not in served:
            not_served[key].append(source)
            continue
        by_kind[key].setdefault(frozenset(_shape(obj)), (source, obj))
    chosen = []
    for key in sorted(by_kind):
        shapes = sorted(by_kind[key].values(), key=lambda s: hashlib.sha256(s[0].encode()).hexdigest())
        chosen.extend(shapes[:PER_KIND])
    return chosen, not_served


# ---- comparing ----------------------------------------------------------------------------------------------

@dataclass
class Outcome:
    source: str
    kind: str
    status: str = ""                      # equal | differs | refused
    reason: str = ""
    differences: list[tuple[str, Any, Any]] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)


_ABSENT = object()


def _at(value: Any, key: Any) -> Any:
    if isinstance(value, dict):
        return value.get(key, _ABSENT)
    if isinstance(value, list) and isinstance(key, int) and key < len(value):
        return value[key]
    return _ABSENT


def differences(kyrec: Any, server: Any, sent: Any, path: str = "") -> Iterator[tuple[str, Any, Any, Any]]:
    """(path, kyrec's value, the server's, the value sent) wherever kyrec and the server disagree."""
    # one side absent and the other a non-empty map or list: compare item by item, so that every leaf meets
    # the rules
    if kyrec is _ABSENT and isinstance(server, dict | list) and server:
        kyrec = type(server)()
    if server is _ABSENT and isinstance(kyrec, dict | list) and kyrec:
        server = type(kyrec)()
    if isinstance(kyrec, dict) and isinstance(server, dict):
        for key in list(kyrec) + [k for k in server if k not in kyrec]:
            yield from differences(kyrec.get(key, _ABSENT), server.get(key, _ABSENT), _at(sent, key),
                                   f"{path}.{key}" if path else key)
    elif isinstance(kyrec, list) and isinstance(server, list):
        for i in range(max(len(kyrec), len(server))):
            yield from differences(_at(kyrec, i), _at(server, i), _at(sent, i), f"{path}[{i}]")
    elif kyrec != server or type(kyrec) is not type(server):
        yield path, kyrec, server, sent


def _zero(value: Any) -> bool:
    return value is None or (value in (False, "", 0, {}, []) and not isinstance(value, float))


_UNKNOWN = re.compile(r'unknown field "([^"]+)"')


def _show(value: Any) -> str:
    return "(absent)" if value is _ABSENT else json.dumps(value, sort_keys=True)[:160]


def prepare(obj: dict[str, Any], served: Served, namespace: str, name: str) -> dict[str, Any]:
    """The object as sent: a fresh name (the server holds bootstrap objects with corpus names; a CRD keeps its
    name, which must be <plural>.<group>, and gets a group of its own), the test's namespace when namespaced."""
    sent = copy.deepcopy(obj)
    given = sent.get("metadata")
    metadata: dict[str, Any] = given if isinstance(given, dict) else {}
    sent["metadata"] = metadata
    metadata.pop("generateName", None)
    if sent["kind"] == "CustomResourceDefinition" and isinstance(sent.get("spec"), dict):
        group = f"{name}.{sent['spec'].get('group', 'example.com')}"
        sent["spec"]["group"] = group
        plural = (sent["spec"].get("names") or {}).get("plural", "things")
        metadata["name"] = f"{plural}.{group}"
    elif sent["kind"] == "APIService" and isinstance(sent.get("spec"), dict):
        group = f"{name}.{sent['spec'].get('group', 'example.com')}"          # the name must be <version>.<group>
        sent["spec"]["group"] = group
        metadata["name"] = f"{sent['spec'].get('version', 'v1')}.{group}"
    else:
        metadata["name"] = name
    if served.namespaced:
        metadata["namespace"] = namespace
        involved = sent.get("involvedObject")
        if sent["kind"] == "Event" and isinstance(involved, dict):
            # validation: an Event lives in its object's namespace, or in `default` for a cluster-scoped one
            if involved.get("namespace"):
                involved["namespace"] = namespace
            else:
                metadata["namespace"] = "default"
    else:
        metadata.pop("namespace", None)
    return sent


def send(kube: Kube, sent: dict[str, Any], served: Served) -> Answer:
    path = plural_path(sent["apiVersion"], served.plural, sent["metadata"].get("namespace", ""))
    return kube.request("POST", path, sent, query={"dryRun": "All"})


def compare(source: str, sent: dict[str, Any], answer: Answer) -> Outcome:
    outcome = Outcome(source, sent["kind"])
    body = answer.json()
    if answer.status not in (200, 201):
        outcome.status = "refused"
        outcome.reason = f"{answer.status} {body.get('message', '')}" if isinstance(body, dict) else str(answer)
        return outcome
    unknown = {m.group(1) for w in answer.warnings for m in [_UNKNOWN.search(w)] if m}
    plugin_tolerations = sent["kind"] == "Pod" and _plugin_tolerations_only(sent, body)
    for path, mine, theirs, given in differences(default_object(sent), body, sent):
        rule = ignored(sent["kind"], path)
        if rule is not None and rule.path == "spec.tolerations[*]*" and not plugin_tolerations:
            rule = None
        if rule is not None:
            outcome.skipped[rule.path] += 1
        elif theirs is _ABSENT and mine == given and _zero(mine):
            outcome.skipped[OMITTED_ZERO[0]] += 1
        elif theirs is _ABSENT and any(path == u or path.startswith(u + ".") or path.startswith(u + "[")
                                       for u in unknown):
            outcome.skipped[UNKNOWN_FIELD[0]] += 1
        else:
            outcome.differences.append((path, mine, theirs))
    outcome.status = "differs" if outcome.differences else "equal"
    return outcome


def test_default_object_matches_the_real_api_server(realapi: RealServer) -> None:
    require(CORPUS, "corpus (built-in objects for the defaulting comparison)")
    began = time.monotonic()
    namespace = realapi.namespace("defaulting")
    served, crd_groups = discover(realapi.kube)
    chosen, not_served = select(served, crd_groups)
    own = [(f"testdata/defaulting/objects.yaml#{i}", d.value)
           for i, d in enumerate(iter_yaml_documents(OWN.read_text(), str(OWN)))]
    assert all((o["apiVersion"], o["kind"]) in served for _, o in own), "an object of ours the server does not serve"
    chosen += own
    jobs = []
    for source, obj in chosen:
        resource = served[(obj["apiVersion"], obj["kind"])]
        jobs.append((source, prepare(obj, resource, namespace, realapi.unique("dflt")), resource))
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda job: send(realapi.kube, job[1], job[2]), jobs))
    outcomes = [compare(source, sent, answer) for (source, sent, _), answer in zip(jobs, answers, strict=True)]

    per_kind: dict[str, Counter[str]] = defaultdict(Counter)
    for outcome in outcomes:
        per_kind[outcome.kind][outcome.status] += 1
    lines = [f"defaulting vs the real API server: {len(outcomes)} objects sent in {time.monotonic() - began:.1f}s"]
    for kind in sorted(per_kind):
        counts = per_kind[kind]
        lines.append(f"  {kind:32} sent {sum(counts.values()):3}  equal {counts['equal']:3}  "
                     f"differs {counts['differs']:3}  refused {counts['refused']:3}")
    skipped: Counter[str] = sum((o.skipped for o in outcomes), Counter())
    lines.append("  leaf fields not compared, by rule: "
                 + ", ".join(f"{rule} {n}" for rule, n in skipped.most_common()))
    for key in sorted(not_served):
        lines.append(f"  not served by v1.36: {key[0]} {key[1]} ({len(not_served[key])} objects, e.g. "
                     f"{not_served[key][0]})")
    refused = [o for o in outcomes if o.status == "refused"]
    for outcome in refused:
        lines.append(f"  refused {outcome.kind} {outcome.source}: {outcome.reason[:200]}")
    differing = [o for o in outcomes if o.status == "differs"]
    for outcome in differing:
        lines.append(f"  DIFFERS {outcome.kind} {outcome.source}")
        for path, mine, theirs in outcome.differences:
            lines.append(f"      {path}: kyrec {_show(mine)}  server {_show(theirs)}")
    print("\n".join(lines))
    assert len(refused) <= REFUSED_SHARE * len(outcomes), "\n".join(lines)
    assert not [o for o in refused if o.source.startswith("testdata/")], "\n".join(lines)
    assert not differing, "\n".join(lines)


QUANTITIES = ("0", "500m", "1000m", "0.5", "1.0", "1.5Gi", "1024Ki", "1025Ki", "0.5Ki", "1e3", "1.5e3", "12E6",
              "100u", "0.0001", "+1", "01", "2000000k", "123456789123456789", "1.000000001", "8Ki", 3, 0.25)


def test_quantities_are_written_back_as_the_server_writes_them(realapi: RealServer) -> None:
    """k8s.quantity.quantity_json against a Pod with one container per text as its cpu limit (a ResourceList:
    SetDefaults_ResourceList rounds it, SetDefaults_Pod copies it to the requests, MarshalJSON writes both)."""
    namespace = realapi.namespace("quantities")
    containers = [{"name": f"c{i}", "image": "x:1", "resources": {"limits": {"cpu": text}}}
                  for i, text in enumerate(QUANTITIES)]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q", "namespace": namespace},
           "spec": {"containers": containers}}
    answer = realapi.kube.request("POST", plural_path("v1", "pods", namespace), pod, query={"dryRun": "All"})
    assert answer.status == 201, answer
    written = [c["resources"] for c in answer.json()["spec"]["containers"]]
    mine = [c["resources"] for c in default_object(pod)["spec"]["containers"]]
    assert [(text, m) for text, m in zip(QUANTITIES, mine, strict=True)] == [
        (text, w) for text, w in zip(QUANTITIES, written, strict=True)]
