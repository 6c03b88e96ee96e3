"""Reading a live cluster into a ClusterState: which LISTs a run needs, and the record of what they gave.

The reads a run needs (docs/architecture.md#reading-a-live-cluster), each one paginated LIST per resource
type and scope:
- the policy kinds kyrec evaluates (always: the cluster's copies tell policy age and sync settings; without
  `-p` they are the policy set), ValidatingAdmissionPolicies, their bindings and param kinds, and the
  mutating kinds `eval` admits manifests through (MutatingPolicies, MutatingAdmissionPolicies and their
  bindings); each where the server serves it: a kind it does not serve (a cluster without Kyverno's
  MutatingPolicy CRD, a server without admissionregistration.k8s.io/v1 MutatingAdmissionPolicy) holds no
  policy, so it is not read and not unreadable; a MutatingAdmissionPolicy's paramKind is read, the kinds a
  mutating policy selects are not (it changes manifests, not the stored objects a run reads);
- namespaces; the kinds the policies' resourceRules name (triggers and subjects);
- kinds the GeneratingPolicies name as literals (`"kind": "NetworkPolicy"`) and clone sources
  (`resource.Get("v1", "secrets", ...)`), and the kinds classic generate rules write (`generate.kind`,
  `cloneList.kinds`), in full, so that an unowned object at a desired identity is seen;
- the kinds the policies' lookups read where the kind is a literal (`kinds_read_by_lookups`): classic
  `context[].configMap` (ConfigMaps in its namespace when that is a literal, else in every namespace) and
  `context[].apiCall` GETs (the kind of the urlPath, through discovery), in the rule, its foreach and nested
  foreach, and `resource.Get/List("v1", "configmaps", "NS", ...)` in the CEL kinds' expressions (in NS when
  it is a literal, else in every namespace; the one scan GeneratingPolicies' clone sources use), whatever
  `-n` says: a kind every lookup of which names a namespace is read in those alone, so that a role listing
  it only there suffices; a lookup of a kind, or in a namespace, not read is the rule's error, not "not
  found" (run/providers.py state_lookups); and, read the same way, the kinds classic mutate-existing rules
  target (`mutate.targets[].kind`, in its namespace when a literal), which eval's previews and their report
  entries read (a target kind not read makes them undetermined);
- every other kind with the selector `app.kubernetes.io/managed-by=kyverno`, so that owned downstreams of
  any kind are found (policy-gone, kinds a policy stopped generating);
- reports (PolicyReport/ClusterPolicyReport, openreports, Kyverno's ephemeral reports) when reports count;
- Kyverno's ConfigMap namespace (`kyverno`) for resourceFilters.
- with downstreams, Kyverno's UpdateRequests (namespace `kyverno`; `ReadNeeds.update_requests`: not for
  apply): evidence for a finding's cause only, so a refused LIST of them is a notice, not an unreadable kind;
  so are Kyverno's Deployments (namespace
  `kyverno`: the reports controller's flags, the controllers' service accounts; `ReadNeeds.causes`: diff,
  coverage and capture; apply names no cause) and (`ReadNeeds.rbac`, the same commands) the RBAC objects (ClusterRoles,
  ClusterRoleBindings, Roles, RoleBindings) that decide Kyverno's own permissions offline, and live where the
  cluster answers no SubjectAccessReview (cluster/access_review.py), so that a live run and an offline run
  of its capture decide from the same evidence.
A full LIST records its kind as listed in its scope; a LIST narrowed by a selector records nothing (it
cannot tell that an object is absent); a failed LIST records the kind as unreadable with its message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.cluster.client import KubeClient
from kubectl_kyrec.cluster.discovery import Discovered
from kubectl_kyrec.cluster.lister import ListOutcome, ListRequest, Progress, list_many
from kubectl_kyrec.errors import FailedRead
from kubectl_kyrec.load.policy.policies import EVALUATED_POLICY_KINDS, MUTATING_POLICY_KINDS
from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState, ListedKind
from kubectl_kyrec.load.run_inputs.kinds import ResourceInfo
from kubectl_kyrec.model import Document, Source

OWNED_SELECTOR = "app.kubernetes.io/managed-by=kyverno"
KYVERNO_NAMESPACE = "kyverno"

# the policy kinds a live read LISTs: those kyrec evaluates (load/policy/policies.py), the mutating ones included
POLICY_KINDS = EVALUATED_POLICY_KINDS
MUTATING_KINDS = frozenset(kind for _, kind in MUTATING_POLICY_KINDS)
RBAC_KINDS = (("rbac.authorization.k8s.io", "ClusterRole"), ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
              ("rbac.authorization.k8s.io", "Role"), ("rbac.authorization.k8s.io", "RoleBinding"))
REPORT_KINDS = (("wgpolicyk8s.io", "PolicyReport"), ("wgpolicyk8s.io", "ClusterPolicyReport"),
                ("openreports.io", "Report"), ("openreports.io", "ClusterReport"),
                ("reports.kyverno.io", "EphemeralReport"), ("reports.kyverno.io", "ClusterEphemeralReport"))

_KIND_LITERAL = re.compile(r"""["']?kind["']?\s*:\s*(?:dyn\(\s*)?["']([A-Z][A-Za-z0-9]*)["']""")
# resource.Get/List(apiVersion, resource, namespace, ...): the namespace is caught only when it is a whole
# literal argument (`"team" + x` is not), else "" (read in every namespace)
_CLONE_SOURCE = re.compile(r"""resource\.(?:Get|List|get|list)\(\s*["']([^"']+)["']\s*,\s*["']([a-z0-9.-]+)["']"""
                           r"""(?:\s*,\s*["']([a-z0-9.-]*)["']\s*(?=[,)]))?""")


@dataclass(frozen=True)
class ReadNeeds:
    """What a run will look at, in terms the read plan turns into LISTs."""

    policy_docs: tuple[Mapping[str, Any], ...] = ()      # the policies of the run (files or, later, cluster)
    policies_from_cluster: bool = False
    reports: bool = True
    downstreams: bool = True
    namespace: str = ""                                  # -n: namespaced subject kinds read there only
    causes: bool = False                                 # Kyverno's Deployments, as evidence (diff, capture)
    # Kyverno's UpdateRequests, with downstreams: evidence of causes only (reconcile/causes.py); `apply`, which
    # names no cause and decides no write from them, reads none
    update_requests: bool = True
    rbac: bool = False                                   # the RBAC objects, as evidence (capture)
    # kinds the user names as kubectl names them (explain's KIND/NAME): read whether a policy matches them or
    # not, so the subject is found and its trees say "not matched", as offline
    kinds: tuple[str, ...] = ()


@dataclass
class LiveRead:
    state: ClusterState
    outcomes: list[ListOutcome] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    @property
    def list_requests(self) -> int:
        return sum(o.pages for o in self.outcomes)


def _rules(doc: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    spec = doc.get("spec") or {}
    for key in ("matchConstraints", "matchResources"):
        block = spec.get(key) or {}
        if isinstance(block, Mapping):
            for rule in block.get("resourceRules") or []:
                if isinstance(rule, Mapping):
                    yield rule


# Kyverno's autogen default: a policy on Pods also applies to the pod controllers' templates
AUTOGEN_KINDS = (("apps", "DaemonSet"), ("apps", "Deployment"), ("batch", "Job"), ("apps", "StatefulSet"),
                 ("apps", "ReplicaSet"), ("", "ReplicationController"), ("batch", "CronJob"))


def kinds_from_rules(docs: Iterable[Mapping[str, Any]], found: Discovered) -> list[ResourceInfo]:
    """The kinds the policies' resourceRules select (`*` expanded through discovery), one version each;
    the pod controllers too when a ValidatingPolicy or an ImageValidatingPolicy selects Pods (autogen)."""
    table = found.kind_table()
    out: dict[tuple[str, str], ResourceInfo] = {}
    for doc in docs:
        if doc.get("kind") in MUTATING_KINDS:
            # a mutating policy changes manifests as admission does (`eval -r`), never the stored objects a
            # run reads: the kinds it selects need no LIST (nor a grant of one in a narrow role)
            continue
        if doc.get("kind") in ("ValidatingPolicy", "NamespacedValidatingPolicy", "ImageValidatingPolicy") and any(
                "pods" in (r.get("resources") or []) and "" in (r.get("apiGroups") or [""]) for r in _rules(doc)):
            for group, kind in AUTOGEN_KINDS:
                info = found.preferred_for(group, kind)
                if info is not None:
                    out.setdefault((group, kind), info)
        for rule in _rules(doc):
            for group in rule.get("apiGroups") or ["*"]:
                for version in rule.get("apiVersions") or ["*"]:
                    for resource in rule.get("resources") or []:
                        name = str(resource).split("/", 1)[0]
                        for info in table.kinds_for_resource(str(group), str(version), name):
                            out.setdefault((info.group, info.kind), found.preferred_for(info.group, info.kind)
                                           or info)
    return list(out.values())


def _classic_kinds(doc: Mapping[str, Any]) -> Iterable[str]:
    """`kinds` of a ClusterPolicy/Policy's match and exclude blocks (`Pod`, `apps/v1/Deployment`, `*`)."""
    for rule in (doc.get("spec") or {}).get("rules") or []:
        if not isinstance(rule, Mapping):
            continue
        for key in ("match", "exclude"):
            block = rule.get(key) or {}
            if not isinstance(block, Mapping):
                continue
            filters = [block, *(block.get("any") or []), *(block.get("all") or [])]
            for f in filters:
                resources = f.get("resources") if isinstance(f, Mapping) else None
                if isinstance(resources, Mapping):
                    yield from (str(k) for k in resources.get("kinds") or [])


def classic_kinds(docs: Iterable[Mapping[str, Any]], found: Discovered) -> list[ResourceInfo]:
    """The kinds classic policies name (`Kind`, `group/version/Kind`, `*` for every kind)."""
    out: dict[tuple[str, str], ResourceInfo] = {}
    for doc in docs:
        if doc.get("kind") not in ("ClusterPolicy", "Policy") or not str(doc.get("apiVersion", "")).startswith(
                "kyverno.io/"):
            continue
        for text in _classic_kinds(doc):
            kind = text.rsplit("/", 1)[-1].split(".")[0]
            for info in found.resources:
                if kind in ("*", info.kind) and "/" not in info.resource:
                    best = found.preferred_for(info.group, info.kind) or info
                    out.setdefault((best.group, best.kind), best)
    return list(out.values())


def _classic_generate_kinds(doc: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    """(apiVersion, kind) of what a ClusterPolicy/Policy's generate rules write: `generate.kind` (a clone's
    source is of the same kind), `cloneList.kinds` (`v1/Secret`), and the same inside `generate.foreach`."""
    for rule in (doc.get("spec") or {}).get("rules") or []:
        gen = rule.get("generate") if isinstance(rule, Mapping) else None
        if not isinstance(gen, Mapping):
            continue
        for block in [gen, *(f for f in gen.get("foreach") or [] if isinstance(f, Mapping))]:
            if block.get("kind"):
                yield str(block.get("apiVersion") or ""), str(block["kind"])
            clone_list = block.get("cloneList")
            if isinstance(clone_list, Mapping):
                for text in clone_list.get("kinds") or []:
                    api_version, _, kind = str(text).rpartition("/")
                    yield api_version, kind


def kinds_written_by_classic_generate(docs: Iterable[Mapping[str, Any]], found: Discovered) -> list[ResourceInfo]:
    """The target kinds of classic generate rules, read in full like a GeneratingPolicy's kind literals:
    without them a target that exists but is not Kyverno's would look missing, and apply could never
    create one (it refuses a create of a kind it did not list). A kind made of a variable (`{{...}}`)
    names nothing that can be listed ahead."""
    out: dict[tuple[str, str], ResourceInfo] = {}
    for doc in docs:
        if doc.get("kind") not in ("ClusterPolicy", "Policy") or not str(doc.get("apiVersion", "")).startswith(
                "kyverno.io/"):
            continue
        for api_version, kind in _classic_generate_kinds(doc):
            if "{{" in api_version + kind:
                continue
            info = found.find(api_version, kind) if api_version else None
            if info is None:
                info = next((i for i in found.resources if i.kind == kind and "/" not in i.resource), None)
            if info is not None:
                best = found.preferred_for(info.group, info.kind) or info
                out.setdefault((best.group, best.kind), best)
    return list(out.values())


def kinds_named_by_generators(docs: Iterable[Mapping[str, Any]], found: Discovered) -> list[ResourceInfo]:
    """Kinds a GeneratingPolicy names as literals in its expressions, and its clone sources."""
    out: dict[tuple[str, str], ResourceInfo] = {}
    for doc in docs:
        if doc.get("kind") not in ("GeneratingPolicy", "NamespacedGeneratingPolicy"):
            continue
        text = "\n".join(_strings(doc.get("spec")))
        for kind in _KIND_LITERAL.findall(text):
            for info in found.resources:
                if info.kind == kind:
                    best = found.preferred_for(info.group, kind) or info
                    out.setdefault((best.group, best.kind), best)
        for api_version, resource, _ in resource_calls(text):
            source = found.kind_table().by_resource(*_group_version(api_version), resource)
            if source is not None:
                out.setdefault((source.group, source.kind), source)
    return list(out.values())


def resource_calls(text: str) -> list[tuple[str, str, str]]:
    """(apiVersion, resource, namespace) of the `resource.Get/List` calls in CEL text whose first two
    arguments are literals, namespace "" unless the third is a literal too: the one scan for
    GeneratingPolicies' clone sources and every CEL kind's lookups."""
    return _CLONE_SOURCE.findall(text)


def _group_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


_CEL_LOOKUP_KINDS = ("GeneratingPolicy", "NamespacedGeneratingPolicy", "ValidatingPolicy",
                     "NamespacedValidatingPolicy", "ImageValidatingPolicy", "NamespacedImageValidatingPolicy",
                     "MutatingPolicy", "NamespacedMutatingPolicy", "DeletingPolicy", "NamespacedDeletingPolicy")


def _context_entries(value: Any) -> Iterable[Mapping[str, Any]]:
    """The context entries anywhere in a classic rule: its own, each foreach's (nested ones too)."""
    if isinstance(value, Mapping):
        entries = value.get("context")
        if isinstance(entries, list):
            yield from (e for e in entries if isinstance(e, Mapping))
        for v in value.values():
            yield from _context_entries(v)
    elif isinstance(value, list):
        for v in value:
            yield from _context_entries(v)


def _api_path(url_path: str) -> tuple[str, str, str] | None:
    """(apiVersion, resource, namespace) an apiCall GET path reads (`/api/v1/namespaces/NS/configmaps/NAME`,
    `/apis/G/V/RESOURCE`), as classic/context_loader.py parses it; namespace "" when every namespace or a
    variable; None when the kind itself is not literal."""
    parts = [p for p in url_path.split("?", 1)[0].split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        api_version, rest = parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        api_version, rest = f"{parts[1]}/{parts[2]}", parts[3:]
    else:
        return None
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest or "{{" in api_version + rest[0]:
        return None
    return api_version, rest[0], "" if "{{" in namespace else namespace


def _lookups(doc: Mapping[str, Any]) -> Iterable[tuple[str, str, str]]:
    """(apiVersion, resource, namespace) a policy's lookups read where the kind is a literal: classic
    `configMap` and `apiCall` GET entries, and the CEL kinds' `resource.Get/List` (a GeneratingPolicy's
    clone sources too, which a run with downstreams has read whole already). Namespace "": every namespace
    (not a literal, or a cluster-wide call); a literal one is read alone, so that a user allowed to list the
    kind only there can run the policy (a lookup elsewhere is then "not read", run/providers.py)."""
    kind = doc.get("kind")
    if kind in ("ClusterPolicy", "Policy") and str(doc.get("apiVersion", "")).startswith("kyverno.io/"):
        own = str((doc.get("metadata") or {}).get("namespace") or "") if kind == "Policy" else ""
        for entry in _context_entries((doc.get("spec") or {}).get("rules")):
            config_map, call = entry.get("configMap"), entry.get("apiCall")
            if isinstance(config_map, Mapping):
                namespace = str(config_map.get("namespace") or own or "default")
                yield "v1", "configmaps", "" if "{{" in namespace else namespace
            elif isinstance(call, Mapping) and str(call.get("method") or "GET").upper() == "GET" \
                    and not call.get("service") and call.get("urlPath"):
                read = _api_path(str(call["urlPath"]))
                if read is not None:
                    yield read
    elif kind in _CEL_LOOKUP_KINDS:
        yield from resource_calls("\n".join(_strings(doc.get("spec"))))


def _mutate_targets(doc: Mapping[str, Any]) -> Iterable[tuple[str, str, str]]:
    """(apiVersion, kind, namespace) of a ClusterPolicy/Policy's mutate-existing targets where the kind is a
    literal: the background controller reads them (handlers/mutation loadTargets), and so do eval's previews
    and their report entries (evaluate/classic/mutate_existing_preview.py). Namespace "": every namespace."""
    kind = doc.get("kind")
    if kind not in ("ClusterPolicy", "Policy") or not str(doc.get("apiVersion", "")).startswith("kyverno.io/"):
        return
    own = str((doc.get("metadata") or {}).get("namespace") or "") if kind == "Policy" else ""
    for rule in (doc.get("spec") or {}).get("rules") or []:
        mutate = rule.get("mutate") if isinstance(rule, Mapping) else None
        for target in (mutate.get("targets") or []) if isinstance(mutate, Mapping) else []:
            if not isinstance(target, Mapping) or "{{" in str(target.get("apiVersion", "")) + str(target.get(
                    "kind", "")):
                continue
            namespace = own or str(target.get("namespace") or "")
            yield str(target.get("apiVersion") or ""), str(target.get("kind") or ""), \
                "" if "{{" in namespace or "*" in namespace or "?" in namespace else namespace


def kinds_read_by_lookups(docs: Iterable[Mapping[str, Any]], found: Discovered
                          ) -> list[tuple[ResourceInfo, frozenset[str]]]:
    """The kinds the policies' lookups read, and the targets of their mutate-existing rules, each with the
    namespaces it is read in ("" = every one)."""
    out: dict[tuple[str, str], tuple[ResourceInfo, set[str]]] = {}
    for doc in docs:
        reads = [(found.kind_table().by_resource(*_group_version(api_version), resource.split("/", 1)[0]), namespace)
                 for api_version, resource, namespace in _lookups(doc)]
        reads += [(found.find(api_version, kind), namespace) for api_version, kind, namespace in _mutate_targets(doc)]
        for info, namespace in reads:
            if info is None:
                continue
            best = found.preferred_for(info.group, info.kind) or info
            out.setdefault((best.group, best.kind), (best, set()))[1].add(namespace if best.namespaced else "")
    return [(info, frozenset(namespaces)) for info, namespaces in out.values()]


def _strings(value: Any) -> Iterable[str]:
    """Every string in a document (the expressions a kind literal hides in)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def plan_reads(needs: ReadNeeds, found: Discovered) -> list[ListRequest]:
    """The LISTs a run makes, each (kind, scope) once; full lists before selector-narrowed ones."""
    full: dict[tuple[str, str], ListRequest] = {}

    def add(info: ResourceInfo | None, namespace: str = "") -> None:
        if info is None or (info.group, info.kind) in full or not found.listable(info):
            return
        ns = namespace if info.namespaced else ""
        full[(info.group, info.kind)] = ListRequest(info, namespace=ns)

    for group, kind in POLICY_KINDS:
        add(found.preferred_for(group, kind))
    for doc in needs.policy_docs:
        param = (doc.get("spec") or {}).get("paramKind") \
            if doc.get("kind") in ("ValidatingAdmissionPolicy", "MutatingAdmissionPolicy") else None
        if isinstance(param, Mapping) and param.get("kind"):
            add(found.find(str(param.get("apiVersion") or ""), str(param["kind"])))
    add(found.preferred_for("", "Namespace"))
    kyverno_cm = found.preferred_for("", "ConfigMap")
    named = [found.preferred_for(i.group, i.kind) for name in needs.kinds for i in found.kind_table().resolve(name)]
    for info in [*kinds_from_rules(needs.policy_docs, found), *classic_kinds(needs.policy_docs, found), *named]:
        add(info, needs.namespace)
    if needs.downstreams:
        for info in [*kinds_named_by_generators(needs.policy_docs, found),
                     *kinds_written_by_classic_generate(needs.policy_docs, found)]:
            add(info)
    # what the lookups read, in their namespaces whatever -n says (a rule reads a ConfigMap of another
    # namespace): a kind already read in one namespace is read in the others too, or everywhere
    more: list[ListRequest] = []
    for info, namespaces in kinds_read_by_lookups(needs.policy_docs, found):
        have = full.get((info.group, info.kind))
        if not found.listable(info) or (have is not None and not have.namespace):
            continue
        if "" in namespaces:
            full[(info.group, info.kind)] = ListRequest(info)
            more = [r for r in more if (r.info.group, r.info.kind) != (info.group, info.kind)]
            continue
        for namespace in sorted(namespaces):
            if have is None:
                have = full[(info.group, info.kind)] = ListRequest(info, namespace=namespace)
            elif namespace != have.namespace:
                more.append(ListRequest(info, namespace=namespace))
    if needs.reports:
        for group, kind in REPORT_KINDS:
            add(found.preferred_for(group, kind), needs.namespace)
    requests = [*full.values(), *more]
    if kyverno_cm is not None and not any((r.info.group, r.info.kind) == (kyverno_cm.group, kyverno_cm.kind)
                                          and r.namespace in ("", KYVERNO_NAMESPACE) for r in requests):
        requests.append(ListRequest(kyverno_cm, namespace=KYVERNO_NAMESPACE))
    update_requests = found.preferred_for("kyverno.io", "UpdateRequest")
    if needs.downstreams and needs.update_requests and update_requests is not None and \
            found.listable(update_requests):
        requests.append(ListRequest(update_requests, namespace=KYVERNO_NAMESPACE, evidence=True))
    deployments = found.preferred_for("apps", "Deployment")
    if needs.causes and deployments is not None and found.listable(deployments) and \
            (full.get(("apps", "Deployment")) is None or full[("apps", "Deployment")].namespace):
        requests.append(ListRequest(deployments, namespace=KYVERNO_NAMESPACE, evidence=True))
    if needs.rbac:
        for group, kind in RBAC_KINDS:
            rbac_info = found.preferred_for(group, kind)
            if rbac_info is not None and (group, kind) not in full and found.listable(rbac_info):
                full[(group, kind)] = ListRequest(rbac_info, evidence=True)
                requests.append(full[(group, kind)])
    if needs.downstreams:
        # UpdateRequests: listed whole above where Kyverno keeps them, or not at all (apply); never a
        # downstream either way (Kyverno labels them generate.kyverno.io/policy-name, never managed-by)
        seen = set(full) | {("kyverno.io", "UpdateRequest")}
        for info in found.resources:
            key = (info.group, info.kind)
            if key in seen or "/" in info.resource or not found.listable(info):
                continue
            seen.add(key)
            best = found.preferred_for(info.group, info.kind) or info
            requests.append(ListRequest(best, label_selector=OWNED_SELECTOR))
    return requests


def read_state(client: KubeClient, requests: Iterable[ListRequest], *, context: str,
               progress: Progress | None = None) -> LiveRead:
    """Carry out the LISTs and record what was listed and what could not be read."""
    outcomes = list_many(client, requests, progress=progress)
    objects: list[Document] = []
    listed: set[ListedKind] = set()
    unreadable: dict[ListedKind, FailedRead] = {}
    evidence_unread: dict[ListedKind, str] = {}
    notices: list[str] = []
    unsearched: list[tuple[str, str]] = []
    for outcome in outcomes:
        req = outcome.request
        key = ListedKind(req.info.api_version, req.info.kind, req.namespace)
        if not outcome.ok:
            if req.evidence:
                # kept, so that a cause it could have given is said to be unknowable, live and in a capture alike
                evidence_unread[key] = outcome.error or "unreadable"
                notices.append(f"{req.info.kind}s in {req.namespace or 'all namespaces'} not read "
                               f"({outcome.error or 'unreadable'}): causes cannot name them")
            elif not req.label_selector:
                unreadable[key] = outcome.failed_read()
            else:
                # a search for owned downstreams of a kind nothing else needs: said, not fatal
                unsearched.append((req.info.kind, outcome.error or "unreadable"))
            continue
        if not req.label_selector:
            listed.add(key)
        # an object met twice (recreated between pages, or read by two requests) is kept twice here: the
        # one-copy rule (ClusterState.first_of_each) is applied once, by the source, for files and live alike
        for obj in outcome.items:
            meta = obj.get("metadata") or {}
            where = f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else meta.get("name")
            objects.append(Document(obj, Source(f"{context}:{req.info.kind}/{where}")))
    if unsearched:
        # one line, not one per kind: a narrow read-only role refuses dozens of these searches at once
        kinds = sorted({k for k, _ in unsearched})
        shown = ", ".join(kinds[:8]) + (f" and {len(kinds) - 8} more" if len(kinds) > 8 else "")
        notices.append(f"owned downstreams of {len(kinds)} kind(s) not searched ({shown}): {unsearched[0][1]}")
    state = ClusterState.from_objects(objects, listed=listed, unreadable=unreadable, source="live",
                                      has_managed_fields=True, evidence_unread=evidence_unread)
    return LiveRead(state, outcomes, notices)
