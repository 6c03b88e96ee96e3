"""Builds the Kubescape golden states in this directory (run: python testdata/kubescape/build.py).

The states are written as `kubectl get -o json` Lists. Summaries come in the two reads Kubescape storage
serves: a plain LIST (metadata rows: annotations and resourceVersion, spec empty) and a
`resourceVersion=fullSpec` LIST (payloads: severities and references). The want files beside them are
written by hand from the rules in kubectl_kyrec/producers/kubescape.py, not from this script's output.
"""

from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GV = "spdx.softwarecomposition.kubescape.io/v1beta1"
SCANNER = "kubescape"
CLUSTER = "prod"
NOW = datetime.datetime(2026, 10, 2, 15, 30, tzinfo=datetime.UTC)

Obj = dict[str, Any]
_uid_counter = [0]


def uid() -> str:
    _uid_counter[0] += 1
    return f"00000000-0000-4000-8000-{_uid_counter[0]:012d}"


def digest(tag: str) -> str:
    return "sha256:" + (tag.encode().hex() * 64)[:64]


def image_id(repo: str, tag: str) -> str:
    return f"{repo}@{digest(tag)}"


def workload(kind: str, ns: str, name: str, owner: Obj | None = None) -> Obj:
    api = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
    obj: Obj = {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": ns, "uid": uid()}}
    if owner is not None:
        obj["metadata"]["ownerReferences"] = [owner_ref(owner)]
    return obj


def owner_ref(owner: Obj) -> Obj:
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True}


def pod(ns: str, name: str, owner: Obj | None, containers: dict[str, str], *, phase: str = "Running",
        init: tuple[str, ...] = (), ephemeral: tuple[str, ...] = (), labels: dict[str, str] | None = None) -> Obj:
    """`containers`: name -> running imageID ("" for none reported)."""
    meta: Obj = {"name": name, "namespace": ns, "uid": uid()}
    if labels:
        meta["labels"] = labels
    if owner is not None:
        meta["ownerReferences"] = [owner_ref(owner)]
    spec: Obj = {"containers": [{"name": c, "image": f"reg.example/{c}"} for c in containers]}
    if init:
        spec["initContainers"] = [{"name": c, "image": f"reg.example/{c}"} for c in init]
    if ephemeral:
        spec["ephemeralContainers"] = [{"name": c, "image": f"reg.example/{c}"} for c in ephemeral]
    status: Obj = {"phase": phase, "containerStatuses": [
        {"name": c, "imageID": i, "ready": phase == "Running"} for c, i in containers.items() if i]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def summary(ns: str, kind: str, name: str, container: str, image: str, *, written: datetime.datetime,
            rv: str = "100", payload_rv: str | None = None, status: str = "ready", object_name: str | None = None,
            ref_namespace: str | None = None, severities: tuple[int, int, int, int] = (1, 2, 0, 1),
            relevant: bool = True, wlid: str | None = None, reads: str = "both", stub: bool = False) -> list[Obj]:
    """The copies of one summary as the reads return them (`reads`: both, metadata, payload).

    `payload_rv` different from `rv` makes the summary split. `ref_namespace`: where its references point
    (kubevuln points them at the workload namespace). `stub`: the payload is as empty as the metadata row
    (kubevuln's StoreCVESummaryStub, or storage's too-large).
    """
    obj_name = object_name or f"{kind}-{name}-{container}".lower()
    annotations = {
        "kubescape.io/wlid": wlid if wlid is not None else f"wlid://cluster-{CLUSTER}/namespace-{ns}/{kind}-{name}",
        "kubescape.io/workload-container-name": container,
        "kubescape.io/image-id": image,
        "kubescape.io/timestamp": str(int(written.timestamp())),
        "kubescape.io/status": status,
    }
    meta: Obj = {"name": obj_name, "namespace": ns, "uid": uid(), "resourceVersion": rv,
                 "creationTimestamp": "2026-08-01T00:00:00Z", "annotations": annotations,
                 "labels": {"kubescape.io/context": "non-filtered"}}
    zero = {"all": 0, "relevant": 0}
    blank = {"kind": "", "name": "", "namespace": ""}
    plain = {"apiVersion": GV, "kind": "VulnerabilityManifestSummary", "metadata": meta,
             "spec": {"severities": {s: dict(zero) for s in
                                     ("critical", "high", "medium", "low", "negligible", "unknown")},
                      "vulnerabilitiesRef": {"all": dict(blank), "relevant": dict(blank)}}}
    crit, high, rcrit, rhigh = severities
    where = ref_namespace if ref_namespace is not None else ns
    manifest = f"{obj_name}-{image.rsplit(':', 1)[-1][:8]}"
    full_meta = dict(meta, resourceVersion=payload_rv if payload_rv is not None else rv)
    full = {"apiVersion": GV, "kind": "VulnerabilityManifestSummary", "metadata": full_meta,
            "spec": {"severities": {"critical": {"all": crit, "relevant": rcrit},
                                    "high": {"all": high, "relevant": rhigh},
                                    "medium": {"all": 3, "relevant": 0}, "low": dict(zero),
                                    "negligible": dict(zero), "unknown": dict(zero)},
                     "vulnerabilitiesRef": {
                         "all": {"kind": "vulnerabilitymanifests", "name": manifest, "namespace": where},
                         "relevant": ({"kind": "vulnerabilitymanifests", "name": f"{manifest}-r",
                                       "namespace": where} if relevant else dict(blank))}}}
    if stub:
        full = dict(plain, metadata=full_meta)
    return {"both": [plain, full], "metadata": [plain], "payload": [full]}[reads]


def manifests_for(summary_copies: list[Obj], namespace: str | None = None) -> list[Obj]:
    """The VulnerabilityManifests a summary's payload references, stored in `namespace` (default: where the
    reference says)."""
    out: list[Obj] = []
    for copy in summary_copies:
        for which in ("all", "relevant"):
            ref = copy["spec"]["vulnerabilitiesRef"][which]
            if ref["name"]:
                out.append({"apiVersion": GV, "kind": "VulnerabilityManifest",
                            "metadata": {"name": ref["name"], "namespace": namespace or ref["namespace"],
                                         "uid": uid(), "resourceVersion": "7"}})
    return out


def days_ago(n: float) -> datetime.datetime:
    return NOW - datetime.timedelta(days=n)


def deployment(ns: str, name: str, containers: dict[str, str], replicas: int = 1, **kw: Any) -> list[Obj]:
    deploy = workload("Deployment", ns, name)
    rs = workload("ReplicaSet", ns, f"{name}-5d8f7c", deploy)
    pods = [pod(ns, f"{name}-5d8f7c-{i:05d}", rs, containers, **kw) for i in range(replicas)]
    return [deploy, rs, *pods]


def as_list(items: list[Obj]) -> Obj:
    return {"apiVersion": "v1", "kind": "List", "items": items}


# --- the classes state ------------------------------------------------------------------------------------


def classes_state(reads: str = "both") -> list[Obj]:
    """One workload per class and reason (namespace `shop`), plus the out-of-scope rules and orphans."""
    ns = "shop"
    items: list[Obj] = []
    fresh = days_ago(0.25)

    def img(name: str) -> str:
        return image_id(f"reg.example/{name}", name)

    def add_summary(*args: Any, manifest_ns: str | None = None, **kw: Any) -> None:
        copies = summary(*args, reads=reads, **kw)
        items.extend(copies)
        items.extend(manifests_for([c for c in copies if c["spec"]["vulnerabilitiesRef"]["all"]["name"]],
                                   manifest_ns))

    # current: fresh, intact, paired; two replicas; an init container out of scope whose summary is ignored
    items += deployment(ns, "web", {"app": img("web")}, replicas=2, init=("migrate",), labels={"app": "web"})
    add_summary(ns, "deployment", "web", "app", img("web"), written=fresh, severities=(2, 3, 1, 1))
    add_summary(ns, "deployment", "web", "migrate", img("migrate"), written=fresh)
    # missing
    items += deployment(ns, "api", {"app": img("api")})
    # stale image-changed (running image differs from the scanned one)
    items += deployment(ns, "cart", {"app": img("cart-v2")})
    add_summary(ns, "deployment", "cart", "app", img("cart-v1"), written=fresh)
    # stale scan-failed (StatefulSet: the top owner is the Pod's own controller)
    db = workload("StatefulSet", ns, "db")
    items += [db, pod(ns, "db-0", db, {"pg": img("pg")})]
    add_summary(ns, "statefulset", "db", "pg", img("pg"), written=fresh, status="failed")
    # stale not-rescanned
    items += deployment(ns, "search", {"app": img("search")})
    add_summary(ns, "deployment", "search", "app", img("search"), written=days_ago(3))
    # stale not-rescanned and split (the seed's mechanism: every update conflicts since the split)
    items += deployment(ns, "queue", {"app": img("queue")})
    add_summary(ns, "deployment", "queue", "app", img("queue"), written=days_ago(40), rv="504", payload_rv="505")
    # current but split: it split after its last successful write, within the scan period
    items += deployment(ns, "cache", {"redis": img("redis")})
    add_summary(ns, "deployment", "cache", "redis", img("redis"), written=fresh, rv="710", payload_rv="711")
    # current but unpaired: the manifest lives in the scanner's namespace only
    items += deployment(ns, "auth", {"app": img("auth")})
    add_summary(ns, "deployment", "auth", "app", img("auth"), written=fresh, manifest_ns=SCANNER)
    # duplicate: a second summary for the same (wlid, container) under another name
    items += deployment(ns, "pay", {"app": img("pay")})
    add_summary(ns, "deployment", "pay", "app", img("pay"), written=fresh)
    add_summary(ns, "deployment", "pay", "app", img("pay"), written=fresh, object_name="pay-app-copy")
    # misnamed: keyed for the workload, but not at the name kubevuln looks up
    items += deployment(ns, "mail", {"app": img("mail")})
    add_summary(ns, "deployment", "mail", "app", img("mail"), written=fresh, object_name="mail-app")
    # CronJob -> Job -> Pod: the subject is the CronJob; one finished Job's Pod is out of scope
    report = workload("CronJob", ns, "report")
    job = workload("Job", ns, "report-29500", report)
    done = workload("Job", ns, "backup-1")
    items += [report, job, pod(ns, "report-29500-x7k2p", job, {"worker": img("worker")}),
              done, pod(ns, "backup-1-q9z8w", done, {"dump": img("dump")}, phase="Succeeded")]
    add_summary(ns, "cronjob", "report", "worker", img("worker"), written=fresh, relevant=False)
    add_summary(ns, "job", "backup-1", "dump", img("dump"), written=days_ago(5))
    # a bare Pod is its own top owner; it carries an ephemeral debug container (out of scope)
    items.append(pod(ns, "toolbox", None, {"shell": img("shell")}, ephemeral=("debugger",)))
    add_summary(ns, "pod", "toolbox", "shell", img("shell"), written=fresh)
    # a Pending Pod and a Pod in a namespace the scanner skips
    items += deployment(ns, "starting", {"app": ""}, phase="Pending")
    items += deployment("kube-system", "coredns", {"coredns": img("coredns")})
    add_summary("kube-system", "deployment", "coredns", "coredns", img("coredns"), written=fresh)
    # stubs: no result yet (initializing), and storage's too-large (a failure status)
    items += deployment(ns, "fresh", {"app": img("fresh")})
    add_summary(ns, "deployment", "fresh", "app", img("fresh"), written=fresh, status="initializing", stub=True)
    items += deployment(ns, "huge", {"app": img("huge")})
    add_summary(ns, "deployment", "huge", "app", img("huge"), written=fresh, status="too-large", stub=True)
    # excluded (missing, with reason and evidence in the exclusions file)
    items += deployment(ns, "legacy", {"app": img("legacy")}, labels={"tier": "legacy"})
    # orphans: workload gone, container gone, unkeyed
    add_summary(ns, "deployment", "old", "app", img("old"), written=days_ago(30))
    add_summary(ns, "deployment", "web", "sidecar", img("sidecar"), written=days_ago(30), rv="20", payload_rv="21")
    add_summary(ns, "deployment", "ghost", "app", img("ghost"), written=fresh, wlid="", object_name="ghost")
    return items


# --- the seed's figures -----------------------------------------------------------------------------------


def seed_state() -> list[Obj]:
    """79 expected image identities: 57 current, 9 missing, 13 stale; 31 split among 126 summaries; every
    reference points at the workload namespace while kubevuln stored the manifests in the scanner's."""
    items: list[Obj] = []
    namespaces = [f"team-{i}" for i in range(8)]
    running = 0
    for i in range(79):
        ns = namespaces[i % len(namespaces)]
        name, image = f"svc-{i:02d}", image_id(f"reg.example/svc-{i:02d}", f"v{i}")
        replicas = 2 if i < 64 else 1
        items += deployment(ns, name, {"app": image}, replicas=replicas)
        running += replicas
        if i < 57:                       # current: written in the last day
            copies = summary(ns, "deployment", name, "app", image, written=days_ago(0.5), rv=str(1000 + i))
        elif i < 70:                     # stale and split: last written between 2026-08-09 and 2026-08-28
            when = datetime.datetime(2026, 8, 9, tzinfo=datetime.UTC) + datetime.timedelta(days=(i - 57) * 1.5)
            copies = summary(ns, "deployment", name, "app", image, written=when, rv=str(500 + i),
                             payload_rv=str(501 + i))
        else:                            # missing: 9
            continue
        items += copies + manifests_for(copies, SCANNER)
    # 56 summaries of workloads that no longer run: 18 of them split too
    for j in range(56):
        ns = namespaces[j % len(namespaces)]
        name = f"gone-{j:02d}"
        split = j < 18
        copies = summary(ns, "deployment", name, "app", image_id(f"reg.example/{name}", "v0"),
                         written=datetime.datetime(2026, 8, 20, tzinfo=datetime.UTC), rv=str(200 + j),
                         payload_rv=str(201 + j) if split else None)
        items += copies + manifests_for(copies, SCANNER)
    # the rest of the ~286 running containers are in namespaces the scanner skips
    for k in range(286 - running):
        items += deployment("kube-system", f"sys-{k:03d}", {"c": image_id("reg.example/sys", f"s{k}")})
    scheduler = {"apiVersion": "batch/v1", "kind": "CronJob",
                 "metadata": {"name": "kubevuln-scheduler", "namespace": SCANNER, "uid": uid()},
                 "spec": {"schedule": "12 1 * * *"}}
    return [*items, scheduler]


def write(path: Path, items: list[Obj]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(as_list(items), indent=1, sort_keys=False) + "\n")


def main() -> int:
    _uid_counter[0] = 0
    write(HERE / "classes" / "state.json", classes_state())
    _uid_counter[0] = 0
    write(HERE / "one-read" / "state.json", classes_state(reads="metadata"))
    _uid_counter[0] = 0
    write(HERE / "seed-001" / "state.json", seed_state())
    return 0


if __name__ == "__main__":
    sys.exit(main())
