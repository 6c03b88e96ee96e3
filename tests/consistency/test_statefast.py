"""Issue 36, `eval --state` at 50,000 Pods: what the faster path reads and writes is what the slower one did.

The state's first pass (load/run_inputs/state.py peek_state) decodes its objects without sharing their
strings; the numbers, duplicate keys and invalid values it meets come out as the sharing decoder gives them.
The table's spilled rows are read back once (their widths are measured as they are kept), and the table is
the one the held rows give.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.load.json_stream import NotAList, iter_list_parts
from kubectl_kyrec.load.run_inputs.state import peek_state
from kubectl_kyrec.model import Ref, Result, Source
from kubectl_kyrec.render import eval_output

ROOT = Path(__file__).resolve().parents[2]
T = ROOT / "testdata"
NOW = ["--now", "2026-01-02T03:04:05Z"]

# numbers as Kubernetes' decoder leaves them (1.0 an int, an exponent, a long integer), a repeated key (the
# last wins), nested Lists' shapes, strings long and short
LIST = """{
    "apiVersion": "v1",
    "items": [
        {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "a", "namespace": "ns", "labels": {"x": "1", "x": "2"}},
            "spec": {"n": 1.0, "e": 2.5e3, "big": 123456789012345678901234567890, "f": 0.25,
                     "s": "%s", "t": true, "z": null, "l": [1, 2.0, {"k": "v"}]}
        },
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}
    ],
    "kind": "List",
    "metadata": {"resourceVersion": ""}
}
""" % ("long " * 40)


def _parts(text: str, share: bool) -> list[tuple[str, Any, int]]:
    return list(iter_list_parts(io.BytesIO(text.encode()), share=share))


def _typed(value: Any) -> Any:
    """`value` with each scalar's type beside it (1 == 1.0 == True in Python)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


def test_the_unshared_pass_decodes_what_the_shared_one_does() -> None:
    shared, unshared = _parts(LIST, True), _parts(LIST, False)
    assert _typed(unshared) == _typed(shared)
    pod = shared[1][1]
    assert pod["metadata"]["labels"] == {"x": "2"}
    assert _typed(pod["spec"]["n"]) == ("int", 1) and _typed(pod["spec"]["e"]) == ("int", 2500)
    assert pod["spec"]["big"] == 123456789012345678901234567890
    # each item at its first key's line, the other members at the first key of the List
    assert [line for _, _, line in shared] == [2, 5, 10, 2, 2]


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "1e400", "[1,]"])
def test_the_unshared_pass_refuses_what_the_shared_one_does(bad: str) -> None:
    text = LIST.replace('"f": 0.25', f'"f": {bad}')
    for share in (True, False):
        with pytest.raises(NotAList):
            _parts(text, share)


def test_the_first_pass_keeps_equal_objects(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(LIST)
    stream = peek_state([str(path)], lambda api_version, kind: kind == "Namespace")
    assert stream is not None and stream.count == 2
    assert [d.obj for d in stream.state.objects] == [json.loads(LIST)["items"][1]]
    assert [d.obj for d in stream.objects()] == json.loads(LIST)["items"]


def _results() -> list[Result]:
    """Results whose cells differ in width in every column: a ClusterPolicy and a ValidatingPolicy of one
    name (labelled apart), rules with and without a name, long and short messages, locations or none."""
    out = []
    for i in range(40):
        ref = Ref("v1", "Pod", f"ns-{i % 3}", "pod-" + "x" * (i % 17), f"u{i}")
        source = "kyverno" if i % 2 else "ValidatingPolicy"
        out.append(Result("same-name" if i % 5 else "a-much-longer-policy-name", source,
                          "" if i % 3 == 0 else "rule-" + "r" * (i % 7), ("fail", "error", "warn", "pass")[i % 4],
                          "message " * (1 + i % 9), ref, severity="high" if i % 4 else "",
                          validation_actions=("Deny",) if i % 2 else ("Audit", "Warn"),
                          location=Source("state.json", 10 * i) if i % 6 else None))
    return out


@pytest.mark.parametrize("wide", [False, True], ids=["table", "wide"])
@pytest.mark.parametrize("spill_rows", [1, 7, 1000], ids=["every-row-a-run", "runs-of-7", "held"])
def test_the_spilled_table_is_the_held_tables_and_is_read_once(wide: bool, spill_rows: int,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eval_output, "SPILL_ROWS", spill_rows)
    reads: list[int] = []
    real = eval_output.TableTally.spilled_rows

    def counted(self: eval_output.TableTally) -> Any:
        reads.append(1)
        return real(self)

    monkeypatch.setattr(eval_output.TableTally, "spilled_rows", counted)
    results = _results()
    held, spilled = eval_output.TableTally(), eval_output.TableTally(spill=True, wide=wide)
    for start in range(0, len(results), 6):
        held.add(results[start:start + 6])
        spilled.add(results[start:start + 6])
    out_held, out_spilled = io.StringIO(), io.StringIO()
    eval_output._write_results_table(held, out_held, wide=wide, width=None, baselined=())
    eval_output._write_results_table(spilled, out_spilled, wide=wide, width=None, baselined=())
    assert out_spilled.getvalue() == out_held.getvalue()
    assert "a-much-longer-policy-name" in out_held.getvalue()
    assert reads == [1]


def test_a_streamed_state_table_reads_its_rows_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the command's own path: --state read as it is evaluated, the table on stdout spilled, read back once
    monkeypatch.setattr(eval_output, "SPILL_ROWS", 3)
    reads: list[int] = []
    real = eval_output.TableTally.spilled_rows

    def counted(self: eval_output.TableTally) -> Any:
        reads.append(1)
        return real(self)

    monkeypatch.setattr(eval_output.TableTally, "spilled_rows", counted)
    case = ["-p", str(T / "eval/runtime-errors/policies.yaml"), "--state", str(tmp_path / "state.json")]
    from kubectl_kyrec.load.documents import load_documents

    items = [d.obj for d in load_documents([str(T / "eval/runtime-errors/resources.yaml")])]
    (tmp_path / "state.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items},
                                                    indent=4))
    streamed = CliRunner().invoke(cli, ["eval", *case, *NOW])
    assert reads == [1]
    target = tmp_path / "table.txt"
    whole = CliRunner().invoke(cli, ["eval", *case, *NOW, "-o", f"table={target}"])
    assert streamed.exit_code == whole.exit_code == 1, streamed.stderr
    assert streamed.stdout == target.read_text()


def _pod(i: int, labels: dict[str, str]) -> Any:
    from kubectl_kyrec.evaluate.request import build_request

    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "ns", "labels": labels}}
    return build_request(obj, resource="pods", namespaced=True)


def test_a_policys_selectors_are_parsed_once_for_every_subject(monkeypatch: pytest.MonkeyPatch) -> None:
    import kubectl_kyrec.k8s.labels as labels
    from kubectl_kyrec.evaluate import match
    from kubectl_kyrec.load.policy.vocabulary import MatchResources

    parsed: list[Any] = []
    real = labels.from_label_selector

    def counted(selector: Any) -> Any:
        parsed.append(selector)
        return real(selector)

    # where matches_selector parses (labels) and where match.py may call it itself
    monkeypatch.setattr(labels, "from_label_selector", counted)
    monkeypatch.setattr(match, "from_label_selector", counted, raising=False)
    namespace_obj = {"metadata": {"name": "ns", "labels": {"team": "a"}}}
    constraints = MatchResources(namespace_selector={"matchLabels": {"team": "a"}},
                                 object_selector={"matchExpressions": [{"key": "app", "operator": "In",
                                                                        "values": ["web"]}]})
    answers = [match.matches_constraints(constraints, _pod(i, {"app": "web" if i % 2 else "db"}), namespace_obj,
                                         rules_checked=True) for i in range(50)]
    assert answers == [bool(i % 2) for i in range(50)]
    assert len(parsed) == 2      # each selector once, not once per subject


def test_a_selector_changed_in_place_or_invalid_is_parsed_again() -> None:
    from kubectl_kyrec.evaluate import match
    from kubectl_kyrec.evaluate.match import MatchError
    from kubectl_kyrec.load.policy.vocabulary import MatchResources

    selector: dict[str, Any] = {"matchLabels": {"app": "web"}}
    constraints = MatchResources(object_selector=selector)
    web = _pod(1, {"app": "web"})
    assert match.matches_constraints(constraints, web, None, rules_checked=True)
    selector["matchLabels"] = {"app": "db"}
    assert not match.matches_constraints(constraints, web, None, rules_checked=True)
    bad = MatchResources(object_selector={"matchExpressions": [{"key": "app", "operator": "Near"}]})
    for _ in range(2):
        with pytest.raises(MatchError, match="'Near' is not a valid label selector operator"):
            match.matches_constraints(bad, web, None, rules_checked=True)
