"""The report entry Kyverno's background controller writes on a classic mutate-existing rule's trigger, in kyrec's
expected reports (`eval -o reports`; evaluate/classic/mutate_existing_preview.py report_results).

kk v1.17.2: pkg/background/mutate/mutate.go ProcessUR runs the whole policy on the trigger (engine.Mutate) and,
mutateExisting reporting being on by default (cmd/internal/flag.go `enableReporting`), writes an ephemeral report
on the trigger (pkg/utils/report BuildMutateExistingReport): one entry per rule response, ToPolicyReportResult's
fields plus `patched-target` on a pass. The webhook makes the UpdateRequest only for rules passing the background
checks on the trigger (pkg/webhooks/resource/updaterequest.go handleMutateExisting). The classic conformance
scenario `reports/background/mutate-existing` (tests/classic/test_classic_conformance.py) asserts the entry as a
real cluster wrote it; these tests pin the cases around it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

NS = {"apiVersion": "v1", "kind": "Namespace",
      "metadata": {"name": "staging", "uid": "00000000-0000-4000-8000-0000000000a0"}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "myapp-pod", "namespace": "staging", "labels": {
    "app": "myapp"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]}}


def _secret(name: str, n: int, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "staging", "uid": f"00000000-0000-4000-8000-00000000000{n}"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque", "data": {"foo": "YmFy"}}


def _policy(target: dict[str, Any] | None = None, *, labels: dict[str, str] | None = None,
            background: bool | None = None, preconditions: Any = None, on_policy_update: bool = False,
            report_properties: dict[str, str] | None = None) -> dict[str, Any]:
    """The conformance scenario's policy (reports/background/mutate-existing/policy.yaml), varied."""
    rule: dict[str, Any] = {
        "name": "mutate-secret-on-configmap-create",
        "match": {"any": [{"resources": {"kinds": ["Pod"], "namespaces": ["staging"]}}]},
        "mutate": {"mutateExistingOnPolicyUpdate": on_policy_update,
                   "patchStrategicMerge": {"metadata": {"labels": {"foo": "bar"}}},
                   "targets": [target or {"apiVersion": "v1", "kind": "Secret", "name": "secret-1",
                                          "namespace": "{{ request.object.metadata.namespace }}"}]}}
    if preconditions is not None:
        rule["preconditions"] = preconditions
    if report_properties is not None:
        rule["reportProperties"] = report_properties
    meta: dict[str, Any] = {"name": "mutate-existing-secret"}
    if labels:
        meta["labels"] = labels
    spec: dict[str, Any] = {"rules": [rule]}
    if background is not None:
        spec["background"] = background
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": meta, "spec": spec}


def _reports(tmp_path: Path, policy: dict[str, Any], state: list[dict[str, Any]] | dict[str, Any], *,
             manifests: list[dict[str, Any]] | None = None) -> tuple[int, list[dict[str, Any]], str]:
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(policy))
    (tmp_path / "state.yaml").write_text(yaml.safe_dump_all(state) if isinstance(state, list) else
                                         yaml.safe_dump(state))
    args = ["eval", "-p", str(tmp_path / "policy.yaml"), "--state", str(tmp_path / "state.yaml"), "-o", "json"]
    if manifests is not None:
        (tmp_path / "manifests.yaml").write_text(yaml.safe_dump_all(manifests))
        args += ["-r", str(tmp_path / "manifests.yaml")]
    run = CliRunner().invoke(cli, args)
    doc = json.loads(run.stdout) if run.stdout.strip() else {}
    return run.exit_code, doc.get("reports", []), run.stderr


def _entries(reports: list[dict[str, Any]], kind: str, name: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "timestamp"}
            for report in reports if report["scope"]["kind"] == kind and report["scope"]["name"] == name
            for r in report["results"]]


KYVERNO_ENTRY = {
    # as the conformance scenario's chainsaw-step-03-assert-1-1.yaml holds it, with ToPolicyReportResult's
    # `process` (the assert is partial: it leaves `process` out)
    "source": "kyverno", "policy": "mutate-existing-secret", "rule": "mutate-secret-on-configmap-create",
    "result": "pass", "message": "mutated Secret/secret-1 in namespace staging", "scored": True,
    "properties": {"process": "background scan",
                   "patched-target": "/v1, Kind=Secret Name=secret-1 Namespace=staging"}}


def test_the_admitted_trigger_report_holds_the_entry_kyverno_writes(tmp_path: Path) -> None:
    code, reports, err = _reports(tmp_path, _policy(), [NS, _secret("secret-1", 1)], manifests=[POD])
    assert code == 0, err
    assert _entries(reports, "Pod", "myapp-pod") == [KYVERNO_ENTRY]
    pod_report = next(r for r in reports if r["scope"]["kind"] == "Pod")
    assert pod_report["summary"] == {"pass": 1, "fail": 0, "warn": 0, "error": 0, "skip": 0}
    # the target gets no entry: the report is the trigger's (BuildMutateExistingReport on policyContext.NewResource)
    assert _entries(reports, "Secret", "secret-1") == []


def test_a_target_already_patched_gives_the_skip_entry(tmp_path: Path) -> None:
    code, reports, err = _reports(tmp_path, _policy(), [NS, _secret("secret-1", 1, foo="bar")], manifests=[POD])
    assert code == 0, err
    assert _entries(reports, "Pod", "myapp-pod") == [{
        **{k: v for k, v in KYVERNO_ENTRY.items() if k != "properties"}, "result": "skip",
        "message": "no patches applied", "properties": {"process": "background scan"}}]


def test_a_missing_named_target_is_the_rules_error_entry(tmp_path: Path) -> None:
    code, reports, err = _reports(tmp_path, _policy(), [NS, _secret("other", 2)], manifests=[POD])
    assert code == 0, err
    [entry] = _entries(reports, "Pod", "myapp-pod")
    assert (entry["result"], entry["properties"]) == ("error", {"process": "background scan"})
    assert "secret-1" in entry["message"]


def test_the_first_response_of_a_rule_is_the_entry(tmp_path: Path) -> None:
    """Two targets, two responses of one rule: the aggregator keys classic results by (policy, rule, subject)
    and keeps the first of equal timestamps (aggregate/utils.go mergeReports); the targets come in the
    API server's LIST order (by name), as the state lists them."""
    every = {"apiVersion": "v1", "kind": "Secret", "namespace": "{{ request.object.metadata.namespace }}"}
    code, reports, err = _reports(tmp_path, _policy(every), [NS, _secret("a", 1, foo="bar"), _secret("b", 2)],
                                  manifests=[POD])
    assert code == 0, err
    assert [(e["result"], e["message"]) for e in _entries(reports, "Pod", "myapp-pod")] == [
        ("skip", "no patches applied")]


def test_rule_preconditions_false_on_the_trigger_make_no_update_request_and_no_entry(tmp_path: Path) -> None:
    never = {"all": [{"key": "{{ request.object.metadata.name }}", "operator": "Equals", "value": "nope"}]}
    code, reports, err = _reports(tmp_path, _policy(preconditions=never), [NS, _secret("secret-1", 1)],
                                  manifests=[POD])
    assert code == 0, err
    assert _entries(reports, "Pod", "myapp-pod") == []


def test_a_policy_labelled_reports_disabled_writes_no_entry(tmp_path: Path) -> None:
    code, reports, err = _reports(tmp_path, _policy(labels={"reports.kyverno.io/disabled": "true"}),
                                  [NS, _secret("secret-1", 1)], manifests=[POD])
    assert code == 0, err
    assert _entries(reports, "Pod", "myapp-pod") == []


def test_background_off_still_reports_as_admission_review(tmp_path: Path) -> None:
    """ProcessUR reports whatever spec.background says; ToPolicyReportResult's `process` follows it."""
    code, reports, err = _reports(tmp_path, _policy(background=False, report_properties={"team": "a"}),
                                  [NS, _secret("secret-1", 1)], manifests=[POD])
    assert code == 0, err
    [entry] = _entries(reports, "Pod", "myapp-pod")
    assert entry["properties"] == {"process": "admission review", "team": "a",
                                   "patched-target": "/v1, Kind=Secret Name=secret-1 Namespace=staging"}


def test_applying_the_policy_reports_on_existing_triggers_with_mutate_existing_on_policy_update(
        tmp_path: Path) -> None:
    pod = {**POD, "metadata": {**POD["metadata"], "uid": "00000000-0000-4000-8000-0000000000b0"}}
    code, reports, err = _reports(tmp_path, _policy(on_policy_update=True), [NS, pod, _secret("secret-1", 1)])
    assert code == 0, err
    assert _entries(reports, "Pod", "myapp-pod") == [KYVERNO_ENTRY]
    # without the flag, applying the policy starts nothing on existing triggers
    code, reports, err = _reports(tmp_path, _policy(on_policy_update=False), [NS, pod, _secret("secret-1", 1)])
    assert code == 0, err
    assert _entries(reports, "Pod", "myapp-pod") == []


def _capture(listed: list[str], unreadable: tuple[str, ...] = ()) -> dict[str, Any]:
    """A capture's List recording the kinds it listed (and those it could not read) of the kinds the cluster
    serves, holding the Namespace."""
    kinds = {"Namespace", "Pod", *listed}
    annotations = {"kyrec.io/listed": json.dumps([{"apiVersion": "v1", "kind": k, "namespace": ""}
                                                  for k in sorted(kinds)]),
                   "kyrec.io/served": json.dumps([{"apiVersion": "v1", "kind": k} for k in
                                                  ("ConfigMap", "Namespace", "Pod", "Secret")])}
    if unreadable:
        annotations["kyrec.io/unreadable"] = json.dumps([
            {"apiVersion": "v1", "kind": k, "namespace": "", "status": 403,
             "message": f'{k.lower()}s is forbidden: User "u" cannot list resource "{k.lower()}s"'}
            for k in unreadable])
    return {"apiVersion": "v1", "kind": "List", "metadata": {"annotations": annotations}, "items": [NS]}


def _preview(tmp_path: Path) -> list[tuple[str, str]]:
    run = CliRunner().invoke(cli, ["eval", "-p", str(tmp_path / "policy.yaml"), "--state",
                                   str(tmp_path / "state.yaml"), "-r", str(tmp_path / "manifests.yaml"), "-o", "json"])
    return [(c["result"], c["message"]) for c in json.loads(run.stdout)["mutateExisting"]]


def test_a_target_kind_the_state_did_not_list_is_undetermined_and_gives_no_entry(tmp_path: Path) -> None:
    """A capture that recorded its LISTs without Secrets: whether secret-1 exists is not known, so neither is
    the target change nor the entry (pass, or the not-found error): undetermined, never reported."""
    code, reports, err = _reports(tmp_path, _policy(), _capture([]), manifests=[POD])
    assert code == 0, err
    assert _entries(reports, "Pod", "myapp-pod") == []
    [(result, message)] = _preview(tmp_path)
    assert result == "undetermined"
    assert message.startswith("the target kind Secret (v1) was not read; on the state as read: error")
    # listed, and empty: the not-found error is Kyverno's entry
    code, reports, err = _reports(tmp_path, _policy(), _capture(["Secret"]), manifests=[POD])
    assert code == 0, err
    assert [e["result"] for e in _entries(reports, "Pod", "myapp-pod")] == ["error"]
    assert [r for r, _ in _preview(tmp_path)] == ["error"]


def test_a_target_kind_whose_read_failed_is_undetermined_and_the_run_exits_5(tmp_path: Path) -> None:
    code, reports, err = _reports(tmp_path, _policy(), _capture([], unreadable=("Secret",)), manifests=[POD])
    assert code == 5, err
    assert _entries(reports, "Pod", "myapp-pod") == []
    [(result, message)] = _preview(tmp_path)
    assert result == "undetermined" and message.startswith("the target kind Secret (v1) could not be read")


# -- diff --reports / coverage: the cluster's reports against a state -------------------------------------------

POD_UID = "00000000-0000-4000-8000-0000000000b0"
STORED_POD = {**POD, "metadata": {**POD["metadata"], "uid": POD_UID, "creationTimestamp": "2026-11-02T00:00:00Z"}}
CHECK_RULE = {"name": "require-app-label", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
              "validate": {"failureAction": "Audit", "message": "an app label is required",
                           "pattern": {"metadata": {"labels": {"app": "?*"}}}}}
CHECK_ENTRY = {"source": "kyverno", "policy": "mutate-existing-secret", "rule": "require-app-label",
               "result": "pass", "message": "validation rule 'require-app-label' passed.", "scored": True,
               "properties": {"process": "background scan"}}


def _pod_report(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport", "metadata": {
        "name": POD_UID, "namespace": "staging", "labels": {"app.kubernetes.io/managed-by": "kyverno"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "myapp-pod", "uid": POD_UID}]},
        "scope": {"apiVersion": "v1", "kind": "Pod", "name": "myapp-pod", "namespace": "staging", "uid": POD_UID},
        "summary": {"pass": len(entries), "fail": 0, "warn": 0, "error": 0, "skip": 0},
        "results": [{**e, "timestamp": {"seconds": 1796520730, "nanos": 0}} for e in entries]}


def _diff(tmp_path: Path, policy: dict[str, Any], report: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """`diff --reports` of a cluster where Kyverno patched secret-1 after admitting the Pod."""
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(policy))
    state = {"apiVersion": "v1", "kind": "List", "items": [NS, STORED_POD, _secret("secret-1", 1, foo="bar"), report]}
    (tmp_path / "state.yaml").write_text(yaml.safe_dump(state))
    run = CliRunner().invoke(cli, ["diff", "-p", str(tmp_path / "policy.yaml"), "--state", str(tmp_path / "state.yaml"),
                                   "--reports", "-o", "json"])
    return run.exit_code, json.loads(run.stdout)


def test_diff_does_not_call_the_entry_kyverno_wrote_stale(tmp_path: Path) -> None:
    """The entry says what the background controller found when it processed the Pod's UpdateRequest (secret-1
    without the label: pass); the state holds secret-1 patched since. kyrec cannot recompute it, so it is not
    compared (before: `stale result-of-absent-policy`, and `apply` would have rewritten Kyverno's report)."""
    code, out = _diff(tmp_path, _policy(), _pod_report(KYVERNO_ENTRY))
    assert code == 0, out
    assert out["summary"]["report"]["stale"] == 0 and out["changes"] == []
    assert any(n.startswith("mutate-existing-secret rule mutate-secret-on-configmap-create: the mutate-existing "
                            "entries in 1 report(s)") for n in out["notices"])


def test_diff_still_compares_the_policys_other_rules(tmp_path: Path) -> None:
    policy = _policy()
    policy["spec"]["rules"].append(CHECK_RULE)
    code, out = _diff(tmp_path, policy, _pod_report(CHECK_ENTRY, KYVERNO_ENTRY))
    assert code == 0, out
    assert out["summary"]["report"]["current"] == 1 and out["summary"]["report"]["stale"] == 0
    # the validate rule's result missing from the report is still a finding
    code, out = _diff(tmp_path, policy, _pod_report(KYVERNO_ENTRY))
    assert code == 1 and out["summary"]["report"]["stale"] == 1, out


def test_diff_calls_an_entry_of_a_rule_the_policy_no_longer_has_stale(tmp_path: Path) -> None:
    """The aggregator drops results of rules that no longer exist (aggregate/utils.go mergeReports): only the
    policy's own mutate-existing rules are left out."""
    gone = {**KYVERNO_ENTRY, "rule": "an-older-rule"}
    _, out = _diff(tmp_path, _policy(), _pod_report(gone))
    assert out["summary"]["report"]["stale"] == 1, out
    assert out["changes"][0]["reason"] == "result-of-absent-policy"


def test_reports_output_says_which_entry_is_undetermined(tmp_path: Path) -> None:
    """`-o reports` writes no entry it cannot decide, and says so in a comment (docs/output.md)."""
    _reports(tmp_path, _policy(), _capture([]), manifests=[POD])
    run = CliRunner().invoke(cli, ["eval", "-p", str(tmp_path / "policy.yaml"), "--state",
                                   str(tmp_path / "state.yaml"), "-r", str(tmp_path / "manifests.yaml"),
                                   "-o", "reports"])
    assert run.exit_code == 0, run.stderr
    assert run.stdout.startswith("# undetermined: mutate-existing-secret for Pod staging/myapp-pod: the target kind "
                                 "Secret (v1) was not read; on the state as read: error")


def test_a_rule_context_kyrec_cannot_answer_offline_is_undetermined(tmp_path: Path) -> None:
    """The rule's context calls a service: what it patches (and so the entry) is not known offline (before:
    the preview said `error`, and the entry would have been that error)."""
    policy = _policy()
    rule = policy["spec"]["rules"][0]
    rule["context"] = [{"name": "settings", "apiCall": {"service": {"url": "http://settings.staging/foo"}}}]
    rule["mutate"]["patchStrategicMerge"] = {"metadata": {"labels": {"foo": "{{ settings.foo }}"}}}
    code, reports, err = _reports(tmp_path, policy, [NS, _secret("secret-1", 1)], manifests=[POD])
    assert code == 0, err
    assert _entries(reports, "Pod", "myapp-pod") == []
    [(result, message)] = _preview(tmp_path)
    assert result == "undetermined" and "which kyrec cannot answer offline" in message, message


# -- Kyverno's background controller as the oracle (tests/consistency/mutate_existing_oracle.py) ---------------

def test_kyverno_s_background_controller_wrote_the_entries_kyrec_expects(tmp_path: Path) -> None:
    """Recorded from Kyverno v1.17.2's background controller on the real API server: per case, the entries its
    reports controller keeps for every rule of the case's policy. Replayed offline on the same objects (the
    admitted Pods as `-r` manifests, the rest as the state; the policy-update cases without `-r`). Pins the
    shared-map quirk (with reportProperties a `skip` carries the other target's patched-target) and a plain mutate
    rule's entry beside the mutate-existing rule's (skip when admission applied it, pass on a stored trigger), and
    a MutatingPolicy's pass/success on each target it patched (its cel-mutate UpdateRequest)."""
    from tests.consistency.mutate_existing_oracle import CASES, OBJECTS, POLICIES, admitted, expected

    golden = json.loads((Path(__file__).resolve().parents[2] / "testdata" / "kyverno-truth" /
                         "mutate-existing-reports.json").read_text())
    assert golden["kyverno"]["version"] == "v1.17.2"
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all(POLICIES))
    (tmp_path / "state.yaml").write_text(yaml.safe_dump_all([d for d in OBJECTS if not admitted(d)]))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all([d for d in OBJECTS if admitted(d)]))
    reports = []
    for manifests in (["-r", str(tmp_path / "pods.yaml")], []):
        run = CliRunner().invoke(cli, ["eval", "-p", str(tmp_path / "policies.yaml"), "--state",
                                       str(tmp_path / "state.yaml"), *manifests, "-o", "json"])
        assert run.exit_code == 0, run.stderr
        reports.append(json.loads(run.stdout)["reports"])
    mine = expected(*reports)
    assert sorted(golden["cases"]) == sorted(mine) and len(mine) == len(CASES) + 2
    for key, case in golden["cases"].items():
        assert mine[key] == case["entries"], key
    # the mixed policies' plain rule is among the entries compared, and the MutatingPolicy's targets' entries
    assert {case["entries"]["stamp"]["result"] for key, case in golden["cases"].items() if "stamp" in case["entries"]
            } == {"skip", "pass"}
    assert [case["entries"][""]["source"] for key, case in golden["cases"].items() if key.startswith("mx-mpol ")
            ] == ["KyvernoMutatingPolicy"] * 2


def test_diff_leaves_out_the_entry_of_a_plain_mutate_rule_of_such_a_policy(tmp_path: Path) -> None:
    """ProcessUR runs the whole policy (engine.Mutate) and reports every mutate rule's response on the trigger,
    a plain mutate rule's too: written when the UpdateRequest was processed, not compared either."""
    policy = _policy()
    policy["spec"]["rules"].append({"name": "stamp-pod", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                                    "mutate": {"patchStrategicMerge": {"metadata": {"labels": {"stamped": "on"}}}}})
    plain = {**KYVERNO_ENTRY, "rule": "stamp-pod", "result": "skip", "message": "no patches applied",
             "properties": {"process": "background scan"}}
    code, out = _diff(tmp_path, policy, _pod_report(KYVERNO_ENTRY, plain))
    assert code == 0 and out["summary"]["report"]["stale"] == 0, out
