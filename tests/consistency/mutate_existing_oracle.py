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
results are keyed by policy, rule and subject, and equal timestamps keep the first) with kyrec's.
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


def kept_entries(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The first result per (policy, rule) of a report's results, without timestamps: what the aggregator keeps."""
    out: dict[str, dict[str, Any]] = {}
    for r in results:
        out.setdefault(f"{r['policy']}/{r.get('rule', '')}", {k: v for k, v in r.items() if k != "timestamp"})
    return out


def kyrec_entries(reports: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """kyrec's expected reports as {"ns/pod": kept_entries(results)}."""
    return {f"{r['scope']['namespace']}/{r['scope']['name']}": kept_entries(r["results"]) for r in reports}


def admitted(pod: dict[str, Any]) -> bool:
    """Whether the Pod is a case's admitted trigger (a `-r` manifest of kyrec's eval), not a stored one."""
    stored = {(namespace, name) for policy, namespace, name in CASES if policy in STORED_TRIGGERS}
    return (pod["metadata"]["namespace"], pod["metadata"]["name"]) not in stored


def expected(on_admission: list[dict[str, Any]], on_policy_update: list[dict[str, Any]]
             ) -> dict[str, dict[str, dict[str, Any]]]:
    """kyrec's entries per case ("policy ns/pod" -> {rule: entry}) from the reports of its two evals: with the
    admitted Pods as `-r` manifests, and without (applying the policies: the STORED_TRIGGERS cases)."""
    out = {}
    for policy, namespace, name in CASES:
        reports = on_policy_update if policy in STORED_TRIGGERS else on_admission
        out[f"{policy} {namespace}/{name}"] = policy_entries(kyrec_entries(reports).get(f"{namespace}/{name}", {}),
                                                             policy)
    return out


def policy_entries(kept: dict[str, dict[str, Any]], policy: str) -> dict[str, dict[str, Any]]:
    """The kept entries of one policy, by rule."""
    return {e.get("rule", ""): e for e in kept.values() if e["policy"] == policy}


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
        pods = [d for d in OBJECTS if d["kind"] == "Pod"]
        stored = [server.kube.get(f"/api/v1/namespaces/{p['metadata']['namespace']}/pods/{p['metadata']['name']}")
                  for p in pods]
        (workdir / "policies.yaml").write_text(yaml.safe_dump_all(POLICIES))
        (workdir / "pods.yaml").write_text(yaml.safe_dump_all([p for p in stored if admitted(p)]))
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
            ur = {"apiVersion": "kyverno.io/v2", "kind": "UpdateRequest",
                  "metadata": {"generateName": "ur-", "namespace": "kyverno"},
                  "spec": {"requestType": "mutate", "policy": policy, "rule": "r", "deleteDownstream": False,
                           "resource": {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name},
                           "context": {"userInfo": {"userInfo": {}}, "admissionRequestInfo": {"operation": "CREATE"}}}}
            answer = server.kube.request("POST", UR_PATH, ur)
            assert answer.status == 201, answer
            created = answer.json()
            created["status"] = {"state": "Pending"}
            answer = server.kube.request("PUT", f"{UR_PATH}/{created['metadata']['name']}/status", created)
            assert answer.status == 200, answer
        kyverno: dict[str, Any] = {}
        deadline = time.monotonic() + 120
        while len(kyverno) < len(CASES) and time.monotonic() < deadline:
            time.sleep(2)
            for report in sorted(server.kube.get("/apis/reports.kyverno.io/v1/ephemeralreports")["items"],
                                 key=lambda r: r["metadata"]["creationTimestamp"]):
                annotations = report["metadata"].get("annotations") or {}
                key = f"{annotations.get('audit.kyverno.io/resource.namespace')}/" \
                      f"{annotations.get('audit.kyverno.io/resource.name')}"
                # the first report of a trigger: an UpdateRequest that failed is retried and reports again
                kyverno.setdefault(key, [{k: v for k, v in r.items() if k != "timestamp"}
                                         for r in report["spec"].get("results") or []])
        assert len(kyverno) == len(CASES), f"Kyverno reported on {sorted(kyverno)} only"
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
    return {"description": __doc__.split("\n\n")[0], "kyverno": kyverno_build_of(bins), "cases": cases}


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
