"""Replay of the differential campaign against the Kyverno CLI, without Kyverno.

testdata/differential/golden.json.xz holds each case of a campaign (tests/differential/campaign.py): the corpus
path of a validating policy, the resources it ran on (its kyverno-test.yaml resources and seeded variants) and
the rows Kyverno's CLI answered, with the Kyverno version they came from. Here kyrec answers the same inputs
again (`kubectl kyrec eval -o json`, in process) and every (policy, rule, resource) row must agree in result
and message, except the disagreements listed in testdata/differential/known.json, each with its class (the
classes are explained in docs/compatibility.md, "Differential testing against the Kyverno CLI"). The list is
exact: a listed disagreement that no longer occurs (fixed) fails the test as a new one does, so the list and
the documented figures stay true.

The policies are read from the shared corpus in place (../shared/corpus).
"""

from __future__ import annotations

import json
import lzma
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.differential.compare import classify, compare, pair_of
from tests.differential.harness import Answer, Case, Key, dump_yaml
from tests.shared_inputs import present, shared

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "testdata" / "differential" / "golden.json.xz"
KNOWN = ROOT / "testdata" / "differential" / "known.json"
CORPUS = shared("corpus")


def load_golden() -> dict[str, Any]:
    with lzma.open(GOLDEN, "rt") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def known_disagreements() -> dict[tuple[str, ...], str]:
    """(corpus path, *row key) -> class, from known.json."""
    data = json.loads(KNOWN.read_text())
    return {(e["policy"], *e["key"]): e["class"] for e in data["disagreements"]}


Row = tuple[str, str] | None


def replay(data: dict[str, Any]) -> tuple[Counter[str], dict[tuple[str, ...], tuple[str, Row, Row]]]:
    """kyrec's answers on every recorded case: the figures and each disagreement with its class, Kyverno's
    row and kyrec's."""
    from tests.differential.compare import run_kyrec

    totals: Counter[str] = Counter()
    found: dict[tuple[str, ...], tuple[str, Row, Row]] = {}
    with tempfile.TemporaryDirectory(prefix="kyrec-replay-") as tmp:
        for i, entry in enumerate(data["cases"]):
            case = Case(entry["policy"], [], entry["resources"])
            theirs: Answer = {tuple(row[:6]): (row[6], row[7]) for row in entry["kyverno"]}  # type: ignore[misc]
            path = Path(tmp) / f"{i:04d}.yaml"
            path.write_text(dump_yaml(case.resources))
            ours, _ = run_kyrec(CORPUS / case.policy, path, data["now"])
            result = compare(theirs, ours, case.resources)
            totals["policies"] += 1
            totals["resources"] += len(case.resources)
            totals["pairs"] += len(result.pairs)
            totals["rows"] += len(result.rows)
            totals["pairs agreeing"] += len(result.pairs - {pair_of(k) for k in result.disagree})
            for key in result.disagree:
                k: Key = key
                theirs_row, ours_row = result.theirs.get(k), result.ours.get(k)
                found[(case.policy, *k)] = (classify(k, result), theirs_row, ours_row)
    totals["disagreeing rows"] = len(found)
    return totals, found


@present(CORPUS, "differential replay over the shared corpus")
def test_kyrec_agrees_with_recorded_kyverno_answers() -> None:
    data = load_golden()
    totals, rows = replay(data)
    found = {k: v[0] for k, v in rows.items()}
    known = known_disagreements()
    new = {k: v for k, v in found.items() if k not in known}
    fixed = {k: v for k, v in known.items() if k not in found}
    reclassed = {k: (known[k], v) for k, v in found.items() if k in known and known[k] != v}

    def show(items: dict[tuple[str, ...], Any]) -> str:
        return "\n".join(f"  {v}: {k}" for k, v in sorted(items.items())[:40])

    assert not new and not fixed and not reclassed, (
        f"replay of {data['kyverno']}: {dict(totals)}\n"
        f"new disagreements ({len(new)}):\n{show(new)}\n"
        f"listed but no longer disagreeing ({len(fixed)}; take them out of known.json and the figures of "
        f"docs/compatibility.md):\n{show(fixed)}\nclass changed ({len(reclassed)}):\n{show(reclassed)}")
    # the campaign's size as documented: at least 10,000 (policy, resource) pairs over at least 300 policies
    assert totals["pairs"] >= 10_000 and totals["policies"] >= 300, dict(totals)


def test_known_list_counts_match_the_documented_classes() -> None:
    """Each class of known.json is counted in docs/compatibility.md as many times as it is listed."""
    data = json.loads(KNOWN.read_text())
    counts = Counter(e["class"] for e in data["disagreements"])
    doc = (ROOT / "docs" / "compatibility.md").read_text()
    for cls, n in counts.items():
        assert f"| `{cls}` | {n} |" in doc, f"docs/compatibility.md does not count {n} rows of class {cls!r}"


@pytest.mark.skipif(not GOLDEN.exists(), reason="no golden set recorded")
def test_golden_set_is_small() -> None:
    assert GOLDEN.stat().st_size < 4_000_000


def write_known(path: Path = KNOWN) -> None:
    """Record the current disagreements as the known ones (after a fix, or a new campaign); the figures of
    docs/compatibility.md must then be brought in line (test_known_list_counts_match_the_documented_classes)."""
    data = load_golden()
    totals, rows = replay(data)
    entries = [{"policy": k[0], "key": list(k[1:]), "class": v[0]} for k, v in sorted(rows.items())]
    head = json.dumps({"kyverno": data["kyverno"], "kyvernoCommit": data.get("kyvernoCommit", ""),
                       "totals": dict(totals)})[:-1]
    # one disagreement a line: a fix shows in a diff as the lines it removes
    lines = ",\n".join(json.dumps(e) for e in entries)
    path.write_text(f'{head}, "disagreements": [\n{lines}\n]}}\n')
    print(f"{path}: {dict(totals)}")
    for cls, n in Counter(e["class"] for e in entries).most_common():
        print(f"| `{cls}` | {n} |")


if __name__ == "__main__":         # python -m tests.differential.test_replay (from the checkout's root)
    write_known()
