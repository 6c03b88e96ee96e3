"""Kyverno's CLI is the oracle of Notary-signed OCI 1.1 referrer attestations: its results on the cases of
tests/consistency/notary_referrer_oracle.py are recorded in testdata/kyverno-truth/notary-referrers.json with its
version and commit. kyrec, run on the same policies and images, must give Kyverno's result and message on every
row (ImageValidatingPolicies and classic `type: Notary` attestations). With `KYVERNO_BIN_DIR` the CLI is run
again and must still give the recorded results (skipped, saying why, without it; also under CI, which has no
Kyverno)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.consistency.kyverno_policy_validation import kyverno_build, kyverno_exe
from tests.consistency.notary_referrer_oracle import CASES, kyrec_results, kyverno_results, load_golden, prepare
from tests.registry import build
from tests.registry.fixture import OciRegistry


@pytest.fixture(scope="module")
def no_referrers(oci_registry: OciRegistry) -> Iterator[OciRegistry]:
    """A second registry, without the referrers API (oci_registry first: it skips or fails without Go)."""
    registry = OciRegistry(build.build(), "--no-referrers")
    registry.start()
    try:
        yield registry
    finally:
        registry.stop()


def test_the_golden_covers_every_case() -> None:
    golden = load_golden()
    assert golden["kyverno"]["version"] == "v1.17.2" and golden["kyverno"]["commit"]
    assert {name: sorted(pods) for name, pods in golden["cases"].items()} == {
        name: sorted(cases) for name, cases in CASES.items()}
    attested = {pod: rows[0]["result"] for pod, rows in golden["cases"]["attested"].items()}
    # only a referrer whose signature verifies with the attestor's certificate counts
    assert attested == {"signed": "pass", "unsigned": "fail", "wrong": "fail", "tampered": "fail", "none": "fail",
                        "other-type": "fail", "not-json": "pass", "mixed": "pass", "tag-schema": "pass"}
    # Kyverno reads an unverified referrer's payload too
    assert golden["cases"]["payload"]["unsigned"][0]["result"] == "pass"
    # classic: the verification's row and the validate phase's, both passing only for a verified referrer whose
    # statement meets the conditions
    assert {pod: [r["result"] for r in rows] for pod, rows in golden["cases"]["classic-conditions"].items()} == {
        "signed": ["pass", "pass"], "unsigned": ["fail", "fail"], "tampered": ["fail", "fail"],
        "tag-schema": ["pass", "pass"]}


def test_kyrec_gives_kyvernos_results(oci_registry: OciRegistry, no_referrers: OciRegistry, tmp_path: Path) -> None:
    golden = load_golden()["cases"]
    assert kyrec_results(prepare(oci_registry, no_referrers, tmp_path)) == golden


def test_kyverno_still_gives_the_golden(oci_registry: OciRegistry, no_referrers: OciRegistry,
                                        tmp_path: Path) -> None:
    exe = kyverno_exe()
    if exe is None:
        pytest.skip("KYVERNO_BIN_DIR is not set: Kyverno's CLI is not run again (the recorded results are "
                    "replayed by test_kyrec_gives_kyvernos_results)")
    assert exe.is_file(), f"KYVERNO_BIN_DIR holds no kubectl-kyverno: {exe}"
    golden = load_golden()
    assert kyverno_build(exe)["version"] == golden["kyverno"]["version"], (
        "another Kyverno version: re-derive with `python tests/consistency/notary_referrer_oracle.py`")
    assert kyverno_results(exe, prepare(oci_registry, no_referrers, tmp_path)) == golden["cases"]
