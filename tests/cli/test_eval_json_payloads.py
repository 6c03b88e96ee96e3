"""`kyrec eval --json`: JSON-mode ValidatingPolicies over plain JSON/YAML documents, in every output format.

The case is testdata/testrun/json-payloads (the same policies `kyrec test` runs through jsonPayloads).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

CASE = Path(__file__).resolve().parents[2] / "testdata" / "testrun" / "json-payloads"
NOW = ("--now", "2026-01-01T00:00:00Z")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["eval", *NOW, "-p", str(CASE / "policies.yaml"),
                                      "-e", str(CASE / "exception.yaml"), *args])
    return result.exit_code, result.stdout, result.stderr


def payloads(*names: str) -> list[str]:
    return [arg for name in names for arg in ("--json", str(CASE / name))]


def test_results_per_payload_and_exit_code() -> None:
    code, out, err = run(*payloads("small.json", "huge.json", "legacy.json", "queue.yaml"), "-o", "json")
    doc = json.loads(out)
    got = sorted((Path(r["subject"]["name"]).name, r["result"], r["message"]) for r in doc["results"])
    assert got == [
        ("huge.json", "fail", "bucket huge is too big"),
        ("legacy.json", "skip", "rule is skipped due to policy exception: default/legacy-bucket"),
        ("queue.yaml", "skip", "skip"),
        ("small.json", "pass", "success"),
    ]
    # the Kubernetes-mode policy never sees a payload; a payload is in no PolicyReport
    assert {r["policy"] for r in doc["results"]} == {"small-buckets"}
    assert doc["reports"] == []
    assert code == 1
    assert "evaluation mode JSON" not in err        # the payloads were given: nothing skipped


def test_passing_payloads_exit_0() -> None:
    assert run(*payloads("small.json"))[0] == 0


@pytest.mark.parametrize("fmt", ["table", "wide", "yaml", "junit", "sarif", "github"])
def test_every_output_format_names_the_failing_payload(fmt: str) -> None:
    code, out, _ = run(*payloads("small.json", "huge.json"), "-o", fmt)
    assert code == 1
    assert "huge.json" in out
    if fmt == "yaml":
        assert {r["result"] for r in yaml.safe_load(out)["results"]} == {"pass", "fail"}


def test_a_payload_that_is_not_a_mapping_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "list.json"
    bad.write_text("[1, 2]")
    code, _, err = run("--json", str(bad))
    assert code == 3
    assert err.startswith("error: ") and f"{bad}:1: JSON payload {bad} must be a top-level object (map)" in err


def test_eval_without_resources_or_payloads_is_a_usage_error() -> None:
    code, _, err = run()
    assert code == 2 and "--json PATH" in err


@pytest.mark.parametrize("fmt", ["table", "json", "sarif"])
def test_a_lone_surrogate_escape_in_a_payload_reads_as_the_replacement_character(tmp_path: Path, fmt: str) -> None:
    # as Go's encoding/json decodes it (golang/json.py as_go_decodes): the same answer as U+FFFD in the file
    path = str(tmp_path / "b.json")
    outs = []
    for name in ("h\\ud800ge", "h\ufffdge"):
        Path(path).write_text('{"kind": "bucket", "name": "' + name + '", "spec": {"sizeGi": 500}}', encoding="utf-8")
        outs.append(run("--json", path, "-o", fmt))
    assert outs[0] == outs[1]
    assert outs[0][0] == 1
    shown = outs[0][1] if fmt == "table" else json.dumps(json.loads(outs[0][1]), ensure_ascii=False)
    assert "bucket h\ufffdge is too big" in shown
