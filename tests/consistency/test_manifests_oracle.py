"""Kyverno's CLI is the oracle of `validate.manifests` (issue 37): its results on the signed-manifest cases of
tests/consistency/manifests_oracle.py (ECDSA, RSA and Ed25519 keys; one key, any of two, both of two;
objects signed as they are, as a .tar.gz, tampered, signed with another key or a broken signature, with
extra or ignored fields, reordered list items, a message without the object's kind, no message) are
recorded in testdata/kyverno-truth/manifests.json with its version. kyrec, run on the same policies and on
freshly signed objects, must give the same results and messages but for the listed, explained differences.
With `KYVERNO_BIN_DIR` the CLI is run again and must still give the recorded results.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.consistency.kyverno_policy_validation import kyverno_exe  # noqa: E402
from tests.consistency.manifests_oracle import (
    kyrec_results,
    kyverno_results,
    load_golden,
    prepare,
    verdicts,
)

# (policy case, object) -> kyrec's verdicts where they differ from Kyverno's CLI on purpose, and why
DIFFERENCES: dict[tuple[str, str], tuple[list[str], str]] = {
    (policy, "ignored-field"): (["fail"] if policy != "any-of-a-b" else ["error"], (
        "a NodePort Service: kyrec evaluates it as the API server stores it, with `externalTrafficPolicy: "
        "Cluster` defaulted (docs/compatibility.md, manifests as the API server would store them), which the "
        "signed manifest does not hold, so the direct match finds a diff as admission in a cluster would; "
        "Kyverno's CLI compares the file as written"))
    for policy in ("key-a", "ignore-fields", "any-of-a-b")
}


def test_the_golden_covers_every_case(tmp_path: Path) -> None:
    golden = load_golden()
    assert golden["kyverno"]["version"]
    prepared = prepare(tmp_path)
    assert sorted(golden["cases"]) == prepared.names
    for name, objects in golden["cases"].items():
        assert list(objects) == prepared.objects, name
    for (name, obj), (expected, _) in DIFFERENCES.items():
        assert verdicts(golden["cases"])[name][obj] != expected, f"{name}/{obj} is no longer a difference"


def test_kyrec_gives_kyvernos_results_and_messages(tmp_path: Path) -> None:
    golden = load_golden()["cases"]
    got = kyrec_results(prepare(tmp_path))
    wrong = {}
    for name, objects in golden.items():
        for obj, results in objects.items():
            if (name, obj) in DIFFERENCES:
                if [r["result"] for r in got[name][obj]] != DIFFERENCES[name, obj][0]:
                    wrong[f"{name}/{obj}"] = {"kyrec": got[name][obj], "expected": DIFFERENCES[name, obj][0]}
            elif got[name][obj] != results:
                wrong[f"{name}/{obj}"] = {"kyrec": got[name][obj], "kyverno": results}
    assert not wrong, wrong


def test_the_cases_decide_every_way() -> None:
    # not vacuous: the golden holds passes, failures (diff found, message not found) and errors (signatures)
    golden = load_golden()["cases"]
    messages = [r["message"] for objects in golden.values() for results in objects.values() for r in results]
    results = {r["result"] for objects in golden.values() for rs in objects.values() for r in rs}
    assert results == {"pass", "fail", "error"}
    for phrase in ("diff found", "message not found", "failed to find a YAML manifest in the gzipped message",
                   "invalid signature when validating ASN.1", "crypto/rsa: verification error",
                   "Invalid IEEE_P1363 encoded bytes", "verifiedCount 2; requiredCount 2"):
        assert any(phrase in m for m in messages), phrase


def test_kyverno_still_gives_the_recorded_results(tmp_path: Path) -> None:
    exe = kyverno_exe()
    if exe is None or not exe.is_file():
        pytest.skip("KYVERNO_BIN_DIR is not set: the recorded results are replayed, Kyverno's CLI is not rerun")
    assert kyverno_results(exe, prepare(tmp_path)) == load_golden()["cases"]
