"""Kyverno's CLI as the oracle of `validate.manifests` (issue 37): ClusterPolicies whose rules verify signed YAML
manifests with public keys (ECDSA, RSA, Ed25519; one key, any one of two, both of two), on objects signed
as sigstore/k8s-manifest-sigstore signs them (`kubectl sigstore sign`: the manifest gzipped, or a .tar.gz of
it gzipped, base64 in `cosign.sigstore.dev/message`, each signature over the gunzipped bytes in
`cosign.sigstore.dev/signature`, `signature_1`, ...): signed as they are, tampered after signing, signed
with another key, with a broken signature, with extra fields, a wrong kind in the message, no message.

`kubectl-kyverno apply POLICY --resource OBJECTS -p --output-format json` and `kubectl kyrec eval -p POLICY
-r OBJECTS -o json` run on the same files; Kyverno's results are recorded in
testdata/kyverno-truth/manifests.json with its version, per policy case and object, messages as they are
(no key, digest or time appears in them, so fresh keys give the same text).

    KYVERNO_BIN_DIR=/path/to/dir KYVERNO_VERSION=v1.17.2 KYVERNO_COMMIT=<sha> \\
        python tests/consistency/manifests_oracle.py
"""

from __future__ import annotations

import base64
import copy
import gzip
import io
import json
import subprocess
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.consistency.kyverno_policy_validation import (  # noqa: E402
    kyverno_build,
    kyverno_exe_or_exit,
    read_golden,
)

GOLDEN = ROOT / "testdata" / "kyverno-truth" / "manifests.json"
TIMEOUT = 300
DOMAIN = "cosign.sigstore.dev"

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey


def make_key(kind: str) -> PrivateKey:
    if kind == "ecdsa":
        return ec.generate_private_key(ec.SECP256R1())
    if kind == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return ed25519.Ed25519PrivateKey.generate()


def public_pem(key: PrivateKey) -> str:
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode().strip()


def sign_bytes(key: PrivateKey, data: bytes) -> bytes:
    """What cosign's signers write: ECDSA ASN.1 over SHA-256, RSA PKCS#1 v1.5 SHA-256, Ed25519 plain."""
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return key.sign(data, ec.ECDSA(hashes.SHA256()))
    if isinstance(key, rsa.RSAPrivateKey):
        return key.sign(data, padding.PKCS1v15(), hashes.SHA256())
    return key.sign(data)


def tar_gz(name: str, data: bytes) -> bytes:
    """`kubectl sigstore sign`'s message body: a .tar.gz holding the manifest file."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def signed(obj: dict[str, Any], keys: list[PrivateKey], *, manifest: dict[str, Any] | None = None,
           as_tar: bool = False, broken: bool = False) -> dict[str, Any]:
    """`obj` with the message (of `manifest`, default `obj` itself) and one signature per key."""
    body = yaml.safe_dump(manifest if manifest is not None else obj, sort_keys=False).encode()
    raw = tar_gz("manifest/resource.yaml", body) if as_tar else body
    annotations = {f"{DOMAIN}/message": base64.b64encode(gzip.compress(raw)).decode()}
    for i, key in enumerate(keys):
        sig = sign_bytes(key, raw + b"x" if broken else raw)
        annotations[f"{DOMAIN}/signature" + (f"_{i}" if i else "")] = base64.b64encode(sig).decode()
    out = copy.deepcopy(obj)
    out.setdefault("metadata", {}).setdefault("annotations", {}).update(annotations)
    return out


def service(name: str, port: int = 80) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"ports": [{"port": port, "protocol": "TCP", "targetPort": 9376}],
                     "selector": {"app": "web"}}}


def configmap(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": dict(data)}


@dataclass(frozen=True)
class Keys:
    a: PrivateKey           # ECDSA
    b: PrivateKey           # ECDSA
    rsa: PrivateKey
    ed: PrivateKey


def make_keys() -> Keys:
    return Keys(make_key("ecdsa"), make_key("ecdsa"), make_key("rsa"), make_key("ed25519"))


def _entry(key: PrivateKey) -> dict[str, Any]:
    return {"keys": {"publicKeys": public_pem(key), "signatureAlgorithm": "sha256"}}


def policy(name: str, attestors: list[dict[str, Any]], **manifests: Any) -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": name},
            "spec": {"background": False, "rules": [{
                "name": "verify", "match": {"any": [{"resources": {"kinds": ["Service", "ConfigMap"]}}]},
                "validate": {"failureAction": "Audit", "manifests": {"attestors": attestors, **manifests}}}]}}


def objects(k: Keys) -> list[dict[str, Any]]:
    """One object per case; its name is the case."""
    extra = service("extra-label")
    extra_manifest = copy.deepcopy(extra)
    extra["metadata"]["labels"] = {"team": "a"}
    empty = configmap("extra-empty-value", {"a": "1"})
    empty_manifest = copy.deepcopy(empty)
    empty["data"]["b"] = ""
    tampered = service("tampered")
    other_kind = service("other-kind")
    ns = service("namespaced")
    ns_object = copy.deepcopy(ns)
    ns_object["metadata"]["namespace"] = "default"
    ignored = service("ignored-field")
    ignored_object = copy.deepcopy(ignored)
    ignored_object["spec"]["clusterIP"] = "10.0.0.7"
    ignored_object["spec"]["type"] = "NodePort"
    swapped = service("reordered")
    swapped["spec"]["ports"].append({"port": 443, "protocol": "TCP", "targetPort": 8443})
    swapped_object = copy.deepcopy(swapped)
    swapped_object["spec"]["ports"].reverse()
    message_only = signed(service("message-only"), [k.a])
    del message_only["metadata"]["annotations"][f"{DOMAIN}/signature"]
    falsy = service("extra-false")
    falsy_object = copy.deepcopy(falsy)
    falsy_object["spec"]["publishNotReadyAddresses"] = False
    zero = service("extra-zero")
    zero_object = copy.deepcopy(zero)
    zero_object["spec"]["ports"][0]["appProtocolVersion"] = 0
    return [
        service("unsigned"),
        message_only,
        signed(falsy_object, [k.a], manifest=falsy),
        signed(zero_object, [k.a], manifest=zero),
        signed(service("signed-a"), [k.a]),
        signed(service("signed-a-tar"), [k.a], as_tar=True),
        signed(service("signed-b"), [k.b]),
        signed(service("signed-ab"), [k.a, k.b]),
        signed(service("signed-ba"), [k.b, k.a]),
        signed(service("signed-rsa"), [k.rsa]),
        signed(service("signed-ed25519"), [k.ed]),
        signed(service("broken-signature"), [k.a], broken=True),
        {**signed(tampered, [k.a]), "spec": service("tampered", 81)["spec"]},
        signed(extra, [k.a], manifest=extra_manifest),
        signed(empty, [k.a], manifest=empty_manifest),
        signed(other_kind, [k.a], manifest=configmap("other-kind", {})),
        signed(ns_object, [k.a], manifest=ns),
        signed(ignored_object, [k.a], manifest=ignored),
        signed(swapped_object, [k.a], manifest=swapped),
    ]


def policies(k: Keys) -> dict[str, dict[str, Any]]:
    return {
        "key-a": policy("key-a", [{"entries": [_entry(k.a)]}]),
        "any-of-a-b": policy("any-of-a-b", [{"count": 1, "entries": [_entry(k.a), _entry(k.b)]}]),
        "both-a-b": policy("both-a-b", [{"entries": [_entry(k.a), _entry(k.b)]}]),
        "rsa": policy("rsa", [{"entries": [_entry(k.rsa)]}]),
        "ed25519": policy("ed25519", [{"entries": [_entry(k.ed)]}]),
        "ignore-fields": policy("ignore-fields", [{"entries": [_entry(k.a)]}], ignoreFields=[
            {"objects": [{"kind": "Service"}], "fields": ["metadata.labels.team"]},
            {"objects": [{"kind": "ConfigMap"}], "fields": ["data.b"]}]),
    }


@dataclass(frozen=True)
class Prepared:
    directory: Path
    names: list[str]                    # the policy cases
    objects: list[str]                  # the object cases


def prepare(directory: Path, keys: Keys | None = None) -> Prepared:
    keys = keys or make_keys()
    objs = objects(keys)
    (directory / "objects.yaml").write_text(yaml.safe_dump_all(objs, sort_keys=False))
    pols = policies(keys)
    for name, doc in pols.items():
        (directory / f"{name}.policy.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return Prepared(directory, sorted(pols), [o["metadata"]["name"] for o in objs])


Rows = dict[str, dict[str, list[dict[str, str]]]]        # policy case -> object -> results


def _collect(prepared: Prepared, rows: list[tuple[str, str, str]]) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {name: [] for name in prepared.objects}
    for name, result, message in rows:
        out[name].append({"result": result, "message": message})
    return out


def _run(prepared: Prepared, argv: Callable[[str], list[str]], parse: Callable[[str], list[tuple[str, str, str]]],
         ok: tuple[int, ...]) -> Rows:
    out: Rows = {}
    for name in prepared.names:
        run = subprocess.run(argv(name), capture_output=True, text=True, timeout=TIMEOUT, cwd=prepared.directory)
        if run.returncode not in ok:
            raise AssertionError(f"{name}: exit {run.returncode}:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
        out[name] = _collect(prepared, parse(run.stdout))
    return out


def _kyverno_rows(stdout: str) -> list[tuple[str, str, str]]:
    start = stdout.find("{")
    if start < 0:
        raise AssertionError(f"Kyverno's CLI printed no report:\n{stdout[-2000:]}")
    report = json.loads(stdout[start:])
    return [(r["resources"][0]["name"], r["result"], r.get("message", "")) for r in report.get("results") or []]


def kyverno_results(exe: Path, prepared: Prepared) -> Rows:
    """`kubectl-kyverno apply POLICY --resource OBJECTS -p --output-format json`: its report's results."""
    return _run(prepared, lambda name: [str(exe), "apply", f"{name}.policy.yaml", "--resource", "objects.yaml",
                                        "--remove-color", "-p", "--output-format", "json"],
                _kyverno_rows, (0, 1))


def _kyrec_rows(stdout: str) -> list[tuple[str, str, str]]:
    doc = json.loads(stdout)
    return [(r["subject"]["name"], r["result"], r.get("message", "")) for r in doc["results"]]


def kyrec_results(prepared: Prepared) -> Rows:
    """`kubectl kyrec eval -p POLICY -r OBJECTS -o json`: its results."""
    return _run(prepared, lambda name: [sys.executable, "-m", "kubectl_kyrec", "eval", "-p", f"{name}.policy.yaml",
                                        "-r", "objects.yaml", "-o", "json"],
                _kyrec_rows, (0, 1))


def verdicts(rows: Rows) -> dict[str, dict[str, list[str]]]:
    return {name: {obj: [r["result"] for r in results] for obj, results in objs.items()}
            for name, objs in rows.items()}


def load_golden() -> dict[str, Any]:
    return read_golden(GOLDEN)


def main() -> None:
    import tempfile

    exe = kyverno_exe_or_exit()
    with tempfile.TemporaryDirectory(prefix="kyrec-manifests-oracle-") as tmp:
        prepared = prepare(Path(tmp))
        results = kyverno_results(exe, prepared)
    data = {
        "description": "Kyverno's CLI on the signed-manifest cases of tests/consistency/manifests_oracle.py: "
                       "`kubectl-kyverno apply POLICY --resource OBJECTS -p --output-format json`; per policy "
                       "case and object, the report's results in its order, messages as they are.",
        "kyverno": kyverno_build(exe),
        "cases": results,
    }
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"{GOLDEN.relative_to(ROOT)}: {json.dumps(verdicts(results))}")


if __name__ == "__main__":
    main()
