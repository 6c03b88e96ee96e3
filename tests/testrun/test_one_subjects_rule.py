"""One subjects rule for every policy kind (issue 25): with `-r` given, its manifests are what is evaluated
and what triggers generation, never the state in their place. Before, `run/eval.py` and `Inputs.subjects`
each decided it: `eval -p gpol.yaml -r vpol.yaml --state state.yaml` evaluated nothing for the
ValidatingPolicy while the GeneratingPolicy fired on the state. The CLI now refuses an `-r` that holds only
policies (exit 3), so the run layer is driven directly here with the inputs such a command reads."""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path

from kubectl_kyrec.load.run_inputs.sources import FileSource, Inputs
from kubectl_kyrec.run.eval import EvalRunOptions, run_eval

GPOL = """\
apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata: {name: cm-per-ns}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [namespaces]}
  variables:
  - name: cm
    expression: >-
      [{"kind": dyn("ConfigMap"), "apiVersion": dyn("v1"),
        "metadata": dyn({"name": "zk", "namespace": string(object.metadata.name)}), "data": dyn({"a": "b"})}]
  generate:
  - expression: generator.Apply(object.metadata.name, variables.cm)
"""
VPOL = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: ns-label}
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [namespaces]}
  validations:
  - {expression: "'team' in object.metadata.?labels.orValue({})", message: team label required}
"""
STATE = """\
apiVersion: v1
kind: Namespace
metadata: {name: dev, uid: 11111111-1111-1111-1111-111111111111}
"""
NOW = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)


@dataclasses.dataclass
class PoliciesOnlyInR:
    """A FileSource whose `-r` turned out to hold only policies (the CLI stops such a run before here)."""

    files: FileSource

    def read(self) -> Inputs:
        return dataclasses.replace(self.files.read(), resources=[], resources_named=True)


def _files(tmp_path: Path) -> FileSource:
    for name, text in (("gpol.yaml", GPOL), ("vpol.yaml", VPOL), ("state.yaml", STATE)):
        (tmp_path / name).write_text(text)
    return FileSource(policy_paths=[str(tmp_path / "gpol.yaml"), str(tmp_path / "vpol.yaml")],
                      state_paths=[str(tmp_path / "state.yaml")])


def test_without_r_both_kinds_see_the_state(tmp_path: Path) -> None:
    run = run_eval(EvalRunOptions(now=NOW), _files(tmp_path))
    assert sorted((r.policy, r.result) for r in run.results) == [("cm-per-ns", "pass"), ("ns-label", "fail")]
    assert [obj["metadata"]["name"] for _, obj in run.generated.downstreams] == ["zk"]


def test_an_r_of_only_policies_evaluates_nothing_for_either_kind(tmp_path: Path) -> None:
    inputs = PoliciesOnlyInR(_files(tmp_path)).read()
    assert inputs.subjects == [] and inputs.state.objects
    run = run_eval(EvalRunOptions(now=NOW), PoliciesOnlyInR(_files(tmp_path)))
    assert run.results == []
    assert run.generated.downstreams == [] and run.generated.triggers == []
