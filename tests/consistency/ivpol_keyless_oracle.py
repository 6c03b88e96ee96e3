"""Kyverno's CLI as the oracle of ImageValidatingPolicy `keyless` attestors with `--registry` (issue 37): images
of the test registry signed keyless-style by leaves of a test CA (good, expired, from another CA, tampered),
unsigned, and signed with a key, under policies whose identities match or not, given to
`kubectl-kyverno apply POLICY --resource PODS --registry -p`. Its results are recorded in
testdata/kyverno-truth/ivpol-keyless.json with its version and commit; test_ivpol_keyless_oracle.py replays
kyrec (`kubectl kyrec eval -p POLICY -r PODS --registry`) against it.

Kyverno checks a keyless signature's chain against the trusted root of the attestor's TUF repository, never
the policy's `roots` (docs/compatibility.md), so the policies name a local TUF repository holding the test CA
as Sigstore's Fulcio root and in its `trusted_root.json` (`registry tuf DIR --fulcio CA.pem`,
tests/registry/tuf.go), and the transparency-log keys inline (getRekor needs them even when the log is
skipped). kyrec reads none of these: where a signature passes every check but the chain it answers
`undetermined`, and where it counts 0 Kyverno must too.

    KYVERNO_BIN_DIR=/path/to/dir KYVERNO_VERSION=v1.17.2 KYVERNO_COMMIT=<sha> \\
        python tests/consistency/ivpol_keyless_oracle.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.consistency.kyverno_policy_validation import (  # noqa: E402
    kyverno_build,
    kyverno_exe_or_exit,
    read_golden,
)
from tests.consistency.registry_oracle import Rows, results  # noqa: E402
from tests.registry.fixture import OciRegistry  # noqa: E402
from tests.registry.keys import make_ca, make_key, make_leaf  # noqa: E402

GOLDEN = ROOT / "testdata" / "kyverno-truth" / "ivpol-keyless.json"
TIMEOUT = 300
SUBJECT, ISSUER = "dev@example.com", "https://issuer.example"
IMAGES = ("good", "expired", "other-ca", "tampered", "unsigned", "key-signed")
MATCHING = [{"subject": SUBJECT, "issuer": ISSUER}]

# policy case -> (the attestor's identities, which roots it names: "ca" the TUF's CA, "other" another, "" none,
# the image cases its pods use)
POLICIES: dict[str, tuple[list[dict[str, str]], str, tuple[str, ...]]] = {
    "keyless": (MATCHING, "ca", IMAGES),
    # Kyverno checks the chain against its TUF trusted root: the policy's roots change nothing
    "keyless-other-roots": (MATCHING, "other", ("good", "other-ca")),
    "keyless-no-roots": (MATCHING, "", ("good",)),
    "keyless-subject": ([{"subject": "eve@example.com", "issuer": ISSUER}], "ca", ("good",)),
    "keyless-issuer": ([{"subject": SUBJECT, "issuer": "https://other.example"}], "ca", ("good",)),
    # cosign compares the subject exactly: no wildcards
    "keyless-pattern": ([{"subject": "*@example.com", "issuer": ISSUER}], "ca", ("good",)),
    "keyless-regexp": ([{"subjectRegExp": "^dev@", "issuerRegExp": "example$"}], "ca", ("good", "expired")),
    "keyless-regexp-mismatch": ([{"subjectRegExp": "^eve@"}], "ca", ("good",)),
    "keyless-second-identity": ([{"subject": "eve@example.com"}, {"issuer": ISSUER}], "ca", ("good",)),
}


@dataclass(frozen=True)
class Prepared:
    directory: Path
    replace: dict[str, str]


def _policy(name: str, identities: list[dict[str, str]], roots: str, tuf: Path, log_key: str) -> dict[str, Any]:
    keyless: dict[str, Any] = {"identities": identities}
    if roots:
        keyless["roots"] = roots
    cosign = {"keyless": keyless,
              "ctlog": {"url": "https://rekor.invalid", "rekorPubKey": log_key, "ctLogPubKey": log_key,
                        "insecureIgnoreTlog": True, "insecureIgnoreSCT": True},
              "tuf": {"mirror": f"file://{tuf}/repository", "root": {"path": f"{tuf}/repository/root.json"}}}
    return {"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ImageValidatingPolicy",
            "metadata": {"name": name},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                             "operations": ["CREATE"], "resources": ["pods"]}]},
                     "matchImageReferences": [{"glob": "127.0.0.*"}],
                     "attestors": [{"name": "signer", "cosign": cosign}],
                     "validations": [{"expression": "images.containers.map(i, verifyImageSignatures(i, "
                                                    "[attestors.signer])).all(e, e > 0)",
                                      "message": "not verified"}]}}


def prepare(registry: OciRegistry, directory: Path) -> Prepared:
    """The CA, the images pushed, the TUF repository holding the CA, per policy case a policy and pods file."""
    keys = directory / "keys"
    ca, other_ca = make_ca(), make_ca("another CA")
    leaf = make_leaf(keys, ca, SUBJECT, ISSUER)
    signers = {"good": (leaf, ()), "expired": (make_leaf(keys, ca, SUBJECT, ISSUER, expired=True), ()),
               "other-ca": (make_leaf(keys, other_ca, SUBJECT, ISSUER), ()), "tampered": (leaf, ("--tamper",))}
    key = make_key(keys, "ecdsa")
    repo = registry.repo("keyless-oracle")
    images = {case: f"{repo}:{case}" for case in IMAGES}
    for case, (signer, extra) in signers.items():
        registry.push(images[case], "--sign", signer.private, "--cert", signer.cert, "--chain", signer.chain, *extra)
    registry.push(images["unsigned"])
    registry.push(images["key-signed"], "--sign", key.private)
    (directory / "ca.pem").write_text(ca.pem)
    tuf = directory / "tuf"
    done = subprocess.run([str(registry.binary), "tuf", str(tuf), "--fulcio", str(directory / "ca.pem")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    for name, (identities, roots, cases) in POLICIES.items():
        pem = {"ca": ca.pem, "other": other_ca.pem, "": ""}[roots]
        (directory / f"{name}.policy.yaml").write_text(yaml.safe_dump(_policy(name, identities, pem, tuf, key.public)))
        (directory / f"{name}.pods.yaml").write_text(yaml.safe_dump_all(
            [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": case, "namespace": "default"},
              "spec": {"containers": [{"name": "c", "image": images[case]}]}} for case in cases]))
    return Prepared(directory, {repo: "REPO", registry.host: "REGISTRY"})


def kyverno_results(exe: Path, prepared: Prepared) -> Rows:
    return results(prepared, {name: POLICIES[name][2] for name in POLICIES}, exe, ordered=False, times=False)


def kyrec_results(prepared: Prepared) -> Rows:
    return results(prepared, {name: POLICIES[name][2] for name in POLICIES}, ordered=False, times=False)


def load_golden() -> dict[str, Any]:
    return read_golden(GOLDEN)


def main() -> None:
    import tempfile

    from tests.registry import build

    exe = kyverno_exe_or_exit()
    registry = OciRegistry(build.build())
    registry.start()
    try:
        with tempfile.TemporaryDirectory(prefix="kyrec-keyless-oracle-") as tmp:
            results = kyverno_results(exe, prepare(registry, Path(tmp)))
    finally:
        registry.stop()
    data = {
        "description": "Kyverno's CLI on the ImageValidatingPolicy keyless cases of "
                       "tests/consistency/ivpol_keyless_oracle.py: `kubectl-kyverno apply POLICY --resource PODS "
                       "--registry -p --output-format json` against the test registry, the attestors' TUF "
                       "repository holding the test CA as Fulcio's root and trusted root; per policy case and "
                       "pod (one image case each), the report's results (REPO, REGISTRY, sha256:DIGEST stand in).",
        "kyverno": kyverno_build(exe),
        "cases": results,
    }
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"{GOLDEN.relative_to(ROOT)}: " + json.dumps(
        {name: {pod: [r["result"] for r in rows] for pod, rows in pods.items()} for name, pods in results.items()}))


if __name__ == "__main__":
    main()
