"""A capture keeps the evidence reads that failed (issue 33: live equals captured): a restricted reader's LIST of
Kyverno's Deployments is refused; the live run names that refusal where a cause cannot be decided, and an offline
run of its capture must name the same, not advise capturing what could not be read."""

from __future__ import annotations

import json
from pathlib import Path

from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState, ListedKind
from kubectl_kyrec.load.run_inputs.state import read_state
from kubectl_kyrec.run.capture_state import capture_document

FORBIDDEN = 'deployments.apps is forbidden: User "restricted" cannot list resource "deployments" in namespace "kyverno"'


def test_a_failed_evidence_read_survives_the_capture(tmp_path: Path) -> None:
    live = ClusterState.from_objects([], listed=[ListedKind("v1", "ConfigMap", "kyverno")], source="live",
                                     evidence_unread={ListedKind("apps/v1", "Deployment", "kyverno"): FORBIDDEN})
    path = tmp_path / "capture.json"
    path.write_text(json.dumps(capture_document(live)))
    offline = read_state([str(path)])
    assert offline.read_failure("apps/v1", "Deployment", "kyverno") == FORBIDDEN
    # evidence only: no finding depends on it, so it is no unreadable kind (no exit 5, no read-failed row)
    assert offline.unreadable == {} and offline.is_listed("apps/v1", "Deployment", "kyverno") is None
    assert offline.read_failure("v1", "ConfigMap", "kyverno") is None
