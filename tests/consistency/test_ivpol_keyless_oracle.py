"""Kyverno's CLI is the oracle of ImageValidatingPolicy keyless attestors: its results on the cases of
tests/consistency/ivpol_keyless_oracle.py are recorded in testdata/kyverno-truth/ivpol-keyless.json with its
version and commit. kyrec, run on the same policies and images, must give Kyverno's result wherever it
decides, and `undetermined` (the TUF trusted root decides) exactly where a signature passes every other check;
never a `fail` where Kyverno passes. With `KYVERNO_BIN_DIR` the CLI is run again and must still give the
recorded results (skipped, saying why, without it; also under CI, which has no Kyverno)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubectl_kyrec.model import UNDETERMINED
from tests.consistency.ivpol_keyless_oracle import POLICIES, kyrec_results, kyverno_results, load_golden, prepare
from tests.consistency.kyverno_policy_validation import kyverno_build, kyverno_exe
from tests.registry.fixture import OciRegistry

# (policy case, pod) kyrec leaves undetermined: a signature passes every check but the chain, which Kyverno
# checks against its TUF trusted root (here the test CA: `other-ca` is not in it, so Kyverno fails that one)
UNDECIDED = {("keyless", "good"), ("keyless", "other-ca"), ("keyless-other-roots", "good"),
             ("keyless-other-roots", "other-ca"), ("keyless-no-roots", "good"), ("keyless-regexp", "good"),
             ("keyless-second-identity", "good")}


def test_the_golden_covers_every_case() -> None:
    golden = load_golden()
    assert golden["kyverno"]["version"] == "v1.17.2" and golden["kyverno"]["commit"]
    assert {name: sorted(pods) for name, pods in golden["cases"].items()} == {
        name: sorted(cases) for name, (_, _, cases) in POLICIES.items()}
    # the policy's roots change nothing in Kyverno: another CA's roots, or none, pass the TUF CA's signature
    assert golden["cases"]["keyless-other-roots"]["good"][0]["result"] == "pass"
    assert golden["cases"]["keyless-no-roots"]["good"][0]["result"] == "pass"


def test_kyrec_decides_as_kyverno_or_leaves_it_to_the_trust_root(oci_registry: OciRegistry, tmp_path: Path) -> None:
    golden = load_golden()["cases"]
    got = kyrec_results(prepare(oci_registry, tmp_path))
    undecided, wrong, decided = set(), [], 0
    for name, pods in golden.items():
        for pod, rows in pods.items():
            [theirs], [ours] = rows, got[name][pod]
            if ours["result"] == UNDETERMINED:
                assert "trusted root of the attestor's TUF repository" in ours["message"], ours
                undecided.add((name, pod))
            elif (ours["result"], ours["message"]) != (theirs["result"], theirs["message"]):
                wrong.append((name, pod, theirs, ours))
            else:
                decided += 1
    assert not wrong
    assert undecided == UNDECIDED
    assert decided == sum(len(cases) for _, _, cases in POLICIES.values()) - len(UNDECIDED)


def test_kyverno_still_gives_the_golden(oci_registry: OciRegistry, tmp_path: Path) -> None:
    exe = kyverno_exe()
    if exe is None:
        pytest.skip("KYVERNO_BIN_DIR is not set: Kyverno's CLI is not run again (the recorded results are "
                    "replayed by test_kyrec_decides_as_kyverno_or_leaves_it_to_the_trust_root)")
    assert exe.is_file(), f"KYVERNO_BIN_DIR holds no kubectl-kyverno: {exe}"
    golden = load_golden()
    assert kyverno_build(exe)["version"] == golden["kyverno"]["version"], (
        "another Kyverno version: re-derive with `python tests/consistency/ivpol_keyless_oracle.py`")
    assert kyverno_results(exe, prepare(oci_registry, tmp_path)) == golden["cases"]
