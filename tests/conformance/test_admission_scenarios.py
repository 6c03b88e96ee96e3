"""Kyverno's ValidatingPolicy and NamespacedValidatingPolicy chainsaw scenarios (../shared/corpus/kyverno-
conformance, read in place), replayed offline: for every object a scenario creates, kyrec's verdict (denied
when a Deny policy fails or errors on it) must be the verdict the scenario expects from a real cluster.
Objects created earlier in a scenario are the cluster state later steps see (for `resource.Get`)."""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_kyrec.cel.context import LibraryContext, ObjectsProvider
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Document
from tests.shared_inputs import cases, present, shared

ROOT = shared("corpus/kyverno-conformance")
NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc)
# chainsaw creates the objects with the kind cluster's admin credentials: that is the requesting user
ADMIN = {"username": "kubernetes-admin", "groups": ["kubeadm:cluster-admins", "system:authenticated"]}

# Scenarios a replay cannot check, each with the reason. A scenario not listed here must check at least one
# verdict: a replay that checked nothing fails, so a scenario cannot pass by having nothing kyrec reads.
# Their verdict depends on data no offline run has: an HTTP endpoint, an image registry, or a
# GlobalContextEntry that Kyverno fills from the cluster.
NEEDS_OUTSIDE_DATA = {
    "validating-policies/context/api-call": "calls an HTTP service",
    "validating-policies/context/image-data": "reads image metadata from a registry",
    "validating-policies/context/image-data-arch": "reads image metadata from a registry",
    "validating-policies/context/globalreference": "reads a GlobalContextEntry",
    "validating-policies/context/globalreference-missing-graceful": "reads a GlobalContextEntry",
    "validating-policies/context/globalreference-missing-graceful-edge-cases": "reads a GlobalContextEntry",
}
_CONFIGURES = "asserts only on what Kyverno configures, not on a verdict: "
NOT_REPLAYABLE = {
    "validating-policies/apply-v1": _CONFIGURES + "the webhook configuration",
    "validating-policies/autogen/none": _CONFIGURES + "the policy's status.autogen",
    "validating-policies/autogen/should-autogen": _CONFIGURES + "the policy's status.autogen",
    "validating-policies/autogen/should-autogen-with-namespace-selector": _CONFIGURES + "the policy's status.autogen",
    "validating-policies/autogen/should-not-autogen": _CONFIGURES + "the policy's status.autogen",
    "validating-policies/webhook-configuration/basic/match-labels": _CONFIGURES + "the webhook configuration",
    "validating-policies/webhook-configuration/basic/multiple": _CONFIGURES + "the webhook configuration",
    "validating-policies/webhook-configuration/basic/single": _CONFIGURES + "the webhook configuration",
    "validating-policies/webhook-configuration/combined": _CONFIGURES + "the webhook configuration",
    "validating-policies/webhook-configuration/fine-grained-tests/match-conditions":
        _CONFIGURES + "the webhook configuration",
    "validating-policies/webhook-configuration/fine-grained-tests/match-constraints":
        _CONFIGURES + "the webhook configuration",
    "validating-policies/webhook-configuration/fine-grained-tests/timeout": _CONFIGURES + "the webhook configuration",
}


def _scenarios() -> list[Path]:
    return sorted(p.parent for sub in ("validating-policies", "namespaced-validating-policies")
                  for p in (ROOT / sub).rglob("chainsaw-test.yaml"))


@present(ROOT, "Kyverno's ValidatingPolicy chainsaw scenarios (lists)")
def test_the_lists_name_real_scenarios() -> None:
    names = {str(p.relative_to(ROOT)) for p in _scenarios()}
    assert sorted(set(NOT_REPLAYABLE) - names) == []
    # these name a scenario or a folder of them
    assert [p for p in NEEDS_OUTSIDE_DATA if not any(n == p or n.startswith(p + "/") for n in names)] == []


def _expects_error(op: dict[str, Any]) -> bool:
    for entry in op.get("expect") or []:
        check = entry.get("check") or {}
        if check.get("($error != null)") is True or check.get("($error)"):
            return True
    return False


def _steps(folder: Path) -> list[tuple[str, Path, bool]]:
    """(kind of step, file, expects an error) in order: policy files and created/applied objects."""
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
                out.append(("object", folder / found.group(1), (script.get("check") or {}).get("($error != null)")
                            is True))
    return out


@pytest.mark.parametrize("folder", cases(ROOT, "Kyverno's ValidatingPolicy chainsaw scenarios", _scenarios,
                                          ids=lambda p: str(p.relative_to(ROOT))))
def test_admission_verdicts(folder: Path) -> None:
    scenario = str(folder.relative_to(ROOT))
    for prefix, why in NEEDS_OUTSIDE_DATA.items():
        if scenario == prefix or scenario.startswith(prefix + "/"):
            pytest.skip(f"offline run cannot decide it: the scenario {why}")
    policy_docs: list[Document] = []
    state: list[Document] = []
    checked = 0
    for kind, path, expects_error in _steps(folder):
        try:
            docs = load_documents([str(path)])
            if kind == "policy" or any(d.api_version.startswith("policies.kyverno.io/") for d in docs):
                # Kyverno's admission webhook refuses an invalid policy or exception; kyrec refuses to load it
                classify([*policy_docs, *docs]).raise_errors()
                policy_docs.extend(docs)
                assert not expects_error, f"{path.name}: Kyverno rejects this policy object, kyrec accepted it"
                continue
        except InputError:
            assert expects_error, f"{path.name}: kyrec refused a policy object Kyverno accepts"
            checked += 1
            continue
        policies = classify(policy_docs)
        deny = {p.meta.key for p in policies.validating if "Deny" in p.validation_actions}
        provider = ObjectsProvider([d.obj for d in state])
        outcome = run_eval(policies, docs, state, kinds=KindTable(),
                           libraries=library_factory(LibraryContext(now=NOW, provider=provider)),
                           options=EvalOptions(now=NOW, user_info=ADMIN))
        names = {d.name for d in docs}
        denied = [(r.policy, r.result, r.message) for r in outcome.results
                  if r.policy in deny and r.result in ("fail", "error") and r.subject.name in names]
        assert bool(denied) == expects_error, (path.name, denied)
        checked += 1
        if not denied:
            state.extend(docs)
    if scenario in NOT_REPLAYABLE:
        assert not checked, f"{scenario} is listed as not replayable, yet the replay checked {checked} verdict(s)"
        pytest.skip(f"not replayable: the scenario {NOT_REPLAYABLE[scenario]}")
    assert checked, f"{scenario}: the replay checked nothing (list it in NOT_REPLAYABLE with a reason if right)"
