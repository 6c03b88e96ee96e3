"""Reports of kube-system objects: a default Kyverno install's reports controller runs with
--skipResourceFilters=true, so the ConfigMap's resourceFilters do not keep those reports from being written
(issue 8). `--skip-resource-filters=false` models a controller configured otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "testdata" / "coverage-cli" / "policy.yaml"
NOW = "2026-09-01T12:00:00Z"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _state(tmp_path: Path) -> Path:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "coredns", "namespace": "kube-system", "uid": "11111111-2222-3333-4444-555555555555",
                        "labels": {"team": "platform"}, "creationTimestamp": "2026-08-01T00:00:00Z"},
           "spec": {"containers": [{"name": "c", "image": "coredns:1"}]}}
    pod_file = tmp_path / "pod.json"
    pod_file.write_text(json.dumps(pod))
    code, out, err = run("eval", "-p", str(POLICY), "-r", str(pod_file), "--state", str(pod_file), "-o", "reports",
                         "--now", NOW)
    assert code == 0, err
    reports = [r for r in yaml.safe_load_all(out) if r]
    assert len(reports) == 1
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod, *reports]}))
    return state


def test_kube_system_reports_are_current_under_a_default_install(tmp_path: Path) -> None:
    code, out, err = run("coverage", "-p", str(POLICY), "--state", str(_state(tmp_path)), "-o", "json", "--now", NOW)
    assert code == 0, err
    doc = json.loads(out)
    assert [s["status"] for s in doc["subjects"]] == ["current"]


def test_a_controller_obeying_resource_filters_owes_them_nothing(tmp_path: Path) -> None:
    code, out, _ = run("coverage", "-p", str(POLICY), "--state", str(_state(tmp_path)), "-o", "json", "--now", NOW,
                       "--skip-resource-filters=false")
    doc = json.loads(out)
    assert doc["subjects"] == []
