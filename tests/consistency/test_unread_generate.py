"""A generate rule, or a report result, that rests on a lookup the state did not read is `undetermined`
(docs/architecture.md, partial reads; the engines decide it: evaluate/admission_chain.py unread_reason), never a
notice alone and never acted on.

On the double (tests/kubeapi), the policies of test_lookup_paths.py read the ConfigMaps of namespace `platform`
through a urlPath whose resource a variable makes, so no read plan reads them ahead: live and on the capture of
that cluster, the generate rule for Namespace shop (classic, and a GeneratingPolicy doing the same with
`resource.List`) is `undetermined` (kind-not-captured), saying the ConfigMaps were not read. Kyverno reads
them, so what it would write is not known: diff shows the downstream the trigger would write as
`undetermined` (kind-not-captured), an existing one of the trigger stays undetermined (not an orphan to
prune), apply plans nothing for either, and the report Kyverno wrote for Pod blue is `undetermined`, not
`stale`; apply creates no report for the subjects either. Where the lookup is a literal and the cluster
refuses its LIST, the downstream is `read-failed`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.consistency.test_live_lookups import fast_client  # noqa: F401 - a fixture
from tests.consistency.test_lookup_paths import HIDDEN, LITERAL, POLICIES, _cluster, _run

# a GeneratingPolicy generating, for Namespace shop, a NetworkPolicy whose label comes from the ConfigMaps of
# `platform`, listed with a resource name an expression makes
GPOL = """\
---
apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata: {name: cel-gen}
spec:
  evaluation:
    synchronize: {enabled: true}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [namespaces]}
  matchConditions:
  - {name: shop, expression: "object.metadata.name == 'shop'"}
  variables:
  - name: teams
    expression: resource.List("v1", "config" + "maps", "platform").items.size()
  generate:
  - expression: >-
      generator.Apply(object.metadata.name, [{"apiVersion": dyn("networking.k8s.io/v1"),
      "kind": dyn("NetworkPolicy"), "metadata": dyn({"name": "cel-copy",
      "labels": {"teams": string(variables.teams)}}), "spec": dyn({"podSelector": {}})}])
"""

SAID = "ConfigMaps in namespace platform were not read from"


def _owned(namespace_uid: str) -> dict[str, Any]:
    """The NetworkPolicy team-gen wrote for Namespace shop earlier (sync on)."""
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "team-copy", "namespace": "shop", "labels": {
                "app.kubernetes.io/managed-by": "kyverno", "generate.kyverno.io/policy-name": "team-gen",
                "generate.kyverno.io/policy-namespace": "", "generate.kyverno.io/rule-name": "gen",
                "generate.kyverno.io/trigger-uid": namespace_uid, "generate.kyverno.io/trigger-kind": "Namespace",
                "generate.kyverno.io/trigger-group": "", "generate.kyverno.io/trigger-version": "v1",
                "generate.kyverno.io/trigger-namespace": "", "allowed": "blue"}},
            "spec": {"podSelector": {}}}


def _downstreams(doc: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["object"]["name"] or f"({c['policy']})": (c["class"], c["reason"] or "", c["message"] or "")
            for c in doc["changes"] if c["domain"] == "downstream"}


@pytest.mark.parametrize("owned", [False, True], ids=["none-yet", "owned-exists"])
def test_a_generate_rule_failing_on_a_kind_not_read_gives_undetermined_downstreams(
        tmp_path: Path, fast_client: None, owned: bool) -> None:  # noqa: F811 - the fixture
    policies = tmp_path / "policies.yaml"
    policies.write_text(POLICIES.replace("URL", HIDDEN) + GPOL)
    state = tmp_path / "state.json"
    runs: dict[str, Any] = {}
    for api, env, seeded in _cluster(tmp_path, "blue"):
        if owned:
            [shop] = [o for o in seeded if o["kind"] == "Namespace" and o["metadata"]["name"] == "shop"]
            api.seed(_owned(shop["metadata"]["uid"]))
        base = ["-p", str(policies), "--live"]
        runs["live"] = _run(["diff", *base, "--downstreams", "-o", "json"], env)
        writes = ["POST", "PUT", "PATCH", "DELETE"]
        before = sum(len(api.requests(verb, r".*")) for verb in writes)
        plan = _run(["apply", "-p", str(policies), "--prune", "--dry-run=client", "-y", "-o", "json"], env)
        assert sum(len(api.requests(verb, r".*")) for verb in writes) == before, "apply wrote on a partial read"
        captured = _run(["capture", "-p", str(policies), "-o", str(state)], env)
        assert captured.exit_code == 0, captured.output
    runs["capture"] = _run(["diff", "-p", str(policies), "--state", str(state), "--downstreams", "-o", "json"])
    for name, origin in (("live", "the cluster"), ("capture", "the captured cluster")):
        result = runs[name]
        doc = json.loads(result.stdout)
        found = _downstreams(doc)
        # what the classic rule and the GeneratingPolicy write for Namespace shop: undetermined, saying why
        assert {k: v[:2] for k, v in found.items()} == {
            "team-copy": ("undetermined", "kind-not-captured"), "(cel-gen)": ("undetermined", "kind-not-captured")
        }, (name, found)
        assert all(f"{SAID} {origin}" in m for _, _, m in found.values()), (name, found)
        assert doc["summary"]["downstream"]["undetermined"] == 2, (name, doc["summary"])
        # counted as every undetermined finding is: shown, not a finding for the exit code, no failed read
        assert result.exit_code == 0, (name, result.output)
    # apply plans no write and no delete for them (a refused skip at most)
    outcomes = json.loads(plan.stdout)["outcomes"]
    assert all(o["action"] == "skip" for o in outcomes if o["object"]["kind"] == "NetworkPolicy"), outcomes


def test_a_report_compared_with_a_result_resting_on_a_kind_not_read_is_undetermined(
        tmp_path: Path, fast_client: None) -> None:  # noqa: F811 - the fixture
    policies = tmp_path / "policies.yaml"
    policies.write_text(POLICIES.replace("URL", HIDDEN))
    state = tmp_path / "state.json"
    for api, env, _ in _cluster(tmp_path, "blue"):
        live = _run(["diff", "-p", str(policies), "--live", "--reports", "-o", "json"], env)
        before = sum(len(api.requests(verb, r".*")) for verb in ("POST", "PUT", "PATCH", "DELETE"))
        plan = _run(["apply", "-p", str(policies), "--reports", "--prune", "--write-reports",
                     "--dry-run=client", "-y", "-o", "json"], env)
        assert sum(len(api.requests(verb, r".*")) for verb in ("POST", "PUT", "PATCH", "DELETE")) == before
        captured = _run(["capture", "-p", str(policies), "-o", str(state)], env)
        assert captured.exit_code == 0, captured.output
    offline = _run(["diff", "-p", str(policies), "--state", str(state), "--reports", "-o", "json"])
    for name, result, origin in (("live", live, "the cluster"), ("capture", offline, "the captured cluster")):
        doc = json.loads(result.stdout)
        [blue] = [c for c in doc["changes"] if c["domain"] == "report" and c["subject"]
                  and c["subject"]["name"] == "blue"]
        assert (blue["class"], blue["reason"]) == ("undetermined", "kind-not-captured"), (name, blue)
        assert f"{SAID} {origin}" in blue["message"], (name, blue)
    # apply writes no report whose results rest on the ConfigMaps (before, it created the missing ones of Pod
    # red and Namespace shop with the error as their result)
    outcomes = json.loads(plan.stdout)["outcomes"]
    assert outcomes and all(o["action"] == "skip" for o in outcomes
                            if o["object"]["kind"].endswith("PolicyReport")), outcomes


def test_a_refused_list_of_the_looked_up_kind_makes_the_trigger_s_downstream_undetermined_read_failed(
        tmp_path: Path, fast_client: None) -> None:  # noqa: F811 - the fixture
    # the literal lookup is read ahead, and the cluster refuses that LIST (403): the rule's error is the
    # refusal, the run exits 5, and the NetworkPolicy the trigger would write is read-failed, not a notice alone
    policies = tmp_path / "policies.yaml"
    policies.write_text(POLICIES.replace("URL", LITERAL))
    for api, env, _ in _cluster(tmp_path, "blue"):
        api.inject(r"^/api/v1/namespaces/platform/configmaps$", times=None, status=403)
        result = _run(["diff", "-p", str(policies), "--live", "--downstreams", "-o", "json"], env)
        assert api.requests("GET", r"^/api/v1/namespaces/platform/configmaps$"), "the injected read was never made"
    assert result.exit_code == 5, result.output
    found = _downstreams(json.loads(result.stdout))
    assert {k: v[:2] for k, v in found.items()} == {"team-copy": ("undetermined", "read-failed")}, found
    assert "forbidden" in found["team-copy"][2].lower(), found
