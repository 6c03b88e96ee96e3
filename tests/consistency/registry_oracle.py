"""Kyverno's CLI as the oracle of `--registry` (issue 37): the same ImageValidatingPolicies and classic policies
(verifyImages with keys, an imageRegistry context entry), on the same images of the test registry
(tests/registry: signed, unsigned, signed with another key, tampered, attested, signed keyless-style with a
test CA's certificate (good, expired, from another CA), a missing tag, a registry that is down, one that
answers 403 or 500, one that fails TLS), given to
`kubectl-kyverno apply POLICY --resource PODS --registry` and to `kubectl kyrec eval -p POLICY -r PODS
--registry`. Kyverno's results are recorded in testdata/kyverno-truth/registry.json with its
version and commit, per policy case and pod (each pod is one image case), so the golden holds no digest or
port: both change with every push. test_registry_oracle.py replays kyrec against it.

    KYVERNO_BIN_DIR=/path/to/dir KYVERNO_VERSION=v1.17.2 KYVERNO_COMMIT=<sha> \\
        python tests/consistency/registry_oracle.py

What the oracle needs that a cluster would not:
- the test registry speaks plain HTTP on 127.0.0.1, which go-containerregistry (Kyverno's client) and kyrec
  both call over HTTP for a loopback host (name.Registry.Scheme): no insecure-registry option is needed;
- Kyverno's cosign verifier initializes sigstore's TUF client before every verification, keyed ones too, and
  that client always contacts its mirror (kk: pkg/imageverification/imageverifiers/cosign/opts.go
  initializeTuf). Offline the public mirror fails and every image counts as unsigned, so the
  ImageValidatingPolicies name an empty local TUF repository (`registry tuf DIR`, tests/registry/tuf.go)
  and give the transparency-log keys inline (`ctlog.url`, `rekorPubKey`, `ctLogPubKey`: getRekor needs them
  even when `insecureIgnoreTlog` skips the log). kyrec reads none of these fields;
- a classic policy whose verifyImages mutates digests must be Enforce (Kyverno refuses `mutateDigest` in an
  Audit policy).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
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
from tests.registry.failing import failing_host  # noqa: E402
from tests.registry.fixture import OciRegistry  # noqa: E402
from tests.registry.keys import KeyPair, TestCA, make_ca, make_key, make_leaf, notary_chain  # noqa: E402

GOLDEN = ROOT / "testdata" / "kyverno-truth" / "registry.json"
PROVENANCE = "https://slsa.dev/provenance/v0.2"
BUILDER = "https://ci.example/builder"
TIMEOUT = 300

# image case -> how it is pushed: (sign with, attest with, tamper); "missing" is never pushed, "down" names a
# registry nothing listens on; the leaf-* signers are keyless-style (a certificate from a test CA)
_PUSHED: dict[str, tuple[str, str, bool]] = {
    "signed": ("key", "key", False),
    "unsigned": ("", "", False),
    "wrong": ("other", "", False),
    "tampered": ("key", "", True),
    "attested-by-other": ("", "other", False),
    "attestation-tampered": ("", "key", True),
    "keyless": ("leaf", "", False),
    "keyless-expired": ("leaf-expired", "", False),
    "keyless-other-ca": ("leaf-other-ca", "", False),
    "keyless-tampered": ("leaf", "", True),
}
SUBJECT, ISSUER = "dev@example.com", "https://issuer.example"
# Notary image cases -> push.sh's Notary options (the signer: "leaf" from the Notary CA, "stranger" from
# another CA, "rsa" an RSA key (PS256) from an intermediate of the Notary CA); signatures made and stored by
# notation-go (tests/registry/notary.go); "notary-expired" expires a second after signing
_NOTARY_PUSHED: dict[str, tuple[str, tuple[str, ...]]] = {
    "notary-jws": ("leaf", ()),
    "notary-cose": ("leaf", ("--cose",)),
    "notary-wrong": ("stranger", ()),
    "notary-tampered": ("leaf", ("--tamper",)),
    "notary-cose-tampered": ("leaf", ("--cose", "--tamper")),
    "notary-expired": ("leaf", ("--expiry", "1")),
    "notary-rsa": ("rsa", ()),
    "notary-rsa-cose": ("rsa", ("--cose",)),
}
NOTARY_CASES = ("notary-jws", "notary-cose", "notary-rsa", "notary-rsa-cose", "unsigned", "notary-wrong",
                "notary-tampered", "notary-cose-tampered",
                "notary-expired", "missing", "down", "http-403", "tls")


@dataclass(frozen=True)
class Setup:
    """What a policy builder needs: the keys, the local TUF repository, the pods' images."""

    key: KeyPair
    other: KeyPair
    ca: TestCA                      # the keyless signers' root (leaf-other-ca's is another)
    tuf: Path
    images: dict[str, str]          # image case -> reference
    notary_ca: TestCA | None = None     # the Notary signers' root (the trust store of the notary policies)


def _pods(setup: Setup, cases: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": case, "namespace": "default"},
             "spec": {"containers": [{"name": "c", "image": setup.images[case]}]}} for case in cases]


def _ivpol(setup: Setup, name: str, expression: str) -> dict[str, Any]:
    public = setup.key.public
    cosign = {"key": {"data": public},
              "ctlog": {"url": "https://rekor.invalid", "rekorPubKey": public, "ctLogPubKey": public,
                        "insecureIgnoreTlog": True, "insecureIgnoreSCT": True},
              "tuf": {"mirror": f"file://{setup.tuf}/repository",
                      "root": {"path": f"{setup.tuf}/repository/root.json"}}}
    return {"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ImageValidatingPolicy",
            "metadata": {"name": name},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                             "operations": ["CREATE"], "resources": ["pods"]}]},
                     "matchImageReferences": [{"glob": "127.0.0.*"}],
                     "attestors": [{"name": "signer", "cosign": cosign}],
                     "attestations": [{"name": "prov", "intoto": {"type": PROVENANCE}}],
                     "validations": [{"expression": expression, "message": "not verified"}]}}


def ivpol_signature(setup: Setup) -> dict[str, Any]:
    return _ivpol(setup, "signature",
                  "images.containers.map(i, verifyImageSignatures(i, [attestors.signer])).all(e, e > 0)")


def ivpol_attestation(setup: Setup) -> dict[str, Any]:
    return _ivpol(setup, "attestation",
                  "images.containers.all(i, verifyAttestationSignatures(i, attestations.prov, [attestors.signer])"
                  f" > 0 && extractPayload(i, attestations.prov).builder.id == '{BUILDER}')")


def cpol_keys(setup: Setup) -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "keys"},
            "spec": {"background": False, "validationFailureAction": "Enforce", "rules": [{
                "name": "signed", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "verifyImages": [{"imageReferences": ["127.0.0.*"], "attestors": [{"entries": [{"keys": {
                    "publicKeys": setup.key.public,
                    "rekor": {"ignoreTlog": True, "url": "https://rekor.sigstore.dev"},
                    "ctlog": {"ignoreSCT": True}}}]}]}]}]}}


def cpol_image_data(setup: Setup) -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "image-data"},
            "spec": {"background": False, "rules": [{
                "name": "schema", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "context": [{"name": "img", "imageRegistry": {
                    "reference": "{{ request.object.spec.containers[0].image }}"}}],
                "validate": {"message": "schema {{ img.manifest.schemaVersion }}",
                             "deny": {"conditions": {"any": [
                                 {"key": "{{ img.manifest.schemaVersion }}", "operator": "Equals",
                                  "value": 2}]}}}}]}}


# what an ImageValidatingPolicy's getImageData answers (kyverno/sdk imagedataloader ImageDescriptor), field by
# field; Kyverno v1.17.2 cannot read any of them (test_registry_oracle.py DIFFERENCES)
_IMAGE_DATA_CHECKS = " && ".join((
    "d.image == images.containers[0]", "d.registry + '/' + d.repository + ':' + d.tag == d.image",
    "d.identifier == d.tag", "d.digest.startsWith('sha256:')",
    "d.resolvedImage == d.image + '@' + d.digest", "d.manifest.schemaVersion == 2",
    "d.manifest.config.digest.startsWith('sha256:')", "size(d.manifest.layers) == 1",
    "d.config.rootfs.type == 'layers'", "size(d.config.rootfs.diff_ids) == 1"))


def ivpol_image_data(setup: Setup) -> dict[str, Any]:
    policy = _ivpol(setup, "image-data", "false")
    del policy["spec"]["attestations"]
    policy["spec"]["variables"] = [{"name": "d", "expression": "getImageData(images.containers[0])"}]
    policy["spec"]["validations"] = [{"expression": _IMAGE_DATA_CHECKS.replace("d.", "variables.d."),
                                      "message": "unexpected image data"}]
    return policy


# the classic imageRegistry entry's fields, printed in the rule's message: a difference in any shows
def cpol_image_fields(setup: Setup) -> dict[str, Any]:
    policy = cpol_image_data(setup)
    policy["metadata"]["name"] = "image-fields"
    rule = policy["spec"]["rules"][0]
    rule["validate"] = {"message": "image={{ img.image }} resolved={{ img.resolvedImage }} registry={{ img.registry }}"
                                   " repository={{ img.repository }} identifier={{ img.identifier }} schema="
                                   "{{ img.manifest.schemaVersion }} mediaType={{ img.manifest.mediaType }} config="
                                   "{{ img.manifest.config.digest }} layers={{ length(img.manifest.layers) }} "
                                   "diffIDs={{ length(img.configData.rootfs.diff_ids) }} rootfs="
                                   "{{ img.configData.rootfs.type }}",
                        "deny": {"conditions": {"any": [{"key": "{{ img.registry }}", "operator": "NotEquals",
                                                         "value": ""}]}}}
    return policy


def _cpol_keyless(name: str, **identity: str) -> Callable[[Setup], dict[str, Any]]:
    def build(setup: Setup) -> dict[str, Any]:
        policy = cpol_keys(setup)
        policy["metadata"]["name"] = name
        entry = {"roots": setup.ca.pem, "rekor": {"ignoreTlog": True, "url": "https://rekor.sigstore.dev"},
                 "ctlog": {"ignoreSCT": True}, **identity}
        policy["spec"]["rules"][0]["verifyImages"][0]["attestors"] = [{"entries": [{"keyless": entry}]}]
        return policy
    return build


def _ivpol_notary(name: str, tsa: bool = False) -> Callable[[Setup], dict[str, Any]]:
    def build(setup: Setup) -> dict[str, Any]:
        assert setup.notary_ca is not None
        notary: dict[str, Any] = {"certs": {"value": setup.notary_ca.pem}}
        if tsa:
            notary["tsaCerts"] = {"value": setup.ca.pem}    # any CA: a TSA store demands a timestamp
        policy = _ivpol(setup, name, "images.containers.map(i, verifyImageSignatures(i, [attestors.notary]))"
                                     ".all(e, e > 0)")
        policy["spec"]["attestors"] = [{"name": "notary", "notary": notary}]
        del policy["spec"]["attestations"]
        return policy
    return build


def ivpol_notary_intoto(setup: Setup) -> dict[str, Any]:
    """A notary attestor asked for an in-toto attestation: Kyverno's error (OCI 1.1 referrers only)."""
    policy = _ivpol_notary("notary-intoto")(setup)
    policy["spec"]["attestations"] = [{"name": "prov", "intoto": {"type": PROVENANCE}}]
    policy["spec"]["validations"] = [{"expression": "verifyAttestationSignatures(images.containers[0], "
                                                    "attestations.prov, [attestors.notary]) > 0",
                                      "message": "not attested"}]
    return policy


def cpol_notary(setup: Setup) -> dict[str, Any]:
    assert setup.notary_ca is not None
    policy = cpol_keys(setup)
    policy["metadata"]["name"] = "notary"
    policy["spec"]["rules"][0]["verifyImages"] = [{
        "type": "Notary", "imageReferences": ["127.0.0.*"],
        "attestors": [{"entries": [{"certificates": {"cert": setup.notary_ca.pem}}]}]}]
    return policy


# policy case -> (policy builder, the image cases its pods use)
POLICIES: dict[str, tuple[Callable[[Setup], dict[str, Any]], tuple[str, ...]]] = {
    "ivpol-signature": (ivpol_signature, ("signed", "unsigned", "wrong", "tampered", "missing", "down",
                                          "http-403", "http-500", "tls")),
    "ivpol-attestation": (ivpol_attestation, ("signed", "unsigned", "attested-by-other", "attestation-tampered")),
    "cpol-keys": (cpol_keys, ("signed", "unsigned", "wrong", "tampered", "missing", "down",
                              "http-403", "http-500", "tls")),
    "cpol-image-data": (cpol_image_data, ("signed", "missing", "down", "http-403", "tls")),
    "cpol-keyless": (_cpol_keyless("keyless", subject=SUBJECT, issuer=ISSUER),
                     ("keyless", "keyless-expired", "keyless-other-ca", "keyless-tampered", "signed", "unsigned")),
    "cpol-keyless-subject": (_cpol_keyless("keyless-subject", subject="eve@example.com", issuer=ISSUER),
                             ("keyless",)),
    "cpol-keyless-issuer": (_cpol_keyless("keyless-issuer", subject=SUBJECT, issuer="https://other.example"),
                            ("keyless",)),
    "cpol-keyless-wildcard": (_cpol_keyless("keyless-wildcard", subject="*@example.com", issuer="https://*"),
                              ("keyless",)),
    "cpol-keyless-regexp": (_cpol_keyless("keyless-regexp", subjectRegExp="^dev@", issuerRegExp="example$"),
                            ("keyless", "keyless-other-ca")),
    "ivpol-image-data": (ivpol_image_data, ("signed", "missing")),
    "cpol-image-fields": (cpol_image_fields, ("signed", "missing")),
    "ivpol-notary": (_ivpol_notary("notary"), NOTARY_CASES),
    "ivpol-notary-tsa": (_ivpol_notary("notary-tsa", tsa=True), ("notary-jws",)),
    "ivpol-notary-intoto": (ivpol_notary_intoto, ("notary-jws",)),
    "cpol-notary": (cpol_notary, NOTARY_CASES),
}


@dataclass(frozen=True)
class Prepared:
    directory: Path
    setup: Setup
    replace: dict[str, str]         # run-specific text -> its stand-in in the golden's messages
    stops: list[Callable[[], None]] = field(default_factory=list)     # the failing registries' ends

    def close(self) -> None:
        for stop in self.stops:
            stop()


def prepare(registry: OciRegistry, directory: Path) -> Prepared:
    """Keys, images pushed, the TUF repository, and per policy case a policy file and a pods file."""
    keys = directory / "keys"
    key, other = make_key(keys, "ecdsa"), make_key(keys, "ecdsa")
    ca = make_ca()
    leaves = {"leaf": make_leaf(keys, ca, SUBJECT, ISSUER),
              "leaf-expired": make_leaf(keys, ca, SUBJECT, ISSUER, expired=True),
              "leaf-other-ca": make_leaf(keys, make_ca("another CA"), SUBJECT, ISSUER)}
    by_name = {"key": key, "other": other}
    predicate = directory / "predicate.json"
    predicate.write_text(json.dumps({"builder": {"id": BUILDER}}))
    repo = registry.repo("oracle")
    images = {}
    for case, (signer, attester, tamper) in _PUSHED.items():
        args: list[str | Path] = []
        if signer in leaves:
            leaf = leaves[signer]
            args += ["--sign", leaf.private, "--cert", leaf.cert, "--chain", leaf.chain]
        elif signer:
            args += ["--sign", by_name[signer].private]
        if attester:
            args += ["--attest", PROVENANCE, predicate, "--key", by_name[attester].private]
        if tamper:
            args.append("--tamper")
        images[case] = f"{repo}:{case}"
        registry.push(images[case], *args)
    notary_ca = make_ca("kyrec notary root")
    signers = {"leaf": make_leaf(keys, notary_ca, SUBJECT, ISSUER),
               "stranger": make_leaf(keys, make_ca("another notary root"), SUBJECT, ISSUER),
               "rsa": make_leaf(keys, make_ca("notary intermediate", parent=notary_ca), SUBJECT, ISSUER,
                                rsa_key=True)}
    for case, (signer, options) in _NOTARY_PUSHED.items():
        images[case] = f"{repo}:{case}"
        registry.push(images[case], "--notary", notary_chain(signers[signer]), signers[signer].private, *options)
    time.sleep(1.2)                 # notary-expired has expired
    images["missing"] = f"{repo}:missing"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        down = f"127.0.0.1:{sock.getsockname()[1]}"     # closed again: nothing listens there
    images["down"] = f"{down}/app:v1"
    stops: list[Callable[[], None]] = []
    failing = {mode: failing_host(mode, stops, head=True) for mode in ("403", "500", "tls")}
    for mode, host in failing.items():
        images[f"http-{mode}" if mode != "tls" else "tls"] = f"{host}/app:v1"
    tuf = directory / "tuf"
    done = subprocess.run([str(registry.binary), "tuf", str(tuf)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    setup = Setup(key, other, ca, tuf, images, notary_ca)
    for name, (build, cases) in POLICIES.items():
        (directory / f"{name}.policy.yaml").write_text(yaml.safe_dump(build(setup)))
        (directory / f"{name}.pods.yaml").write_text(yaml.safe_dump_all(_pods(setup, cases)))
    path = repo.split("/", 1)[1]
    return Prepared(directory, setup, {repo: "REPO", down: "DOWN", registry.host: "REGISTRY",
                                       f"/v2/{path}/": "/v2/PATH/",
                                       **{host: f"FAILING-{mode.upper()}" for mode, host in failing.items()},
                                       path: "PATH"},     # last: a bare repository name (image data)
                    stops)


_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# Go's time.RFC1123Z, as notation writes a signature's expiry
_TIME = re.compile(r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}")


Rows = dict[str, dict[str, list[dict[str, str]]]]        # policy case -> pod -> results, sorted


def collect(prepared: Any, pods: Iterable[str], rows: list[tuple[str, str, str]], *, ordered: bool = True,
            times: bool = True) -> dict[str, list[dict[str, str]]]:
    """One policy case's rows by pod, messages normalized (`prepared.replace`, digests, and with `times` notation's
    expiry times). `ordered`: Kyverno's report lists one resource's rows in no fixed order (a classic rule's
    mutate-phase and validate-phase rows interleave differently from run to run): sorted, they compare."""
    out: dict[str, list[dict[str, str]]] = {pod: [] for pod in pods}
    for pod, result, message in rows:
        for text, stand_in in prepared.replace.items():
            message = message.replace(text, stand_in)
        message = _DIGEST.sub("sha256:DIGEST", message)
        out[pod].append({"result": result, "message": _TIME.sub("TIME", message) if times else message})
    if not ordered:
        return out
    return {pod: sorted(results, key=lambda r: (r["result"], r["message"])) for pod, results in out.items()}


def results(prepared: Any, cases: Mapping[str, Iterable[str]], exe: Path | None = None, **how: bool) -> Rows:
    """Every policy case's rows (`cases`: its pods by case name), from Kyverno's CLI at `exe`, else from kyrec."""
    return {name: collect(prepared, pods, kyrec_rows(prepared.directory, name) if exe is None
                          else kyverno_rows(exe, prepared.directory, name), **how) for name, pods in cases.items()}


def kyverno_rows(exe: Path, directory: Path, name: str) -> list[tuple[str, str, str]]:
    """`kubectl-kyverno apply NAME.policy.yaml --resource NAME.pods.yaml --registry -p` in `directory` (a TUF
    cache of its own there): (resource name, result, message) of its policy report's results."""
    env = {**os.environ, "TUF_ROOT": str(directory / "tuf-cache")}
    run = subprocess.run([str(exe), "apply", f"{name}.policy.yaml", "--resource", f"{name}.pods.yaml",
                          "--registry", "--remove-color", "-p", "--output-format", "json"],
                         capture_output=True, text=True, timeout=TIMEOUT, cwd=directory, env=env)
    start = run.stdout.find("{")
    if start < 0:
        raise AssertionError(f"{name}: Kyverno's CLI printed no report (exit {run.returncode}):\n"
                             f"{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    report = json.loads(run.stdout[start:])
    return [(r["resources"][0]["name"], r["result"], r.get("message", "")) for r in report.get("results") or []]


def kyrec_rows(directory: Path, name: str) -> list[tuple[str, str, str]]:
    """`kubectl kyrec eval -p NAME.policy.yaml -r NAME.pods.yaml --registry -o json` in `directory`: (subject
    name, result, message) of its results."""
    run = subprocess.run([sys.executable, "-m", "kubectl_kyrec", "eval", "-p", f"{name}.policy.yaml", "-r",
                          f"{name}.pods.yaml", "--registry", "-o", "json"],
                         capture_output=True, text=True, timeout=TIMEOUT, cwd=directory)
    if run.returncode not in (0, 1):
        raise AssertionError(f"{name}: kyrec exit {run.returncode}: {run.stderr[-2000:]}")
    return [(r["subject"]["name"], r["result"], r.get("message", "")) for r in json.loads(run.stdout)["results"]]


def kyverno_results(exe: Path, prepared: Prepared) -> Rows:
    return results(prepared, {name: POLICIES[name][1] for name in POLICIES}, exe)


def kyrec_results(prepared: Prepared) -> Rows:
    return results(prepared, {name: POLICIES[name][1] for name in POLICIES})


def verdicts(rows: Rows) -> dict[str, dict[str, list[str]]]:
    return {name: {pod: [r["result"] for r in results] for pod, results in pods.items()}
            for name, pods in rows.items()}


def load_golden() -> dict[str, Any]:
    return read_golden(GOLDEN)


def main() -> None:
    import tempfile

    from tests.registry import build

    exe = kyverno_exe_or_exit()
    registry = OciRegistry(build.build())
    registry.start()
    try:
        with tempfile.TemporaryDirectory(prefix="kyrec-registry-oracle-") as tmp:
            prepared = prepare(registry, Path(tmp))
            try:
                results = kyverno_results(exe, prepared)
            finally:
                prepared.close()
    finally:
        registry.stop()
    data = {
        "description": "Kyverno's CLI on the registry cases of tests/consistency/registry_oracle.py: "
                       "`kubectl-kyverno apply POLICY --resource PODS --registry -p --output-format json` "
                       "against the test registry; per policy case and pod (one image case each), the report's "
                       "results sorted by (result, message), messages with the repository, registry, down "
                       "registry and digests replaced (REPO, REGISTRY, DOWN, PATH, sha256:DIGEST).",
        "kyverno": kyverno_build(exe),
        "cases": results,
    }
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"{GOLDEN.relative_to(ROOT)}: {json.dumps(verdicts(results))}")


if __name__ == "__main__":
    main()
