"""MutatingPolicy `mutateExisting` report entries: the background controller's processor (kk:
pkg/background/mpol/processor.go Process -> audit -> BuildMutateExistingReport) writes, on each target the
policy patched and updated, the engine's response `pass` `success` (rule "", no patched-target), in the
**target's** report, keyed as the background scan's own MutatingPolicy results (docs/semantics/reports.md,
"Mutate-existing entries"; evaluate/classic/mutate_existing_preview.py _mutating_entry)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from tests.consistency.test_mutate_existing_reports import _entries, _reports

NS = {"apiVersion": "v1", "kind": "Namespace",
      "metadata": {"name": "shop", "uid": "00000000-0000-4000-8000-0000000000c0"}}
RULES = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"]}
MPOL = {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": "mex"},
        "spec": {"evaluation": {"mutateExisting": {"enabled": True}},
                 "matchConstraints": {"resourceRules": [{**RULES, "resources": ["configmaps"]}]},
                 "matchConditions": [{"name": "dictionary", "expression": 'object.metadata.name == "dictionary"'}],
                 "targetMatchConstraints": {"resourceRules": [{**RULES, "resources": ["secrets"]}]},
                 "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                     "expression": 'Object{metadata: Object.metadata{labels: {"stamped-by": request.name}}}'}}]}}
TRIGGER = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dictionary", "namespace": "shop"},
           "data": {"a": "2"}}
ENTRY = {"source": "KyvernoMutatingPolicy", "policy": "mex", "result": "pass", "message": "success",
         "scored": True, "properties": {"process": "background scan"}}


def _secret(name: str, n: int, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "shop", "uid": f"00000000-0000-4000-8000-0000000000c{n}"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque"}


def _mpol(**changes: Any) -> dict[str, Any]:
    policy = copy.deepcopy(MPOL)
    for key, value in changes.items():
        if key == "labels":
            policy["metadata"]["labels"] = value
        else:
            policy["spec"][key] = value
    return policy


def _without_rule(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # ToPolicyReportResult's rule is the response's name, "" for the patched branch
    assert all(not e.get("rule") for e in entries), entries
    return [{k: v for k, v in e.items() if k != "rule"} for e in entries]


def test_each_patched_target_gets_the_pass_success_entry(tmp_path: Path) -> None:
    """PatchedResource is set whenever the policy evaluated, even when the patch changes nothing (s2 carries
    the label already): both targets are updated and audited; the trigger gets no entry."""
    code, reports, err = _reports(tmp_path, MPOL, [NS, _secret("s1", 1), _secret("s2", 2, **{"stamped-by": "x"})],
                                  manifests=[TRIGGER])
    assert code == 0, err
    assert _without_rule(_entries(reports, "Secret", "s1")) == [ENTRY]
    assert _without_rule(_entries(reports, "Secret", "s2")) == [ENTRY]
    assert _entries(reports, "ConfigMap", "dictionary") == []


def test_a_trigger_the_policy_does_not_match_makes_no_entry(tmp_path: Path) -> None:
    other = {**TRIGGER, "metadata": {**TRIGGER["metadata"], "name": "other"}}
    code, reports, err = _reports(tmp_path, MPOL, [NS, _secret("s1", 1)], manifests=[other])
    assert code == 0, err
    assert _entries(reports, "Secret", "s1") == []


def test_a_target_skipped_by_target_match_conditions_gets_no_entry(tmp_path: Path) -> None:
    """handlePolicy's `skip` (no match) leaves PatchedResource nil: no update, no audit."""
    skip = [{"name": "only-s1", "expression": 'object.metadata.name == "s1"'}]
    code, reports, err = _reports(tmp_path, _mpol(targetMatchConditions=skip),
                                  [NS, _secret("s1", 1), _secret("s2", 2)], manifests=[TRIGGER])
    assert code == 0, err
    assert _without_rule(_entries(reports, "Secret", "s1")) == [ENTRY]
    assert _entries(reports, "Secret", "s2") == []


def test_process_follows_background_and_the_disabled_label_writes_nothing(tmp_path: Path) -> None:
    code, reports, err = _reports(tmp_path, _mpol(evaluation={"mutateExisting": {"enabled": True},
                                                              "background": {"enabled": False}}),
                                  [NS, _secret("s1", 1)], manifests=[TRIGGER])
    assert code == 0, err
    assert _without_rule(_entries(reports, "Secret", "s1")) == [
        {**ENTRY, "properties": {"process": "admission review"}}]
    code, reports, err = _reports(tmp_path, _mpol(labels={"reports.kyverno.io/disabled": "true"}),
                                  [NS, _secret("s1", 1)], manifests=[TRIGGER])
    assert code == 0, err
    assert _entries(reports, "Secret", "s1") == []
