"""Kyverno's CLI is the oracle of `--registry` (issue 37): its results on the registry cases of
tests/consistency/registry_oracle.py (ImageValidatingPolicies and classic verifyImages / imageRegistry
policies on signed, unsigned, wrongly signed, tampered, attested, missing images and a registry that is
down; Notary signatures through classic `type: Notary` rules and ImageValidatingPolicy `notary` attestors)
are recorded in testdata/kyverno-truth/registry.json with its version and commit. kyrec, run on the
same policies against the test registry, must give the same results per policy case and pod but for the
listed, explained differences (docs/compatibility.md). With `KYVERNO_BIN_DIR` the CLI is run again and must
still give the recorded results (skipped, saying why, without it; also under CI, which has no Kyverno).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.consistency.kyverno_policy_validation import kyverno_exe  # noqa: E402
from tests.consistency.registry_oracle import (
    POLICIES,
    kyrec_results,
    kyverno_build,
    kyverno_results,
    load_golden,
    prepare,
    verdicts,
)
from tests.registry.fixture import OciRegistry

# (policy case, pod) -> kyrec's results (sorted) where they differ from Kyverno's on purpose, and why
DIFFERENCES: dict[tuple[str, str], tuple[list[str], str]] = {
    ("cpol-keys", "down"): (["error", "error", "error"], (
        "a registry that cannot be reached: Kyverno's validate phase then fails (`missing digest for <img>`), "
        "a fail whose cause is the network; kyrec reports that row as an error (docs/compatibility.md, "
        "classic verifyImages with --registry)")),
    ("cpol-keys", "tls"): (["error", "error", "error"], (
        "a TLS failure: Kyverno's handleRegistryErrors makes only a refused connection the rule's error, so "
        "its verification and validate phase fail; kyrec reports every registry it could not reach as an "
        "error (docs/compatibility.md, Registries)")),
    # the same two for a classic Notary rule (its mutate phase and validate phase are cosign's)
    ("cpol-notary", "down"): (["error", "error", "error"], "as cpol-keys/down"),
    ("cpol-notary", "tls"): (["error", "error", "error"], "as cpol-keys/tls"),
    ("ivpol-image-data", "signed"): (["pass"], (
        "Kyverno v1.17.2's getImageData hands CEL the Go ImageData struct (impl.go NativeToValue) with no "
        "struct-tag mapping, so none of its fields is readable (`failed to evaluate policy: no such field: "
        "image`); kyrec answers the ImageDescriptor's JSON fields, which every field check of the policy "
        "passes (docs/compatibility.md, getImageData)")),
}


def test_the_golden_covers_every_case() -> None:
    golden = load_golden()
    assert golden["kyverno"]["version"] and golden["kyverno"]["commit"]
    assert {name: sorted(pods) for name, pods in golden["cases"].items()} == {
        name: sorted(cases) for name, (_, cases) in POLICIES.items()}
    for (name, pod), (expected, _) in DIFFERENCES.items():
        assert verdicts(golden["cases"])[name][pod] != expected, f"{name}/{pod} is no longer a difference"


def test_kyrec_gives_kyvernos_results(oci_registry: OciRegistry, tmp_path: Path) -> None:
    expected = verdicts(load_golden()["cases"])
    for (name, pod), (results, _) in DIFFERENCES.items():
        expected[name][pod] = results
    prepared = prepare(oci_registry, tmp_path)
    try:
        got = verdicts(kyrec_results(prepared))
    finally:
        prepared.close()
    wrong = {f"{name}/{pod}": {"kyrec": got[name][pod], "expected": results}
             for name, pods in expected.items() for pod, results in pods.items() if got[name][pod] != results}
    assert not wrong


# where the registry client's own error text is quoted (go-containerregistry's `MANIFEST_UNKNOWN: ...`, its
# HEAD's `unexpected status code 404 Not Found (HEAD responses have no body, ...)`, Go's
# `dial tcp ...` against kyrec's `404 Not Found`, `[Errno 111] ...`), or Kyverno's lazy context loading wraps
# it, the wording differs; every other message must be Kyverno's
_CLIENT_TEXT = ("GET http", 'Get "http', "HEAD http", "failed to substitute variables")


def test_kyrec_gives_kyvernos_messages(oci_registry: OciRegistry, tmp_path: Path) -> None:
    golden = load_golden()["cases"]
    prepared = prepare(oci_registry, tmp_path)
    try:
        got = kyrec_results(prepared)
    finally:
        prepared.close()
    compared, wrong = 0, []
    for name, pods in golden.items():
        for pod, rows in pods.items():
            if (name, pod) in DIFFERENCES:
                continue
            mine = [r["message"] for r in got[name][pod]]
            for row in rows:
                if any(text in row["message"] for text in _CLIENT_TEXT):
                    continue
                compared += 1
                if row["message"] not in mine:
                    wrong.append((name, pod, row["message"], mine))
    assert not wrong
    assert compared >= 40           # most messages are compared, not skipped


def test_kyverno_still_gives_the_golden(oci_registry: OciRegistry, tmp_path: Path) -> None:
    exe = kyverno_exe()
    if exe is None:
        pytest.skip("KYVERNO_BIN_DIR is not set: Kyverno's CLI is not run again (the recorded results are "
                    "replayed by test_kyrec_gives_kyvernos_results)")
    assert exe.is_file(), f"KYVERNO_BIN_DIR holds no kubectl-kyverno: {exe}"
    golden = load_golden()
    assert kyverno_build(exe)["version"] == golden["kyverno"]["version"], (
        "another Kyverno version: re-derive with `python tests/consistency/registry_oracle.py`")
    prepared = prepare(oci_registry, tmp_path)
    try:
        got = kyverno_results(exe, prepared)
    finally:
        prepared.close()
    # messages too: the recorded ones carry stand-ins for everything that changes between runs
    assert got == golden["cases"]
