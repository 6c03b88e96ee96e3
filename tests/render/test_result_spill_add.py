"""What render/result_spill.py ResultSpill keeps of each chunk handed to it (the counts, the subjects owed a
report, whether one's results came apart, the policies), kept without a Python step per result (issue 36:
the streamed outputs must cost no more CPU than the whole-run ones)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from kubectl_kyrec.model import Ref, Result, ResultPairs
from kubectl_kyrec.render.result_spill import ResultSpill


def _chunk(subjects: list[str], policies: int, reportable: Callable[[int], bool] = lambda p: p % 2 == 0
           ) -> ResultPairs:
    pairs = ResultPairs()
    for name in subjects:
        ref = Ref("v1", "Pod", "ns", name, f"uid-{name}")
        for p in range(policies):
            status = ("pass", "fail", "undetermined")[p % 3]
            pairs.append(Result(f"p{p % 4}", "ValidatingPolicy" if p % 2 else "ClusterPolicy", "", status, "",
                                ref), reportable(p))
    return pairs


def test_counts_subjects_and_policies_of_the_chunks() -> None:
    spill = ResultSpill()
    try:
        spill.add(_chunk(["a", "b"], 6))
        spill.add(ResultPairs())
        spill.add(_chunk(["c"], 3, lambda p: False))      # no reportable result: owed no report
        assert spill.count == 15
        assert spill.counts == {"pass": 5, "fail": 5, "warn": 0, "error": 0, "skip": 0, "undetermined": 5}
        assert list(spill.counts)[:6] == ["pass", "fail", "warn", "error", "skip", "undetermined"]
        assert spill.reported_subjects == 2 and spill.uids() == {"uid-a", "uid-b"} and not spill.scattered
        assert spill.policies == {("ClusterPolicy", "p0"), ("ValidatingPolicy", "p1"), ("ClusterPolicy", "p2"),
                                  ("ValidatingPolicy", "p3")}
        spill.add(_chunk(["a"], 2))         # a's reportable results again, apart from its first
        assert spill.scattered and spill.reported_subjects == 2
        assert [r for p in spill.chunks() for r in p.results][:6] == _chunk(["a"], 6).results
    finally:
        spill.close()


def test_a_status_of_its_own_is_counted_after_the_summary_keys() -> None:
    spill = ResultSpill()
    pairs = ResultPairs()
    pairs.append(Result("p", "ValidatingPolicy", "", "odd", "", Ref("v1", "Pod", "", "x", "u")), True)
    spill.add(pairs)
    spill.close()
    assert list(spill.counts.items())[-1] == ("odd", 1)


def test_no_python_step_per_result() -> None:
    spill = ResultSpill()
    pairs = _chunk([f"pod-{i}" for i in range(4)], 600)
    calls = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(profile)
    try:
        spill.add(pairs)
    finally:
        sys.setprofile(None)
        spill.close()
    assert calls < 100, calls


def _reports_of_spill(statuses: list[str]) -> tuple[str, int]:
    """`-o reports` of spilled results with `statuses`, and how many times the spill was read."""
    import datetime
    import io
    from types import SimpleNamespace

    from kubectl_kyrec.render.eval_output import write_reports
    from kubectl_kyrec.render.result_spill import spilled_report_items

    spill = ResultSpill()
    pairs = ResultPairs()
    for i, status in enumerate(statuses):
        pairs.append(Result(f"p{i}", "ValidatingPolicy", "", status, "m", Ref("v1", "Pod", "ns", "a", "uid-a")), True)
    spill.add(pairs)
    reads = 0
    # a read as Results (the notes) or as columns (the reports: expect/reports.py spilled_reports)
    chunks, columns = spill.chunks, spill.columns

    def counted(read: Any) -> Any:
        def counting() -> object:
            nonlocal reads
            reads += 1
            return read()
        return counting

    spill.chunks = counted(chunks)      # type: ignore[method-assign]
    spill.columns = counted(columns)    # type: ignore[method-assign]
    now = datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc)
    view = SimpleNamespace(results=[], handed=spill, target_changes=[],
                           report_items=lambda: spilled_report_items(spill, [], now, "wgpolicyk8s.io/v1alpha2"))
    out = io.StringIO()
    try:
        write_reports(view, out)        # type: ignore[arg-type]
    finally:
        spill.close()
    return out.getvalue(), reads


def test_reports_read_the_spill_for_notes_only_when_a_result_is_undetermined() -> None:
    text, reads = _reports_of_spill(["pass", "fail"])
    assert reads == 1 and not text.startswith("#") and "kind: PolicyReport" in text
    text, reads = _reports_of_spill(["pass", "undetermined"])
    assert reads == 2 and text.startswith("# undetermined: p1 for Pod ns/a: m")
