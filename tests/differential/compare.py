"""kyrec's side of the differential campaign and the comparison of both sides' rows."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from tests.differential.harness import Answer, Case, Key, kyrec_answer


def run_kyrec(policy: Path, resources: Path, now: str) -> tuple[Answer, list[str]]:
    """`kubectl kyrec eval -p POLICY -r RESOURCES -o json` in this process (one process: the pairs of one
    policy are far below the size where workers pay off). Returns the rows and the run's errors (a policy
    that does not load is exit 3 and no rows)."""
    result = CliRunner().invoke(cli, ["eval", "-p", str(policy), "-r", str(resources), "-o", "json", "--now", now,
                                      "--jobs", "1"])
    try:
        document = json.loads(result.stdout)
    except ValueError:
        return {}, [result.stderr.strip() or f"exit {result.exit_code}"]
    return kyrec_answer(document), [str(e.get("message")) for e in document.get("errors") or []]


@dataclass
class Comparison:
    rows: set[Key] = field(default_factory=set)          # every (policy, rule, resource) either side answered
    pairs: set[tuple[str, ...]] = field(default_factory=set)    # (policy, resource) with a row on either side
    disagree: set[Key] = field(default_factory=set)


def pair_of(key: Key) -> tuple[str, ...]:
    return (key[0], *key[2:])


def compare(theirs: Answer, ours: Answer) -> Comparison:
    out = Comparison()
    out.rows = set(theirs) | set(ours)
    out.pairs = {pair_of(k) for k in out.rows}
    out.disagree = {k for k in out.rows if theirs.get(k) != ours.get(k)}
    return out


def classify(key: Key, theirs: tuple[str, str] | None, ours: tuple[str, str] | None, case: Case | None) -> str:
    """A disagreement's class: what differs (a row on one side only, the result, or the message alone)."""
    if ours is None:
        assert theirs is not None
        return f"kyverno only: {theirs[0]}"
    if theirs is None:
        return f"kyrec only: {ours[0]}"
    if theirs[0] != ours[0]:
        return f"result: kyverno {theirs[0]}, kyrec {ours[0]}"
    return f"message ({theirs[0]})"
