"""evaluate/admission_chain.py: each engine sees the object the one before it made, a DELETE is never
mutated, a subject whose stored object cannot be known has undetermined validation results (never in a
report), and `--old` pairs manifests into CREATE, UPDATE and DELETE requests."""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.evaluate.admission_chain import (
    ORDER_DEPENDENT,
    AdmissionChain,
    MutationStep,
    mutation_of,
    paired_with_old,
    undetermined_by_admission,
)
from kubectl_kyrec.evaluate.request import build_request
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.model import UNDETERMINED, Result, Subject, ref_of


def _subject(name: str, labels: dict[str, str] | None = None, api_version: str = "apps/v1",
             **more: Any) -> Subject:
    obj = {"apiVersion": api_version, "kind": "Deployment",
           "metadata": {"name": name, "namespace": "shop", "labels": dict(labels or {})}}
    return Subject(obj, ref_of(obj), None, "deployments", True, **more)


def _context(subject: Subject) -> SubjectContext:
    request = build_request(subject.obj, resource=subject.resource, namespaced=True,
                            operation=subject.operation or "CREATE", old_obj=subject.old_obj)
    return SubjectContext(subject, request, None)


class Labeller:
    """Sets a label from what it sees, so the order engines run in shows in the result."""

    def __init__(self, name: str, key: str, undetermined: list[str] | None = None) -> None:
        self.name, self.key, self.undetermined, self.seen = name, key, undetermined or [], []

    def mutate(self, ctx: SubjectContext) -> MutationStep:
        obj = ctx.request.obj
        assert obj is not None
        self.seen.append(dict(obj["metadata"]["labels"]))
        after = {**obj, "metadata": {**obj["metadata"],
                                     "labels": {**obj["metadata"]["labels"], self.key: str(len(self.seen))}}}
        mutation = mutation_of(self.name, "MutatingPolicy", "", obj, after)
        return MutationStep(after, [mutation] if mutation else [], [], list(self.undetermined))


def test_engines_run_in_order_each_on_the_object_the_one_before_made() -> None:
    first, second = Labeller("first", "a"), Labeller("second", "b")
    given = _subject("web")
    out = AdmissionChain([first, second], default=None).admit([given], _context)
    assert second.seen == [{"a": "1"}]
    assert out.subjects[0].obj["metadata"]["labels"] == {"a": "1", "b": "1"}
    admission = out.admissions[0]
    assert [m.policy for m in admission.mutations] == ["first", "second"]
    assert admission.mutations[1].patch == ({"op": "add", "path": "/metadata/labels/b", "value": "1"},)
    assert admission.operation == "CREATE" and not admission.defaulted and admission.changed
    # the same identity object: results are matched to their subject by it
    assert out.subjects[0].ref is given.ref and out.subjects[0].source is given.source


def test_defaulting_comes_first_and_is_recorded() -> None:
    def default(obj: Any) -> Any:
        return {**obj, "spec": {"replicas": 1}}

    engine = Labeller("first", "a")
    out = AdmissionChain([engine], default=default).admit([_subject("web")], _context)
    assert out.admissions[0].defaulted
    assert out.subjects[0].obj["spec"] == {"replicas": 1}
    # the mutation's patch is of the mutation alone, not of the defaults
    assert [op["path"] for m in out.admissions[0].mutations for op in m.patch] == ["/metadata/labels/a"]


def test_a_delete_stores_nothing_and_is_not_mutated() -> None:
    engine = Labeller("first", "a")
    subject = _subject("web", operation="DELETE")
    out = AdmissionChain([engine], default=lambda o: {**o, "x": 1}).admit([subject], _context)
    assert engine.seen == [] and out.subjects[0] is subject
    assert out.admissions[0].operation == "DELETE" and not out.admissions[0].changed


def test_an_unknown_stored_object_makes_the_subjects_results_undetermined() -> None:
    engine = Labeller("first", "a", undetermined=[f"{ORDER_DEPENDENT}: p1 and p2 set the same field"])
    out = AdmissionChain([engine], default=None).admit([_subject("web"), _subject("api")], _context)
    web, api = out.subjects
    results = [Result("v", "KyvernoValidatingPolicy", "", "fail", "no", web.ref),
               Result("v", "KyvernoValidatingPolicy", "", "pass", "", api.ref)]
    # both are undetermined: the engine said so for each subject it saw
    changed = undetermined_by_admission(results, out.admissions)
    assert [r.result for r in changed] == [UNDETERMINED, UNDETERMINED]
    assert "order-dependent: p1 and p2 set the same field" in changed[0].message
    assert "would have said: fail (no)" in changed[0].message


def test_old_manifests_pair_into_create_update_and_delete() -> None:
    new = [_subject("web", {"team": "b"}), _subject("api")]
    old = [_subject("web", {"team": "a"}, api_version="apps/v1beta2"), _subject("gone")]
    paired = paired_with_old(new, old, default=lambda o: {**o, "defaulted": True})
    assert [(s.ref.name, s.operation) for s in paired] == [("web", "UPDATE"), ("api", "CREATE"),
                                                            ("gone", "DELETE")]
    web, _, gone = paired
    # the old object as stored: defaulted; one object across the API versions of its group
    assert web.old_obj is not None and web.old_obj["metadata"]["labels"] == {"team": "a"}
    assert web.old_obj["defaulted"] is True and gone.obj["defaulted"] is True
    request = _context(web).request
    assert request.old_obj is web.old_obj and request.obj is web.obj
    assert _context(gone).request.obj is None and _context(gone).request.old_obj is gone.obj


def test_admission_never_changes_the_manifests_it_was_given() -> None:
    """The patchers share what they leave alone with their input instead of copying it: the manifests as
    read (their file:line results, --write-mutated's input) must come out of a run as they went in."""
    import copy
    import datetime
    from pathlib import Path

    from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
    from kubectl_kyrec.cel.libraries import library_factory
    from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
    from kubectl_kyrec.load.documents import load_documents
    from kubectl_kyrec.load.policy.policies import classify
    from kubectl_kyrec.load.run_inputs.kinds import KindTable

    examples = Path(__file__).resolve().parents[2] / "testdata" / "examples"
    now = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)
    policies = classify(load_documents([str(examples / "policies"), str(examples / "admission")]))
    resources = load_documents([str(examples / "resources")])
    before = [copy.deepcopy(d.obj) for d in resources]
    outcome = run_eval(policies, resources, [], kinds=KindTable(),
                       libraries=library_factory(LibraryContext(now=now, provider=EmptyProvider())),
                       options=EvalOptions(now=now, admit=True))
    assert [a.mutations for a in outcome.admissions if a.mutations]      # the example mutates batch
    assert [d.obj for d in resources] == before
