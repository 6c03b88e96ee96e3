"""The classic engine's recorder (recording.py), which `explain` turns into its tree: recording never
changes a decision (every pattern and condition-block vector of Kyverno's gives the same answer with a
recorder as without), and what is recorded is what the engine did."""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.classic import conditions, pattern_match, variables
from kubectl_kyrec.classic.json_context import EvalContext
from kubectl_kyrec.recording import Step, Trace
from tests.classic.vectors import load


def _outcome(context: Any, blocks: Any, trace: Trace | None) -> Any:
    try:
        return conditions.evaluate_conditions(EvalContext(context or {}), blocks, trace)
    except conditions.ConditionError as exc:
        return ("error", str(exc))


def test_recording_never_changes_a_pattern_decision() -> None:
    cases = [c for c in load("patterns.json") if c["go_function"] == "MatchPattern"]
    assert cases
    for case in cases:
        pat, res = case["pattern"], case["resource"]
        if case.get("resolve_references_first"):
            pat = variables.substitute_all(EvalContext(), pat)
        trace = Trace()
        trace.rule("p", "r")
        assert pattern_match.match_pattern(res, pat, trace) == pattern_match.match_pattern(res, pat), case


def test_recording_never_changes_a_condition_decision() -> None:
    cases = [c for c in load("condition-blocks.json") if not c["go_function"].startswith("EvaluateAnyAll")]
    assert cases
    for case in cases:
        blocks = case["conditions"]
        if isinstance(blocks, list) and len(blocks) == 1 and isinstance(blocks[0], dict) and \
                ("any" in blocks[0] or "all" in blocks[0]):
            blocks = blocks[0]
        assert _outcome(case.get("context"), blocks, None) == _outcome(case.get("context"), blocks, Trace()), case


def _flat(step: Step) -> list[tuple[str, str, str]]:
    out = [(step.name, step.outcome, step.detail)]
    for child in step.children:
        out.extend(_flat(child))
    return out


_POD = {"spec": {"hostNetwork": True, "containers": [
    {"name": "app-a", "image": "nginx:1.27"},
    {"name": "side", "image": "busybox:latest"}]}}


def test_a_condition_anchor_not_held_skips_its_element_and_the_leaf_shows_both_values() -> None:
    trace = Trace()
    trace.rule("p", "r")
    pattern = {"spec": {"containers": [{"(name)": "app-*", "image": "!*:latest"}]}}
    assert pattern_match.match_pattern(_POD, pattern, trace) is None
    steps = {name: (outcome, detail) for name, outcome, detail in _flat(trace.rules[("p", "r")])}
    assert steps["/spec/containers/0/name"][0] == "held"
    assert steps["/spec/containers/0/image"] == (
        "matched", 'value "nginx:1.27" vs pattern "!*:latest" (operator !)')
    assert steps["/spec/containers/1/name"][0] == "not held: the element is skipped"
    assert steps["/spec/containers/1"][0] == "skipped"
    assert "/spec/containers/1/image" not in steps      # the engine never compared it


def test_the_walk_stops_where_it_failed_and_a_negation_anchor_says_present() -> None:
    trace = Trace()
    trace.rule("p", "r")
    err = pattern_match.match_pattern(_POD, {"spec": {"X(hostNetwork)": "null"}}, trace)
    assert err is not None and err.path == "/spec/hostNetwork/"
    names = _flat(trace.rules[("p", "r")])
    assert names[-1][:2] == ("/spec/hostNetwork", "present: not allowed")
    # the failure's message is on the step where it happened, not repeated on /spec
    assert dict((n, d) for n, _, d in names)["/spec"] == ""


def test_a_condition_records_its_key_and_value_after_substitution() -> None:
    trace = Trace()
    trace.rule("p", "r")
    ctx = EvalContext({"request": {"object": {"metadata": {"name": "web"}}}})
    ok, _ = conditions.evaluate_conditions(ctx, {"any": [
        {"key": "{{ request.object.metadata.name }}", "operator": "Equals", "value": "db"},
        {"key": "{{ request.object.metadata.name }}", "operator": "Equals", "value": "web"},
        {"key": "never", "operator": "Equals", "value": "evaluated"}]}, trace)
    assert ok
    (block,) = trace.rules[("p", "r")].children
    assert (block.name, block.outcome) == ("any", "one true")
    assert [(s.outcome, s.detail) for s in block.children] == [
        ("false", 'key "web", value "db"'), ("true", 'key "web", value "web"')]


def test_close_ends_the_steps_an_exception_left_open() -> None:
    trace = Trace()
    trace.rule("p", "r")
    outer = trace.open("outer")
    trace.open("inner")          # never closed: an exception went through it
    trace.close(outer, "error")
    trace.add("after", "true")
    root = trace.rules[("p", "r")]
    assert [c.name for c in root.children] == ["outer", "after"]
    assert root.children[0].children[0].outcome == "error"
