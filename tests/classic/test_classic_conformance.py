"""Kyverno's chainsaw scenarios for classic policies (../shared/corpus/kyverno-conformance-legacy, read in
place), replayed offline as tests/conformance does for the CEL kinds:

- validate/ and exceptions/: for every object a scenario applies, kyrec's verdict (denied when an Enforce rule
  fails or errors on it) must be the one the scenario expects from a real cluster; objects admitted earlier
  are the state later steps see, and applying one of them again is an UPDATE with it as the oldObject.
- reports/background/: every report a scenario asserts is a subset of the report kyrec expects.

Scenarios kyrec cannot decide yet are listed with the reason and expected to fail (xfail); a scenario
listed by its exact name that passes fails the test, so the list stays true.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_kyrec.cel.context import LibraryContext, ObjectsProvider
from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.cel.schema_rules import policy_schema_check
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.evaluate import pipeline
from kubectl_kyrec.evaluate.classic.engine import refused_by_kyverno
from kubectl_kyrec.evaluate.classic.generate_triggers import run_classic_generate
from kubectl_kyrec.evaluate.classic.mutate_existing_preview import mutate_existing_preview
from kubectl_kyrec.evaluate.generating.engine import GenerateOptions
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.expect.report_scope import generating_pairs, mutate_existing_pairs
from kubectl_kyrec.expect.reports import expected_reports
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Document
from tests.conformance.test_report_scenarios import subset
from tests.shared_inputs import cases, shared

ROOT = shared("corpus/kyverno-conformance-legacy")
NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc)
ADMIN = {"username": "kubernetes-admin", "groups": ["kubeadm:cluster-admins", "system:authenticated"]}
POLICY_GROUPS = ("kyverno.io/", "policies.kyverno.io/")

_ADMISSION_ONLY_FIELD = (
    "reads `request.name`, which only the admission webhook's context has (the whole AdmissionRequest); kyrec "
    "builds the context as the background scan and the CLI do (NewPolicyContext), without it")
KNOWN = {
    "validate/clusterpolicy/standard/psa/concurrent-policy-execution":
        "installs its policies from the kyverno-policies Helm chart, which the replay does not have",
    "validate/clusterpolicy/standard/apicalls/subjectaccessreview": "POSTs a SubjectAccessReview (undetermined)",
    "validate/clusterpolicy/standard/apicalls-deprecated/subjectaccessreview":
        "POSTs a SubjectAccessReview (undetermined)",
    "validate/e2e/trusted-images": "reads image data from a registry (undetermined)",
    "validate/e2e/trusted-images-deprecated": "reads image data from a registry (undetermined)",
    # checked by hand: with `request.name` added to the context both pass (lazy loading itself agrees)
    "validate/clusterpolicy/standard/variables/lazyload/conditions": _ADMISSION_ONLY_FIELD,
    "validate/clusterpolicy/standard/variables/lazyload/conditions-deprecated": _ADMISSION_ONLY_FIELD,
    "reports/background/verify-image-fail": "verifyImages rules check signatures in a registry (undetermined)",
    "reports/background/verify-image-pass": "verifyImages rules check signatures in a registry (undetermined)",
}


def _known(scenario: str) -> str | None:
    for prefix, why in KNOWN.items():
        if scenario == prefix or scenario.startswith(prefix + "/"):
            return why
    return None


def _expects_error(op: dict[str, Any]) -> bool:
    for entry in op.get("expect") or []:
        check = entry.get("check") or {}
        if check.get("($error != null)") is True or check.get("($error)"):
            return True
    return False


def _steps(folder: Path) -> list[tuple[str, Path, bool]]:
    """(policy|object, file, expects an error), in order; a script whose check looks for a message in
    stderr expects the request to be refused."""
    spec = yaml.safe_load((folder / "chainsaw-test.yaml").read_text())
    out = []
    for step in spec["spec"]["steps"]:
        use = step.get("use")
        if use and "policy" in use.get("template", ""):
            for binding in use.get("with", {}).get("bindings", []):
                if binding["name"] == "file":
                    out.append(("policy", folder / binding["value"], False))
        for op in step.get("try") or []:
            for verb in ("apply", "create"):
                if verb in op and "file" in op[verb]:
                    out.append(("object", folder / op[verb]["file"], _expects_error(op[verb])))
            script = op.get("script") or {}
            found = re.fullmatch(r"\s*kubectl (?:apply|create) -f (\S+)\s*", script.get("content") or "")
            if found:
                check = script.get("check") or {}
                refused = check.get("($error != null)") is True or any(
                    "contains($stderr" in str(k) and v is True for k, v in check.items())
                out.append(("object", folder / found.group(1), refused))
    return out


def _key(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    return (str(obj.get("apiVersion")), str(obj.get("kind")), str(meta.get("namespace") or ""),
            str(meta.get("name") or ""))


def _with_old_objects(existing: dict[tuple[str, str, str, str], dict[str, Any]]) -> Any:
    """build_request whose UPDATE requests carry the object the state held as their oldObject."""
    build = pipeline.build_request

    def build_request(obj: dict[str, Any], **kwargs: Any) -> Any:
        request = build(obj, **kwargs)
        if request.operation == "UPDATE" and _key(obj) in existing:
            request = dataclasses.replace(request, old_obj=existing[_key(obj)])
        return request
    return build_request


def _validate_scenarios() -> list[Path]:
    return sorted(p.parent for top in ("validate", "exceptions") for p in (ROOT / top).rglob("chainsaw-test.yaml"))


@pytest.mark.parametrize("folder", cases(ROOT, "Kyverno's classic validate scenarios", _validate_scenarios,
                                          ids=lambda p: str(p.relative_to(ROOT))))
def test_admission_verdicts(folder: Path) -> None:
    scenario = str(folder.relative_to(ROOT))
    policy_docs: list[Document] = []
    state: list[Document] = []
    checked = 0
    problems: list[Any] = []
    for kind, path, expects_error in _steps(folder):
        try:
            docs = load_documents([str(path)])
            if kind == "policy" or any(d.api_version.startswith(POLICY_GROUPS) for d in docs):
                classify([*policy_docs, *docs], schema=policy_schema_check()).raise_errors()
                # what Kyverno's policy validation refuses and kyrec's evaluator reports as an error
                for policy in classify(docs).classic:
                    refused = refused_by_kyverno(policy)
                    if refused is not None:
                        raise refused
                # applying a policy of the same kind and name replaces it (whatever its apiVersion)
                same = {_key(d.obj)[1:] for d in docs}
                policy_docs = [d for d in policy_docs if _key(d.obj)[1:] not in same] + docs
                if expects_error:
                    problems.append(f"{path.name}: Kyverno rejects this policy object, kyrec accepted it")
                    checked += 1
                continue
        except InputError:
            if not expects_error:
                problems.append(f"{path.name}: kyrec refused a policy object Kyverno accepts")
            checked += 1
            continue
        policies = classify(policy_docs)
        # an object already in the state is applied as an UPDATE of it, the others as a CREATE
        existing = {_key(d.obj): d.obj for d in state}
        results = []
        for operation, batch in (("CREATE", [d for d in docs if _key(d.obj) not in existing]),
                                 ("UPDATE", [d for d in docs if _key(d.obj) in existing])):
            if batch:
                with pytest.MonkeyPatch.context() as patch:
                    patch.setattr(pipeline, "build_request", _with_old_objects(existing))
                    results += run_eval(policies, batch, state, kinds=KindTable(),
                                        libraries=library_factory(LibraryContext(now=NOW, provider=ObjectsProvider(
                                            [d.obj for d in state]))),
                                        options=EvalOptions(now=NOW, operation=operation, user_info=ADMIN)).results
        names = {d.name for d in docs}
        denied = [(r.policy, r.rule, r.result, r.message) for r in results
                  if "Deny" in r.validation_actions and r.result in ("fail", "error") and r.subject.name in names]
        if bool(denied) != expects_error:
            problems.append((path.name, expects_error, denied))
        checked += 1
        if not denied:
            keys = {_key(d.obj) for d in docs}
            state = [d for d in state if _key(d.obj) not in keys] + docs
    why = _known(scenario)
    if why is not None and (problems or not checked):
        pytest.xfail(why)
    assert scenario not in KNOWN, f"{scenario} is listed as failing ({why}) but passes: remove it from KNOWN"
    if not checked:
        pytest.skip("the scenario asserts only background reports or configuration, no admission verdict")
    assert problems == []


def _report_scenarios() -> list[Path]:
    return sorted(p.parent for p in (ROOT / "reports" / "background").rglob("chainsaw-test.yaml"))


_DELETE_SCRIPT = re.compile(r"\s*kubectl delete (\S+) (\S+)(?: -n \S+)?\s*")
_KIND_ALIASES = {"polex": "PolicyException", "pod": "Pod", "cpol": "ClusterPolicy", "pol": "Policy"}


def _report_steps(folder: Path) -> list[tuple[str, Any]]:
    """The scenario's steps as (verb, argument) in order: add a file, delete (kind, name), assert or error
    (assert the absence of) a file's reports."""
    spec = yaml.safe_load((folder / "chainsaw-test.yaml").read_text())
    out: list[tuple[str, Any]] = []
    for step in spec["spec"]["steps"]:
        use = step.get("use")
        if use and "policy" in use.get("template", ""):
            out.extend(("add", folder / b["value"]) for b in use.get("with", {}).get("bindings", [])
                       if b["name"] == "file")
        for op in step.get("try") or []:
            for verb, kind in (("apply", "add"), ("create", "add"), ("assert", "assert"), ("error", "error")):
                if verb in op and "file" in op[verb]:
                    out.append((kind, folder / op[verb]["file"]))
            if "delete" in op:
                ref = op["delete"].get("ref") or {}
                out.append(("delete", (ref.get("kind"), ref.get("name"))))
            found = _DELETE_SCRIPT.fullmatch((op.get("script") or {}).get("content") or "")
            if found:
                out.append(("delete", (_KIND_ALIASES.get(found.group(1), found.group(1)), found.group(2))))
    return out


def _expected_reports(docs: list[Document]) -> list[dict[str, Any]]:
    policy_docs = [d for d in docs if d.api_version.startswith(POLICY_GROUPS)]
    resources = [d for d in docs if not d.api_version.startswith(POLICY_GROUPS)]
    policies = classify(policy_docs).raise_errors()
    libraries = library_factory(LibraryContext(now=NOW, provider=ObjectsProvider([d.obj for d in resources])))
    outcome = run_eval(policies, resources, resources, kinds=KindTable(), libraries=libraries,
                       options=EvalOptions(now=NOW))
    # generate rules' results join the trigger's report, as `kyrec eval` puts them (run/eval.py)
    generated = run_classic_generate(policies.classic, resources, resources, kinds=KindTable(),
                                     options=GenerateOptions(now=NOW), exceptions=policies.classic_exceptions)
    # and so do mutate-existing rules' (the objects applied are the triggers, as `eval -r` previews them)
    previews, _ = mutate_existing_preview(policies, outcome.subjects, outcome.admissions, resources, KindTable(),
                                          EvalOptions(now=NOW), Environments(libraries),
                                          manifests=True, state_given=True)
    return expected_reports([*outcome.pairs, *generating_pairs(generated), *mutate_existing_pairs(previews)], NOW)


def _asserted(path: Path) -> list[dict[str, Any]]:
    out = []
    for doc in yaml.safe_load_all(path.read_text()):
        if doc and doc.get("kind") in ("PolicyReport", "ClusterPolicyReport"):
            (doc.get("metadata") or {}).pop("generation", None)
            out.append(doc)
    return out


@pytest.mark.parametrize("folder", cases(ROOT, "Kyverno's classic report scenarios", _report_scenarios,
                                          ids=lambda p: str(p.relative_to(ROOT))))
def test_asserted_reports_are_subsets(folder: Path) -> None:
    """The scenario replayed step by step: each assert compares with the reports kyrec expects for the
    objects applied (and not deleted) so far; an `error` step's report must match none of them."""
    scenario = str(folder.relative_to(ROOT))
    docs: list[Document] = []
    problems: list[str] = []
    asserted = 0
    for verb, arg in _report_steps(folder):
        if verb == "add":
            added = load_documents([str(arg)])
            keys = {_key(d.obj)[1:] for d in added}
            docs = [d for d in docs if _key(d.obj)[1:] not in keys] + added
        elif verb == "delete":
            docs = [d for d in docs if (d.kind, d.name) != tuple(arg)]
        elif verb == "assert":
            reports = _expected_reports(docs)
            by_name = {r["scope"]["name"]: r for r in reports}
            for report in _asserted(arg):
                asserted += 1
                name = (report.get("scope") or {}).get("name")
                if name is None:
                    # chainsaw asserts a report that names no object against every report of its kind and
                    # namespace: one of them must hold it
                    if not any(not subset(report, r) for r in reports):
                        problems.append(f"{arg.name}: no expected report holds {report.get('results')}")
                elif name not in by_name:
                    problems.append(f"{arg.name}: no expected report for {name}")
                else:
                    problems.extend(f"{arg.name}: {p}" for p in subset(report, by_name[name]))
        else:
            reports = _expected_reports(docs)
            for report in _asserted(arg):
                asserted += 1
                if any(not subset(report, r) for r in reports):
                    problems.append(f"{arg.name}: kyrec expects a report the scenario asserts is absent")
    why = _known(scenario)
    if why is not None and (problems or not asserted):
        pytest.xfail(why)
    assert scenario not in KNOWN, f"{scenario} is listed as failing ({why}) but passes: remove it from KNOWN"
    if not asserted:
        pytest.skip("the scenario asserts no report kyrec can compare")
    assert problems == []
