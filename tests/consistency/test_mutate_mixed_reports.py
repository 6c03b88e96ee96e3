"""A ClusterPolicy mixing plain mutate rules with a mutate-existing rule: the background controller's
ProcessUR runs the whole policy on the trigger (engine.Mutate outside admission: the plain rules' handler runs
too, pkg/engine/mutation.go) and BuildMutateExistingReport writes every rule response on the trigger, the plain
rules' with no `patched-target` (docs/semantics/reports.md, "Mutate-existing entries";
evaluate/classic/mutate_existing_preview.py plain_rule_entries)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from tests.consistency.test_mutate_existing_reports import KYVERNO_ENTRY, NS, POD, _entries, _policy, _reports, _secret

STAMP = {"name": "stamp-pod", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
         "mutate": {"patchStrategicMerge": {"metadata": {"labels": {"stamped": "on"}}}}}
PLAIN = {**{k: v for k, v in KYVERNO_ENTRY.items() if k != "properties"}, "rule": "stamp-pod",
         "properties": {"process": "background scan"}}


def _mixed(*plain: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    policy = _policy(**kwargs)
    policy["spec"]["rules"].extend(copy.deepcopy(list(plain)))
    return policy


def _by_rule(reports: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["rule"]: e for e in _entries(reports, "Pod", "myapp-pod")}


def test_the_plain_rule_already_applied_at_admission_is_reported_as_a_skip(tmp_path: Path) -> None:
    """At admission the webhook applied stamp-pod; the controller reads the admitted trigger, so the rule
    patches nothing: `skip` `no patches applied`, beside the mutate-existing rule's pass."""
    code, reports, err = _reports(tmp_path, _mixed(STAMP), [NS, _secret("secret-1", 1)], manifests=[POD])
    assert code == 0, err
    assert _by_rule(reports) == {"mutate-secret-on-configmap-create": KYVERNO_ENTRY,
                                 "stamp-pod": {**PLAIN, "result": "skip", "message": "no patches applied"}}
    pod_report = next(r for r in reports if r["scope"]["kind"] == "Pod")
    assert pod_report["summary"] == {"pass": 1, "fail": 0, "warn": 0, "error": 0, "skip": 1}


def test_on_a_policy_update_the_plain_rule_patches_the_stored_trigger(tmp_path: Path) -> None:
    """Applying the policy (mutateExistingOnPolicyUpdate): the trigger is the stored Pod, never stamped, so the
    plain rule passes on it (the controller does not write it back: only targets are updated)."""
    pod = {**POD, "metadata": {**POD["metadata"], "uid": "00000000-0000-4000-8000-0000000000b0"}}
    code, reports, err = _reports(tmp_path, _mixed(STAMP, on_policy_update=True), [NS, pod, _secret("secret-1", 1)])
    assert code == 0, err
    assert _by_rule(reports) == {"mutate-secret-on-configmap-create": KYVERNO_ENTRY,
                                 "stamp-pod": {**PLAIN, "result": "pass",
                                               "message": "mutated Pod/myapp-pod in namespace staging"}}


def test_a_plain_rule_not_matching_the_trigger_has_no_entry(tmp_path: Path) -> None:
    other = {**STAMP, "name": "stamp-configmap", "match": {"any": [{"resources": {"kinds": ["ConfigMap"]}}]}}
    code, reports, err = _reports(tmp_path, _mixed(other), [NS, _secret("secret-1", 1)], manifests=[POD])
    assert code == 0, err
    assert list(_by_rule(reports)) == ["mutate-secret-on-configmap-create"]


def test_no_update_request_no_plain_entry(tmp_path: Path) -> None:
    """The mutate-existing rule's preconditions are false on the trigger: no UpdateRequest, so the plain rule's
    admission response is the only one, which the background entries leave out (admission reports are not
    modelled)."""
    never = {"all": [{"key": "{{ request.object.metadata.name }}", "operator": "Equals", "value": "nope"}]}
    code, reports, err = _reports(tmp_path, _mixed(STAMP, preconditions=never), [NS, _secret("secret-1", 1)],
                                  manifests=[POD])
    assert code == 0, err
    assert _entries(reports, "Pod", "myapp-pod") == []


def test_the_plain_rules_report_properties_and_the_disabled_label(tmp_path: Path) -> None:
    stamped = {**STAMP, "reportProperties": {"team": "a"}}
    code, reports, err = _reports(tmp_path, _mixed(stamped), [NS, _secret("secret-1", 1)], manifests=[POD])
    assert code == 0, err
    assert _by_rule(reports)["stamp-pod"]["properties"] == {"process": "background scan", "team": "a"}
    code, reports, err = _reports(tmp_path, _mixed(STAMP, labels={"reports.kyverno.io/disabled": "true"}),
                                  [NS, _secret("secret-1", 1)], manifests=[POD])
    assert code == 0, err
    assert _entries(reports, "Pod", "myapp-pod") == []


def test_an_unknown_admitted_trigger_makes_the_plain_entry_undetermined(tmp_path: Path) -> None:
    """stamp-pod applies only for a user not given: the admitted Pod is not known, so neither the mutate-existing
    rule's entry nor the plain rule's can be decided: both left out of the report, each with a comment."""
    who = {**STAMP, "match": {"any": [{"resources": {"kinds": ["Pod"]},
                                       "subjects": [{"kind": "User", "name": "alice"}]}]}}
    policy = _mixed(who, background=False)
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(policy))
    (tmp_path / "s.yaml").write_text(yaml.safe_dump_all([NS, _secret("secret-1", 1)]))
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(POD))
    run = CliRunner().invoke(cli, ["eval", "-p", str(tmp_path / "p.yaml"), "--state", str(tmp_path / "s.yaml"),
                                   "-r", str(tmp_path / "r.yaml"), "-o", "reports"])
    assert run.exit_code == 0, run.stderr
    notes = [line for line in run.stdout.splitlines() if line.startswith("# undetermined:")]
    # the admission result's note, then the two background entries': the mutate-existing rule's, computed on
    # a trigger not known, and stamp-pod's, which depends on the user in the background controller too
    assert len(notes) == 3, notes
    assert sum("the admitted trigger is not known" in n for n in notes) == 1, notes
    assert notes[0] == notes[2], notes
    assert "myapp-pod" not in run.stdout.replace(notes[0], "").replace(notes[1], "").replace(notes[2], ""), run.stdout
