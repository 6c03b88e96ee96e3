"""Every classic path answers a lookup as eval's validate rules do (evaluate/classic/engine.py classic_sources,
run/providers.py state_lookups; docs/architecture.md, reading a live cluster).

On the double (tests/kubeapi), three ClusterPolicies read the ConfigMaps of namespace `platform` with an
`apiCall` LIST: a validate rule (eval's results, `-o reports`, the expected reports of `diff --reports`), a
generate rule (its trigger's result, the downstream `diff` computes, the trigger's report) and a mutate-existing
rule (eval's preview of its targets). Where the urlPath is a literal the ConfigMaps are read, and `--live`, a
capture and the objects given as files give the same verdicts and messages on every path, as the data says.
Where the resource is made by a variable nothing reads it ahead: live and on the capture, every path gives
`undetermined` (kind-not-captured), the engines' own result saying the ConfigMaps were not read, and the reports
resting on it are undetermined (before, the generate, mutate-existing and report paths answered "not found", an
empty list, and decided as if the ConfigMap did not exist; later eval said `error` where diff said
`undetermined`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.consistency.test_live_lookups import _objects, fast_client  # noqa: F401 - a fixture
from tests.kubeapi.server import ApiServer

LITERAL = "/api/v1/namespaces/platform/configmaps"
# the same LIST, its resource made by a variable: no read plan can see it ahead
HIDDEN = "/api/v1/namespaces/platform/{{ to_lower('ConfigMaps') }}"

POLICIES = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: team-val
spec:
  validationFailureAction: Audit
  background: true
  rules:
  - name: team-allowed
    match:
      any:
      - resources:
          kinds: [Pod]
          namespaces: [shop]
    context: &context
    - name: allowed
      apiCall:
        urlPath: "URL"
        jmesPath: "items[?metadata.name=='teams'] | [0].data.allowed || 'none'"
    validate:
      message: the team must be the one the platform allows
      deny:
        conditions:
          any:
          - key: "{{ request.object.metadata.labels.team || '' }}"
            operator: NotEquals
            value: "{{ allowed }}"
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: team-gen
spec:
  background: true
  rules:
  - name: gen
    match:
      any:
      - resources:
          kinds: [Namespace]
          names: [shop]
    context:
    - name: allowed
      apiCall:
        urlPath: "URL"
        jmesPath: "items[?metadata.name=='teams'] | [0].data.allowed || 'none'"
    generate:
      apiVersion: networking.k8s.io/v1
      kind: NetworkPolicy
      name: team-copy
      namespace: "{{ request.object.metadata.name }}"
      synchronize: true
      data:
        metadata:
          labels:
            allowed: "{{ allowed }}"
        spec:
          podSelector: {}
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: team-mutex
spec:
  mutateExistingOnPolicyUpdate: true
  rules:
  - name: label-pods
    match:
      any:
      - resources:
          kinds: [Namespace]
          names: [shop]
    context:
    - name: allowed
      apiCall:
        urlPath: "URL"
        jmesPath: "items[?metadata.name=='teams'] | [0].data.allowed || 'none'"
    mutate:
      targets:
      - apiVersion: v1
        kind: Pod
        namespace: shop
      patchStrategicMerge:
        metadata:
          labels:
            allowed: "{{ allowed }}"
"""


def _run(args: list[str], env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, args, env=env or {})


def _report(uid: str, result: str) -> dict[str, Any]:
    """The PolicyReport Kyverno writes for Pod shop/blue when team-val gives `result`."""
    return {"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
            "metadata": {"name": uid, "namespace": "shop", "labels": {"app.kubernetes.io/managed-by": "kyverno"},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "blue", "uid": uid}]},
            "scope": {"apiVersion": "v1", "kind": "Pod", "name": "blue", "namespace": "shop", "uid": uid},
            "summary": {"pass": 1, "fail": 0, "warn": 0, "error": 0, "skip": 0},
            "results": [{"source": "kyverno", "policy": "team-val", "rule": "team-allowed", "result": result,
                         "message": "validation rule 'team-allowed' passed.", "scored": True,
                         "properties": {"process": "background scan"}, "timestamp": {"seconds": 1, "nanos": 0}}]}


def _cluster(tmp_path: Path, allowed: str) -> Iterator[tuple[ApiServer, dict[str, str], list[dict[str, Any]]]]:
    """The double holding the Namespaces, the ConfigMap, two Pods and the report Kyverno wrote for Pod blue
    (pass: the ConfigMap allows blue); yields it, its environment and every object it holds."""
    with ApiServer() as api:
        seeded = api.seed(*_objects(allowed))
        [blue] = [o for o in seeded if o["kind"] == "Pod" and o["metadata"]["name"] == "blue"]
        seeded += api.seed(_report(blue["metadata"]["uid"], "pass"))
        api.kubeconfig(tmp_path / "kubeconfig")
        yield api, {"KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache")}, seeded


def _answers(tmp_path: Path, url: str, allowed: str) -> dict[str, dict[str, Any]]:
    """source ("live", "capture", "files") -> what each path answered: eval's results, previews and generated
    downstreams, `-o reports`' results, diff's report findings (`--reports`) and downstream findings and
    notices."""
    policies = tmp_path / "policies.yaml"
    policies.write_text(POLICIES.replace("URL", url))
    state = tmp_path / "state.json"
    runs: dict[str, list[str]] = {}
    out: dict[str, dict[str, Any]] = {}

    def collect(name: str, source: list[str], env: dict[str, str] | None = None) -> None:
        base = ["-p", str(policies), *source]
        evaluated = _run(["eval", *base, "-o", "json"], env)
        reports = _run(["eval", *base, "-o", "reports"], env)
        diff = _run(["diff", *base, "--reports", "-o", "json"], env)
        downstreams = _run(["diff", *base, "-o", "json"], env)
        runs[name] = [evaluated.output, reports.output, diff.output, downstreams.output]
        assert downstreams.exit_code in (0, 1), runs[name]
        doc, found = json.loads(evaluated.stdout), json.loads(diff.stdout)
        generated = json.loads(downstreams.stdout)
        out[name] = {
            "exit codes": (evaluated.exit_code, reports.exit_code, diff.exit_code),
            "results": sorted((r["policy"], r["subject"]["kind"], r["subject"]["name"], r["result"], r["message"])
                              for r in doc["results"]),
            "previews": sorted((p["target"]["name"], p["result"], p["message"], json.dumps(p["patch"]))
                               for p in doc["mutateExisting"]),
            "downstreams": sorted(json.dumps(d, sort_keys=True) for d in doc["downstreams"]),
            "reports": sorted((r["policy"], r["result"], r["message"]) for report in
                              yaml.safe_load_all(reports.stdout) if report for r in report["results"]),
            "report findings": sorted((c["subject"]["name"], c["class"], c["diff"] or "") for c in found["changes"]
                                      if c["domain"] == "report"),
            "downstream findings": sorted((c["class"], c["reason"] or "", c["object"]["name"])
                                          for c in generated["changes"] if c["domain"] == "downstream"),
            "downstream messages": sorted(c["message"] or "" for c in generated["changes"]
                                          if c["domain"] == "downstream"),
            "notices": [n for n in generated["notices"] if n.startswith("team-gen: Namespace shop")],
        }

    for _, env, seeded in _cluster(tmp_path, allowed):
        collect("live", ["--live"], env)
        captured = _run(["capture", "-p", str(policies), "-o", str(state)], env)
        assert captured.exit_code == 0, captured.output
        files = tmp_path / "given.yaml"
        files.write_text(yaml.safe_dump_all(seeded))
    collect("capture", ["--state", str(state)])
    collect("files", ["--state", str(files)])
    return out


@pytest.mark.parametrize("allowed", ["blue", "red"])
def test_a_literal_lookup_is_answered_alike_on_every_path_live_captured_and_given(
        tmp_path: Path, fast_client: None, allowed: str) -> None:  # noqa: F811 - the fixture
    answers = _answers(tmp_path, LITERAL, allowed)
    live = answers["live"]
    for name in ("capture", "files"):
        for path, answer in live.items():
            if path == "downstreams" or (name == "files" and path in ("downstream findings", "downstream messages")):
                # where each object was read from differs (compared below); plain files record no LIST, so
                # whether the NetworkPolicy exists is not known there (kind-not-captured)
                continue
            assert answers[name][path] == answer, (name, path, answers[name][path], answer)
    # as the data says on every path: the allowed team passes, the other fails
    assert live["exit codes"] == (1, 1, 1), live
    other = "red" if allowed == "blue" else "blue"
    verdicts = {(p, n): r for p, _, n, r, _ in live["results"]}
    assert verdicts[("team-val", allowed)] == "pass" and verdicts[("team-val", other)] == "fail", live
    assert verdicts[("team-gen", "shop")] == "pass", live
    assert {(n, r) for n, r, _, _ in live["previews"]} == {("blue", "pass"), ("red", "pass")}, live
    assert all(f'"value": "{allowed}"' in p for _, _, _, p in live["previews"]), live
    for name, answer in answers.items():
        [downstream] = answer["downstreams"]
        assert f'"allowed": "{allowed}"' in downstream, (name, downstream)
    assert [c for c, _, n in live["downstream findings"] if n == "team-copy"] == ["missing"], live
    # Pod blue's report (pass) is current when blue is allowed, else stale
    blue = [f for f in live["report findings"] if f[0] == "blue"]
    assert [c for _, c, _ in blue] == ["current" if allowed == "blue" else "stale"], live


def test_a_lookup_not_read_is_undetermined_on_every_path_live_and_captured(tmp_path: Path,
                                                                           fast_client: None) -> None:  # noqa: F811
    answers = _answers(tmp_path, HIDDEN, "blue")
    for name, origin in (("live", "the cluster"), ("capture", "the captured cluster")):
        said = f"ConfigMaps in namespace platform were not read from {origin}"
        answer = answers[name]
        # eval's validate and generate results are undetermined (Kyverno reads the ConfigMaps: its answer is not
        # known), the engines' reason first; never a failure for the exit code, and no report holds them
        assert {(p, k, n, r) for p, k, n, r, _ in answer["results"]} == {
            ("team-val", "Pod", "blue", "undetermined"), ("team-val", "Pod", "red", "undetermined"),
            ("team-gen", "Namespace", "shop", "undetermined")}, answer
        assert all(m.startswith("kind-not-captured: ") and said in m for *_, m in answer["results"]), answer
        assert answer["reports"] == [], answer
        assert answer["exit codes"][:2] == (0, 0), answer
        # the generate rule generates nothing eval can show; what the trigger would write is undetermined with
        # the same reason, never absent
        assert answer["downstreams"] == [], answer
        assert answer["downstream findings"] == [("undetermined", "kind-not-captured", "team-copy")], answer
        assert all(said in m for m in answer["downstream messages"]), answer
        # the mutate-existing preview changes no target: each is undetermined with the same reason (the entry's
        # deferred loader is spent after the first, so the next one's error rests on the same lookup)
        assert [r for _, r, _, _ in answer["previews"]] == ["undetermined", "undetermined"], answer
        assert all(m.startswith("kind-not-captured: ") and said in m for _, _, m, _ in answer["previews"]), answer
        # every report Kyverno wrote or would write for the subjects (Pod blue's, Pod red's and Namespace shop's,
        # which hold or would hold the results resting on the ConfigMaps) is undetermined: never stale or
        # missing, which apply would rewrite; diff exits 1 for them
        assert {(n, klass) for n, klass, _ in answer["report findings"]} == {
            ("blue", "undetermined"), ("red", "undetermined"), ("shop", "undetermined")}, answer
        assert answer["exit codes"][2] == 1, answer
