"""One tree renderer, generic over the recording (issue 35): a kind whose engine records its explain nodes where it
decides (recording.py's `Trace.node`) has no tree of its own to build: the recording is the tree explain
prints (evaluate/explain.py `record`, `recorded`), and the text and JSON are drawn from it alone. So the tree ends in
the very result the engine returned, an edit of the recording is what is printed, and recording never changes
what the engine decides.
"""

from __future__ import annotations

import datetime
import io
from pathlib import Path
from typing import Any

import pytest

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.k8s_libs import kubernetes_libraries
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.deleting.engine import compile_deleting_policy, evaluate_object, next_run
from kubectl_kyrec.evaluate.deleting.engine import subject_context as deleting_context
from kubectl_kyrec.evaluate.explain import record, recorded
from kubectl_kyrec.evaluate.image_validating.engine import compile_image_validating_policy, evaluate_image_validating
from kubectl_kyrec.evaluate.namespaces import namespace_objects
from kubectl_kyrec.evaluate.pipeline import EvalOptions, subject_context
from kubectl_kyrec.evaluate.subjects import make_subjects
from kubectl_kyrec.evaluate.validating_admission.engine import compile_admission_policies, evaluate_admission
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.deleting import parse_deleting_policy
from kubectl_kyrec.load.policy.policies import classify, parse_exception
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.recording import Step, Trace
from kubectl_kyrec.render.explain_output import write_text

CASES = Path(__file__).resolve().parents[2] / "testdata" / "explain"
NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def _deleting() -> tuple[Any, list[Any]]:
    case = CASES / "deletingpolicy"
    docs = load_documents([str(case / "policy.yaml")])
    exceptions = [parse_exception(d) for d in load_documents([str(case / "exceptions.yaml")])]
    envs = Environments(lambda kind, namespace: list(kubernetes_libraries()))
    cp = compile_deleting_policy(parse_deleting_policy(docs[0]), envs, exceptions, NOW)
    resources = load_documents([str(case / "resources.yaml")])
    namespaces = {d.obj["metadata"]["name"]: d.obj for d in resources if d.obj.get("kind") == "Namespace"}
    subjects = [s for s in make_subjects(resources, KindTable()).subjects if s.ref.kind == "ConfigMap"]
    return cp, [deleting_context(s, namespaces) for s in subjects]


def test_deleting_records_its_whole_tree_where_it_decides() -> None:
    cp, contexts = _deleting()
    seen = set()
    for ctx in contexts:
        plain = evaluate_object(cp, ctx)
        trace = Trace()
        results = record(trace, cp.policy.meta, ctx.subject.ref)
        run = next_run(cp.policy, NOW, recorder=trace)
        deletion = evaluate_object(cp, ctx, trace)
        results.append(deletion.result())
        assert deletion == plain        # recording decides nothing
        assert run == next_run(cp.policy, NOW)
        [tree] = recorded(trace)
        names = [step.name for step in tree.tree.children]
        assert names[:2] == ["schedule", "matchConstraints"] and names[-2:] == ["next run", "result"]
        seen.add(tuple(names))
        said = tree.tree.children[-1]
        assert (said.outcome, said.detail) == (plain.result().result, f"rule {cp.policy.meta.name!r}: "
                                                                      f"{plain.result().message}")
        assert tree.tree is trace.root.children[0] and tree.results == [plain.result()]
    # the cases stop at different decisions: matched or not, exempted, conditions evaluated
    assert len(seen) >= 3, seen


@pytest.mark.parametrize("form", ["text", "json"])
def test_what_is_printed_is_the_recording(form: str) -> None:
    cp, contexts = _deleting()
    trace = Trace()
    record(trace, cp.policy.meta, contexts[0].subject.ref)
    evaluate_object(cp, contexts[0], trace)
    root = trace.root.children[0]
    root.children[-1] = Step("result", "recorded", "an edited recording")
    root.children[0].children.append(Step("a step only the recording has", "shown"))
    [tree] = recorded(trace)
    if form == "json":
        printed = str(tree.to_json())
    else:
        out = io.StringIO()
        write_text([tree], out)
        printed = out.getvalue()
    assert "an edited recording" in printed and "a step only the recording has" in printed


def _contexts(case: Path, kinds: set[str]) -> list[Any]:
    resources = load_documents([str(case / "resources.yaml")])
    namespaces = namespace_objects(resources, {})
    return [subject_context(s, namespaces, EvalOptions(now=NOW))
            for s in make_subjects(resources, KindTable()).subjects if s.ref.kind in kinds]


@pytest.mark.parametrize("kind", ["ValidatingAdmissionPolicy", "ImageValidatingPolicy"])
def test_a_cel_engine_records_its_tree_ending_in_its_result(kind: str) -> None:
    envs = Environments(library_factory(LibraryContext(now=NOW, provider=EmptyProvider())))
    if kind == "ValidatingAdmissionPolicy":
        case = CASES / "validatingadmissionpolicy"
        policies = classify(load_documents([str(case / "policies.yaml")])).raise_errors()
        cp = compile_admission_policies(policies.admission, policies.bindings, envs)[0]
        state = load_documents([str(case / "state.yaml")])

        def run(ctx: Any, trace: Trace | None) -> list[Any]:
            return evaluate_admission(cp, ctx, state=state, kinds=KindTable(), recorder=trace)
        contexts, meta = _contexts(case, {"Deployment"}), cp.policy.meta
    else:
        case = CASES / "imagevalidatingpolicy"
        policies = classify(load_documents([str(case / "policy.yaml")])).raise_errors()
        ip = compile_image_validating_policy(policies.image_validating[0], envs, [], NOW)

        def run(ctx: Any, trace: Trace | None) -> list[Any]:
            return evaluate_image_validating(ip, ctx, trace)
        contexts, meta = _contexts(case, {"Pod", "Deployment"}), ip.policy.meta
    assert contexts
    for ctx in contexts:
        trace = Trace()
        results = record(trace, meta, ctx.subject.ref)
        found = run(ctx, trace)
        results.extend(found)
        assert found == run(ctx, None)      # recording decides nothing
        [tree] = recorded(trace)
        said = tree.tree.children[-1]
        assert said.name == "result"
        assert said.outcome == (found[0].result if found else "none")
        assert tree.tree is trace.root.children[0] and tree.tree.name == f"{meta.kind} {meta.key}"
        assert tree.results == found
