"""Kyverno's CLI is the reference for the policies `convert` writes (issue 38): its rows on the converted
kyverno-policies-legacy suites are recorded in testdata/kyverno-truth/convert.json with its version and
commit (tests/consistency/convert_kyverno_oracle.py). `kubectl kyrec test` on the same converted suites must
pass and fail the same rows but for the listed, explained differences. With `KYVERNO_BIN_DIR` the CLI is run
again on a sample of the suites (every tenth, and each suite with a listed difference) and must still give
the recorded rows; without it that test is skipped, visibly."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.consistency.convert_kyverno_oracle import (
    converted_suites,
    kyrec_rows,
    kyverno_passes,
    kyverno_rows,
    load_golden,
)
from tests.consistency.kyverno_policy_validation import kyverno_exe  # noqa: E402
from tests.shared_inputs import present, shared

# (suite, key) -> (kyrec's verdict on the row, why it differs from Kyverno's CLI)
# (none now: `other/add-labels` and `karpenter/add-karpenter-daemonset-priority-class` were listed while convert
# wrote a CEL map inside a map below `Object{...}`, which Kubernetes' patcher refuses and kyrec's engine applied;
# both write typed literals now and Kyverno's CLI applies them, docs/convert.md)
DIFFERENCES: dict[tuple[str, str], tuple[bool, str]] = {}
# suites Kyverno's CLI runs no test of (its error recorded in the golden) -> why
KYVERNO_ERRORS: dict[str, str] = {
    "other-cel/memory-requests-equal-limits": (
        "the suite's CronJob `hello` is batch/v1beta1, which the CLI's REST mapper does not know: for a "
        "ValidatingPolicy it stops the whole run (`failed to map gvk to gvr`), where for the ClusterPolicy it "
        "passed the row without checking; kyrec fails that one row (`Not found`, docs/convert.md)"),
}
# custom kinds (convert names them by the guessed plural, docs/convert.md "Custom kinds"): the CLI's offline REST
# mapper knows built-in kinds only (kk: pkg/utils/restmapper GetRESTMapper, data.APIGroupResources), so a
# ValidatingPolicy on one stops the run (`failed to map gvk to gvr`), where it passed the ClusterPolicy's rows;
# `kubectl kyrec test` passes every row of these converted suites (tests/consistency/convert_suites_oracle.py)
_CUSTOM_KIND = ("the suite's resources are custom kinds, which the CLI's offline REST mapper does not know: for a "
                "ValidatingPolicy it stops the whole run (`failed to map gvk to gvr`)")
_REMOVED_VERSION = ("the suite holds resources of built-in versions the CLI's REST mapper no longer knows "
                    "(batch/v1beta1 CronJob, flowcontrol v1beta3 FlowSchema): for a ValidatingPolicy it stops the "
                    "whole run")
KYVERNO_ERRORS.update({name: _CUSTOM_KIND for name in (
    "kasten-cel/k10-hourly-rpo", "kasten/kasten-3-2-1-backup", "openshift-cel/check-routes",
    "openshift-cel/disallow-deprecated-apis", "openshift-cel/enforce-etcd-encryption",
    "openshift/disallow-deprecated-apis", "velero-cel/block-velero-restore", "velero-cel/validate-cron-schedule")})
KYVERNO_ERRORS.update({name: _REMOVED_VERSION for name in (
    "best-practices-cel/check-deprecated-apis", "best-practices/check-deprecated-apis")})


@present(shared("corpus"), "convert: Kyverno's CLI on the converted corpus suites")
def test_kyrec_test_agrees_with_kyverno_on_the_converted_suites(tmp_path: Path) -> None:
    golden = load_golden()
    assert golden["kyverno"]["version"] and golden["kyverno"].get("commit")
    suites = golden["suites"]
    assert len(suites) > 100
    converted = dict(converted_suites(tmp_path))
    # kyrec converts the suites the golden records, no more and no fewer (else: record it again)
    assert sorted(converted) == sorted([*suites, *golden["errors"]])
    assert sorted(golden["errors"]) == sorted(KYVERNO_ERRORS)
    wrong: dict[str, object] = {}
    compared_by_policy: list[str] = []
    for name, suite_dir in converted.items():
        if name in KYVERNO_ERRORS:
            continue
        theirs = kyverno_passes(suites[name])
        ours = kyrec_rows(suite_dir)
        if sorted(ours) != sorted(theirs):
            # a GeneratingPolicy row: the CLI names the generated resource (`/<name>`, no kind), kyrec the
            # trigger; such suites are compared per policy (every row of it passes, or not)
            generated = {k.split(" ")[0] for k in theirs if k.split(" ")[1] == ""}
            if not generated or {k.split(" ")[0] for k in ours} != {k.split(" ")[0] for k in theirs}:
                wrong[name] = {"kyrec keys": sorted(ours), "kyverno keys": sorted(theirs)}
                continue
            ours = {p: all(ok for k, ok in ours.items() if k.split(" ")[0] == p) for p in generated}
            theirs = {p: all(ok for k, ok in theirs.items() if k.split(" ")[0] == p) for p in generated}
            compared_by_policy.append(name)
        for key, passed in ours.items():
            expected = DIFFERENCES.get((name, key), (theirs[key], ""))[0]
            if passed != expected:
                wrong[f"{name}: {key}"] = {"kyrec": passed, "kyverno": suites[name].get(key, theirs[key])}
    assert not wrong, wrong
    assert sorted(compared_by_policy) == ["best-practices/add-network-policy", "best-practices/add-ns-quota",
                                          "other/create-default-pdb"]
    # each listed difference is still one: Kyverno's CLI decides the row otherwise
    for (name, key), (ours_expected, _) in DIFFERENCES.items():
        assert kyverno_passes(suites[name])[key] != ours_expected, f"{name}: {key} is no longer a difference"
    # not vacuous: the rows hold expected failures as well as passes (the RESULT says whether the row holds)
    reasons = {reason for rows in suites.values() for held in rows.values() for _, reason in held}
    assert "Ok" in reasons


@present(shared("corpus"), "convert: Kyverno's CLI on the converted corpus suites")
def test_kyverno_still_gives_the_recorded_rows(tmp_path: Path) -> None:
    exe = kyverno_exe()
    if exe is None or not exe.is_file():
        pytest.skip("KYVERNO_BIN_DIR is not set: the recorded rows are replayed, Kyverno's CLI is not rerun")
    suites = load_golden()["suites"]
    sample = sorted(suites)[::10] + sorted({name for name, _ in DIFFERENCES})
    for name, suite_dir in converted_suites(tmp_path, sample):
        assert kyverno_rows(exe, suite_dir) == suites[name], name
