"""How fast `kyrec diff` classifies downstreams: a state of 20,000 objects, as JSON and as YAML.

    /tmp/venv/bin/python bench/diff.py [--namespaces 2000] [--unrelated 10000] [--keep DIR]

The state: N namespaces (the triggers), 4 downstreams each of one GeneratingPolicy (a ConfigMap, a
Secret, a NetworkPolicy and a ResourceQuota, each with a managedFields entry as the API serves it), and
unrelated objects (Deployments and ConfigMaps no policy generated). A tenth of the downstreams are not in
sync: half drifted (edited data), half orphaned (a tenth of the namespaces are labelled `lite`, for which
the policy generates only two of the four).

Each measurement runs in a fresh interpreter, so its peak RSS (ru_maxrss) is its own. Printed:
- load: `load_state` of the JSON file and of the YAML file;
- diff: evaluating the policy for every trigger plus classifying every downstream, state already loaded
  (the diff's own cost), with the counts per class as a check;
- whole run: `kubectl-kyrec diff -p policy.yaml --state state.json -o json` end to end, as a user runs it.

`--classic` measures the same shape from a classic ClusterPolicy instead: four generate rules per namespace
(two `data`, two `clone` whose sources sit in the state, labelled clone-source), the downstreams labelled as
Kyverno's background controller labels them, with the same drifted and orphaned shares; the diff's own cost
is `run_downstreams` (the path `kyrec diff` takes) after the inputs are read.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

POLICY = """apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: tenant-baseline
  creationTimestamp: "2026-01-01T00:00:00Z"
spec:
  evaluation:
    synchronize:
      enabled: true
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [namespaces]
  matchConditions:
  - name: tenants
    expression: object.metadata.?labels["tenant"].orValue("") != ""
  variables:
  - name: ns
    expression: object.metadata.name
  - name: lite
    expression: object.metadata.?labels["lite"].orValue("") == "true"
  - name: base
    expression: >-
      [{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"), "metadata": dyn({"name": "tenant-settings"}),
        "data": dyn({"tenant": object.metadata.labels["tenant"], "log-level": "info"})},
       {"apiVersion": dyn("v1"), "kind": dyn("Secret"), "metadata": dyn({"name": "tenant-token"}),
        "type": dyn("Opaque"), "stringData": dyn({"token": "t-" + variables.ns})}]
  - name: full
    expression: >-
      [{"apiVersion": dyn("networking.k8s.io/v1"), "kind": dyn("NetworkPolicy"),
        "metadata": dyn({"name": "default-deny"}),
        "spec": dyn({"podSelector": dyn({}), "policyTypes": dyn(["Ingress", "Egress"])})},
       {"apiVersion": dyn("v1"), "kind": dyn("ResourceQuota"), "metadata": dyn({"name": "tenant-quota"}),
        "spec": dyn({"hard": dyn({"requests.cpu": "4", "requests.memory": "16Gi"})})}]
  generate:
  - expression: >-
      generator.apply(variables.ns, variables.lite ? variables.base : variables.base + variables.full)
"""


CLASSIC_POLICY = """apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: tenant-classic
spec:
  rules:
  - name: settings
    match:
      any:
      - resources: {kinds: [Namespace], selector: {matchExpressions: [{key: tenant, operator: Exists}]}}
    generate:
      synchronize: true
      apiVersion: v1
      kind: ConfigMap
      name: tenant-settings
      namespace: "{{request.object.metadata.name}}"
      data:
        data:
          tenant: "{{request.object.metadata.labels.tenant}}"
          log-level: info
  - name: deny
    match:
      any:
      - resources: {kinds: [Namespace], selector: {matchExpressions: [{key: tenant, operator: Exists},
                                                                       {key: lite, operator: DoesNotExist}]}}
    generate:
      synchronize: true
      apiVersion: networking.k8s.io/v1
      kind: NetworkPolicy
      name: default-deny
      namespace: "{{request.object.metadata.name}}"
      data:
        spec:
          podSelector: {}
          policyTypes: [Ingress, Egress]
  - name: creds
    match:
      any:
      - resources: {kinds: [Namespace], selector: {matchExpressions: [{key: tenant, operator: Exists}]}}
    generate:
      synchronize: true
      apiVersion: v1
      kind: Secret
      name: registry-creds
      namespace: "{{request.object.metadata.name}}"
      clone: {namespace: platform, name: registry-creds}
  - name: ca
    match:
      any:
      - resources: {kinds: [Namespace], selector: {matchExpressions: [{key: tenant, operator: Exists},
                                                                       {key: lite, operator: DoesNotExist}]}}
    generate:
      synchronize: true
      apiVersion: v1
      kind: ConfigMap
      name: ca-bundle
      namespace: "{{request.object.metadata.name}}"
      clone: {namespace: platform, name: ca-bundle}
"""


def _labels(ns: str, uid: str) -> dict[str, str]:
    return {"app.kubernetes.io/managed-by": "kyverno", "generate.kyverno.io/policy-name": "tenant-baseline",
            "generate.kyverno.io/trigger-name": ns, "generate.kyverno.io/trigger-namespace": "",
            "generate.kyverno.io/trigger-uid": uid, "generate.kyverno.io/trigger-kind": "Namespace",
            "generate.kyverno.io/trigger-group": "", "generate.kyverno.io/trigger-version": "v1"}


def _meta(name: str, ns: str, uid: str, labels: dict[str, str], fields: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "namespace": ns, "uid": uid, "resourceVersion": "5000",
            "creationTimestamp": "2026-02-01T00:00:00Z", "labels": dict(labels),
            "managedFields": [{"manager": "kyverno", "operation": "Update", "apiVersion": "v1",
                               "time": "2026-02-01T00:00:00Z", "fieldsType": "FieldsV1",
                               "fieldsV1": {**fields, "f:metadata": {"f:labels": {
                                   ".": {}, **{f"f:{k}": {} for k in labels}}}}}]}


def state(namespaces: int, unrelated: int) -> list[dict[str, Any]]:
    import base64

    out: list[dict[str, Any]] = []
    for i in range(namespaces):
        ns, uid = f"tenant-{i:05d}", f"ns-{i:08d}"
        lite = i % 10 == 0
        labels = {"kubernetes.io/metadata.name": ns, "tenant": f"t{i}"}
        if lite:
            labels["lite"] = "true"
        out.append({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": ns, "uid": uid, "resourceVersion": "100",
                                 "creationTimestamp": "2026-02-01T00:00:00Z", "labels": labels},
                    "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
        own = _labels(ns, uid)
        data = {"tenant": f"t{i}", "log-level": "info"}
        # two namespaces in ten have their ConfigMap edited, one in ten is `lite` (two orphans):
        # a twentieth of the downstreams drifted, a twentieth orphaned
        if i % 10 in (5, 6):
            data = {**data, "log-level": "debug"}
        out.append({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": _meta("tenant-settings", ns, f"cm-{i}", own, {"f:data": {".": {}, "f:tenant": {},
                                                                                    "f:log-level": {}}}),
                    "data": data})
        out.append({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                    "metadata": _meta("tenant-token", ns, f"s-{i}", own, {"f:type": {}, "f:data": {".": {}}}),
                    "data": {"token": base64.b64encode(f"t-{ns}".encode()).decode()}})
        out.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                    "metadata": _meta("default-deny", ns, f"np-{i}", own, {"f:spec": {"f:podSelector": {},
                                                                                   "f:policyTypes": {}}}),
                    "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}})
        out.append({"apiVersion": "v1", "kind": "ResourceQuota",
                    "metadata": _meta("tenant-quota", ns, f"rq-{i}", own, {"f:spec": {"f:hard": {
                        ".": {}, "f:requests.cpu": {}, "f:requests.memory": {}}}}),
                    "spec": {"hard": {"requests.cpu": "4", "requests.memory": "16Gi"}},
                    "status": {"hard": {"requests.cpu": "4", "requests.memory": "16Gi"},
                               "used": {"requests.cpu": "0", "requests.memory": "0"}}})
    for j in range(unrelated):
        ns = f"tenant-{j % namespaces:05d}"
        if j % 2:
            out.append({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": f"app-config-{j}", "namespace": ns, "uid": f"u-{j}",
                                     "resourceVersion": "7", "labels": {"app": f"a{j}"}},
                        "data": {"config.yaml": f"replicas: {j % 5}\nname: a{j}\n"}})
        else:
            out.append({"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": f"app-{j}", "namespace": ns, "uid": f"d-{j}", "resourceVersion": "9",
                                     "generation": 1, "labels": {"app": f"a{j}"}},
                        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": f"a{j}"}},
                                 "template": {"metadata": {"labels": {"app": f"a{j}"}}, "spec": {"containers": [
                                     {"name": "main", "image": f"example.com/a{j}:1",
                                      "ports": [{"containerPort": 8080, "protocol": "TCP"}]}]}}},
                        "status": {"replicas": 1, "readyReplicas": 1}})
    return out


def _classic_labels(ns_uid: str, rule: str) -> dict[str, str]:
    return {"app.kubernetes.io/managed-by": "kyverno", "generate.kyverno.io/policy-name": "tenant-classic",
            "generate.kyverno.io/policy-namespace": "", "generate.kyverno.io/rule-name": rule,
            "generate.kyverno.io/trigger-group": "", "generate.kyverno.io/trigger-version": "v1",
            "generate.kyverno.io/trigger-kind": "Namespace", "generate.kyverno.io/trigger-namespace": "",
            "generate.kyverno.io/trigger-uid": ns_uid}


def _source_labels(kind: str, uid: str) -> dict[str, str]:
    return {"generate.kyverno.io/clone-source": "", "generate.kyverno.io/source-group": "",
            "generate.kyverno.io/source-version": "v1", "generate.kyverno.io/source-kind": kind,
            "generate.kyverno.io/source-namespace": "platform", "generate.kyverno.io/source-uid": uid}


def classic_state(namespaces: int, unrelated: int) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The classic twin of `state`, with the drifted and orphaned downstreams it plants counted."""
    out = [o for o in state(namespaces, unrelated) if o["kind"] == "Namespace"
           or "generate.kyverno.io/policy-name" not in o["metadata"].get("labels", {})]
    creds = {"kind": "Secret", "type": "Opaque", "data": {"auth": "c2VjcmV0"}}
    ca = {"kind": "ConfigMap", "data": {"ca.crt": "-----BEGIN CERTIFICATE-----"}}
    for src, uid in ((creds, "src-creds"), (ca, "src-ca")):
        name = "registry-creds" if src is creds else "ca-bundle"
        out.append({"apiVersion": "v1", **src, "metadata": {"name": name, "namespace": "platform", "uid": uid,
                    "resourceVersion": "3", "labels": {"generate.kyverno.io/clone-source": ""}}})
    planted = {"drifted": 0, "orphaned": 0}
    for i in range(namespaces):
        ns, uid = f"tenant-{i:05d}", f"ns-{i:08d}"
        lite = i % 10 == 0  # `lite` namespaces match neither `deny` nor `ca`: those two downstreams orphaned
        settings = {"tenant": f"t{i}", "log-level": "debug" if i % 10 in (5, 6) else "info"}
        planted["drifted"] += i % 10 in (5, 6)
        planted["orphaned"] += 2 * lite
        out.append({"apiVersion": "v1", "kind": "ConfigMap", "data": settings, "metadata": {
            "name": "tenant-settings", "namespace": ns, "uid": f"cm-{i}", "labels": _classic_labels(uid, "settings")}})
        out.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {
            "name": "default-deny", "namespace": ns, "uid": f"np-{i}", "labels": _classic_labels(uid, "deny")},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}})
        out.append({"apiVersion": "v1", **creds, "metadata": {
            "name": "registry-creds", "namespace": ns, "uid": f"s-{i}",
            "labels": {**_source_labels("Secret", "src-creds"), **_classic_labels(uid, "creds")}}})
        out.append({"apiVersion": "v1", **ca, "metadata": {
            "name": "ca-bundle", "namespace": ns, "uid": f"ca-{i}",
            "labels": {**_source_labels("ConfigMap", "src-ca"), **_classic_labels(uid, "ca")}}})
    return out, planted


CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
what, path, policy = sys.argv[1], sys.argv[2], sys.argv[3]
from kubectl_kyrec.load.gc_pause import gc_paused
from kubectl_kyrec.load.run_inputs.state import load_state
gc_paused().__enter__()   # as the CLI runs: the collector is off for the whole command
start = time.perf_counter()
docs = load_state([path])
loaded = time.perf_counter() - start
out = {{"objects": len(docs), "load_s": loaded}}
if what == "diff":
    import datetime
    from kubectl_kyrec.cel.context import LibraryContext, ObjectsProvider
    from kubectl_kyrec.evaluate.generating.engine import GenerateOptions, generating_environments, run_generating
    from kubectl_kyrec.load.documents import load_documents
    from kubectl_kyrec.load.run_inputs.kinds import KindTable
    from kubectl_kyrec.load.policy.policies import classify
    from kubectl_kyrec.reconcile.downstreams import StateIndex, diff_downstreams
    now = datetime.datetime(2026, 9, 1, tzinfo=datetime.timezone.utc)
    policies = classify(load_documents([policy])).raise_errors().generating
    start = time.perf_counter()
    kinds = KindTable()
    resource_of, kind_of = kinds.resource_of, kinds.kind_of
    provider = ObjectsProvider([d.obj for d in docs], resource_of, kind_of=kind_of)
    envs, sink = generating_environments(LibraryContext(now=now, provider=provider))
    generated = run_generating(policies, docs, docs, kinds=kinds, envs=envs, sink=sink,
                               options=GenerateOptions(now=now))
    evaluated = time.perf_counter()
    diff = diff_downstreams(generated, StateIndex.build(d.obj for d in docs))
    classified = time.perf_counter()
    out.update(evaluate_s=evaluated - start, classify_s=classified - evaluated, diff_s=classified - start,
               summary=diff.summary(), triggers=len(generated.triggers))
if what == "classic":
    import datetime
    import kubectl_kyrec.reconcile.classic_downstreams as classic_downstreams
    from kubectl_kyrec.load.run_inputs.selection import Selection
    import kubectl_kyrec.run.diff as run_diff
    from kubectl_kyrec.load.run_inputs.sources import FileSource
    # CPU seconds of the parts, taken around the module-level names run_downstreams calls through
    parts = {{"generate": 0.0, "compare": 0.0}}
    def timed(fn, part):
        def call(*args, **kwargs):
            begin = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                parts[part] += time.process_time() - begin
        return call
    classic_downstreams.compare = timed(classic_downstreams.compare, "compare")
    import kubectl_kyrec.run.generate as run_generate
    run_generate_for_inputs = run_generate.generate_for_inputs
    run_generate.generate_for_inputs = timed(run_generate_for_inputs, "generate")
    now = datetime.datetime(2026, 9, 1, tzinfo=datetime.timezone.utc)
    start = time.perf_counter()
    inputs = FileSource(policy_paths=[policy], state_paths=[path]).read()
    read = time.perf_counter()
    cpu = time.process_time()
    outcome, diff = run_diff.run_downstreams(inputs, now=now, selection=Selection(), complete=False)
    out.update(read_s=read - start, diff_s=time.perf_counter() - read, diff_cpu_s=time.process_time() - cpu,
               generate_cpu_s=parts["generate"], compare_cpu_s=parts["compare"], summary=diff.summary(),
               reasons=sorted({{str(c.reason) for c in diff.changes if c.reason is not None}}),
               triggers=len(outcome.triggers))
out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def child(what: str, path: str, policy: str) -> dict[str, Any]:
    code = CHILD.format(root=ROOT)
    done = subprocess.run([sys.executable, "-c", code, what, path, policy], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"bench child ({what}) failed:\n{done.stderr}")
    return json.loads(done.stdout)


def whole_run(path: str, policy: str) -> tuple[float, float, int]:
    # the CLI in a fresh interpreter that reports its own peak RSS on the way out
    script = "\n".join([
        "import atexit, resource, sys",
        f"sys.path.insert(0, {ROOT!r})",
        "sys.argv = ['kubectl-kyrec'] + sys.argv[1:]",
        "atexit.register(lambda: sys.stderr.write(f'MAXRSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n'))",
        "from kubectl_kyrec.cli.console import main",
        "main()"])
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script, "diff", "-p", policy, "--state", path, "-o", "json",
                           "--now", "2026-09-01T00:00:00Z"], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    lines = [line for line in done.stderr.splitlines() if line.startswith("MAXRSS ")]
    rss = int(lines[-1].split()[1]) / 1024 if lines else float("nan")
    return elapsed, rss, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=2000)
    parser.add_argument("--unrelated", type=int, default=10000)
    parser.add_argument("--classic", action="store_true", help="the classic ClusterPolicy state instead")
    parser.add_argument("--keep", help="write the files here and keep them")
    args = parser.parse_args()
    workdir = args.keep or tempfile.mkdtemp(prefix="kyrec-bench-diff-")
    os.makedirs(workdir, exist_ok=True)
    if args.classic:
        classic(args.namespaces, args.unrelated, workdir, keep=bool(args.keep))
        return
    objects = state(args.namespaces, args.unrelated)
    listing = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": objects}
    json_path = os.path.join(workdir, "state.json")
    yaml_path = os.path.join(workdir, "state.yaml")
    policy_path = os.path.join(workdir, "policy.yaml")
    with open(json_path, "w") as fh:
        json.dump(listing, fh, indent=2)
    with open(yaml_path, "w") as fh:
        yaml.dump(listing, fh, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)
    with open(policy_path, "w") as fh:
        fh.write(POLICY)
    print(f"state: {len(objects)} objects ({args.namespaces} namespaces, {4 * args.namespaces} downstreams, "
          f"{args.unrelated} unrelated) in {workdir}")
    print(f"{'step':<28}{'size MB':>9}{'seconds':>10}{'peak RSS MB':>13}")
    for label, path in (("load JSON", json_path), ("load YAML", yaml_path)):
        res = child("load", path, policy_path)
        print(f"{label:<28}{os.path.getsize(path) / 1e6:>9.1f}{res['load_s']:>10.2f}{res['maxrss_mb']:>13.0f}")
    res = child("diff", json_path, policy_path)
    print(f"{'diff: evaluate triggers':<28}{'':>9}{res['evaluate_s']:>10.2f}")
    print(f"{'diff: classify downstreams':<28}{'':>9}{res['classify_s']:>10.2f}")
    print(f"{'diff (own cost, total)':<28}{'':>9}{res['diff_s']:>10.2f}{res['maxrss_mb']:>13.0f}")
    elapsed, rss, code = whole_run(json_path, policy_path)
    print(f"{'whole run from JSON (CLI)':<28}{os.path.getsize(json_path) / 1e6:>9.1f}{elapsed:>10.2f}{rss:>13.0f}"
          f"   exit {code}")
    print("classes:", ", ".join(f"{k} {v}" for k, v in res["summary"].items()),
          f"({res['triggers']} objects looked at as triggers)")
    if not args.keep:
        for path in (json_path, yaml_path, policy_path):
            os.remove(path)
        os.rmdir(workdir)


def classic(namespaces: int, unrelated: int, workdir: str, *, keep: bool) -> None:
    objects, planted = classic_state(namespaces, unrelated)
    json_path = os.path.join(workdir, "state.json")
    policy_path = os.path.join(workdir, "policy.yaml")
    with open(json_path, "w") as fh:
        json.dump({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": objects}, fh, indent=2)
    with open(policy_path, "w") as fh:
        fh.write(CLASSIC_POLICY)
    print(f"classic state: {len(objects)} objects ({namespaces} namespaces, {4 * namespaces} downstreams of "
          f"2 data + 2 clone rules, 2 clone sources, {unrelated} unrelated) in {workdir}")
    res = child("classic", json_path, policy_path)
    print(f"{'step':<28}{'size MB':>9}{'seconds':>10}{'peak RSS MB':>13}")
    print(f"{'read inputs (JSON)':<28}{os.path.getsize(json_path) / 1e6:>9.1f}{res['read_s']:>10.2f}")
    print(f"{'diff (own cost, total)':<28}{'':>9}{res['diff_s']:>10.2f}{res['maxrss_mb']:>13.0f}")
    print(f"CPU seconds of the diff: {res['diff_cpu_s']:.2f} (evaluating the rules {res['generate_cpu_s']:.2f}, "
          f"reconcile.compare of owned downstreams {res['compare_cpu_s']:.2f}, the rest "
          f"{res['diff_cpu_s'] - res['generate_cpu_s'] - res['compare_cpu_s']:.2f}); load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("classes:", ", ".join(f"{k} {v}" for k, v in res["summary"].items()),
          f"({res['triggers']} triggers); reasons: {', '.join(res['reasons'])}")
    print(f"planted: drifted {planted['drifted']}, orphaned {planted['orphaned']}")
    if not keep:
        os.remove(json_path)
        os.remove(policy_path)
        os.rmdir(workdir)


if __name__ == "__main__":
    main()
