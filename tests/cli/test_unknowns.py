"""What kyrec cannot know is said, not guessed (issue 8): a policy's unknown age, kinds the state never
captured, a state without managedFields."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
AGE = ROOT / "testdata" / "diff" / "policy-age-unknown"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_unknown_policy_age_is_said_once_and_never_taken_as_now() -> None:
    code, out, err = run("diff", "-p", str(AGE / "policy.yaml"), "--state", str(AGE / "state.yaml"), "-o", "json")
    assert code == 1
    notices = [line for line in err.splitlines() if "creationTimestamp" in line]
    assert len(notices) == 1 and "2 existing trigger(s)" in notices[0]
    changes = json.loads(out)["changes"]
    assert {c["reason"] for c in changes} == {"policy-age-unknown"}
    assert all(c["enforced"] for c in changes)


def test_known_policy_age_gives_no_notice() -> None:
    case = ROOT / "testdata" / "diff" / "predates-policy"
    code, _, err = run("diff", "-p", str(case / "policy.yaml"), "--state", str(case / "state.yaml"))
    assert code == 0
    assert "creationTimestamp" not in err
