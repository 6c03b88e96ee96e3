"""Kyverno's CLI as the reference for converted context entries (issue 38): each case of
tests/consistency/test_convert_context.py is converted, and `kubectl-kyverno apply` (v1.17.2) evaluates the
converted ValidatingPolicies on its Pods with `--context-file` holding the objects the entries read (the
whole state, and the Namespaces only: the ConfigMaps, Services, PodDisruptionBudgets and Deployments missing).
Its verdicts per Pod (fail over error over pass, across the conversion's policies) are recorded in
testdata/kyverno-truth/convert-context.json; the test compares kyrec's evaluation of the original
ClusterPolicy with the same objects as --state.

    KYVERNO_BIN_DIR=/path/to/dir KYVERNO_VERSION=v1.17.2 KYVERNO_COMMIT=<sha> \\
        python tests/consistency/convert_context_oracle.py     # re-records the golden file
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:       # run as a script: the repository's tests package
    sys.path.insert(0, str(ROOT))

from kubectl_kyrec.convert.policy import convert_policy  # noqa: E402
from tests.consistency.kyverno_policy_validation import kyverno_exe_or_exit, read_golden  # noqa: E402

GOLDEN = ROOT / "testdata" / "kyverno-truth" / "convert-context.json"
_RANK = {"pass": 0, "skip": 0, "error": 1, "fail": 2}


def cluster_policy(*rules: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "ctx", "annotations": {"pod-policies.kyverno.io/autogen-controllers": "none"}},
            "spec": {"validationFailureAction": "Enforce", "background": True, "rules": list(rules)}}


def context_rule(name: str, context: list[dict[str, Any]], validate: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": name, "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "context": context,
            "validate": {"message": f"{name} says no", **validate}, **extra}


def _pod(name: str, namespace: str, labels: dict[str, str] | None = None,
         images: tuple[str, ...] = ("nginx:1",)) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": f"c{i}", "image": image} for i, image in enumerate(images)]}}


PODS = [_pod("p1", "default", {"svc": "web", "team": "a"}),
        _pod("p2", "locked", {"svc": "db"}, ("nginx:1", "redis:7")),
        _pod("p3", "default", images=("busybox:1",))]

STATE = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "locked", "labels": {"exec": "false"}}},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "default"},
     "data": {"block": "no", "team": "a"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "empty", "namespace": "default"}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default",
                                                         "labels": {"tier": "front"}},
     "spec": {"ports": [{"port": 80}]}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": "default",
                                                         "labels": {"tier": "back"}},
     "spec": {"ports": [{"port": 5432}]}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "c1", "namespace": "locked"},
     "spec": {"ports": [{"port": 80}]}},
    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
     "spec": {"minAvailable": 1, "selector": {"matchLabels": {"svc": "web"}}}},
    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "any", "namespace": "locked"},
     "spec": {"minAvailable": 1, "selector": {}}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "p1", "namespace": "default"},
     "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}},
              "template": {"metadata": {"labels": {"a": "b"}},
                           "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}},
]

SETTINGS = {"name": "cm", "configMap": {"name": "settings", "namespace": "default"}}
# name -> rules; each is verified with the state above (the objects it reads there) and with an empty one
CASES: dict[str, list[dict[str, Any]]] = {
    "configMap read as a key": [context_rule("cm", [SETTINGS],
                                      {"deny": {"conditions": {"any": [
                                          {"key": "{{ cm.data.block || '' }}", "operator": "Equals", "value": "yes"},
                                          {"key": "{{ request.object.metadata.labels.team || '' }}",
                                           "operator": "Equals", "value": "a"}]}}})],
    "configMap key missing is an error": [context_rule("cm", [{"name": "cm", "configMap": {"name": "settings",
                                                                                     "namespace": "default"}}],
                                                {"deny": {"conditions": {"all": [
                                                    {"key": "{{ cm.data.nothere }}", "operator": "Equals",
                                                     "value": "x"}]}}})],
    "configMap without data": [context_rule("cm", [{"name": "cm", "configMap": {"name": "empty",
                                                                                 "namespace": "default"}}],
                                     {"deny": {"conditions": {"any": [
                                         {"key": "{{ cm.data.block || 'unset' }}", "operator": "Equals",
                                          "value": "unset"}]}}})],
    "configMap in a message": [context_rule("cm", [SETTINGS],
                                     {"message": "team {{ cm.data.team }} only", "deny": {"conditions": {"any": [
                                         {"key": "{{ request.object.metadata.labels.team || '' }}",
                                          "operator": "NotEquals", "value": "a"}]}}})],
    "apiCall GET of the request's Namespace": [context_rule("ns", [{"name": "exec", "apiCall": {
        "urlPath": "/api/v1/namespaces/{{request.namespace}}", "jmesPath": "metadata.labels.exec || ''"}}],
        {"deny": {"conditions": {"any": [{"key": "{{ exec }}", "operator": "Equals", "value": "false"}]}}})],
    "apiCall GET of one object, missing is an error": [context_rule("deploy", [{"name": "replicas", "apiCall": {
        "urlPath": "/apis/apps/v1/namespaces/{{ request.namespace }}/deployments/{{ request.object.metadata.name }}",
        "jmesPath": "spec.replicas"}}],
        {"deny": {"conditions": {"any": [{"key": "{{ replicas }}", "operator": "GreaterThan", "value": 1}]}}})],
    "apiCall List, a variable with a default": [context_rule("svc", [
        {"name": "names", "apiCall": {"urlPath": "/api/v1/namespaces/{{ request.namespace }}/services",
                                      "jmesPath": "items[].metadata.name"}},
        {"name": "wanted", "variable": {"jmesPath": "request.object.metadata.labels.svc", "default": "none"}}],
        {"deny": {"conditions": {"all": [
            {"key": "{{ wanted }}", "operator": "AnyNotIn", "value": "{{ names }}"},
            {"key": "{{ wanted }}", "operator": "NotEquals", "value": "none"}]}}})],
    "apiCall List with a labelSelector and a length": [context_rule("svc", [
        {"name": "fronts", "apiCall": {"urlPath": "/api/v1/services?labelSelector=tier%3Dfront",
                                       "jmesPath": "items[] | length(@)"}}],
        {"deny": {"conditions": {"any": [{"key": "{{ fronts }}", "operator": "LessThan", "value": 1}]}}})],
    "apiCall List filtered by a request value": [context_rule("svc", [
        {"name": "same", "apiCall": {"urlPath": "/api/v1/namespaces/default/services",
                                     "jmesPath": "items[?metadata.name == '{{ request.object.metadata.name }}'] "
                                                 "| length(@)"}}],
        {"deny": {"conditions": {"any": [{"key": "{{ same }}", "operator": "GreaterThan", "value": 0}]}}})],
    "apiCall List filtered by label_match on the request's labels": [context_rule("pdb", [
        {"name": "pdbs", "apiCall": {
            "urlPath": "/apis/policy/v1/namespaces/{{request.namespace}}/poddisruptionbudgets",
            "jmesPath": "items[?label_match(spec.selector.matchLabels, `{{request.object.metadata.labels}}`)] "
                        "| length(@)"}}],
        {"deny": {"conditions": {"any": [{"key": "{{ pdbs }}", "operator": "LessThan", "value": 1}]}}})],
    "preconditions of a rule with context: a missing key is an error": [context_rule("pre", [
        {"name": "names", "apiCall": {"urlPath": "/api/v1/namespaces/{{ request.namespace }}/services",
                                      "jmesPath": "items[].metadata.name"}}],
        {"deny": {"conditions": {"any": [{"key": "{{ request.object.metadata.labels.svc }}", "operator": "AnyNotIn",
                                          "value": "{{ names }}"}]}}},
        preconditions={"all": [{"key": "{{ request.object.metadata.labels.team }}", "operator": "Equals",
                                "value": "a"}]})],
    "variable values, one read by another": [context_rule("caps", [
        {"name": "allowed", "variable": {"value": ["nginx:1", "redis:7"]}},
        {"name": "images", "variable": {"jmesPath": "request.object.spec.containers[].image"}},
        {"name": "first", "variable": {"value": "{{ images }}", "jmesPath": "[0]"}}],
        {"deny": {"conditions": {"any": [
            {"key": "{{ images }}", "operator": "AnyNotIn", "value": "{{ allowed }}"},
            {"key": "{{ first }}", "operator": "Equals", "value": "redis:7"}]}}})],
    "a variable that is nil is an error": [context_rule("nil", [
        {"name": "svc", "variable": {"jmesPath": "request.object.metadata.labels.svc"}}],
        {"deny": {"conditions": {"any": [{"key": "{{ svc }}", "operator": "Equals", "value": "db"}]}}})],
    "a true any() condition before a failing entry: the entry is not read": [context_rule("cm", [
        {"name": "cm", "configMap": {"name": "settings", "namespace": "default"}}],
        {"deny": {"conditions": {"any": [
            {"key": "{{ request.object.metadata.namespace }}", "operator": "Equals", "value": "locked"},
            {"key": "{{ cm.data.block }}", "operator": "Equals", "value": "yes"}]}}})],
    "a failing entry before a true any() condition: an error": [context_rule("cm", [
        {"name": "cm", "configMap": {"name": "settings", "namespace": "default"}}],
        {"deny": {"conditions": {"any": [
            {"key": "{{ cm.data.block }}", "operator": "Equals", "value": "yes"},
            {"key": "{{ request.object.metadata.namespace }}", "operator": "Equals", "value": "locked"}]}}})],
    "a failing entry in all() after a false any()": [context_rule("cm", [
        {"name": "cm", "configMap": {"name": "settings", "namespace": "default"}}],
        {"deny": {"conditions": {
            "any": [{"key": "{{ request.object.metadata.namespace }}", "operator": "Equals", "value": "locked"}],
            "all": [{"key": "{{ request.object.metadata.name }}", "operator": "Equals", "value": "p1"},
                    {"key": "{{ cm.data.block }}", "operator": "Equals", "value": "no"}]}}})],
    "a List read inside foreach": [context_rule("each", [
        {"name": "names", "apiCall": {"urlPath": "/api/v1/namespaces/{{ request.namespace }}/services",
                                      "jmesPath": "items[].metadata.name"}}],
        {"foreach": [{"list": "request.object.spec.containers",
                      # defaults: a key an element can lack is refused in foreach conditions
                      "preconditions": {"all": [{"key": "{{ element.image || '' }}", "operator": "Equals",
                                                 "value": "redis:7"}]},
                      "deny": {"conditions": {"any": [{"key": "{{ element.name || '' }}", "operator": "AnyIn",
                                                       "value": "{{ names }}"}]}}}]})],
    "rules reading context are policies of their own": [
        context_rule("cm", [SETTINGS],
              {"deny": {"conditions": {"any": [{"key": "{{ cm.data.block }}", "operator": "Equals",
                                                "value": "no"}]}}}),
        {"name": "plain", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
         "validate": {"message": "no busybox", "pattern": {"spec": {"containers": [{"image": "!busybox*"}]}}}}],
}


NAMESPACES = STATE[:2]
# the objects the cases read are missing; one object of each kind elsewhere, so that Kyverno's CLI (a fake
# client knowing only the kinds of its context file) lists the kind, as a cluster would, instead of refusing it
ELSEWHERE = [{**obj, "metadata": {"name": "other", "namespace": "elsewhere"}}
             for obj in STATE if obj["kind"] in ("ConfigMap", "Service", "PodDisruptionBudget", "Deployment")]
ELSEWHERE = list({obj["kind"]: obj for obj in ELSEWHERE}.values())
STATES = {"present": STATE, "missing": NAMESPACES + ELSEWHERE}
# (case, state) -> why Kyverno's CLI decides the conversion otherwise than a cluster would
CLI_DIFFERENCES = {
    ("apiCall List with a labelSelector and a length", "present"): (
        "the CLI's fake client lists only the objects stored under the namespace given, \"\" holding the "
        "cluster-scoped ones, and ignores the label selector (kk: pkg/cel/libs/fake_context.go ListResources): "
        "a cluster-wide resource.List finds nothing there; kyrec lists every namespace with the selector, as "
        "the API server does (where none has the label, both find none)")}


def aggregate(rows: list[tuple[str, str]]) -> dict[str, str]:
    """subject -> the worst verdict of its rows (fail over error over pass; a skip is a pass)."""
    out: dict[str, str] = {}
    for subject, result in rows:
        verdict = {"skip": "pass", "warn": "pass"}.get(result, result)
        if _RANK.get(verdict, 0) >= _RANK.get(out.get(subject, "pass"), 0):
            out[subject] = verdict
    return dict(sorted(out.items()))


def _report_rows(text: str) -> list[tuple[str, str]]:
    rows = []
    for doc in yaml.safe_load_all(text):
        for result in (doc or {}).get("results") or []:
            for res in result.get("resources") or []:
                rows.append((f"{res.get('namespace', '')}/{res.get('name')}", str(result.get("result"))))
    return rows


def kyverno_verdicts(exe: Path, case: str, state: list[dict[str, Any]]) -> dict[str, str]:
    """Kyverno's CLI on the case's conversion, the state given as its context file."""
    conv = convert_policy(cluster_policy(*CASES[case]))
    assert not conv.refusals, conv.refusals
    with tempfile.TemporaryDirectory(prefix="kyrec-ctx-") as work:
        policy, pods, context = (Path(work) / n for n in ("policy.yaml", "pods.yaml", "context.yaml"))
        policy.write_text(yaml.safe_dump_all(conv.documents))
        pods.write_text(yaml.safe_dump_all(PODS))
        context.write_text(yaml.safe_dump({"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Context",
                                           "metadata": {"name": "state"}, "spec": {"resources": state}}))
        done = subprocess.run([str(exe), "apply", str(policy), "--resource", str(pods), "--context-file",
                               str(context), "--policy-report"], capture_output=True, text=True, timeout=300)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{case}: kubectl-kyverno apply exited {done.returncode}: {done.stderr[-2000:]}")
    return aggregate(_report_rows(done.stdout))


def aggregate_original(case: str, state: list[dict[str, Any]], workdir: Path) -> dict[str, str]:
    """kyrec's eval of the original ClusterPolicy on the Pods, the objects as --state."""
    from click.testing import CliRunner

    from kubectl_kyrec.cli.main import cli

    policy, pods, state_file = workdir / "original.yaml", workdir / "pods.yaml", workdir / "state.yaml"
    policy.write_text(yaml.safe_dump(cluster_policy(*CASES[case])))
    pods.write_text(yaml.safe_dump_all(PODS))
    state_file.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": state}))
    result = CliRunner().invoke(cli, ["eval", "-p", str(policy), "-r", str(pods), "--state", str(state_file),
                                      "-o", "json"])
    assert result.exit_code in (0, 1), result.output
    # a Pod with no result (every foreach element skipped) admits: a pass
    return aggregate([(f"{p['metadata']['namespace']}/{p['metadata']['name']}", "pass") for p in PODS] +
                     [(f"{r['subject']['namespace']}/{r['subject']['name']}", r["result"])
                      for r in json.loads(result.stdout)["results"]])


def load_golden() -> dict[str, Any]:
    return read_golden(GOLDEN)


def main() -> int:
    exe = kyverno_exe_or_exit()
    cases = {case: {label: kyverno_verdicts(exe, case, state) for label, state in STATES.items()}
             for case in sorted(CASES)}
    GOLDEN.write_text(json.dumps({
        "kyverno": {"version": os.environ.get("KYVERNO_VERSION", ""), "commit": os.environ.get("KYVERNO_COMMIT", "")},
        "how": "kubectl-kyverno apply CONVERTED --resource PODS --context-file STATE --policy-report, per case of "
               "tests/consistency/convert_context_oracle.py and state (present: every object; missing: the "
               "Namespaces only); verdicts per namespace/name, fail over error over pass",
        "cases": cases}, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(cases)} cases in {GOLDEN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
