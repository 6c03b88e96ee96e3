"""One answer whatever the path for a result that rests on a lookup a cluster read cannot answer.

Kyverno reads what it looks up, so where kyrec's read of a cluster (live, or its capture) never listed the kind
a lookup names, or its LIST failed, what Kyverno answers is not known: the engines make the result `undetermined`
with reason `kind-not-captured` (or `read-failed`), the reason first in its message (evaluate/admission_chain.py
undetermined_reason for the CEL kinds, the classic context loader's LookupUnanswered for classic rules), and
every command reads that reason from the result (docs/architecture.md, partial reads). Before, `eval` said
`error` for the same pairs that `diff` and the report checks called undetermined by matching the error's text.

On the double (tests/kubeapi), the policies of test_lookup_paths.py (a classic validate rule, generate rule and
mutate-existing rule reading the ConfigMaps of `platform` through an apiCall whose resource a variable makes, so
no read plan reads them ahead), with a ValidatingPolicy, a GeneratingPolicy and a DeletingPolicy reading them with
`resource.Get/List` whose resource an expression makes: live and on the capture, eval, diff (downstreams,
reports, deletions, with and without narrowing flags) and apply agree on verdict, class and reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.consistency.test_live_lookups import fast_client  # noqa: F401 - a fixture
from tests.consistency.test_lookup_paths import HIDDEN, POLICIES, _cluster, _run
from tests.consistency.test_unread_generate import GPOL

CEL = """\
---
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: cel-val}
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: shop}
  validations:
  - expression: >-
      resource.Get("v1", "config" + "maps", "platform", "teams").data.allowed == object.metadata.labels["team"]
    message: the team must be the one the platform allows
---
apiVersion: policies.kyverno.io/v1
kind: DeletingPolicy
metadata: {name: cel-del}
spec:
  schedule: "*/5 * * * *"
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  conditions:
  - name: not-allowed
    expression: >-
      resource.Get("v1", "config" + "maps", "platform", "teams").data.allowed != object.metadata.labels["team"]
"""

REASON = "kind-not-captured"
SAID = "ConfigMaps in namespace platform were not read from"


def _reason(message: str) -> str:
    return message.partition(":")[0]


def _answers(doc: dict[str, Any]) -> dict[tuple[str, str, str], tuple[str, str]]:
    """(domain, policy, name) -> (class, reason) of diff -o json's findings (a report's name: its subject's)."""
    return {(c["domain"], c["policy"] or "", (c["subject"] if c["domain"] == "report" else c["object"])["name"]):
            (c["class"], c["reason"] or "") for c in doc["changes"]}


def test_eval_diff_reports_and_apply_give_one_verdict_class_and_reason_live_and_captured(
        tmp_path: Path, fast_client: None) -> None:  # noqa: F811 - the fixture
    policies = tmp_path / "policies.yaml"
    policies.write_text(POLICIES.replace("URL", HIDDEN) + GPOL + CEL)
    state = tmp_path / "state.json"
    runs: dict[str, dict[str, Any]] = {}

    def collect(name: str, source: list[str], env: dict[str, str] | None = None) -> None:
        base = ["-p", str(policies), *source]
        runs[name] = {
            "eval": _run(["eval", *base, "-o", "json"], env),
            "diff": _run(["diff", *base, "-o", "json"], env),
            # narrowing flags choose the rows shown, never their class or reason
            "diff -n shop": _run(["diff", *base, "-n", "shop", "-o", "json"], env),
            "diff --kind Namespace": _run(["diff", *base, "--downstreams", "--kind", "Namespace", "-o", "json"],
                                          env),
            "diff --policy-name": _run(["diff", *base, "--policy-name", "cel-gen", "--downstreams", "-o", "json"],
                                       env),
        }

    for api, env, _ in _cluster(tmp_path, "blue"):
        collect("live", ["--live"], env)
        writes = ("POST", "PUT", "PATCH", "DELETE")
        before = sum(len(api.requests(verb, r".*")) for verb in writes)
        plan = _run(["apply", "-p", str(policies), "--prune", "--write-reports", "--dry-run=client", "-y",
                     "-o", "json"], env)
        assert sum(len(api.requests(verb, r".*")) for verb in writes) == before, "apply wrote on a partial read"
        captured = _run(["capture", "-p", str(policies), "-o", str(state)], env)
        assert captured.exit_code == 0, captured.output
    collect("capture", ["--state", str(state)])

    found: dict[str, Any] = {}
    for name, origin in (("live", "the cluster"), ("capture", "the captured cluster")):
        evaluated = runs[name]["eval"]
        doc = json.loads(evaluated.stdout)
        # eval: every result resting on the ConfigMaps is undetermined, the reason first, on every kind (a
        # DeletingPolicy's are diff's, below)
        verdicts = {(r["policy"], r["subject"]["name"]): (r["result"], _reason(r["message"]))
                    for r in doc["results"]}
        assert verdicts == {(p, s): ("undetermined", REASON) for p, s in (
            ("team-val", "blue"), ("team-val", "red"), ("cel-val", "blue"), ("cel-val", "red"),
            ("team-gen", "shop"), ("cel-gen", "shop"))}, verdicts
        assert all(f"{SAID} {origin}" in r["message"] for r in doc["results"]), doc["results"]
        # counted as every undetermined result: shown, never a failure for the exit code
        assert doc["summary"]["undetermined"] == len(verdicts), doc["summary"]
        assert evaluated.exit_code == 0, evaluated.output
        # diff: the downstreams the generating triggers would write, the reports of the subjects and the
        # deletions resting on the ConfigMaps, all undetermined with the same reason
        diff = runs[name]["diff"]
        answers = _answers(json.loads(diff.stdout))
        assert answers == {
            ("downstream", "team-gen", "team-copy"): ("undetermined", REASON),
            ("downstream", "cel-gen", ""): ("undetermined", REASON),
            ("report", "", "blue"): ("undetermined", REASON),
            ("report", "", "red"): ("undetermined", REASON),
            ("report", "", "shop"): ("undetermined", REASON),
            ("deletion", "cel-del", "blue"): ("undetermined", REASON),
            ("deletion", "cel-del", "red"): ("undetermined", REASON)}, answers
        # the narrowed runs keep the rows they select with the class and reason they have unfiltered
        for narrowed, expected in (
                ("diff -n shop", {k: v for k, v in answers.items() if k[2] != "shop" or k[0] != "report"}),
                ("diff --kind Namespace", {k: v for k, v in answers.items() if k[0] == "downstream"}),
                ("diff --policy-name", {k: v for k, v in answers.items() if k[:2] == ("downstream", "cel-gen")})):
            assert _answers(json.loads(runs[name][narrowed].stdout)) == expected, (name, narrowed)
        found[name] = (verdicts, answers)
    assert found["live"] == found["capture"]
    # apply plans no write and no delete for any of them
    outcomes = json.loads(plan.stdout)["outcomes"]
    assert all(o["action"] == "skip" for o in outcomes), outcomes


# a MutatingPolicy whose mutation reads the ConfigMaps of `platform` (evaluated in process: the state's provider
# with and without the record of what the cluster read), and a ValidatingPolicy reading only what it writes
MPOL = {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": "mpol-team"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                         "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}]},
                 "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": (
                     'Object{metadata: Object.metadata{annotations: {"team": '
                     'resource.Get("v1", "configmaps", "platform", "teams").data.allowed}}}')}}]}}
CHECK = {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "check-team"},
         "spec": {"validationActions": ["Audit"], "matchConstraints": MPOL["spec"]["matchConstraints"],
                  "validations": [{"expression": "object.metadata.?annotations[?'team'].orValue('') != ''",
                                   "message": "no team"}]}}


def _mutating_results(unread: Any) -> dict[str, tuple[str, str]]:
    import datetime

    from kubectl_kyrec.cel.context import LibraryContext, ObjectsProvider
    from kubectl_kyrec.cel.libraries import library_factory
    from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
    from kubectl_kyrec.load.policy.policies import classify
    from kubectl_kyrec.load.run_inputs.kinds import KindTable
    from kubectl_kyrec.model import Document, Source

    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    policies = classify([Document(MPOL, Source("p.yaml", 1)), Document(CHECK, Source("p.yaml", 20))])
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "blue", "namespace": "shop"},
           "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}
    provider = ObjectsProvider(unread=unread)
    outcome = run_eval(policies, [Document(pod, Source("r.yaml", 1))], [], kinds=KindTable(),
                       libraries=library_factory(LibraryContext(now=now, provider=provider)),
                       options=EvalOptions(now=now, admit=True))
    return {r.policy: (r.result, r.message) for r in outcome.results}


def test_a_mutation_resting_on_a_lookup_not_read_is_undetermined_and_so_is_the_admitted_object() -> None:
    def unread(api_version: str, kind: str, namespace: str) -> tuple[str, str] | None:
        # run/providers.py state_lookups' answer for a kind the cluster read never listed there
        return (f"{kind}s in namespace {namespace} were not read from the cluster", REASON) \
            if kind == "ConfigMap" else None

    results = _mutating_results(unread)
    assert results["mpol-team"][0] == "undetermined" and results["mpol-team"][1].startswith(f"{REASON}: "), results
    # the admitted object is not known, so neither is the validation of it
    assert results["check-team"][0] == "undetermined", results
    # a state of files alone keeps Kyverno CLI's answer: the ConfigMap is not found (null), the policy's error
    plain = _mutating_results(None)
    assert plain["mpol-team"][0] == "error", plain
