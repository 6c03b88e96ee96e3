"""The CI writers over findings that are not held (render/result_spill.py SpilledFindings: made anew on each
pass, a record at a time) write what they write of a list of the same findings: JUnit's cases wait for their
suite in a temporary file, GitHub's annotations keep only the first of each level as the findings pass."""

from __future__ import annotations

import io
import random
from collections.abc import Iterator

import pytest

from kubectl_kyrec.model import Ref, Source
from kubectl_kyrec.reconcile.findings import Finding
from kubectl_kyrec.render import github, junit, sarif

OUTCOMES = ("pass", "fail", "warn", "error", "skip", "undetermined")


class Passing:
    """Findings as a collection that is no sequence: each pass made anew, as SpilledFindings are."""

    def __init__(self, findings: list[Finding]) -> None:
        self.findings = findings
        self.passes = 0

    def __len__(self) -> int:
        return len(self.findings)

    def __contains__(self, item: object) -> bool:
        return item in self.findings

    def __iter__(self) -> Iterator[Finding]:
        self.passes += 1
        return (f._replace() for f in self.findings)


def _findings(count: int, seed: int) -> list[Finding]:
    # few policies, subjects and messages: many ties of the annotations' sort key, many cases per suite
    pick = random.Random(seed)
    out = []
    for i in range(count):
        policy = f"policy-{pick.randrange(7)}"
        subject = Ref("v1", "Pod", f"ns-{pick.randrange(3)}", f"pod-{pick.randrange(5)}", f"uid-{i}")
        outcome = pick.choice(OUTCOMES)
        out.append(Finding("eval", policy, policy, f"rule-{pick.randrange(2)}", subject, outcome,
                           f"message {i % 11} <&\"'>", outcome,
                           Source(f"file-{pick.randrange(3)}.yaml", i + 1),
                           Source("policies.yaml", 3) if pick.random() < 0.7 else None,
                           "ValidatingPolicy", "", "", ("Deny",) if i % 4 else ("Audit",)))
    return out


@pytest.mark.parametrize("piece", [1, 200, 1 << 16])
def test_junit_of_findings_not_held_is_junit_of_the_list(piece: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # `piece`: the characters a suite's cases wait in memory before they go to the file as one piece
    monkeypatch.setattr(junit, "_SPOOL_PIECE", piece)
    findings = _findings(3000, seed=piece)
    held, passing = io.StringIO(), io.StringIO()
    junit.write(findings, held, name="kyrec eval")
    spilled = Passing(findings)
    junit.write(spilled, passing, name="kyrec eval")
    assert passing.getvalue() == held.getvalue()
    assert spilled.passes == 1          # counted as spooled, in one pass: never held
    assert held.getvalue().count("<testcase ") == 3000


def test_junit_of_no_findings_not_held() -> None:
    held, passing = io.StringIO(), io.StringIO()
    junit.write([], held, name="kyrec eval")
    junit.write(Passing([]), passing, name="kyrec eval")
    assert passing.getvalue() == held.getvalue()


def test_sarif_of_findings_not_held_is_sarif_of_the_list() -> None:
    findings = _findings(2000, seed=5)
    held, passing = io.StringIO(), io.StringIO()
    sarif.write(findings, held, root=None)
    spilled = Passing(findings)
    sarif.write(spilled, passing, root=None)
    assert passing.getvalue() == held.getvalue()
    assert spilled.passes == 2


@pytest.mark.parametrize("limit", [1, 3, 10])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_annotations_kept_as_they_pass_are_the_first_of_a_stable_sort(limit: int, seed: int) -> None:
    # 5,000 findings: each level's kept are sorted and cut many times on the way (past 4 x limit + 64); with a
    # limit above their number nothing is ever cut, so that run is the stable sort of them all
    findings = _findings(5000, seed)
    everything = github.annotation_lines(findings, limit=10_000)
    cut = github.annotation_lines(Passing(findings), limit=limit)
    by_level = {level: [line for line in everything if line.startswith(f"::{level} ")]
                for level in github.LEVEL_ORDER}
    counts = {level: len(lines) for level, lines in by_level.items()}
    assert all(counts[level] > 4 * limit + 64 for level in ("error", "warning"))
    expected = [*by_level["error"][:limit], *by_level["warning"][:limit], *by_level["notice"][:limit - 1]]
    assert cut[:-1] == expected
    left = sum(counts.values()) - len(expected)
    assert cut[-1].startswith(f"::notice title=kyrec::{left} more findings not annotated")


def test_a_spill_the_disk_refuses_goes_on_in_memory() -> None:
    # the file size limit (EFBIG) or a full disk part-way through a write: what was written is kept, the rest
    # goes to memory, and nothing fails (the run's output is another file, with its own error)
    import errno

    from kubectl_kyrec.render.spill_file import SpillFile

    class Refusing(io.BufferedRandom):
        def write(self, data: bytes) -> int:   # type: ignore[override]
            if self.tell() + len(data) > 100:
                raise OSError(errno.EFBIG, "File too large")
            return super().write(data)

    spill = SpillFile()
    spill.file = Refusing(io.BytesIO())       # type: ignore[assignment]
    pieces = [bytes([i]) * 30 for i in range(10)]
    for piece in pieces:
        spill.write(piece)
    assert spill.in_memory
    spill.file.seek(0)
    assert spill.file.read() == b"".join(pieces)
    assert spill.tell_end() == 300
    spill.close()
