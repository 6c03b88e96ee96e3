"""Kyverno's background controller as the oracle of the report entries classic mutate-existing rules write on
their triggers (evaluate/classic/mutate_existing_preview.py report_results; docs/semantics/reports.md,
"Mutate-existing entries").

    KYVERNO_BIN_DIR=DIR python -m tests.consistency.mutate_existing_oracle [--record]

DIR holds Kyverno's `background-controller` (built by hand from the commit docs/compatibility.md names,
`go build ./cmd/background-controller`; nothing of Kyverno is in the repository). The script starts the real API
server (tests/realapi, Kyverno's CRDs), seeds CASES, asks kyrec what `eval -r <the Pods> --live -o reports` expects
in each trigger's report, then runs the background controller alone and hands it, per case, the UpdateRequest
Kyverno's admission webhook makes for a mutate-existing rule (pkg/webhooks/resource/updaterequest.go
handleMutateExisting: type mutate, the policy, the rule, the trigger; status Pending; the admission request left
out, so the controller reads the trigger from the server: pkg/background/mutate/mutate.go ProcessUR); for the
STORED_TRIGGERS cases (mutateExistingOnPolicyUpdate, asked of kyrec without `-r`) its policy controller makes the
UpdateRequest itself. It reads the EphemeralReport the controller writes on each trigger and compares the entries
the reports controller's aggregator keeps (the first result per rule, every rule of the case's policy: classic
results are keyed by policy, rule and subject, and equal timestamps keep the first) with kyrec's. MPOL_CASES do
the same for MutatingPolicy mutateExisting: the webhook's cel-mutate UpdateRequest (pkg/webhooks/resource/mpol/
handler.go, with the admission request) and the entries the processor writes in each patched target's report.
`--record` writes testdata/kyverno-truth/mutate-existing-reports.json, which
tests/consistency/test_mutate_existing_reports.py replays offline against the same CASES.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from tests.realapi import build
from tests.realapi.fixture import CRDS, RealServer
from tests.realapi.kyverno_truth import UR_PATH, Kyverno, kyverno_build, run_kyrec

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "testdata" / "kyverno-truth" / "mutate-existing-reports.json"


def _secret(namespace: str, name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace,
                                                               "labels": labels}, "type": "Opaque"}


def _pod(namespace: str, name: str, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def _cpol(name: str, *rules: dict[str, Any], **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    annotations = spec.pop("annotations", None)
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": meta,
            "spec": {**spec, "rules": list(rules)}}


def _rule(namespaces: list[str], target: dict[str, Any], *, on_policy_update: bool = False,
          **more: Any) -> dict[str, Any]:
    mutate: dict[str, Any] = {"patchStrategicMerge": {"metadata": {"labels": {"foo": "bar"}}}, "targets": [target]}
    if on_policy_update:
        mutate["mutateExistingOnPolicyUpdate"] = True
    return {"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"], "namespaces": namespaces}}]},
            **more, "mutate": mutate}


def _stamp(namespace: str) -> dict[str, Any]:
    """A plain mutate rule on the trigger itself, beside the mutate-existing rule `r`."""
    return {"name": "stamp", "match": {"any": [{"resources": {"kinds": ["Pod"], "namespaces": [namespace]}}]},
            "mutate": {"patchStrategicMerge": {"metadata": {"labels": {"stamped": "on"}}}}}


EVERY = {"apiVersion": "v1", "kind": "Secret", "namespace": "{{ request.object.metadata.namespace }}"}
NAMED = {**EVERY, "name": "secret-1"}

# (policy, trigger namespace, trigger name): the UpdateRequests handed to the controller
CASES: list[tuple[str, str, str]] = [
    ("mx-named", "mx-a", "pod-a"),          # the conformance scenario's: one named target, unpatched -> pass
    ("mx-missing", "mx-b", "pod-b"),        # a named target that does not exist -> the rule's error
    ("mx-props", "mx-c", "pod-c"),          # two targets (one patched already), reportProperties, background off
    ("mx-two", "mx-d", "pod-d"),            # two targets (one patched already), no reportProperties
    # a plain mutate rule beside `r` (ProcessUR runs the whole policy, every response is reported):
    ("mx-mixed", "mx-e", "pod-e"),          # admitted: the webhook stamped the Pod already -> skip
    ("mx-mixed-update", "mx-f", "pod-f"),   # mutateExistingOnPolicyUpdate on a stored Pod never stamped -> pass
]
# the triggers of these policies are stored Pods, not admitted ones: not `-r` manifests of kyrec's eval, and
# no UpdateRequest handed over (mutateExistingOnPolicyUpdate: the background controller makes its own)
STORED_TRIGGERS = {"mx-mixed-update"}
# rules compared of a policy (all when not listed). mx-mixed-update's `r` is left out: ProcessUR counts the plain
# rule's pass as an error (no patched target: ErrEmptyPatch, pkg/background/mutate/mutate.go), so the
# UpdateRequest fails and is retried, each retry writing another report where `r` finds secret-1 patched (skip);
# which entry the aggregator keeps depends on whether the retries cross a second (timestamps), kyrec says pass
ONLY_RULES = {"mx-mixed-update": {"stamp"}}
OBJECTS: list[dict[str, Any]] = [
    *({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
      for n in ("mx-a", "mx-b", "mx-c", "mx-d", "mx-e", "mx-f")),
    _secret("mx-a", "secret-1"), _secret("mx-b", "other"),
    _secret("mx-c", "a", foo="bar"), _secret("mx-c", "b"), _secret("mx-d", "a", foo="bar"), _secret("mx-d", "b"),
    _pod("mx-a", "pod-a"), _pod("mx-b", "pod-b"), _pod("mx-c", "pod-c"), _pod("mx-d", "pod-d"),
    # pod-e as the webhook admitted it (stamp applied); pod-f stored before the policy existed
    _secret("mx-e", "secret-1"), _secret("mx-f", "secret-1"),
    _pod("mx-e", "pod-e", stamped="on"), _pod("mx-f", "pod-f"),
]
POLICIES: list[dict[str, Any]] = [
    _cpol("mx-named", _rule(["mx-a"], NAMED)),
    _cpol("mx-missing", _rule(["mx-b"], {**NAMED, "name": "nope"})),
    _cpol("mx-props", _rule(["mx-c"], EVERY, reportProperties={"team": "a"}), background=False,
          annotations={"policies.kyverno.io/severity": "medium"}),
    _cpol("mx-two", _rule(["mx-d"], EVERY)),
    _cpol("mx-mixed", _rule(["mx-e"], NAMED), _stamp("mx-e")),
    _cpol("mx-mixed-update", _rule(["mx-f"], NAMED, on_policy_update=True), _stamp("mx-f")),
]

# MutatingPolicy mutateExisting (pkg/background/mpol/processor.go Process): (policy, trigger ConfigMap namespace and
# name, the Secrets whose reports are compared). The processor writes its entry in each patched target's report.
MPOL_RULES = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"]}
MPOL_CASES: list[tuple[str, str, str, list[str]]] = [
    # s1 unpatched, s2 carrying another value; no matchConditions: v1.17.2's processor evaluates the policy's
    # matchConditions on each target and has no targetMatchConditions, where kyrec follows main
    # (docs/compatibility.md, "mutateExisting MutatingPolicies")
    ("mx-mpol", "mx-g", "dictionary", ["s1", "s2"]),
]
OBJECTS += [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mx-g"}},
    # the target constraints select by label: Process lists the target kind in every namespace
    _secret("mx-g", "s1", mpol="target"), _secret("mx-g", "s2", mpol="target", **{"stamped-by": "x"}),
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dictionary", "namespace": "mx-g"},
     "data": {"a": "2"}},
]
POLICIES += [
    {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": "mx-mpol"},
     "spec": {"evaluation": {"mutateExisting": {"enabled": True}},
              "matchConstraints": {"resourceRules": [{**MPOL_RULES, "resources": ["configmaps"]}]},
              "targetMatchConstraints": {"resourceRules": [{**MPOL_RULES, "resources": ["secrets"]}],
                                         "objectSelector": {"matchLabels": {"mpol": "target"}}},
              "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                  "expression": 'Object{metadata: Object.metadata{labels: {"stamped-by": request.name}}}'}}]}},
]


def kept_entries(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The first result per (policy, rule) of a report's results, without timestamps: what the aggregator keeps."""
    out: dict[str, dict[str, Any]] = {}
    for r in results:
        out.setdefault(f"{r['policy']}/{r.get('rule', '')}", {k: v for k, v in r.items() if k != "timestamp"})
    return out


def kyrec_entries(reports: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """kyrec's expected reports as {"ns/pod": kept_entries(results)}."""
    return {f"{r['scope']['namespace']}/{r['scope']['name']}": kept_entries(r["results"]) for r in reports}


def admitted(doc: dict[str, Any]) -> bool:
    """Whether the object is a case's admitted trigger (a `-r` manifest of kyrec's eval), not state."""
    if doc["kind"] == "ConfigMap":
        return True
    stored = {(namespace, name) for policy, namespace, name in CASES if policy in STORED_TRIGGERS}
    return doc["kind"] == "Pod" and (doc["metadata"]["namespace"], doc["metadata"]["name"]) not in stored


def expected(on_admission: list[dict[str, Any]], on_policy_update: list[dict[str, Any]]
             ) -> dict[str, dict[str, dict[str, Any]]]:
    """kyrec's entries per case ("policy ns/pod" -> {rule: entry}) from the reports of its two evals: with the
    admitted Pods as `-r` manifests, and without (applying the policies: the STORED_TRIGGERS cases)."""
    out = {}
    for policy, namespace, name in CASES:
        reports = on_policy_update if policy in STORED_TRIGGERS else on_admission
        out[f"{policy} {namespace}/{name}"] = policy_entries(kyrec_entries(reports).get(f"{namespace}/{name}", {}),
                                                             policy)
    for policy, namespace, _, targets in MPOL_CASES:
        for target in targets:
            key = f"{namespace}/{target}"
            out[f"{policy} {key}"] = policy_entries(kyrec_entries(on_admission).get(key, {}), policy)
    return out


def policy_entries(kept: dict[str, dict[str, Any]], policy: str) -> dict[str, dict[str, Any]]:
    """The kept entries of one policy, by rule (those ONLY_RULES names)."""
    rules = ONLY_RULES.get(policy)
    return {e.get("rule", ""): e for e in kept.values()
            if e["policy"] == policy and (rules is None or e.get("rule", "") in rules)}


def _start_background_controller(bins: Path, kubeconfig: Path, workdir: Path) -> subprocess.Popen[bytes]:
    kyverno = Kyverno(bins, kubeconfig, workdir)
    env = {**os.environ, "KYVERNO_NAMESPACE": "kyverno", "KYVERNO_SERVICEACCOUNT_NAME": "kyverno-background-controller",
           "KYVERNO_DEPLOYMENT": "kyverno-background-controller", "KYVERNO_POD_NAME": "kyverno-bgc-oracle",
           "INIT_CONFIG": "kyverno", "METRICS_CONFIG": "kyverno-metrics"}
    log = open(workdir / "background-controller.log", "wb")     # noqa: SIM115 (the process keeps it)
    proc = subprocess.Popen([str(bins / "background-controller"), *kyverno.args("background-controller")], env=env,
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        text = (workdir / "background-controller.log").read_text(errors="replace")
        if "started leading" in text or "successfully acquired lease" in text:
            return proc
        if proc.poll() is not None:
            raise RuntimeError("the background controller exited:\n" + "\n".join(text.splitlines()[-30:]))
        time.sleep(0.5)
    proc.kill()
    raise RuntimeError("the background controller did not become leader within 120s")


def run(workdir: Path) -> dict[str, Any]:
    bins = Path(os.environ.get("KYVERNO_BIN_DIR", ""))
    if not (bins / "background-controller").is_file():
        raise SystemExit(f"KYVERNO_BIN_DIR={bins} has no background-controller")
    server = RealServer(build.build("server"), workdir)
    server.start(CRDS)
    proc = None
    try:
        Kyverno.prepare(server.kube)
        server.seed(*OBJECTS, *POLICIES)
        stored = [server.kube.get(f"/api/v1/namespaces/{d['metadata']['namespace']}/{d['kind'].lower()}s/"
                                  f"{d['metadata']['name']}") for d in OBJECTS if admitted(d)]
        (workdir / "policies.yaml").write_text(yaml.safe_dump_all(POLICIES))
        (workdir / "pods.yaml").write_text(yaml.safe_dump_all(stored))
        reports = []
        for manifests in (["-r", str(workdir / "pods.yaml")], []):
            code, doc, err = run_kyrec(server.kubeconfig, workdir / "cache", "eval", "-p",
                                       str(workdir / "policies.yaml"), *manifests, "--live", "-o", "json")
            assert doc is not None and code == 0, (code, err)
            reports.append(doc["reports"])
        kyrec = expected(*reports)
        proc = _start_background_controller(bins, server.kubeconfig, workdir)
        for policy, namespace, name in CASES:
            if policy in STORED_TRIGGERS:
                # the controller's policy controller makes these itself when it sees the policy
                # (pkg/policy/mutate.go handleMutate); a second one would patch the targets again and report skip
                continue
            _hand_over(server, {"requestType": "mutate", "policy": policy, "rule": "r", "deleteDownstream": False,
                                "resource": {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name},
                                "context": {"userInfo": {"userInfo": {}},
                                            "admissionRequestInfo": {"operation": "CREATE"}}})
        for policy, namespace, name, _ in MPOL_CASES:
            # the UpdateRequest the MutatingPolicy webhook makes (pkg/webhooks/resource/mpol/handler.go): type
            # cel-mutate, the policy, and the admission request, which Process needs (the user, `request.name`)
            trigger = next(d for d in stored if d["kind"] == "ConfigMap" and d["metadata"]["name"] == name
                           and d["metadata"]["namespace"] == namespace)
            review = {"uid": "00000000-0000-4000-8000-0000000000d0", "operation": "CREATE", "name": name,
                      "namespace": namespace, "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
                      "resource": {"group": "", "version": "v1", "resource": "configmaps"},
                      "requestKind": {"group": "", "version": "v1", "kind": "ConfigMap"},
                      "requestResource": {"group": "", "version": "v1", "resource": "configmaps"},
                      "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters"]}, "object": trigger}
            # rule, deleteDownstream and resource: the zero values Go's encoder writes (the CRD requires them)
            _hand_over(server, {"requestType": "cel-mutate", "policy": policy, "rule": "", "deleteDownstream": False,
                                "resource": {}, "context": {
                "userInfo": {"userInfo": review["userInfo"]},
                "admissionRequestInfo": {"operation": "CREATE", "admissionRequest": review}}})
        kyverno: dict[str, Any] = {}
        triggers = {f"{namespace}/{name}" for _, namespace, name in CASES}
        deadline = time.monotonic() + 120
        while not (triggers <= set(kyverno) and _cel_mutate_done(server)) and time.monotonic() < deadline:
            time.sleep(2)
            for report in sorted(server.kube.get("/apis/reports.kyverno.io/v1/ephemeralreports")["items"],
                                 key=lambda r: r["metadata"]["creationTimestamp"]):
                annotations = report["metadata"].get("annotations") or {}
                key = f"{annotations.get('audit.kyverno.io/resource.namespace')}/" \
                      f"{annotations.get('audit.kyverno.io/resource.name')}"
                # the first report of a trigger: an UpdateRequest that failed is retried and reports again
                kyverno.setdefault(key, [{k: v for k, v in r.items() if k != "timestamp"}
                                         for r in report["spec"].get("results") or []])
        assert triggers <= set(kyverno), f"Kyverno reported on {sorted(kyverno)} only"
        assert _cel_mutate_done(server), "the cel-mutate UpdateRequests were not processed within 120s"
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        server.stop()
    cases = {}
    for policy, namespace, name in CASES:
        key = f"{namespace}/{name}"
        entries = policy_entries(kept_entries(kyverno[key]), policy)
        mine = kyrec[f"{policy} {key}"]
        cases[f"{policy} {key}"] = {"results": kyverno[key], "entries": entries, "kyrec": mine,
                                    "agree": entries == mine}
    for policy, namespace, _, targets in MPOL_CASES:
        for target in targets:
            key = f"{namespace}/{target}"
            results = kyverno.get(key, [])
            entries = policy_entries(kept_entries(results), policy)
            mine = kyrec[f"{policy} {key}"]
            cases[f"{policy} {key}"] = {"results": results, "entries": entries, "kyrec": mine,
                                        "agree": entries == mine}
    return {"description": __doc__.split("\n\n")[0], "kyverno": kyverno_build_of(bins), "cases": cases}


def _hand_over(server: RealServer, spec: dict[str, Any]) -> None:
    """Create an UpdateRequest and mark it Pending, as the webhook's generator does (status is a subresource)."""
    ur = {"apiVersion": "kyverno.io/v2", "kind": "UpdateRequest",
          "metadata": {"generateName": "ur-", "namespace": "kyverno"}, "spec": spec}
    answer = server.kube.request("POST", UR_PATH, ur)
    assert answer.status == 201, answer
    created = answer.json()
    created["status"] = {"state": "Pending"}
    answer = server.kube.request("PUT", f"{UR_PATH}/{created['metadata']['name']}/status", created)
    assert answer.status == 200, answer


def _cel_mutate_done(server: RealServer) -> bool:
    """Whether every cel-mutate UpdateRequest is processed (Process audits before it sets the status; the
    controller deletes Completed ones)."""
    return all((ur.get("status") or {}).get("state") in ("Completed", "Failed")
               for ur in server.kube.get(UR_PATH)["items"] if ur["spec"].get("requestType") == "cel-mutate")


def kyverno_build_of(bins: Path) -> dict[str, str]:
    info = kyverno_build(bins)
    return {k: v for k, v in info.items() if k in ("version", "commit", "modified")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", action="store_true", help=f"write {GOLDEN.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mx-oracle-") as tmp:
        out = run(Path(tmp))
    for key, case in out["cases"].items():
        print(f"{'agree' if case['agree'] else 'DIFFER'}  {key}: Kyverno {case['entries']}"
              + ("" if case["agree"] else f"\n        kyrec {case['kyrec']}"))
    if args.record:
        recorded = {**out, "cases": {k: {"results": c["results"], "entries": c["entries"]}
                                     for k, c in out["cases"].items()}}
        GOLDEN.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    return 0 if all(c["agree"] for c in out["cases"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
