"""Kyverno's controllers as ground truth on the real API server (issue 24, part 4).

Each scenario starts a fresh real API server (tests/realapi, Kyverno's CRDs of ../shared/crds/kyverno), runs
Kyverno's background controller and reports controller out of cluster against its admin kubeconfig, applies
its inputs and policies, waits until Kyverno has settled, and then checks kyrec against what Kyverno did:

- `kyrec diff --live -o json` must call every downstream Kyverno made `in-sync` and every report it wrote
  `current`;
- drift is seeded with Kyverno stopped (a deleted downstream, an edited one, a stale or deleted report), kyrec
  must classify each as recorded, `kyrec apply` must correct what it corrects, and after Kyverno is started
  again and has settled (its next pass: policies re-added, generateExisting, background scan), the
  downstreams and reports must be exactly as kyrec left them (same resourceVersion and field managers).

Kyverno's binaries come from `KYVERNO_BIN_DIR` (built by hand outside the project, see docs/compatibility.md,
"Ground truth: Kyverno's controllers"); nothing of Kyverno is in the repository. Without it the live test is
skipped with that reason. The admission controller does not run (no webhooks can reach a process outside a
cluster here), so what Kyverno does only through admission (generate on trigger CREATE, cleanup on trigger
DELETE, classic sync on a downstream edit) is either driven by hand as the admission controller would (an
UpdateRequest of the same spec, see `hand_update_request`) or stated as not verified in the scenario's notes.

Recording (`python -m tests.realapi.kyverno_truth --record [SCENARIO...]`) writes, per scenario,
testdata/kyverno-truth/<scenario>/: `scenario.json` (Kyverno's version and commit, Kubernetes' version, the
notes, and per checkpoint the time, the kyrec arguments and the classes kyrec gave, each checked against
Kyverno) and one `<checkpoint>.json` state per checkpoint (kyrec capture: the LISTs of a live diff, so the
policies, triggers, sources, Kyverno's downstreams and reports; managedFields kept, their timestamps
dropped). tests/test_kyverno_truth_replay.py replays them offline, without Kyverno.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.load.run_inputs.kyverno_config import DEFAULT_RESOURCE_FILTERS
from tests.realapi import build
from tests.realapi.fixture import CRDS, Kube, RealServer

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "testdata" / "kyverno-truth"
BIN_ENV = "KYVERNO_BIN_DIR"
CONTROLLERS = ("background-controller", "reports-controller")

# One generate worker: v1.17.2 processes UpdateRequests concurrently with one shared CEL context provider, whose
# generate context (policy, trigger, cache-restore flag) one worker sets while another generates; with 2 workers
# a sync-on GeneratingPolicy's cache-restore UR suppressed the creates of its generateExisting UR (see
# docs/compatibility.md). With one worker Kyverno's answer is deterministic.
GEN_WORKERS = int(os.environ.get("KYVERNO_GEN_WORKERS", "1"))
SETTLE_QUIET = 8.0        # seconds without any change to downstreams, reports, URs, ephemeral reports
SETTLE_TIMEOUT = 240.0
MANAGED = "app.kubernetes.io/managed-by=kyverno"

# the kinds a scenario's downstreams may have, and where the reports are
DOWNSTREAM_PATHS = ("/api/v1/configmaps", "/api/v1/secrets")
REPORT_PATHS = ("/apis/wgpolicyk8s.io/v1alpha2/policyreports", "/apis/wgpolicyk8s.io/v1alpha2/clusterpolicyreports")
EPHEMERAL_PATHS = ("/apis/reports.kyverno.io/v1/ephemeralreports",
                   "/apis/reports.kyverno.io/v1/clusterephemeralreports")
UR_PATH = "/apis/kyverno.io/v2/namespaces/kyverno/updaterequests"


class Unavailable(RuntimeError):
    """Kyverno's binaries or the real server cannot be had: the caller skips with this reason."""


def bin_dir() -> Path:
    value = os.environ.get(BIN_ENV, "")
    if not value:
        raise Unavailable(f"{BIN_ENV} is not set (Kyverno's background-controller and reports-controller "
                          "binaries, built outside the project: docs/compatibility.md)")
    path = Path(value)
    missing = [c for c in CONTROLLERS if not (path / c).is_file()]
    if missing:
        raise Unavailable(f"{BIN_ENV}={path} has no {', '.join(missing)}")
    return path


def kyverno_build(path: Path) -> dict[str, str]:
    """Version and commit of the controllers, from the binary's build info (`go version -m`) and the
    environment (KYVERNO_VERSION: the tag the commit was checked out at, as the build info has no tag)."""
    info: dict[str, str] = {"version": os.environ.get("KYVERNO_VERSION", "unknown")}
    info.update(build.go_build_info(path / "background-controller"))
    if "commit" not in info and os.environ.get("KYVERNO_COMMIT"):
        info["commit"] = os.environ["KYVERNO_COMMIT"]
    return info


# ---- Kyverno's controllers, out of cluster ----------------------------------------------------------------------

KYVERNO_CONFIG: dict[str, Any] = {
    "apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"name": "kyverno", "namespace": "kyverno"},
    # the chart's defaults (kyverno chart values.yaml `config`), rendered for release kyverno in namespace kyverno
    "data": {"enableDefaultRegistryMutation": "true", "defaultRegistry": "docker.io",
             "generateSuccessEvents": "false", "excludeGroups": "system:nodes",
             "resourceFilters": DEFAULT_RESOURCE_FILTERS.strip().replace("\n", ""),
             "updateRequestThreshold": "1000"},
}
METRICS_CONFIG: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "kyverno-metrics", "namespace": "kyverno"}, "data": {}}


class Kyverno:
    """The background controller and the reports controller as processes of this machine, each with
    `--kubeconfig` (the server's admin context), the environment the chart's Deployments set, metrics off and no
    port of their own (metrics disabled, controller-runtime metrics `0`, profiling off)."""

    def __init__(self, bins: Path, kubeconfig: Path, workdir: Path) -> None:
        self.bins = bins
        self.kubeconfig = kubeconfig
        self.workdir = workdir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.starts = 0

    @staticmethod
    def prepare(kube: Kube) -> None:
        assert kube.apply("/api/v1/namespaces/kyverno", {"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": "kyverno"}}, "truth").status < 300
        for cm in (KYVERNO_CONFIG, METRICS_CONFIG):
            path = f"/api/v1/namespaces/kyverno/configmaps/{cm['metadata']['name']}"
            answer = kube.apply(path, cm, "truth", force=True)
            assert answer.status < 300, answer

    def args(self, name: str) -> list[str]:
        common = [f"--kubeconfig={self.kubeconfig}", "--disableMetrics=true", "--loggingFormat=text", "-v=4",
                  "--leaderElectionRetryPeriod=1s", "--autoMemLimitEnabled=false"]
        if name == "background-controller":
            return [*common, "--controllerRuntimeMetricsAddress=0", f"--genWorkers={GEN_WORKERS}"]
        return [*common, "--backgroundScanWorkers=2", "--aggregationWorkers=2"]

    def start(self) -> None:
        self.starts += 1
        for name in CONTROLLERS:
            env = {**os.environ, "KYVERNO_NAMESPACE": "kyverno", "KYVERNO_SERVICEACCOUNT_NAME": f"kyverno-{name}",
                   "KYVERNO_DEPLOYMENT": f"kyverno-{name}", "KYVERNO_POD_NAME": f"kyverno-{name}-truth",
                   "INIT_CONFIG": "kyverno", "METRICS_CONFIG": "kyverno-metrics"}
            log = open(self.workdir / f"{name}.{self.starts}.log", "wb")   # noqa: SIM115 (the process keeps it)
            self.procs[name] = subprocess.Popen([str(self.bins / name), *self.args(name)], env=env, stdout=log,
                                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                cwd=self.workdir)
        deadline = time.monotonic() + 120
        pending = set(CONTROLLERS)
        while pending and time.monotonic() < deadline:
            for name in list(pending):
                text = (self.workdir / f"{name}.{self.starts}.log").read_text(errors="replace")
                if "successfully acquired lease" in text or "started leading" in text:
                    pending.discard(name)
                if self.procs[name].poll() is not None:
                    raise RuntimeError(f"Kyverno's {name} exited ({self.procs[name].returncode}):\n"
                                       + "\n".join(text.splitlines()[-30:]))
            time.sleep(0.5)
        if pending:
            raise RuntimeError(f"Kyverno's {', '.join(sorted(pending))} did not become leader within 120s")

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self.procs.clear()


# ---- reading the server (the tests' own client, not kyrec's) -----------------------------------------------------

def key_of(obj: Mapping[str, Any]) -> str:
    md = obj["metadata"]
    return f"{obj['kind']}/{md.get('namespace', '')}/{md['name']}"


def list_items(kube: Kube, path: str, **query: str) -> list[dict[str, Any]]:
    for _ in range(30):     # a CRD's storage answers 429 "storage is (re)initializing" for a moment after start
        answer = kube.request("GET", path, query=query or None)
        if answer.status != 429:
            break
        time.sleep(1)
    if answer.status == 404:
        return []
    assert answer.status == 200, answer
    doc = answer.json()
    kind = doc.get("kind", "List").removesuffix("List")
    for item in doc.get("items", []):
        item.setdefault("kind", kind)
    items: list[dict[str, Any]] = doc.get("items", [])
    return items


def watched(kube: Kube) -> dict[str, Any]:
    """What Kyverno writes: downstreams (labelled managed-by kyverno), reports, ephemeral reports, URs."""
    seen: dict[str, Any] = {}
    for path in DOWNSTREAM_PATHS:
        for obj in list_items(kube, path, labelSelector=MANAGED):
            seen[key_of(obj)] = obj
    for path in (*REPORT_PATHS, *EPHEMERAL_PATHS, UR_PATH):
        for obj in list_items(kube, path):
            seen[key_of(obj)] = obj
    return seen


def fingerprint(objs: Mapping[str, Any]) -> dict[str, str]:
    return {k: o["metadata"]["resourceVersion"] for k, o in objs.items()}


def settle(kube: Kube, quiet: float = SETTLE_QUIET, timeout: float = SETTLE_TIMEOUT,
           until: Callable[[Mapping[str, Any]], bool] | None = None) -> dict[str, Any]:
    """Poll until nothing Kyverno writes has changed for `quiet` seconds and no UpdateRequest is pending and no
    ephemeral report waits for aggregation; the objects then."""
    deadline = time.monotonic() + timeout
    last: dict[str, str] | None = None
    since = time.monotonic()
    while True:
        objs = watched(kube)
        now = fingerprint(objs)
        busy = [k for k, o in objs.items()
                if (k.startswith("UpdateRequest/") and (o.get("status") or {}).get("state") not in ("Completed",
                                                                                                  "Failed"))
                or k.startswith(("EphemeralReport/", "ClusterEphemeralReport/"))]
        if now != last or busy or (until is not None and not until(objs)):
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return objs
        if time.monotonic() > deadline:
            raise TimeoutError(f"Kyverno did not settle within {timeout:.0f}s; busy: {busy[:10]}; "
                               f"{len(objs)} objects")
        time.sleep(1.0)


def managers(obj: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((e.get("manager", ""), e.get("operation", ""), json.dumps(e.get("fieldsV1"), sort_keys=True))
                  for e in obj["metadata"].get("managedFields") or [])


def outputs(kube: Kube, scope: list[str] | None = None) -> dict[str, tuple[str, list[tuple[str, str, str]]]]:
    """Downstreams (`--downstreams`) or reports (`--reports`) or both: key -> (resourceVersion, field managers
    with what they own)."""
    reports = ("PolicyReport/", "ClusterPolicyReport/")
    out = {}
    for k, o in watched(kube).items():
        if k.startswith(("UpdateRequest/", "EphemeralReport/", "ClusterEphemeralReport/")):
            continue
        if scope and ("--reports" in scope) != k.startswith(reports):
            continue
        out[k] = (o["metadata"]["resourceVersion"], managers(o))
    return out


# ---- kyrec -------------------------------------------------------------------------------------------------------

def run_kyrec(kubeconfig: Path | None, cache: Path, *args: str) -> tuple[int, dict[str, Any] | None, str]:
    env = {"XDG_CACHE_HOME": str(cache), "KUBECONFIG": str(kubeconfig) if kubeconfig else "/nonexistent"}
    result = CliRunner().invoke(cli, list(args), env=env)
    try:
        doc = json.loads(result.stdout) if result.stdout.strip().startswith("{") else None
    except json.JSONDecodeError:
        doc = None
    return result.exit_code, doc, result.stderr + (repr(result.exception) if result.exception and
                                                     not isinstance(result.exception, SystemExit) else "")


def classes(doc: Mapping[str, Any]) -> dict[str, str]:
    """`domain kind/ns/name` -> class[/reason][ (unenforced)] for every change of a diff."""
    out: dict[str, str] = {}
    for c in doc["changes"]:
        ref = c["object"]
        text = c["class"] + (f"/{c['reason']}" if c.get("reason") else "")
        if c.get("enforced") is False:
            text += " (unenforced)"
        out[f"{c['domain']} {ref['kind']}/{ref['namespace']}/{ref['name']}"] = text
    return out


def strip_state(doc: dict[str, Any]) -> dict[str, Any]:
    """A captured state made small and stable: managedFields keep manager, operation, apiVersion and fieldsV1
    (what drift detection reads), not their times; objects of the kyverno namespace other than its ConfigMap
    (leases, events, UpdateRequests) are dropped."""
    items = []
    for item in doc.get("items", []):
        md = item.get("metadata", {})
        for entry in md.get("managedFields") or []:
            entry.pop("time", None)
        items.append(item)
    doc["items"] = items
    return doc


# ---- scenarios --------------------------------------------------------------------------------------------------

@dataclass
class Checkpoint:
    name: str
    now: str
    args: list[str]
    classes: dict[str, str]          # kyrec's
    truth: dict[str, str]            # what Kyverno's own state implies
    disagreements: dict[str, str]    # key -> class of a known disagreement (docs/compatibility.md)
    verified: str


@dataclass
class Context:
    """What a scenario's steps use: the server, Kyverno, kyrec, and the record of checkpoints."""
    server: RealServer
    kyverno: Kyverno
    workdir: Path
    scope: list[str]                                    # --downstreams or --reports
    record_to: Path | None = None
    checkpoints: list[Checkpoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    log: Callable[[str], None] = print

    @property
    def kube(self) -> Kube:
        return self.server.kube

    def seed(self, *docs: Mapping[str, Any]) -> None:
        self.server.seed(*docs)

    def kyrec(self, *args: str) -> tuple[int, dict[str, Any] | None, str]:
        return run_kyrec(self.server.kubeconfig, self.workdir / "cache", *args)

    def diff(self, now: str) -> dict[str, Any]:
        code, doc, err = self.kyrec("diff", "--live", *self.scope, "--now", now, "-o", "json")
        assert doc is not None and code in (0, 1), (code, err)
        return doc

    def checkpoint(self, name: str, verified: str,
                   expect: Callable[[dict[str, str]], dict[str, str]]) -> dict[str, str]:
        """kyrec's live diff now; `expect(found)` gives, per object, the class Kyverno's own state implies (the
        check), which must equal kyrec's; then the state is captured for the offline replay."""
        now = datetime.datetime.now(datetime.UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
        doc = self.diff(now)
        found = classes(doc)
        # the state is captured first, so that a disagreement can be looked at offline (kept with the logs)
        state = (self.record_to or self.workdir) / f"{name}.json"
        code, _, err = self.kyrec("capture", "-o", str(state))
        assert code == 0, err
        captured = strip_state(json.loads(state.read_text()))
        state.write_text(json.dumps(captured, sort_keys=True, separators=(",", ":")) + "\n")
        if self.record_to is not None:
            shutil.copy(state, self.workdir / state.name)
        wanted = expect(found)
        known = known_disagreements(doc, wanted)
        wrong = {k: (found.get(k), v) for k, v in wanted.items() if found.get(k) != v and k not in known}
        extra = {k: v for k, v in found.items() if k not in wanted}
        self.log(f"  checkpoint {name}: {len(found)} objects: " + ", ".join(
            f"{c} x{n}" for c, n in sorted(_count(found).items()))
            + (f"; known disagreements: {', '.join(f'{c} x{n}' for c, n in sorted(_count(known).items()))}"
               if known else ""))
        assert not wrong and not extra, f"checkpoint {name}: kyrec (found, wanted): {wrong}; unexpected: {extra}"
        self.checkpoints.append(Checkpoint(name, now, [*self.scope], found, wanted, known, verified))
        return found


# Known disagreements between kyrec and the Kyverno version the truth came from, by class: a change of kyrec's
# whose every differing field is one of these is not a finding against that version.
VERSION_ONLY_FIELDS = {
    # main writes the index of the failing validation into a ValidatingPolicy result's properties
    # (pkg/cel/policies/vpol/engine/engine.go withValidationIndex); v1.17.2 does not. kyrec writes it and, since
    # reconcile/reports.py RELEASE_PROPERTIES, no longer calls a result without it stale: kept for a recorder run
    # on a kyrec from before that.
    "version: cel.validationIndex": "/properties/cel.validationIndex",
}


def known_disagreements(doc: Mapping[str, Any], truth: Mapping[str, str]) -> dict[str, str]:
    """key -> class, for each object kyrec classifies otherwise than Kyverno's state implies, for a known reason."""
    out: dict[str, str] = {}
    for c in doc["changes"]:
        ref = c["object"]
        key = f"{c['domain']} {ref['kind']}/{ref['namespace']}/{ref['name']}"
        if truth.get(key) != "current" or c["class"] != "stale" or not c.get("fields"):
            continue
        for name, suffix in VERSION_ONLY_FIELDS.items():
            if all(f.endswith(suffix) for f in c["fields"]):
                out[key] = name
    return out


def _count(found: Mapping[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in found.values():
        out[v] = out.get(v, 0) + 1
    return out


def all_as(found: Mapping[str, str], cls: str) -> dict[str, str]:
    return {k: cls for k in found}


def ns(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def cm(namespace: str, name: str, data: Mapping[str, str], **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": labels}, "data": dict(data)}


def edit(kube: Kube, path: str, change: Callable[[dict[str, Any]], None], manager: str = "kubectl-edit") -> None:
    """A user's edit: GET, change, PUT (an Update by `manager`), as `kubectl edit` does."""
    obj = kube.get(path)
    assert obj is not None, path
    change(obj)
    answer = kube.request("PUT", path, obj, query={"fieldManager": manager})
    assert answer.status == 200, answer


def delete(kube: Kube, path: str) -> None:
    answer = kube.delete(path)
    assert answer.status in (200, 202), answer


def apply_policy(kube: Kube, doc: Mapping[str, Any]) -> None:
    api = doc["apiVersion"]
    plural = {"GeneratingPolicy": "generatingpolicies", "ClusterPolicy": "clusterpolicies",
              "ValidatingPolicy": "validatingpolicies"}[doc["kind"]]
    answer = kube.apply(f"/apis/{api}/{plural}/{doc['metadata']['name']}", doc, "kubectl", force=True)
    assert answer.status < 300, answer


def hand_update_request(kube: Kube, policy: str, trigger: Mapping[str, Any], *, delete_downstream: bool,
                        operation: str = "DELETE") -> None:
    """The UpdateRequest Kyverno's admission controller makes for a GeneratingPolicy's trigger (v1.17.2
    pkg/webhooks/resource/gpol/handler.go and utils.go buildURSpecNew: type CELGenerate, one rule context named
    by the policy; on a DELETE of a trigger of a sync-on policy whose operations lack DELETE,
    deleteDownstream true; pkg/webhooks/updaterequest/generator.go: generateName ur-, in Kyverno's namespace,
    then status Pending; on a CREATE, deleteDownstream false). The admission request it carries is left out:
    for deleteDownstream the background controller does not read it, and without one it evaluates the trigger
    as a CREATE by nobody (pkg/background/gpol/generate_controller.go ProcessUR), which is what a policy that
    reads no request data gives either way."""
    md = trigger["metadata"]
    ur = {"apiVersion": "kyverno.io/v2", "kind": "UpdateRequest",
          "metadata": {"generateName": "ur-", "namespace": "kyverno"},
          # the Go client also sends the spec's legacy non-omitempty fields, zero-valued (rule, deleteDownstream,
          # resource), which the CRD requires
          "spec": {"requestType": "cel-generate", "policy": policy, "rule": "", "deleteDownstream": False,
                   "resource": {"apiVersion": "", "kind": "", "namespace": "", "name": ""},
                   "ruleContext": [{"rule": policy, "deleteDownstream": delete_downstream, "synchronize": False,
                                    "cacheRestore": False,
                                    "trigger": {"apiVersion": trigger["apiVersion"], "kind": trigger["kind"],
                                                "namespace": md.get("namespace", ""), "name": md["name"],
                                                "uid": md["uid"]}}],
                   "context": {"userInfo": {"userInfo": {}}, "admissionRequestInfo": {"operation": operation}}}}
    answer = kube.request("POST", UR_PATH, ur)
    assert answer.status == 201, answer
    created = answer.json()
    created["status"] = {"state": "Pending"}
    path = f"{UR_PATH}/{created['metadata']['name']}/status"
    answer = kube.request("PUT", path, created)
    assert answer.status == 200, answer


@contextmanager
def stopped(ctx: Context) -> Iterator[None]:
    ctx.kyverno.stop()
    try:
        yield
    finally:
        pass


def kyverno_next_pass(ctx: Context, before: Mapping[str, Any]) -> None:
    """Start Kyverno again (policies re-added, generateExisting, the background scan of every subject), let it
    settle, and require every downstream or report of the scenario's scope to be as it was: same resourceVersion
    and field managers. What Kyverno rewrote outside the scope (its own generate reports) is noted."""
    others = outputs(ctx.kube)
    ctx.kyverno.start()
    settle(ctx.kube)
    after = outputs(ctx.kube, ctx.scope)
    changed = {k: (before.get(k), after.get(k)) for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert not changed, "Kyverno's next pass changed: " + json.dumps(
        {k: [None if v is None else v[0] for v in pair] for k, pair in changed.items()}, indent=1)
    moved = sorted(k for k, v in outputs(ctx.kube).items() if k not in after and others.get(k) != v)
    if moved:
        ctx.notes.append(f"Kyverno's next pass rewrote {len(moved)} object(s) outside the scenario's scope "
                         f"({', '.join(sorted({k.split('/')[0] for k in moved}))}): its own reports of generate "
                         "results, not touched by kyrec")
    ctx.log(f"  Kyverno's next pass changed nothing ({len(after)} objects compared)")


GPOL = "policies.kyverno.io/v1beta1"


def gpol(name: str, *, sync: bool, generate: str, resources: str = "namespaces", condition: str = "",
         orphan: bool | None = None, variables: list[dict[str, str]] | None = None,
         object_selector: dict[str, Any] | None = None) -> dict[str, Any]:
    evaluation: dict[str, Any] = {"generateExisting": {"enabled": True}, "synchronize": {"enabled": sync}}
    if orphan is not None:
        evaluation["orphanDownstreamOnPolicyDelete"] = {"enabled": orphan}
    rule: dict[str, Any] = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                            "resources": [resources]}
    spec: dict[str, Any] = {"evaluation": evaluation, "matchConstraints": {"resourceRules": [rule]},
                            "generate": [{"expression": generate}]}
    if object_selector:
        spec["matchConstraints"]["objectSelector"] = object_selector
    if condition:
        spec["matchConditions"] = [{"name": "scope", "expression": condition}]
    if variables:
        spec["variables"] = variables
    return {"apiVersion": GPOL, "kind": "GeneratingPolicy", "metadata": {"name": name}, "spec": spec}


def cpol_generate(name: str, *, sync: bool, generate: dict[str, Any], orphan: bool | None = None,
                  namespaces: str = "team-*") -> dict[str, Any]:
    gen = {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "{{request.object.metadata.name}}",
           "synchronize": sync, "generateExisting": True, **generate}
    if orphan is not None:
        gen["orphanDownstreamOnPolicyDelete"] = orphan
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": name},
            "spec": {"rules": [{"name": "generate",
                                "match": {"any": [{"resources": {"kinds": ["Namespace"], "names": [namespaces]}}]},
                                "generate": gen}]}}


DATA_GEN = ('generator.Apply(object.metadata.name, [{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"), '
            '"metadata": dyn({"name": "team-settings"}), "data": dyn({"tier": "standard", "owner": "platform"})}])')
CLONE_GEN = "generator.Apply(object.metadata.name, [variables.source])"
CLONE_VARS = [{"name": "source", "expression": 'resource.Get("v1", "configmaps", "truth-src", "shared-settings")'}]
TEAMS = ("team-a", "team-b", "team-c")
# GeneratingPolicies select the team namespaces by label (objectSelector), not by a matchCondition: v1.17.2's
# watch manager, given an empty result for a trigger a matchCondition rejects, deletes every downstream of a
# sync-on policy (pkg/background/gpol/dynamic_watcher.go SyncWatchers; Kyverno #16759): see
# docs/compatibility.md. With the selector, the listed triggers are the matching ones only.
TEAM_SELECTOR = {"matchLabels": {"truth-team": "yes"}}


def cmpath(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps/{name}"


def gpol_generate(ctx: Context) -> None:
    """GeneratingPolicy with generateExisting: data with sync on (`team-settings`), clone with sync off
    (policy `team-shared`: truth-src/shared-settings as resource.Get returns it, so the same name)."""
    ctx.seed(ns("truth-src"), *[ns(t, **{"truth-team": "yes"}) for t in TEAMS],
             cm("truth-src", "shared-settings", {"region": "eu", "level": "1"}, app="shared"))
    ctx.kyverno.start()
    apply_policy(ctx.kube, gpol("team-settings", sync=True, generate=DATA_GEN, object_selector=TEAM_SELECTOR))
    apply_policy(ctx.kube, gpol("team-shared", sync=False, generate=CLONE_GEN, object_selector=TEAM_SELECTOR,
                                variables=CLONE_VARS))
    settle(ctx.kube)
    ctx.checkpoint("settled", "Kyverno made 3+3 downstreams by generateExisting; kyrec: all in-sync",
                   lambda f: {**all_as(f, "in-sync"), **_expect_downstreams(ctx, 6)})
    # a downstream edited while Kyverno runs: the GeneratingPolicy's watcher (sync on) reverts it
    edit(ctx.kube, cmpath("team-c", "team-settings"), lambda o: o["data"].update(tier="gold"))
    time.sleep(2)
    settle(ctx.kube)
    reverted = ctx.kube.get(cmpath("team-c", "team-settings"))["data"]["tier"]
    ctx.notes.append(f"a sync-on GeneratingPolicy downstream edited while Kyverno runs: tier is {reverted!r} "
                     "after Kyverno settled (its dynamic watcher reverts edits it sees)")
    ctx.checkpoint("edited-live", f"after Kyverno's own reaction to an edit (tier {reverted!r})",
                   lambda f: {**all_as(f, "in-sync"),
                              **({} if reverted == "standard" else
                                 {"downstream ConfigMap/team-c/team-settings": "drifted/changed-fields"})})
    if reverted != "standard":
        code, _, err = ctx.kyrec("apply", "--downstreams", "--yes")
        assert code == 0, err
    with stopped(ctx):
        delete(ctx.kube, cmpath("team-a", "team-settings"))
        edit(ctx.kube, cmpath("team-b", "team-settings"), lambda o: o["data"].update(tier="gold"))
        edit(ctx.kube, cmpath("team-b", "shared-settings"), lambda o: o["data"].update(level="9"))
        ctx.checkpoint("drift", "seeded with Kyverno stopped: one deleted, one edited (sync on), one edited (sync off)",
                       lambda f: {**all_as(f, "in-sync"),
                                  "downstream ConfigMap/team-a/team-settings": "missing",
                                  "downstream ConfigMap/team-b/team-settings": "drifted/changed-fields",
                                  "downstream ConfigMap/team-b/shared-settings": "drifted/changed-fields (unenforced)"})
        code, doc, err = ctx.kyrec("apply", "--downstreams", "--yes", "-o", "json")
        assert code == 0, err
        ctx.checkpoint("applied", "after kyrec apply: the sync-off edit is left as Kyverno leaves it",
                       lambda f: {**all_as(f, "in-sync"),
                                  "downstream ConfigMap/team-b/shared-settings": "drifted/changed-fields (unenforced)"})
        before = outputs(ctx.kube, ctx.scope)
    kyverno_next_pass(ctx, before)


def _expect_downstreams(ctx: Context, count: int) -> dict[str, str]:
    made = [k for k in watched(ctx.kube) if k.startswith(("ConfigMap/", "Secret/"))]
    assert len(made) == count, f"Kyverno made {len(made)} downstreams, expected {count}: {made}"
    return {f"downstream {k}": "in-sync" for k in made}


def classic_generate(ctx: Context) -> None:
    """ClusterPolicy generate rules with generateExisting: data with sync off (`team-quota`), clone with sync on
    (`team-clone`, from truth-src/shared-settings)."""
    ctx.seed(ns("truth-src"), *[ns(t, **{"truth-team": "yes"}) for t in TEAMS],
             cm("truth-src", "shared-settings", {"region": "eu", "level": "1"}, app="shared"))
    ctx.kyverno.start()
    apply_policy(ctx.kube, cpol_generate("team-quota", sync=False,
                                         generate={"name": "team-quota", "data": {"data": {"cpu": "4"}}}))
    apply_policy(ctx.kube, cpol_generate("team-clone", sync=True, generate={
        "name": "team-clone", "clone": {"namespace": "truth-src", "name": "shared-settings"}}))
    settle(ctx.kube)
    ctx.checkpoint("settled", "Kyverno made 3+3 downstreams by generateExisting; kyrec: all in-sync",
                   lambda f: {**all_as(f, "in-sync"), **_expect_downstreams(ctx, 6)})
    # a downstream edited while Kyverno runs: for classic rules the revert goes through admission (not running)
    edit(ctx.kube, cmpath("team-c", "team-clone"), lambda o: o["data"].update(level="7"))
    time.sleep(2)
    settle(ctx.kube)
    kept = ctx.kube.get(cmpath("team-c", "team-clone"))["data"]["level"]
    ctx.notes.append(f"a sync-on classic clone downstream edited while the background controller runs: level is "
                     f"{kept!r} after it settled (the revert is the admission controller's, not running here)")
    ctx.checkpoint("edited-live", f"after an edit with only the background controller running (level {kept!r})",
                   lambda f: {**all_as(f, "in-sync"),
                              **({} if kept == "1" else
                                 {"downstream ConfigMap/team-c/team-clone": "drifted/changed-fields"})})
    with stopped(ctx):
        delete(ctx.kube, cmpath("team-a", "team-clone"))
        delete(ctx.kube, cmpath("team-a", "team-quota"))
        edit(ctx.kube, cmpath("team-b", "team-quota"), lambda o: o["data"].update(cpu="64"))
        ctx.checkpoint("drift", "seeded with Kyverno stopped",
                       lambda f: {**all_as(f, "in-sync"),
                                  "downstream ConfigMap/team-a/team-clone": "missing",
                                  "downstream ConfigMap/team-a/team-quota": "missing",
                                  "downstream ConfigMap/team-b/team-quota": "drifted/changed-fields (unenforced)",
                                  **({} if kept == "1" else
                                     {"downstream ConfigMap/team-c/team-clone": "drifted/changed-fields"})})
        code, _, err = ctx.kyrec("apply", "--downstreams", "--yes")
        assert code == 0, err
        ctx.checkpoint("applied", "after kyrec apply",
                       lambda f: {**all_as(f, "in-sync"),
                                  "downstream ConfigMap/team-b/team-quota": "drifted/changed-fields (unenforced)"})
        before = outputs(ctx.kube, ctx.scope)
    kyverno_next_pass(ctx, before)


def trigger_deleted(ctx: Context) -> None:
    """A sync-on GeneratingPolicy on ConfigMap triggers (label truth-trigger=yes) in team-a; two triggers
    deleted: one with the UpdateRequest the admission controller would make (Kyverno deletes the downstream),
    one without (the admission controller down): an orphan kyrec finds and prunes. A trigger created later:
    missing until the UpdateRequest of its CREATE, made by hand as the admission controller would, is processed."""
    ctx.seed(ns("team-a"), *[cm("team-a", f"app-{i}", {"v": str(i)}, **{"truth-trigger": "yes"}) for i in (1, 2, 3)])
    ctx.kyverno.start()
    apply_policy(ctx.kube, gpol(
        "per-app", sync=True, resources="configmaps", object_selector={"matchLabels": {"truth-trigger": "yes"}},
        generate=('generator.Apply(object.metadata.namespace, [{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"), '
                  '"metadata": dyn({"name": object.metadata.name + "-child"}), '
                  '"data": dyn({"parent": object.metadata.name})}])')))
    settle(ctx.kube)
    ctx.checkpoint("settled", "3 downstreams by generateExisting",
                   lambda f: {**all_as(f, "in-sync"), **_expect_downstreams(ctx, 3)})
    t1 = ctx.kube.get(cmpath("team-a", "app-1"))
    delete(ctx.kube, cmpath("team-a", "app-1"))
    hand_update_request(ctx.kube, "per-app", t1, delete_downstream=True)
    delete(ctx.kube, cmpath("team-a", "app-2"))
    settle(ctx.kube)
    gone = ctx.kube.get(cmpath("team-a", "app-1-child")) is None
    ctx.notes.append(f"trigger app-1 deleted with the admission controller's UpdateRequest made by hand: its "
                     f"downstream {'deleted' if gone else 'kept'} by Kyverno")
    kept2 = ctx.kube.get(cmpath("team-a", "app-2-child")) is not None
    ctx.notes.append(f"trigger app-2 deleted without an UpdateRequest: downstream {'kept' if kept2 else 'deleted'}")
    ctx.checkpoint("trigger-deleted", "after Kyverno handled the UR for app-1; app-2's UR never made",
                   lambda f: {**all_as(f, "in-sync"),
                              **({} if gone else {"downstream ConfigMap/team-a/app-1-child": "orphan/trigger-gone"}),
                              **({"downstream ConfigMap/team-a/app-2-child": "orphan/trigger-gone"} if kept2 else {})})
    # a trigger created after the policy: Kyverno generates for it on admission only
    ctx.seed(cm("team-a", "app-4", {"v": "4"}, **{"truth-trigger": "yes"}))
    time.sleep(2)
    settle(ctx.kube)
    made = ctx.kube.get(cmpath("team-a", "app-4-child")) is not None
    ctx.notes.append(f"trigger app-4 created after the policy, no admission controller: downstream "
                     f"{'made' if made else 'not made'} by the background controller")
    ctx.checkpoint("trigger-created", "a new trigger, no UpdateRequest yet (admission down)",
                   lambda f: {**all_as(f, "in-sync"),
                              **({} if made else {"downstream ConfigMap/team-a/app-4-child": "missing"}),
                              "downstream ConfigMap/team-a/app-2-child": "orphan/trigger-gone"})
    hand_update_request(ctx.kube, "per-app", ctx.kube.get(cmpath("team-a", "app-4")), delete_downstream=False,
                        operation="CREATE")
    settle(ctx.kube)
    made = ctx.kube.get(cmpath("team-a", "app-4-child")) is not None
    ctx.notes.append(f"after the admission controller's CREATE UpdateRequest made by hand: app-4-child "
                     f"{'made' if made else 'not made'} by Kyverno")
    ctx.checkpoint("trigger-created-ur", "after Kyverno processed the UpdateRequest of the CREATE",
                   lambda f: {**all_as(f, "in-sync"),
                              **({} if made else {"downstream ConfigMap/team-a/app-4-child": "missing"}),
                              "downstream ConfigMap/team-a/app-2-child": "orphan/trigger-gone"})
    with stopped(ctx):
        code, _, err = ctx.kyrec("apply", "--downstreams", "--prune", "--yes")
        assert code == 0, err
        ctx.checkpoint("pruned", "after kyrec apply --prune", lambda f: all_as(f, "in-sync"))
        before = outputs(ctx.kube, ctx.scope)
    kyverno_next_pass(ctx, before)


def policy_deleted(ctx: Context) -> None:
    """Four policies, each generating one ConfigMap per team namespace, deleted: a GeneratingPolicy and a
    ClusterPolicy with orphanDownstreamOnPolicyDelete false and true. A fifth policy stays (a complete, non-empty
    policy set for kyrec)."""
    ctx.seed(*[ns(t, **{"truth-team": "yes"}) for t in TEAMS[:2]])
    ctx.kyverno.start()
    policies = []
    for orphan in (False, True):
        suffix = "orphan" if orphan else "delete"
        gen = DATA_GEN.replace("team-settings", f"g-{suffix}")
        policies.append(gpol(f"g-{suffix}", sync=True, generate=gen, object_selector=TEAM_SELECTOR, orphan=orphan))
        policies.append(cpol_generate(f"c-{suffix}", sync=True, orphan=orphan,
                                      generate={"name": f"c-{suffix}", "data": {"data": {"k": "v"}}}))
    policies.append(gpol("stays", sync=True, generate=DATA_GEN.replace("team-settings", "stays"),
                         object_selector=TEAM_SELECTOR))
    for p in policies:
        apply_policy(ctx.kube, p)
    settle(ctx.kube)
    ctx.checkpoint("settled", "10 downstreams", lambda f: {**all_as(f, "in-sync"), **_expect_downstreams(ctx, 10)})
    for p in policies[:4]:
        plural = "generatingpolicies" if p["kind"] == "GeneratingPolicy" else "clusterpolicies"
        delete(ctx.kube, f"/apis/{p['apiVersion']}/{plural}/{p['metadata']['name']}")
    time.sleep(2)
    settle(ctx.kube)
    left = sorted(k for k in watched(ctx.kube) if k.startswith("ConfigMap/"))
    ctx.notes.append("after the four policies were deleted Kyverno left: " + ", ".join(left))

    def expect(found: dict[str, str]) -> dict[str, str]:
        # every downstream Kyverno kept of a deleted policy is an orphan of a policy kyrec no longer has
        return {**all_as(found, "in-sync"),
                **{f"downstream {k}": "orphan/policy-gone" for k in left if not k.endswith("/stays")}}
    ctx.checkpoint("policies-deleted", "the downstreams Kyverno kept are policy-gone orphans to kyrec", expect)
    code, doc, err = ctx.kyrec("apply", "--downstreams", "--prune", "--dry-run=server", "--yes", "-o", "json")
    assert code == 0 and doc is not None, err
    would = sorted(f"{o['object']['namespace']}/{o['object']['name']}" for o in doc["outcomes"]
                   if o["action"] == "delete" and o["status"] == "dry-run")
    ctx.notes.append("kyrec apply --prune (server dry run) would delete: " + (", ".join(would) or "nothing")
                     + " (the downstreams of the policies deleted with orphanDownstreamOnPolicyDelete: true)")


def reports_scan(ctx: Context) -> None:
    """Background-scan reports: four corpus ValidatingPolicies and two corpus ClusterPolicies (validate, Audit,
    background) over 36 Pods in three namespaces."""
    from tests.shared_inputs import shared
    corpus = shared("corpus")
    files = ["kyverno-policies/best-practices-vpol/disallow-latest-tag/disallow-latest-tag.yaml",
             "kyverno-policies/best-practices-vpol/require-labels/require-labels.yaml",
             "kyverno-policies/pod-security-vpol/baseline/disallow-host-namespaces/disallow-host-namespaces.yaml",
             "kyverno-policies/best-practices-vpol/require-pod-requests-limits/require-pod-requests-limits.yaml",
             "kyverno-policies-legacy/best-practices/require-ro-rootfs/require-ro-rootfs.yaml",
             "kyverno-policies-legacy/best-practices/restrict-image-registries/restrict-image-registries.yaml"]
    docs = [d for f in files for d in yaml.safe_load_all((corpus / f).read_text()) if d]
    ctx.seed(*[ns(n) for n in ("apps-a", "apps-b", "apps-c")], *pods())
    ctx.kyverno.start()
    for d in docs:
        if d["kind"] == "ValidatingPolicy":
            d["apiVersion"] = GPOL
        apply_policy(ctx.kube, d)
    settle(ctx.kube, until=lambda objs: sum(k.startswith("PolicyReport/") for k in objs) >= 36)
    ctx.checkpoint("settled", "Kyverno's reports for 36 Pods; kyrec: all current",
                   lambda f: {**all_as(f, "current"), **_expect_reports(ctx, 36)})
    with stopped(ctx):
        reports = {r["scope"]["name"]: r for r in list_items(ctx.kube, REPORT_PATHS[0])}
        gone = reports["pod-0"]
        delete(ctx.kube, f"/apis/wgpolicyk8s.io/v1alpha2/namespaces/apps-a/policyreports/{gone['metadata']['name']}")
        flipped = reports["pod-1"]

        def flip(r: dict[str, Any]) -> None:
            r["results"][0]["result"] = "fail" if r["results"][0]["result"] == "pass" else "pass"
        edit(ctx.kube, f"/apis/wgpolicyk8s.io/v1alpha2/namespaces/{flipped['metadata']['namespace']}/policyreports/"
                       f"{flipped['metadata']['name']}", flip)
        relabelled = reports["pod-2"]
        edit(ctx.kube, f"/api/v1/namespaces/{relabelled['metadata']['namespace']}/pods/pod-2",
             lambda o: o["metadata"].setdefault("labels", {}).update({"app.kubernetes.io/name": "x"}))
        ctx.checkpoint("drift", "one report deleted, one result flipped, one Pod relabelled (Kyverno stopped)",
                               lambda f: {**all_as(f, "current"),
                                          f"report PolicyReport/apps-a/{gone['metadata']['name']}": "missing",
                                          f"report PolicyReport/{flipped['metadata']['namespace']}/"
                                          f"{flipped['metadata']['name']}": "stale/outcome-changed",
                                          f"report PolicyReport/{relabelled['metadata']['namespace']}/"
                                          f"{relabelled['metadata']['name']}": "stale/outcome-changed"})
        code, _, err = ctx.kyrec("apply", "--reports", "--write-reports", "--yes")
        assert code == 0, err
        ctx.checkpoint("applied", "after kyrec apply --write-reports (stale reports are Kyverno's to rescan)",
                       lambda f: {**all_as(f, "current"),
                                  f"report PolicyReport/{flipped['metadata']['namespace']}/"
                                  f"{flipped['metadata']['name']}": "stale/outcome-changed",
                                  f"report PolicyReport/{relabelled['metadata']['namespace']}/"
                                  f"{relabelled['metadata']['name']}": "stale/outcome-changed"})
        before = outputs(ctx.kube, ctx.scope)
    ctx.kyverno.start()
    settle(ctx.kube, quiet=45)     # the background scan enqueues every subject 30 s after it starts
    after = outputs(ctx.kube, ctx.scope)
    rewritten = {k for k in after if before.get(k) != after.get(k)}
    for what, report in {"flipped": flipped, "relabelled": relabelled, "deleted, written by kyrec": gone}.items():
        key = f"PolicyReport/{report['metadata']['namespace']}/{report['metadata']['name']}"
        ctx.notes.append(f"the report of the {what} subject {report['scope']['name']}: "
                         f"{'rewritten' if key in rewritten else 'not rewritten'} by Kyverno's next pass")
    ctx.notes.append(f"Kyverno's next pass rewrote {len(rewritten)} of {len(after)} reports")

    def truth(found: dict[str, str]) -> dict[str, str]:
        out = all_as(found, "current")
        for report in (flipped, relabelled):
            key = f"PolicyReport/{report['metadata']['namespace']}/{report['metadata']['name']}"
            if key not in rewritten:
                out[f"report {key}"] = "stale/outcome-changed"
        return out
    ctx.checkpoint("kyverno-pass", "after Kyverno's next pass (restart: background scan)", truth)


def _expect_reports(ctx: Context, count: int) -> dict[str, str]:
    made = [k for k in watched(ctx.kube) if k.startswith(("PolicyReport/", "ClusterPolicyReport/"))]
    assert len(made) == count, f"Kyverno wrote {len(made)} reports, expected {count}"
    return {f"report {k}": "current" for k in made}


def pods() -> list[dict[str, Any]]:
    """36 Pods in three namespaces, varied so that each policy both passes and fails somewhere."""
    images = ["nginx", "nginx:latest", "nginx:1.27", "eu.foo.io/app:2", "bar.io/tool:1.0", "busybox:latest"]
    out = []
    for i in range(36):
        container: dict[str, Any] = {"name": "main", "image": images[i % 6]}
        security: dict[str, Any] = {}
        if i % 3 == 0:
            security["readOnlyRootFilesystem"] = True
        if security:
            container["securityContext"] = security
        if i % 5 != 0:
            container["resources"] = {"requests": {"memory": "64Mi", "cpu": "100m"}, "limits": {"memory": "128Mi"}}
        labels = {"app.kubernetes.io/name": f"app{i}"} if i % 2 else {}
        spec: dict[str, Any] = {"containers": [container]}
        if i % 4 == 1:       # (privileged containers are refused: the real server runs without --allow-privileged)
            spec["hostNetwork"] = True
        out.append({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": f"pod-{i}", "namespace": ("apps-a", "apps-b", "apps-c")[i % 3],
                                 "labels": labels},
                    "spec": spec})
    return out


SCENARIOS: dict[str, tuple[Callable[[Context], None], list[str]]] = {
    "gpol-generate": (gpol_generate, ["--downstreams"]),
    "classic-generate": (classic_generate, ["--downstreams"]),
    "gpol-trigger-deleted": (trigger_deleted, ["--downstreams"]),
    "policy-deleted": (policy_deleted, ["--downstreams"]),
    "reports-background-scan": (reports_scan, ["--reports"]),
}


def run_scenario(name: str, *, record: bool, workdir: Path, log: Callable[[str], None] = print) -> Context:
    bins = bin_dir()
    try:
        binary = build.build("server")
    except build.BuildError as exc:
        raise Unavailable(f"the real API server cannot be built: {exc}") from exc
    step, scope = SCENARIOS[name]
    server = RealServer(binary, workdir)
    server.start(CRDS)
    record_to = None
    if record:
        record_to = GOLDEN / name
        shutil.rmtree(record_to, ignore_errors=True)
        record_to.mkdir(parents=True)
    kyverno = Kyverno(bins, server.kubeconfig, workdir)
    ctx = Context(server, kyverno, workdir, scope, record_to, log=log)
    log(f"scenario {name}")
    try:
        Kyverno.prepare(server.kube)
        step(ctx)
    finally:
        kyverno.stop()
        server.stop()
    if record_to is not None:
        meta = {"scenario": name, "description": (step.__doc__ or "").strip(),
                "kyverno": kyverno_build(bins), "kubernetes": build.kubernetes_version(),
                "notes": ctx.notes,
                "checkpoints": [{"name": c.name, "now": c.now, "args": c.args, "verified": c.verified,
                                 "state": f"{c.name}.json", "classes": dict(sorted(c.classes.items())),
                                 "truth": dict(sorted(c.truth.items())),
                                 "disagreements": dict(sorted(c.disagreements.items()))}
                                for c in ctx.checkpoints]}
        (record_to / "scenario.json").write_text(json.dumps(meta, indent=1) + "\n")
    return ctx


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", action="store_true", help="write testdata/kyverno-truth/<scenario>/")
    parser.add_argument("scenarios", nargs="*", default=list(SCENARIOS))
    args = parser.parse_args(argv)
    failed = 0
    for name in args.scenarios:
        with tempfile.TemporaryDirectory(prefix=f"truth-{name}-") as tmp:
            try:
                run_scenario(name, record=args.record, workdir=Path(tmp))
            except Exception as exc:   # noqa: BLE001 (report each scenario, go on with the rest)
                failed += 1
                print(f"scenario {name} FAILED: {exc}", file=sys.stderr)
                keep = Path(tempfile.mkdtemp(prefix=f"truth-{name}-logs-"))
                for log in [*Path(tmp).glob("*.log"), *Path(tmp).glob("*.json")]:
                    shutil.copy(log, keep)
                print(f"  logs kept in {keep}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
