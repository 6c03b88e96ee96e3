"""Replay of the ground-truth scenarios recorded against Kyverno's own controllers, without Kyverno.

testdata/kyverno-truth/<scenario>/ holds what tests/realapi/kyverno_truth.py recorded while Kyverno's background
and reports controllers ran on a real API server: per checkpoint, the cluster as `kyrec capture` listed it
(the policies, triggers, clone sources, Kyverno's ConfigMap, the downstreams Kyverno made, the reports it wrote)
the class kyrec gave each object, and the class Kyverno's own state implied (`truth`: what Kyverno made or kept
is in-sync or current, seeded drift is what was seeded), which the recorder checked against each other. Here
kyrec runs `diff --state` on each captured state at the recorded time (`--now`) and must give the same class to
every object, equal to the truth but for the known disagreements listed per object (docs/compatibility.md,
"Ground truth: Kyverno's controllers"); and where Kyverno had settled on its own (`settled`), every downstream
Kyverno made must be `in-sync` and every report it wrote `current`, read from the state itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.realapi.kyverno_truth import GOLDEN, classes, run_kyrec

SCENARIOS = sorted(p.parent.name for p in GOLDEN.glob("*/scenario.json"))


def test_scenarios_are_recorded() -> None:
    # the replay cannot pass by finding nothing
    assert len(SCENARIOS) >= 5, SCENARIOS


def checkpoints() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    out = []
    for name in SCENARIOS:
        meta = json.loads((GOLDEN / name / "scenario.json").read_text())
        for cp in meta["checkpoints"]:
            out.append((name, meta, cp))
    return out


def kyverno_made(state: dict[str, Any], args: list[str]) -> set[str]:
    """The downstreams (`--downstreams`) or reports (`--reports`) in a state, by the labels Kyverno puts on what it
    writes."""
    made = set()
    for item in state["items"]:
        md = item["metadata"]
        if item["kind"] in ("PolicyReport", "ClusterPolicyReport"):
            if "--reports" not in args:
                continue
            made.add(f"report {item['kind']}/{md.get('namespace', '')}/{md['name']}")
        elif (md.get("labels") or {}).get("app.kubernetes.io/managed-by") == "kyverno" and \
                "generate.kyverno.io/policy-name" in (md.get("labels") or {}):
            made.add(f"downstream {item['kind']}/{md.get('namespace', '')}/{md['name']}")
    return made


@pytest.mark.parametrize(("scenario", "meta", "checkpoint"), checkpoints(),
                         ids=[f"{s}:{c['name']}" for s, _, c in checkpoints()])
def test_kyrec_offline_gives_the_recorded_classes(scenario: str, meta: dict[str, Any], checkpoint: dict[str, Any],
                                                   tmp_path: Path) -> None:
    state = GOLDEN / scenario / checkpoint["state"]
    code, doc, err = run_kyrec(None, tmp_path / "cache", "diff", "--state", str(state), *checkpoint["args"],
                               "--now", checkpoint["now"], "-o", "json")
    assert doc is not None and code in (0, 1), (code, err)
    found = classes(doc)
    assert found == checkpoint["classes"], {k: (found.get(k), v) for k, v in checkpoint["classes"].items()
                                            if found.get(k) != v} | {k: (v, None) for k, v in found.items()
                                                                     if k not in checkpoint["classes"]}
    # kyrec agrees with what Kyverno's state implied at recording, but for the listed known disagreements
    known = checkpoint["disagreements"]
    assert {k: v for k, v in found.items() if k not in known} == \
        {k: v for k, v in checkpoint["truth"].items() if k not in known}
    assert set(known) <= set(found)
    if checkpoint["name"] == "settled":
        # Kyverno settled on its own: everything it made is in-sync or current (read from the state itself)
        made = kyverno_made(json.loads(state.read_text()), checkpoint["args"])
        assert made, "Kyverno made nothing in this scenario"
        good = {"downstream": "in-sync", "report": "current"}
        assert {k: found.get(k) for k in made if k not in known} == \
            {k: good[k.split()[0]] for k in made if k not in known}
