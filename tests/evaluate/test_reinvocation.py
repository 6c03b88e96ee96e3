"""Reinvocation in the admission chain (issue 37): after every mutating stage ran once and one of them changed
the object, the API server admits the object once more (k8s.io/apiserver pkg/admission/reinvocation.go). The
MutatingAdmissionPolicy plugin then re-runs its invocations whose policy says reinvocationPolicy IfNeeded
(policy/mutating/dispatcher.go); a webhook registered IfNeeded, as all of Kyverno's are, is called again when
a later stage changed the object after it (webhook/mutating/dispatcher.go). docs/admission.md, "Reinvocation"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from kubectl_kyrec.evaluate.admission_chain import AdmissionChain, MutationStep, Reinvocation, mutation_of
from kubectl_kyrec.evaluate.request import build_request
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.model import Subject, ref_of

# --- the chain's rule, on stand-in stages --------------------------------------------------------------------


def _subject(**labels: str) -> Subject:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "dev", "labels": labels}}
    return Subject(obj, ref_of(obj), None, "configmaps", True)


def _context(subject: Subject) -> SubjectContext:
    return SubjectContext(subject, build_request(subject.obj, resource=subject.resource, namespaced=True,
                                                 operation="CREATE"), None)


class Stage:
    """Sets label `key` to `value`, or (with `copy`) to the label `copy` it sees; counts its calls."""

    def __init__(self, key: str, value: str = "", copy: str = "", *, webhook: bool = True,
                 if_needed: bool = True) -> None:
        self.key, self.value, self.copy = key, value, copy
        self.webhook, self.if_needed, self.calls = webhook, if_needed, 0

    def mutate(self, ctx: SubjectContext) -> MutationStep:
        self.calls += 1
        obj = ctx.request.obj
        assert obj is not None
        labels = obj["metadata"]["labels"]
        value = labels.get(self.copy, "none") if self.copy else self.value
        after = {**obj, "metadata": {**obj["metadata"], "labels": {**labels, self.key: value}}}
        mutation = mutation_of(self.key, "MutatingPolicy", "", obj, after)
        hook = Reinvocation(self.mutate, self.webhook) if self.if_needed else None
        return MutationStep(after, [mutation] if mutation else [], reinvocation=hook)


def _labels(*stages: Stage) -> dict[str, str]:
    out = AdmissionChain(list(stages), default=None).admit([_subject()], _context)
    return dict(out.subjects[0].obj["metadata"]["labels"])


def test_an_if_needed_webhook_runs_again_after_a_later_webhook_changed_the_object() -> None:
    copier, setter = Stage("copied", copy="source"), Stage("source", "x", if_needed=False)
    assert _labels(copier, setter) == {"copied": "x", "source": "x"}
    assert (copier.calls, setter.calls) == (2, 1)


def test_a_never_webhook_is_not_called_again() -> None:
    copier, setter = Stage("copied", copy="source", if_needed=False), Stage("source", "x")
    assert _labels(copier, setter) == {"copied": "none", "source": "x"}
    assert copier.calls == 1


def test_no_change_no_reinvocation_and_a_webhook_after_the_last_change_is_not_called_again() -> None:
    first, second = Stage("a", "1"), Stage("b", "1")
    _labels(first, second)
    # `second` changed the object after `first`: only `first` runs again, and changes nothing
    assert (first.calls, second.calls) == (2, 1)
    # nothing changes the object (the label is there already): one round
    quiet = Stage("a", "1")
    out = AdmissionChain([quiet], default=None).admit([_subject(a="1")], _context)
    assert quiet.calls == 1 and not out.admissions[0].mutations


def test_a_webhook_changing_the_object_on_reinvocation_reinvokes_the_ones_after_it() -> None:
    # round 1: a copies src (none), b sets src (a marked for reinvocation), c copies a (none) after the last
    # change, so it is not marked; round 2: a copies x, a change, which marks c: c runs again and copies x
    a, b, c = Stage("a", copy="src"), Stage("src", "x", if_needed=False), Stage("c", copy="a")
    assert _labels(a, b, c) == {"a": "x", "src": "x", "c": "x"}
    assert (a.calls, b.calls, c.calls) == (2, 1, 2)


def test_the_in_tree_plugin_runs_again_before_the_webhooks() -> None:
    # the plugin (not a webhook) copies what a webhook set later; its re-run changes the object, so the
    # webhook that ran last in round 1 is called again too
    plugin, hook = Stage("copied", copy="source", webhook=False), Stage("source", "x")
    assert _labels(plugin, hook) == {"copied": "x", "source": "x"}
    assert (plugin.calls, hook.calls) == (2, 2)


# --- eval on manifests, with real policies ------------------------------------------------------------------

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "dev"}}
RULES = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]
MAP_GROUP = "admissionregistration.k8s.io/v1beta1"
# sets label `copied` to the label `source` the object has ("none" without)
COPY = ('Object{metadata: Object.metadata{labels: {"copied": '
        '(has(object.metadata.labels) && "source" in object.metadata.labels) ? object.metadata.labels["source"] '
        ': "none"}}}')
SET = 'Object{metadata: Object.metadata{labels: {"source": "x"}}}'


def _map(name: str, expression: str, reinvocation: str) -> list[dict[str, Any]]:
    return [{"apiVersion": MAP_GROUP, "kind": "MutatingAdmissionPolicy", "metadata": {"name": name},
             "spec": {"matchConstraints": {"resourceRules": RULES}, "failurePolicy": "Fail",
                      "reinvocationPolicy": reinvocation, "mutations": [{
                          "patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}]}},
            {"apiVersion": MAP_GROUP, "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": name},
             "spec": {"policyName": name}}]


def _mpol(name: str, expression: str) -> dict[str, Any]:
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": name},
            "spec": {"matchConstraints": {"resourceRules": RULES}, "mutations": [{
                "patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}]}}


def _classic_set() -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "set-source"},
            "spec": {"rules": [{"name": "set", "match": {"any": [{"resources": {"kinds": ["ConfigMap"]}}]},
                                "mutate": {"patchStrategicMerge": {"metadata": {"labels": {"source": "x"}}}}}]}}


CHECK = {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "copied"},
         "spec": {"validationActions": ["Audit"], "matchConstraints": {"resourceRules": RULES},
                  "validations": [{"expression": "object.metadata.labels['copied'] == 'x'",
                                   "message": "copied is not x"}]}}


def _verdict(tmp_path: Path, *docs: dict[str, Any]) -> str:
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all([*docs, CHECK]))
    (tmp_path / "cm.yaml").write_text(yaml.safe_dump(CM))
    run = subprocess.run([sys.executable, "-m", "kubectl_kyrec", "eval", "-p", "policies.yaml", "-r", "cm.yaml",
                          "-o", "json"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode in (0, 1), run.stderr
    [result] = [r for r in json.loads(run.stdout)["results"] if r["policy"] == "copied"]
    return str(result["result"]) + ": " + str(result.get("message", ""))


def test_an_if_needed_mutating_admission_policy_sees_what_kyverno_set(tmp_path: Path) -> None:
    got = _verdict(tmp_path, *_map("copy", COPY, "IfNeeded"), _mpol("set", SET))
    assert got.startswith("pass"), got


def test_a_never_mutating_admission_policy_does_not(tmp_path: Path) -> None:
    got = _verdict(tmp_path, *_map("copy", COPY, "Never"), _mpol("set", SET))
    assert got.startswith("fail"), got


def test_kyverno_s_mutating_policy_webhook_is_not_reinvoked(tmp_path: Path) -> None:
    # the MutatingPolicy webhook (mpol.*) is called before the classic one (mutate.*), and Kyverno registers
    # it without a reinvocationPolicy (the API server's default: Never), so what the classic rule sets
    # later is not seen, whatever the MutatingPolicy's own reinvocationPolicy says
    copy = _mpol("copy", COPY)
    copy["spec"]["reinvocationPolicy"] = "IfNeeded"
    got = _verdict(tmp_path, copy, _classic_set())
    assert got.startswith("fail"), got


def _classic_echo() -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "echo"},
            "spec": {"rules": [{"name": "echo", "match": {"any": [{"resources": {"kinds": ["ConfigMap"]}}]},
                                "mutate": {"patchStrategicMerge": {"metadata": {"labels": {
                                    "echo": "{{ request.object.metadata.labels.copied || 'unset' }}"}}}}}]}}


def test_a_classic_mutate_webhook_is_reinvoked_after_the_policy_plugin_changed_the_object(tmp_path: Path) -> None:
    # round 1: the MAP copies "none", the MutatingPolicy sets source, the classic rule echoes "none"; round
    # 2: the MAP copies "x", a change since the webhooks' last output, so the classic webhook (IfNeeded) is
    # called again and echoes "x"; the MutatingPolicy webhook (Never) is not
    echo = {**CHECK, "metadata": {"name": "copied"}, "spec": {**CHECK["spec"], "validations": [{
        "expression": "object.metadata.labels['echo'] == 'x'", "message": "echo is not x"}]}}
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all(
        [*_map("copy", COPY, "IfNeeded"), _mpol("set", SET), _classic_echo(), echo]))
    (tmp_path / "cm.yaml").write_text(yaml.safe_dump(CM))
    run = subprocess.run([sys.executable, "-m", "kubectl_kyrec", "eval", "-p", "policies.yaml", "-r", "cm.yaml",
                          "-o", "json"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode in (0, 1), run.stderr
    [result] = [r for r in json.loads(run.stdout)["results"] if r["policy"] == "copied"]
    assert result["result"] == "pass", result
