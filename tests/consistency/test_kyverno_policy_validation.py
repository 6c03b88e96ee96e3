"""Kyverno's CLI is the reference for Kyverno's own policy validation (issue 34): its verdict (refused or
used) on every invalid-policy case of the tests and on a set of valid policies
(tests/consistency/policy_validation_cases.py) is recorded in testdata/kyverno-truth/policy-validation.json
with its version, and kyrec's verdict (`kubectl kyrec lint`: refused when it reports an error) must equal it
for every case but the listed, explained differences (docs/compatibility.md, "Kyverno's own policy
validation"). CI has no Kyverno: the replay needs none. With `KYVERNO_BIN_DIR` the CLI is run again and must
give the recorded verdicts and messages (skipped, saying why, without it; also under CI).
"""

from __future__ import annotations

import pytest

from tests.consistency.kyverno_policy_validation import (
    kyrec_verdict,
    kyverno_build,
    kyverno_exe,
    kyverno_verdict,
    load_golden,
)
from tests.consistency.policy_validation_cases import all_cases, case_digest

_SERVER = ("the API server refuses it on create, and kyrec's schema check follows the API server "
           "(tests/realapi/test_schema_oracle.py); Kyverno's CLI loads Kubernetes' own kinds through "
           "kubectl-validate's built-in OpenAPI, which has no enums or required fields of Go's validation")
_COMPILED_AT_ADMISSION = ("the API server compiles the expressions of Kubernetes' own admission policies on "
                          "create and refuses a bad one; Kyverno's CLI compiles them only when it evaluates "
                          "(an error logged, no refusal)")
# case -> why kyrec's verdict differs from Kyverno's CLI on purpose (each in docs/compatibility.md)
DIFFERENCES: dict[str, str] = {
    "load-errors:ValidatingAdmissionPolicy CEL": _COMPILED_AT_ADMISSION,
    "load-errors:MutatingAdmissionPolicy CEL": _COMPILED_AT_ADMISSION,
    "load-errors:ImageValidatingPolicy CEL": (
        "Kyverno's admission webhook compiles an ImageValidatingPolicy and refuses it (pkg/webhooks/policy, "
        "ivpol's Validate); the CLI compiles it only for an image its matchImageReferences match"),
    "load-errors:DeletingPolicy cron": (
        "the schedule is the admission webhook's check (pkg/cel/policies/dpol/validate.go); the CLI never "
        "parses it"),
    "load-errors:ClusterPolicy validate.cel": (
        "kyrec refuses a classic validate.cel rule whose CEL does not compile, as such a rule can only error; "
        "Kyverno admits the policy (its Validate type-checks validate.cel only with a cluster, and then warns) "
        "and its CLI gives an `error` result per resource"),
    "schema:enum-ValidatingAdmissionPolicy": _SERVER,
    "schema:required-ValidatingAdmissionPolicy": _SERVER,
    "schema:enum-ValidatingAdmissionPolicyBinding": _SERVER,
    "schema:required-ValidatingAdmissionPolicyBinding": _SERVER,
    "schema-extra:vap-null-item": _SERVER,
    "schema-extra:vap-operation": _SERVER,
    "schema-extra:int32-overflow": (
        "the API server refuses an integer beyond int32 where the CRD says `format: int32`; kubectl-validate "
        "does not check formats"),
    "schema-extra:vap-duplicate-variables": (
        "the API server decodes a ValidatingAdmissionPolicy into Go types and keeps repeated list-map keys "
        "(tests/load/test_schema_validation.py); kubectl-validate applies the list-map rule of the OpenAPI"),
    "schema-extra:status-values": (
        "the API server resets `status` on create, so its values are never checked; kubectl-validate checks "
        "them"),
}
# kyrec decides wrongly here, and it is not fixed yet (docs/compatibility.md, "Work not yet done")
NOT_YET: dict[str, str] = {
    "valid-schema:NamespacedGeneratingPolicy": (
        "kyrec gives a NamespacedGeneratingPolicy `generator.Apply(list)` only; Kyverno 1.17's generator library "
        "(pkg/cel/libs/generator/lib.go) has one overload, `Apply(string, list)`, for both generating kinds"),
    "valid-variables:target-in-mutate-existing": (
        "Kyverno checks the variables of the autogen rules too (hasInvalidVariables over ComputeRules): the "
        "autogen copy of a Pod rule's mutate-existing target reading `target.` is refused; kyrec checks the "
        "policy's own rules only"),
}

CASES = {c.name: c for c in all_cases()}
# kinds Kyverno 1.17's CLI does not read from a policy file (its loader has no schema for them: the cleanup
# policies, and admissionregistration.k8s.io/v1 MutatingAdmissionPolicy and its binding, whose v1alpha1 and
# v1beta1 it reads)
UNREAD_KINDS = ("ClusterCleanupPolicy", "CleanupPolicy", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding")


def _recorded() -> dict[str, dict[str, object]]:
    return {c["name"]: c for c in load_golden()["cases"]}


def test_every_case_has_kyvernos_recorded_verdict() -> None:
    """A case added or changed in the tests needs Kyverno's verdict recorded again (the module's docstring says
    how): without it the comparison below would silently skip it."""
    recorded = _recorded()
    missing = sorted(set(CASES) - set(recorded))
    stale = sorted(n for n in set(CASES) & set(recorded) if recorded[n]["digest"] != case_digest(CASES[n]))
    gone = sorted(set(recorded) - set(CASES))
    assert (missing, stale, gone) == ([], [], [])


def test_the_golden_data_names_its_kyverno() -> None:
    kyverno = load_golden()["kyverno"]
    assert kyverno["version"].startswith("v1.") and len(kyverno.get("commit", "")) == 40


@pytest.mark.parametrize("name", list(CASES))
def test_kyrec_refuses_what_kyverno_refuses(name: str) -> None:
    recorded = _recorded()[name]
    if recorded["verdict"] == "unread":
        # the CLI cannot read the kind from a policy file: it has no verdict to compare
        assert any(f"kind {k} not found" in str(recorded["message"]) for k in UNREAD_KINDS), recorded["message"]
        return
    refused, errors = kyrec_verdict(CASES[name])
    kyverno_refused = recorded["verdict"] == "refused"
    if name in DIFFERENCES or name in NOT_YET:
        assert refused != kyverno_refused, f"{name} no longer differs: remove it from DIFFERENCES or NOT_YET"
        return
    assert refused == kyverno_refused, (name, recorded["message"], errors)


def test_the_differences_are_explained_and_counted() -> None:
    assert set(DIFFERENCES) | set(NOT_YET) <= set(CASES)
    assert all(len(reason) > 20 for reason in [*DIFFERENCES.values(), *NOT_YET.values()])
    verdicts = [c["verdict"] for c in load_golden()["cases"]]
    compared = len(verdicts) - verdicts.count("unread")
    # the numbers docs/compatibility.md gives: keep them true
    assert (len(verdicts), verdicts.count("refused"), verdicts.count("accepted"), verdicts.count("unread"),
            compared - len(DIFFERENCES) - len(NOT_YET), len(DIFFERENCES), len(NOT_YET)) == (
        185, 114, 50, 21, 148, 14, 2)


def _head(message: str) -> list[str]:
    return message.split(": ")[:2]


def test_kyvernos_cli_gives_the_recorded_verdicts() -> None:
    exe = kyverno_exe()
    if exe is None:
        pytest.skip("KYVERNO_BIN_DIR not set: Kyverno's CLI is not run (CI has none; the recorded verdicts are "
                    "replayed above)")
    assert exe.is_file(), f"{exe} does not exist"
    golden = load_golden()
    build = kyverno_build(exe)
    if build.get("commit") != golden["kyverno"].get("commit"):
        pytest.skip(f"the verdicts are of Kyverno {golden['kyverno']}, this CLI is {build}")
    recorded = _recorded()
    differ = []
    for name, case in CASES.items():
        got = kyverno_verdict(exe, case)
        want = recorded[name]
        # the message's first two parts only: past them, which of several problems Kyverno names first, and
        # the order of a list of schema errors, follow Go's map order, which changes from run to run
        if (got["verdict"], _head(got["message"])) != (want["verdict"], _head(str(want["message"]))):
            differ.append((name, got["message"], want["message"]))
    assert not differ, differ
