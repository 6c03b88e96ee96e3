"""Kyverno's CLI is the oracle of `image.GetMetadata` with `--registry`: its results on the cases of
tests/consistency/image_metadata_oracle.py (run with `--cluster` against a real API server, as its fake context
provider never reads a registry) are recorded in testdata/kyverno-truth/image-metadata.json with its version
and commit. kyrec, run on the same policies and images, must give the same results and messages but for
Kyverno v1.17.2's error row (see V1172_ERROR_ROW) and the registry client's own wording. With
`KYVERNO_BIN_DIR` the CLI is run again (with the real API server) and must still give the recorded results
(skipped, saying why, without it; also under CI, which has no Kyverno)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.consistency.image_metadata_oracle import (
    CASES,
    POLICIES,
    kyrec_results,
    kyverno_results,
    load_golden,
    prepare,
)
from tests.consistency.kyverno_policy_validation import kyverno_build, kyverno_exe
from tests.realapi.fixture import RealServer
from tests.registry.fixture import OciRegistry

# Kyverno v1.17.2 reports a ValidatingPolicy expression's error as rule `evaluation`, "failed to load context:
# E"; Kyverno main (kyrec's reference) as rule "", "error: E" (docs/compatibility.md, `version: ValidatingPolicy
# error row`): the recorded row in main's form
V1172_ERROR_ROW = ("evaluation", "failed to load context: ")
# where go-containerregistry's own text is quoted (`MANIFEST_UNKNOWN: ...`, `unexpected status code 401`, Go's
# `dial tcp ...`, its https-then-http retry) kyrec's client words it otherwise: the message is compared up to it
_CLIENT_TEXT = ("GET http", 'Get "http')


def _as_main(row: dict[str, str]) -> dict[str, str]:
    rule, prefix = V1172_ERROR_ROW
    if row["result"] == "error" and row["rule"] == rule and row["message"].startswith(prefix):
        return {**row, "rule": "", "message": "error: " + row["message"][len(prefix):]}
    return row


def _up_to_client_text(message: str) -> str:
    cut = min((message.find(t) for t in _CLIENT_TEXT if t in message), default=len(message))
    return message[:cut]


def test_the_golden_covers_every_case() -> None:
    golden = load_golden()
    assert golden["kyverno"]["version"] == "v1.17.2" and golden["kyverno"]["commit"]
    assert {name: sorted(pods) for name, pods in golden["cases"].items()} == {
        name: sorted(CASES) for name in POLICIES}


def test_kyrec_gives_kyvernos_results_and_messages(oci_registry: OciRegistry, tmp_path: Path) -> None:
    golden = load_golden()["cases"]
    prepared = prepare(oci_registry, tmp_path)
    try:
        got = kyrec_results(prepared)
    finally:
        prepared.close()
    wrong, compared = [], 0
    for name, pods in golden.items():
        for pod, rows in pods.items():
            expected = [_as_main(r) for r in rows]
            mine = got[name][pod]
            if [(r["rule"], r["result"]) for r in mine] != [(r["rule"], r["result"]) for r in expected]:
                wrong.append((name, pod, expected, mine))
                continue
            for theirs, ours in zip(expected, mine, strict=True):
                compared += 1
                if _up_to_client_text(theirs["message"]) != _up_to_client_text(ours["message"]) or (
                        theirs["message"] == _up_to_client_text(theirs["message"])
                        and theirs["message"] != ours["message"]):
                    wrong.append((name, pod, theirs["message"], ours["message"]))
    assert not wrong
    assert compared == len(POLICIES) * len(CASES)


def test_kyverno_still_gives_the_golden(oci_registry: OciRegistry, request: pytest.FixtureRequest,
                                       tmp_path: Path) -> None:
    exe = kyverno_exe()
    if exe is None:
        pytest.skip("KYVERNO_BIN_DIR is not set: Kyverno's CLI is not run again (the recorded results are "
                    "replayed by test_kyrec_gives_kyvernos_results_and_messages)")
    realapi: RealServer = request.getfixturevalue("realapi")      # started only when Kyverno runs
    assert exe.is_file(), f"KYVERNO_BIN_DIR holds no kubectl-kyverno: {exe}"
    golden = load_golden()
    assert kyverno_build(exe)["version"] == golden["kyverno"]["version"], (
        "another Kyverno version: re-derive with `python tests/consistency/image_metadata_oracle.py`")
    prepared = prepare(oci_registry, tmp_path)
    try:
        namespace = realapi.namespace("metadata")
        realapi.seed(*prepared.pods(namespace))
        got = kyverno_results(exe, prepared, realapi.kubeconfig, namespace)
    finally:
        prepared.close()
    assert got == golden["cases"]
