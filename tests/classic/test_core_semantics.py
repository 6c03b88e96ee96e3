"""Behaviour of the classic engine core that the kyverno-engine vectors do not pin: go-jmespath's NotFound
rules, the context's deferred loaders and checkpoints, substitution errors and Go number printing."""

from __future__ import annotations

import pytest

from kubectl_kyrec.classic.conditions import ConditionError, evaluate_conditions
from kubectl_kyrec.classic.jmespath_eval import search
from kubectl_kyrec.classic.jmespath_types import JMESPathCompileError, NotFoundError
from kubectl_kyrec.classic.json_context import ContextError, EvalContext
from kubectl_kyrec.classic.pattern_match import match_pattern
from kubectl_kyrec.classic.variables import SubstitutionError, substitute_all

DOC = {"a": {"b": 1, "list": [{"n": "x"}, {"m": "y"}]}}


@pytest.mark.parametrize(("expression", "want"), [
    ("a.c || 'dflt'", "dflt"),          # NotFound is null inside ||
    ("!(a.c)", True),                   # and inside !
    ("!a.c", None),                     # `!` binds tighter than `.` in both grammars: (!a).c
    ("a.c == null", True),              # and in comparators
    ("a.list[].n", ["x"]),              # a projection drops the element whose key is missing
    ("a.list[?n == 'x'].n", ["x"]),
    ("a.c | length(@ || '')", 0),       # a pipe carries null on
    ("{x: a.c}", {"x": None}),          # multiselect
    ("'a' < 'b'", None),                # ordering compares numbers only
    ("`1` == true", False),             # DeepEqual: numbers are not booleans
    ("!`0`", False),
    ("to_string(`2.0`)", "2"),          # literals are float64 and print as Go does
    ("length('héllo')", 5),
])
def test_go_jmespath_semantics(expression: str, want: object) -> None:
    assert search(expression, DOC) == want


@pytest.mark.parametrize("expression", ["a.c", "a.c.d", "a.b && a.c", "a.list[0].m"])
def test_missing_key_on_a_path_raises(expression: str) -> None:
    with pytest.raises(NotFoundError, match=r'Unknown key "(c|m)" in path'):
        search(expression, DOC)


def test_json_literals_are_strict() -> None:
    with pytest.raises(JMESPathCompileError):
        search("`foo`", {})  # jmespath.py would read it as the string "foo"


@pytest.mark.parametrize("expression", ["time_now()", "time_now_utc()", "time_since('', '2026-01-01T00:00:00Z', '')"])
def test_the_engine_without_a_clock_never_reads_the_wall_clock(expression: str) -> None:
    # the time is the run's, handed down as Engine(now=...); reaching a time function without it is kyrec's
    # bug (exit 70), not the policy's JMESPath error
    with pytest.raises(RuntimeError, match="without a clock"):
        search(expression, {})


def test_the_engine_reads_the_clock_it_is_given() -> None:
    import datetime

    from kubectl_kyrec.classic.jmespath_eval import Engine

    at = datetime.datetime(2026, 12, 5, 10, 0, 0, tzinfo=datetime.UTC)
    engine = Engine(now=lambda: at)
    assert engine.search("time_now_utc()", {}) == "2026-12-05T10:00:00Z"
    assert engine.search("time_since('', '2026-12-05T09:00:00Z', '')", {}) == "1h0m0s"


def test_failed_variable_names_the_path_and_the_jmespath_error() -> None:
    ctx = EvalContext({"request": {"object": {"metadata": {}}}})
    with pytest.raises(SubstitutionError) as err:
        substitute_all(ctx, {"validate": {"message": "name {{ request.object.metadata.name }}"}})
    assert str(err.value) == ('failed to resolve request.object.metadata.name at path /validate/message: '
                              'JMESPath query failed: Unknown key "name" in path')
    assert err.value.not_found


def test_whole_variable_keeps_its_type_and_embedded_ones_are_go_json() -> None:
    ctx = EvalContext()
    ctx.add_resource({"spec": {"n": 3, "m": {"b": "<x>", "a": 1.5}}})
    got = substitute_all(ctx, {"n": "{{request.object.spec.n}}", "m": "m={{request.object.spec.m}}",
                               "e": "\\{{ not.a.variable }}"})
    assert got == {"n": 3, "m": 'm={"a":1.5,"b":"\\u003cx\\u003e"}', "e": "{{ not.a.variable }}"}
    # AddResource merges the unstructured object as is, so a resource's integer stays an int64
    assert isinstance(got["n"], int)


def test_delete_reads_the_old_object() -> None:
    ctx = EvalContext()
    ctx.add_old_resource({"metadata": {"name": "old"}})
    ctx.add_operation("DELETE")
    assert substitute_all(ctx, "{{ request.object.metadata.name }}") == "old"


def test_deferred_loaders_run_once_when_named_and_see_earlier_entries_only() -> None:
    ctx = EvalContext()
    calls: list[str] = []
    ctx.add_deferred_loader("cm", lambda c: (calls.append("cm"), c.add_context_entry("cm", {"data": {"k": "v"}})))
    ctx.add_deferred_loader("derived", lambda c: (calls.append("derived"),
                                                  c.add_context_entry("derived", c.query("cm.data.k"))))
    ctx.add_deferred_loader("late", lambda c: c.add_context_entry("late", 1))
    assert ctx.query("request.cm || 'x'") == "x"  # `cm` after a `.` does not name the entry
    assert calls == []
    assert ctx.query("derived") == "v"
    assert calls == ["derived", "cm"]
    ctx.query("derived")
    assert calls == ["derived", "cm"]


def test_checkpoint_restore_and_elements() -> None:
    ctx = EvalContext()
    ctx.add_variable("a.b", 1)
    ctx.checkpoint()
    ctx.add_element({"name": "c1"}, 3, 0)
    assert ctx.query("[element.name, elementIndex, element0.name, elementIndex0]") == ["c1", 3, "c1", 3]
    ctx.restore()
    assert ctx.data == {"a": {"b": 1}}
    with pytest.raises(ContextError, match="JMESPath query failed"):
        ctx.query("element")


def test_service_account_variables() -> None:
    ctx = EvalContext()
    ctx.add_service_account("system:serviceaccount:ns1:sa1")
    assert ctx.query("[serviceAccountName, serviceAccountNamespace]") == ["sa1", "ns1"]
    ctx.add_service_account("alice")
    assert ctx.query("serviceAccountName") == ""


def test_condition_errors_and_operator_spelling() -> None:
    ctx = EvalContext({"request": {"object": {}}})
    with pytest.raises(ConditionError, match="failed to substitute variables in condition key"):
        evaluate_conditions(ctx, {"all": [{"key": "{{ request.object.x }}", "operator": "Equals", "value": 1}]})
    with pytest.raises(ConditionError, match="failed to create handler"):
        evaluate_conditions(ctx, {"all": [{"key": 1, "operator": "Bogus", "value": 1}]})
    # the handler is picked case-insensitively, but the numeric comparison switches on the exact name
    assert evaluate_conditions(ctx, {"all": [{"key": 2, "operator": "GreaterThan", "value": 1}]})[0]
    assert not evaluate_conditions(ctx, {"all": [{"key": 2, "operator": "greaterthan", "value": 1}]})[0]
    assert evaluate_conditions(ctx, {"any": [{"key": "a", "operator": "equals", "value": "a"}]})[0]
    assert evaluate_conditions(ctx, {})[0] and evaluate_conditions(ctx, None)[0]


def test_pattern_failure_paths_and_messages() -> None:
    pod = {"spec": {"containers": [{"name": "c", "image": "nginx:latest"}]}}
    err = match_pattern(pod, {"spec": {"containers": [{"image": "!*:latest"}]}})
    assert err is not None and not err.skip
    assert err.path == "/spec/containers/0/image/"
    assert err.message == "resource value 'nginx:latest' does not match '!*:latest' at path /spec/containers/0/image/"
    skip = match_pattern(pod, {"spec": {"containers": [{"(name)": "other", "image": "x"}]}})
    assert skip is not None and skip.skip and skip.path == ""
    negation = match_pattern({"spec": {"hostNetwork": True}}, {"spec": {"X(hostNetwork)": "null"}})
    assert negation is not None and negation.path == "/spec/hostNetwork/"
    assert negation.message == "negation anchor matched in resource: /spec/hostNetwork/ is not allowed"
    assert match_pattern({"metadata": {"labels": {"app.io/x": "1"}}},
                         {"metadata": {"labels": {"app.io/*": "?*"}}}) is None
    assert match_pattern({"spec": {"replicas": 10}}, {"spec": {"replicas": "<=5"}}) is not None
    assert match_pattern({"spec": {"cpu": "1500m"}}, {"spec": {"cpu": "1-2"}}) is None


def test_a_rule_level_entry_survives_foreach_resets() -> None:
    # a rule's context entry is declared after the rule's checkpoint; a foreach checkpoints again and resets
    # to it before each element (Kyverno: Reset(false, len(checkpoints)) keeps loaders of lower levels)
    ctx = EvalContext()
    ctx.checkpoint()
    ctx.add_deferred_loader("caps", lambda c: c.add_context_entry("caps", ["CHOWN"]))
    ctx.checkpoint()
    for index, element in enumerate([{"name": "a"}, {"name": "b"}]):
        ctx.reset()
        ctx.add_element(element, index, 0)
        assert ctx.query("caps") == ["CHOWN"]
        assert ctx.query("element.name") == element["name"]
    ctx.restore()
    assert ctx.query("caps") == ["CHOWN"]
    ctx.restore()
    with pytest.raises(ContextError):
        ctx.query("caps")


def test_condition_error_text_matches_kyverno_validation_test() -> None:
    # kk pkg/engine/validation_test.go:2010 (the rule layer prefixes "failed to check deny conditions: ")
    ctx = EvalContext()
    ctx.add_resource({"spec": {"sourceRef": {"kind": "GitRepository", "name": "dev-team"}}})
    with pytest.raises(ConditionError) as err:
        evaluate_conditions(ctx, {"any": [{"key": "{{request.object.spec.sourceRef.namespace}}",
                                           "operator": "NotEquals", "value": "apps"}]})
    assert str(err.value) == ('failed to substitute variables in condition key: failed to resolve '
                              'request.object.spec.sourceRef.namespace at path : JMESPath query failed: '
                              'Unknown key "namespace" in path')
