"""Issue 36, `apply --yes` of 3,000 creates, what it spends before the first write (bench/apply_prewrite.py):
is_listed answers a question asked again from its memo (the diff's hold, the plan's and apply's own ask about
every planned object), the plan is shown in one write, no trigger filter is asked of a trigger when there is
none, the evaluation notices ask the filters only of an outcome they would name, and a map whose keys are all
strings is sorted as it is (in_key_order). The answers and the text are the same; these pin what changed,
beside the tests of the answers themselves (tests/cluster/test_state.py) and of the plan and the notices
(tests/cluster, tests/realapi).
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

import pytest

from kubectl_kyrec.cel.engine import in_key_order, key_order, sorted_keys
from kubectl_kyrec.cli import apply_cmd
from kubectl_kyrec.evaluate.generating.outcomes import TriggerStatus
from kubectl_kyrec.k8s.labels import parse_selector
from kubectl_kyrec.load.run_inputs import cluster_state
from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState, ListedKind
from kubectl_kyrec.load.run_inputs.selection import Selection
from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.plan import Action, Plan, PlannedChange
from kubectl_kyrec.run import select
from kubectl_kyrec.run.apply import ApplyResult
from kubectl_kyrec.run.diff import evaluation_notices
from kubectl_kyrec.run.generate import subject_filter


def _state() -> ClusterState:
    return ClusterState.from_objects(
        [], listed=[ListedKind("v1", "Namespace", ""), ListedKind("v1", "ConfigMap", "team-a"),
                    ListedKind("apps/v1", "Deployment", "")],
        unreadable={ListedKind("v1", "ConfigMap", "team-b"): "forbidden", ListedKind("v1", "Secret", ""): "nope"})


QUESTIONS = [(api, kind, namespace, exact)
             for api, kind in (("v1", "Namespace"), ("v1", "ConfigMap"), ("v1", "Secret"), ("apps/v1", "Deployment"),
                               ("apps/v1beta1", "Deployment"), ("v1", "Pod"))
             for namespace in ("", "team-a", "team-b", "team-c") for exact in (False, True)]


def _derived(state: ClusterState, api: str, kind: str, namespace: str, exact: bool) -> bool | None:
    """is_listed's answer from the record alone, as it was derived before the memo (its rule, spelled out)."""
    def matches(key: ListedKind) -> bool:
        same = key.api_version == api if exact else key.api_version.rpartition("/")[0] == api.rpartition("/")[0]
        return same and key.kind == kind and key.namespace in ("", namespace)

    if any(matches(key) for key in state.listed):
        return True
    if any(matches(key) for key in state.unreadable):
        return False
    return None


def test_a_question_asked_again_is_answered_from_the_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    state = _state()
    derived = 0
    group = cluster_state._group

    def counted(api_version: str) -> str:
        nonlocal derived
        derived += 1
        return group(api_version)

    # _group is what deriving an answer starts with (a question about any version of the group)
    state.is_listed("v1", "Pod")            # the record's index is built before counting
    monkeypatch.setattr(cluster_state, "_group", counted)
    for _ in range(6):
        assert state.is_listed("v1", "ConfigMap", "team-a") is True
        assert state.is_listed("v1", "ConfigMap", "team-b") is False
        assert state.is_listed("v1", "ConfigMap", "team-c") is None
    assert derived == 3


def test_the_memo_gives_the_derived_answers_and_follows_the_record_as_it_grows() -> None:
    state = _state()
    # asked twice in a row and after others, in two orders: never an answer of another question
    for question in itertools.chain(QUESTIONS, reversed(QUESTIONS), QUESTIONS):
        assert state.is_listed(question[0], question[1], question[2], exact_version=question[3]) == \
            _derived(state, *question), question
    state.listed.add(ListedKind("v1", "ConfigMap", ""))
    state.unreadable[ListedKind("v1", "Pod", "team-c")] = state.unreadable[ListedKind("v1", "Secret", "")]
    for question in QUESTIONS:
        assert state.is_listed(question[0], question[1], question[2], exact_version=question[3]) == \
            _derived(state, *question), question
    assert state.is_listed("v1", "ConfigMap", "team-b") is True and state.is_listed("v1", "Pod", "team-c") is False


def _plan(n: int) -> Plan:
    changes = [PlannedChange(Action.CREATE, "downstream", "missing", "", Ref("v1", "ConfigMap", f"team-{i}",
                                                                             "team-settings", ""),
                             message="server-side apply as kyverno-generate (force)") for i in range(n)]
    changes.append(PlannedChange(Action.SKIP, "downstream", "conflict", None, Ref("v1", "Namespace", "", "x", ""),
                                 message="never written: the object there is not this policy's"))
    return Plan(tuple(changes))


@pytest.mark.parametrize("output", ["json", "table"])
def test_the_plan_is_shown_in_one_write_with_the_same_text(output: str, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    plan = _plan(5)
    echoed: list[tuple[str, bool]] = []
    echo = apply_cmd.click.echo

    def counted(message: str | None = None, *args: object, err: bool = False, **kwargs: object) -> None:
        echoed.append((str(message), err))
        echo(message, *args, err=err, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(apply_cmd.click, "echo", counted)
    apply_cmd._Session(None, yes=True, output=output).show_plan(ApplyResult(plan))  # type: ignore[arg-type]
    shown = capsys.readouterr()
    text = "".join(f"{line}\n" for line in apply_cmd.plan_lines(plan))
    # the table's plan is on stdout, before its outcomes; -o json|yaml keep stdout for the document
    assert (shown.out, shown.err) == ((text, "") if output == "table" else ("", text))
    assert text.startswith("plan: 5 write(s) as field manager kyverno-generate with force, 1 skipped\n  create  ")
    assert len(echoed) == 1 and echoed[0][1] is (output != "table")


def _trigger(namespace: str, name: str, labels: dict[str, str] | None = None) -> Any:
    """What the trigger filter and the notices read of a Subject: its ref and its object's labels."""
    kind = "Pod" if namespace else "Namespace"
    return SimpleNamespace(ref=Ref("v1", kind, namespace, name, f"u-{name}"),
                           obj={"metadata": {"name": name, "labels": labels or {}}})


def _counting_holds_object(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    asked: list[str] = []
    holds = select.holds_object

    def counted(selection: Selection, kind: str, namespace: str, name: str, labels: Any) -> bool:
        asked.append(name)
        return holds(selection, kind, namespace, name, labels)

    monkeypatch.setattr(select, "holds_object", counted)
    return asked


def test_no_filter_keeps_every_trigger_without_asking(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _counting_holds_object(monkeypatch)
    triggers = [_trigger("", "team-a"), _trigger("team-b", "web", {"app": "web"})]
    # --policy-name narrows the policies, not the triggers
    for selection in (Selection(), Selection(namespace=""), Selection(policy_names=("p",))):
        assert [subject_filter(selection)(t) for t in triggers] == [True, True]
    assert asked == []
    # each filter is still asked of every trigger, and still filters
    for selection, kept in ((Selection(namespace="team-b"), [False, True]),
                            (Selection(kinds=("Namespace",)), [True, False]),
                            (Selection(selector=parse_selector("app=web")), [False, True]),
                            (Selection(selector=parse_selector("")), [True, True])):
        asked.clear()
        assert [subject_filter(selection)(t) for t in triggers] == kept, selection
        assert asked == ["team-a", "web"]


def test_the_notices_ask_the_filters_only_of_what_they_would_name(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _counting_holds_object(monkeypatch)

    def outcome(status: TriggerStatus, namespace: str, name: str) -> Any:
        return SimpleNamespace(status=status, policy=SimpleNamespace(key="gen"), trigger=_trigger(namespace, name),
                               message=f"boom {name}")

    outcomes = [outcome(TriggerStatus.GENERATED, "team-a", f"ok-{n}") for n in range(50)]
    outcomes += [outcome(TriggerStatus.ERROR, "team-a", "bad-a"), outcome(TriggerStatus.ERROR, "team-b", "bad-b"),
                 outcome(TriggerStatus.NEEDS_REQUEST, "team-a", "who"), outcome(TriggerStatus.SKIPPED, "team-a", "s"),
                 outcome(TriggerStatus.NEEDS_REGISTRY, "team-b", "img")]
    notices = evaluation_notices(SimpleNamespace(outcomes=outcomes), Selection(namespace="team-a"))  # type: ignore[arg-type]
    assert notices == ["gen: Pod team-a/bad-a: boom bad-a",
                       "gen: the downstreams of 1 trigger(s) depend on request.userInfo; give it with --values to "
                       "evaluate them"]
    assert asked == ["bad-a", "bad-b", "who", "img"]
    assert evaluation_notices(SimpleNamespace(outcomes=outcomes), Selection(policy_names=("other",))) == []  # type: ignore[arg-type]


@pytest.mark.parametrize("keys", [
    [], ["b"], ["metadata", "kind", "data", "apiVersion"], ["B", "a", "_", "ä", "10", "9", ""],
    # the other map keys CEL has: keys of one type compare, types apart by name (bool < int < str)
    [2, 1, -3], [True, False], ["b", 2, "a", 1], [1, True, "x", False, 0], [True, 1], [2, "a"]])
def test_sorted_keys_is_key_orders_order(keys: list[Any]) -> None:
    value = dict.fromkeys(keys, None)
    assert sorted_keys(value) == sorted(value, key=key_order)
    # and in_key_order (every CEL map result) puts nested maps in it too
    nested = {"outer": dict(value), "list": [dict(value)]}
    assert [list(m) for m in (in_key_order(nested)["outer"], in_key_order(nested)["list"][0])] == \
        [sorted(value, key=key_order)] * 2
