"""Issue 36, `apply --yes` of 3,000 creates, what it spends before the first write (bench/apply_prewrite.py):
a GeneratingPolicy's matchConditions are evaluated in the activation its generate entries use, one per trigger
(cached for the trigger's other policies) where there were two, unless a condition names `generator`: Kyverno
binds it after them, so such a condition keeps failing as it did; a Namespace given twice as the same object (a
trigger read from the state) is built once; a generated object's strings are kept without a call each; and the
evaluation's modules (the GeneratingPolicy engine, the CEL libraries) are imported while the LISTs are answered,
not before the reads nor after them. The outcomes and the plan are the same (tests/generating, tests/cluster);
these pin what changed, and the answers that must not.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kubectl_kyrec.cel import engine as cel_engine
from kubectl_kyrec.cluster.connection import ConnectionOptions
from kubectl_kyrec.cluster.live_source import LiveSource
from kubectl_kyrec.errors import KyrecError
from kubectl_kyrec.evaluate.generating.downstreams import in_key_order_normalized
from kubectl_kyrec.evaluate.generating.outcomes import TriggerStatus
from kubectl_kyrec.evaluate.namespaces import namespace_objects
from kubectl_kyrec.load.run_inputs.sources import FileSource
from kubectl_kyrec.run.diff import EVALUATION_MODULES
from tests.generating.gen_support import docs, evaluate, only
from tests.kubeapi.server import ApiServer

HEAD = """apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: {name}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [namespaces]
"""
CM = '{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"), "metadata": dyn({"name": "cm"}), "data": dyn({"k": "v"})}'
GENERATE = f"  generate:\n  - expression: 'generator.apply(object.metadata.name, [{CM}])'\n"
NAMESPACES = docs("".join(f"---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-{i}\n  uid: u-{i}\n"
                          for i in range(3)))
NO_GENERATOR = 'No value with name "generator" found in Activation'


def policy(name: str, body: str) -> str:
    return HEAD.format(name=name) + body + GENERATE


def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every activation the CEL environments build, counted."""
    built: list[int] = []
    real = cel_engine.Environment.activation

    def activation(self: cel_engine.Environment, *args: object, **kwargs: object) -> cel_engine.Activation:
        built.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cel_engine.Environment, "activation", activation)
    return built


def test_one_activation_per_trigger_for_the_conditions_and_the_generate_entries(
        monkeypatch: pytest.MonkeyPatch) -> None:
    built = counted(monkeypatch)
    conditions = "  matchConditions:\n  - {name: c, expression: \"object.metadata.name != 'team-1'\"}\n"
    # two policies of one environment: the trigger's activation serves both (it was 1 + 2 per trigger)
    out = evaluate(docs(policy("a", conditions) + "---\n" + policy("b", conditions)), NAMESPACES)
    assert not out.errors
    assert [(o.policy.meta.name, o.trigger.ref.name, o.status) for o in out.outcomes] == [
        ("a", "team-0", TriggerStatus.GENERATED), ("b", "team-0", TriggerStatus.GENERATED),
        ("a", "team-1", TriggerStatus.SKIPPED), ("b", "team-1", TriggerStatus.SKIPPED),
        ("a", "team-2", TriggerStatus.GENERATED), ("b", "team-2", TriggerStatus.GENERATED)]
    assert len(built) == len(NAMESPACES)


@pytest.mark.parametrize("body", [
    "  matchConditions:\n  - {name: c, expression: 'has(generator.x)'}\n",
    f"  matchConditions:\n  - name: c\n    expression: 'generator.apply(object.metadata.name, [{CM}])'\n",
    # named through a variable, which the compiler binds into the condition
    "  variables:\n  - {name: g, expression: 'generator.apply(object.metadata.name, [])'}\n"
    "  matchConditions:\n  - {name: c, expression: 'variables.g'}\n",
])
def test_a_condition_naming_the_generator_fails_as_before(body: str) -> None:
    out = only(evaluate(docs(policy("p", body)), NAMESPACES[:1]))
    assert out.status is TriggerStatus.ERROR and out.message == f"failed to evaluate policy: {NO_GENERATOR}"
    assert not out.objects


def test_a_namespace_given_again_as_another_object_still_wins() -> None:
    """Only the same object is skipped: a later document of the name (another object) replaces it, as before."""
    first, other = docs("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n  labels: {tier: gold}\n"
                        "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n  labels: {tier: lead}\n")
    labels = {"kubernetes.io/metadata.name": "team-a", "tier": "gold"}
    assert namespace_objects([first, first], {})["team-a"]["metadata"]["labels"] == labels
    assert namespace_objects([first, other, first], {})["team-a"]["metadata"]["labels"] == labels
    assert namespace_objects([first, first, other], {})["team-a"]["metadata"]["labels"] == {**labels, "tier": "lead"}


class _Text(str):
    pass


def test_strings_are_kept_and_what_is_beside_them_still_walked() -> None:
    """The walk skips the call for a plain string only: one in a list or a map is kept, a number or a map beside
    it still normalized and sorted, and a subclass of str goes the whole way (kept as it is, as before)."""
    subclass = _Text("t")
    value = {"b": ["x", 2.0, {"d": "1", "c": 3.0}, subclass], "a": "y"}
    walked = in_key_order_normalized(value)
    assert walked == {"a": "y", "b": ["x", 2, {"c": 3, "d": "1"}, "t"]}
    assert list(walked) == ["a", "b"] and list(walked["b"][2]) == ["c", "d"]
    assert type(walked["b"][1]) is int and walked["b"][3] is subclass


# what `apply` imports before its reads: the command, its run function, the plan and the writer
_BEFORE_READS = """
import json, sys
import kubectl_kyrec.cli.apply_cmd, kubectl_kyrec.cluster.live_source, kubectl_kyrec.cluster.writer
import kubectl_kyrec.reconcile.plan, kubectl_kyrec.run.apply, kubectl_kyrec.run.diff
print(json.dumps(sorted(m for m in sys.modules if m.startswith("kubectl_kyrec"))))
"""


def test_apply_imports_the_evaluation_only_once_it_reads() -> None:
    done = subprocess.run([sys.executable, "-c", _BEFORE_READS], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    imported = set(json.loads(done.stdout))
    assert "kubectl_kyrec.reconcile.downstreams" in imported      # the plan's types: there before the reads
    assert not imported & {"kubectl_kyrec.evaluate.generating.engine", "kubectl_kyrec.cel.libraries",
                           "kubectl_kyrec.cel.context"}
    assert "kubectl_kyrec.evaluate.generating.engine" in EVALUATION_MODULES


def _source(tmp_path: Path, policy: Path) -> LiveSource:
    return LiveSource(FileSource(policy_paths=(str(policy),)),
                      ConnectionOptions(kubeconfig=str(tmp_path / "kubeconfig")), cache_dir=tmp_path / "cache")


def test_while_listing_starts_as_the_first_list_is_sent(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(HEAD.format(name="p") + GENERATE)
    with ApiServer() as api:
        api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
        api.kubeconfig(tmp_path / "kubeconfig")
        lists_then: list[int] = []

        def listing() -> None:
            lists_then.append(sum(1 for r in api.requests("GET") if r.verb == "list"))

        inputs = _source(tmp_path, policy).read(while_listing=listing)
        assert [p.meta.name for p in inputs.policies.generating] == ["p"]     # the files were read first
        assert lists_then == [0] and any(r.verb == "list" for r in api.requests("GET"))

        # a policy file that cannot be read: its error, before any request, and nothing started
        api.clear_log()
        with pytest.raises(KyrecError):
            _source(tmp_path, tmp_path / "missing.yaml").read(while_listing=listing)
        assert lists_then == [0] and not api.requests()
