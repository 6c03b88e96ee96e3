"""The record results cross a worker's pipe and go to an output's spill in (evaluate/pipeline.py
encode_pairs, PairsReader): the same results back, what they shared shared again, and no step per result
(issue 36: streamed outputs read every result back from the spill, twice for `-o json|yaml`, and must cost
no more CPU than the whole-run outputs did)."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from kubectl_kyrec.evaluate.pipeline import PairsReader, encode_pairs
from kubectl_kyrec.model import Ref, Result, ResultPairs, Source


def _pairs(subjects: int, policies: int) -> ResultPairs:
    pairs = ResultPairs()
    at = Source("policies.yaml", 7)
    props = {"kind": "Pod"}
    for s in range(subjects):
        ref = Ref("v1", "Pod", "default", f"pod-{s}", f"uid-{s}", synthetic=bool(s % 2))
        where = Source("pods.yaml", s + 1, via="<kustomize k>" if s % 3 == 0 else "")
        for p in range(policies):
            status = ("pass", "fail", "skip", "error")[(s + p) % 4]
            pairs.append(Result(f"policy-{p}", "ValidatingPolicy", "", status, f"message {p % 3}", ref,
                                scored=bool(p % 2), category="cat", severity="high" if p % 5 else "",
                                properties=props if p % 2 else {"n": str(p)},
                                validation_actions=("Deny", "Audit") if p % 3 else (),
                                location=where if p % 4 else None, policy_location=at,
                                binding="b" if p == 1 else ""),
                         (s + p) % 3 != 0)
    return pairs


def _read_all(data: bytes) -> list[ResultPairs]:
    file = io.BytesIO(data)
    reader = PairsReader()
    out = []
    while (pairs := reader.read(file)) is not None:
        out.append(pairs)
    return out


def test_records_read_back_as_the_results_written() -> None:
    first, second, empty = _pairs(5, 7), _pairs(3, 2), ResultPairs()
    back = _read_all(encode_pairs(first) + encode_pairs(empty) + encode_pairs(second))
    assert [list(p) for p in back] == [list(first), [], list(second)]
    assert all(type(r) is Result for p in back for r in p.results)
    # flags come back as the flags they were, Sources and Refs as values of their own types
    assert [bool(b) for b in back[0].reportable] == [bool(b) for b in first.reportable]
    one = back[0].results
    assert one[0].subject is one[6].subject                 # a subject's Ref, shared within a record
    assert one[0].policy_location is one[20].policy_location
    assert one[1].properties is one[3].properties
    assert back[2].results[0].policy_location is one[0].policy_location     # across records


def test_an_empty_file_has_no_record() -> None:
    assert PairsReader().read(io.BytesIO(b"")) is None


class _CountingFile(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.calls = 0

    def read(self, size: int | None = -1, /) -> bytes:
        self.calls += 1
        return super().read(size)

    def readinto(self, buffer: Any, /) -> int:
        self.calls += 1
        return super().readinto(buffer)


def test_a_record_is_read_in_two_reads() -> None:
    # marshal.load from a file object reads every string and number through the file's methods: a record
    # is its length and its bytes, decoded from memory
    file = _CountingFile(encode_pairs(_pairs(40, 24)))
    assert PairsReader().read(file) is not None
    assert file.calls <= 2


def _python_calls(work: Callable[[], object]) -> int:
    calls = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return calls


def test_no_python_step_per_result() -> None:
    # 2,400 results on 4 subjects: the Python functions run grow with the shared values, not the results
    # (a row per result made one to three calls of each result, ~5,000 to ~15,000 here)
    pairs = _pairs(4, 600)
    data = encode_pairs(pairs)
    assert _python_calls(lambda: encode_pairs(pairs)) < 100
    assert _python_calls(lambda: PairsReader().read(io.BytesIO(data))) < 100
