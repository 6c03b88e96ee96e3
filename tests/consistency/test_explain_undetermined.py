"""`explain` ends in `eval`'s verdict when the admitted object is not known (one question, one answer whatever
the command): a subject whose mutation is undetermined (an order Kyverno does not fix, a registry read
offline) has its validations `undetermined` in eval (evaluate/pipeline.py `_Admitted`), and explain's trees
for them end in that same result and cause. What the validation gave on the object kyrec could admit is still
shown, labelled as such (evaluate/pipeline.py `ON_UNKNOWN_OBJECT`), never as the tree's result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.evaluate.pipeline import ON_UNKNOWN_OBJECT
from tests.consistency.test_explain_pairs import assert_trees_say_their_results
from tests.consistency.test_image_kinds_registry import CHECK, MPOL, NOW, VPOL, pod
from tests.evaluate.test_order_dependent_precision import POD, _mutating, _validating


def _run(tmp_path: Path, policies: list[dict[str, Any]], subject: dict[str, Any], *extra: str
         ) -> tuple[dict[str, Any], dict[str, Any]]:
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all(policies))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump(subject))
    args = ["-p", str(tmp_path / "policies.yaml"), "-r", str(tmp_path / "pods.yaml"), "--now", NOW, "-o", "json",
            *extra]
    documents = []
    for command in ("eval", "explain"):
        done = CliRunner().invoke(cli, [command, *args])
        assert done.exit_code in (0, 1), done.output
        documents.append(json.loads(done.stdout))
    return documents[0], documents[1]


def _verdicts(evaluated: dict[str, Any], explained: dict[str, Any], sources: tuple[str, ...]
              ) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]:
    said = {r["policy"]: (r["result"], r["message"]) for r in evaluated["results"] if r["source"] in sources}
    shown = {e["policy"]: (r["result"], r["message"]) for e in explained["explanations"]
             if e["policy"] in said for r in e["results"]}
    return said, shown


def _labelled(explained: dict[str, Any], policy: str) -> list[dict[str, Any]]:
    """The nodes of `policy`'s tree that say what it gave on the object kyrec could admit."""
    def walk(node: dict[str, Any]) -> list[dict[str, Any]]:
        return [node] * (node["name"] == ON_UNKNOWN_OBJECT) + [n for c in node.get("children", ()) for n in walk(c)]
    return [n for e in explained["explanations"] if e["policy"] == policy for n in walk(e["tree"])]


def test_order_dependent_validation_is_undetermined_in_explain_as_in_eval(tmp_path: Path) -> None:
    evaluated, explained = _run(tmp_path, [
        _mutating("gold", "gold"), _mutating("silver", "silver"),
        _validating("gold-only", "object.metadata.labels['tier'] == 'gold'"),
        _validating("has-tier", "has(object.metadata.labels) && 'tier' in object.metadata.labels")], POD)
    said, shown = _verdicts(evaluated, explained, ("KyvernoValidatingPolicy",))
    assert said["gold-only"][0] == "undetermined" and said["gold-only"][1].startswith("order-dependent: ")
    assert shown == said
    # the verdict every order agrees on stands, in both
    assert shown["has-tier"][0] == "pass"
    assert_trees_say_their_results(explained)
    # what it gave on the one object kyrec admitted is still shown, labelled, under its own tree only
    [gave] = _labelled(explained, "gold-only")
    assert gave["outcome"] in ("pass", "fail")
    assert _labelled(explained, "has-tier") == []


def test_needs_registry_validation_is_undetermined_in_explain_as_in_eval(tmp_path: Path) -> None:
    # offline (no --registry), the MutatingPolicy cannot read the image: the admitted object is not known
    evaluated, explained = _run(tmp_path, [MPOL, CHECK, VPOL], pod("127.0.0.1:1/app:v1"))
    said, shown = _verdicts(evaluated, explained, ("KyvernoValidatingPolicy",))
    assert set(said) == {"check-annotation", "vpol-digest"}
    for name in said:
        assert said[name][0] == "undetermined" and "(needs-registry: MutatingPolicy 'mpol-digest'" in said[name][1]
    assert shown == said
    assert_trees_say_their_results(explained)
    # check-annotation fails on the object without the mutation: shown, but not as its result
    [gave] = _labelled(explained, "check-annotation")
    assert gave["outcome"] == "fail"
