"""mutateExisting MutatingPolicies in `kyrec test`: the targetResources mutated as Kyverno's CLI (main
111e07bb, processor/policy_processor.go) mutates them, and their rows checked as its Target responses are.

The suites are testdata/mutating-existing. Kyverno v1.17.2's CLI has no such pass (its rows are "Not found",
recorded in testdata/mutating-existing/kyverno-v1.17.2.json); the expected values here come from reading
main's source, cited in kubectl_kyrec/evaluate/mutating/mutate_existing.py.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.evaluate.subjects import as_admitted, make_subject
from kubectl_kyrec.testsuite.mutating import suite_mutations
from kubectl_kyrec.testsuite.row_types import Mode
from kubectl_kyrec.testsuite.runner import suite_environment, target_libraries
from kubectl_kyrec.testsuite.suite import load_suite, parse_test_documents

DATA = Path(__file__).resolve().parents[2] / "testdata" / "mutating-existing"
NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def _rows(suite: str, *extra: str) -> list[dict[str, Any]]:
    out = CliRunner().invoke(cli, ["test", str(DATA / suite), "-o", "json", *extra]).stdout
    return list(json.loads(out)["rows"])


def _changes(suite: str) -> list[Any]:
    loaded = load_suite(parse_test_documents(str(DATA / suite / "kyverno-test.yaml"))[0])
    kinds, libraries, _, _ = suite_environment(loaded, NOW, Mode.KYVERNO)
    subjects = [make_subject(as_admitted(d.obj), d.source, kinds)[0] for d in loaded.resources]
    targets = target_libraries(loaded, kinds, NOW, Mode.KYVERNO)
    run = suite_mutations(loaded, subjects, kinds=kinds, envs=Environments(libraries), now=NOW,
                          target_envs=Environments(targets) if targets is not None else None)
    assert not run.errors
    return [c for found in run.existing.values() for c in found]


def test_targets_picked_by_target_constraints_and_conditions() -> None:
    changes = {c.target[3]: c for c in _changes("targets")}
    # the Secret is not among targetMatchConstraints' resources; `pinned` fails targetMatchConditions
    assert set(changes) == {"settings", "pinned"}
    assert changes["pinned"].result == "skip" and changes["pinned"].after is None
    settings = changes["settings"]
    assert settings.result == "pass"
    # `request` is the trigger's request, `object` the target
    assert settings.after["metadata"]["labels"] == {"trigger": "web"}
    assert settings.patch


def test_target_rows_compare_the_patched_target() -> None:
    for mode in ((), ("--strict",)):
        rows = _rows("targets", *mode)
        assert [(r["resource"], r["status"], r["reason"]) for r in rows] == [
            ("apps/settings", "pass", "ok"), ("apps/settings", "fail", "patched-mismatch")], mode


def test_targets_named_by_a_cel_expression() -> None:
    changes = _changes("cel-expression")
    # resource.get sees the targetResources; only the ConfigMap the trigger's annotation names is taken
    assert [(c.target[3], c.result) for c in changes] == [("chosen", "pass")]
    assert changes[0].after["data"] == {"k": "v", "secret": "chosen"}
    assert [(r["resource"], r["status"]) for r in _rows("cel-expression")] == [("team/chosen", "pass")]


def test_policy_without_targets_mutates_its_trigger_in_the_admission_pass() -> None:
    rows = _rows("same-trigger")
    assert [(r["resource"], r["status"], r["actual"]) for r in rows] == [("default/api", "pass", "pass")]


def test_kyverno_v1_17_2_has_no_mutate_existing_pass() -> None:
    """The recorded version difference: where v1.17.2 reports "Not found", main's CLI (and kyrec) answer."""
    golden = json.loads((DATA / "kyverno-v1.17.2.json").read_text())["suites"]
    for suite in ("cel-expression", "same-trigger"):
        assert [r["reason"] for r in golden[suite]["rows"]] == ["Not found"]
        assert all(r["status"] == "pass" for r in _rows(suite))
    assert "targetMatchConditions" in golden["targets"]["error"]
