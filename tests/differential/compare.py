"""kyrec's side of the differential campaign and the comparison of both sides' rows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from tests.differential.harness import Answer, Case, Key, kyrec_answer, resource_key


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
    theirs: Answer = field(default_factory=dict)         # both answers as compared (normalized)
    ours: Answer = field(default_factory=dict)


def pair_of(key: Key) -> tuple[str, ...]:
    return (key[0], *key[2:])


def unnamespaced(resources: Sequence[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(apiVersion, kind, name) of the inputs written without a namespace."""
    return {(k[0], k[1], k[3]) for k in map(resource_key, resources) if not k[2]}


def normalize(answer: Answer, without_namespace: set[tuple[str, str, str]]) -> Answer:
    """Rows of a resource written without a namespace keyed with namespace "": Kyverno's CLI gives every such
    object namespace `default`, cluster-scoped ones too (cmd/cli/kubectl-kyverno/resource/resource.go:55,
    `YamlToUnstructured`), where kyrec keeps a cluster-scoped object's empty namespace (docs/compatibility.md)."""
    if not without_namespace:
        return answer
    return {(k[0], k[1], k[2], k[3], "", k[5]) if k[4] in ("", "default") and (k[2], k[3], k[5]) in
            without_namespace else k: v for k, v in answer.items()}


def compare(theirs: Answer, ours: Answer, resources: Sequence[dict[str, Any]] = ()) -> Comparison:
    bare = unnamespaced(resources)
    theirs, ours = normalize(theirs, bare), normalize(ours, bare)
    out = Comparison(theirs=theirs, ours=ours)
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
