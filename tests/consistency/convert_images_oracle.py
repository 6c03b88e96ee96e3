"""Kyverno's CLI as the reference for converted verifyImages rules (convert/images.py): each classic policy
case below and kyrec's ImageValidatingPolicy conversion of it are given to `kubectl-kyverno apply POLICY
--resource PODS --registry -p` against the test registry (tests/registry: images signed with a key, unsigned,
signed with another key, tampered, signed with Notary), and each pod's verdict (fail where a result fails,
else error where one errors, else pass) is recorded in testdata/kyverno-truth/convert-images.json with the
CLI's version and commit. test_convert_verify_images.py replays kyrec (eval with `--registry` on the same
cases) against it.

    KYVERNO_BIN_DIR=/path/to/dir KYVERNO_VERSION=v1.17.2 KYVERNO_COMMIT=<sha> \\
        python tests/consistency/convert_images_oracle.py

What the CLI needs offline that a cluster would not (tests/consistency/registry_oracle.py says why): the
converted ImageValidatingPolicies' cosign attestors are given, for the CLI's run only, an empty local TUF
repository and the transparency-log keys inline (`tuf`, `ctlog.rekorPubKey`, `ctLogPubKey`), fields kyrec
does not read; the policies as written (kyrec's conversion) are what kyrec evaluates.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kubectl_kyrec.convert.policy import convert_policy  # noqa: E402
from tests.consistency.kyverno_policy_validation import (  # noqa: E402
    kyverno_build,
    kyverno_exe_or_exit,
    read_golden,
)
from tests.registry.fixture import OciRegistry  # noqa: E402
from tests.registry.keys import KeyPair, make_ca, make_key, make_leaf, notary_chain  # noqa: E402

GOLDEN = ROOT / "testdata" / "kyverno-truth" / "convert-images.json"
TIMEOUT = 300
SUBJECT, ISSUER = "dev@example.com", "https://issuer.example"


@dataclass(frozen=True)
class Setup:
    key: KeyPair
    other: KeyPair
    notary_root: str
    images: dict[str, str]          # image case -> reference (by tag, or `<case>@` by digest)


def _cpol(name: str, entry: dict[str, Any], action: str = "Enforce") -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": name},
            "spec": {"background": False, "validationFailureAction": action, "rules": [{
                "name": "signed", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "verifyImages": [entry]}]}}


def _keys(*keys: KeyPair, count: int | None = None, **more: Any) -> dict[str, Any]:
    attestor_set: dict[str, Any] = {"entries": [
        {"keys": {"publicKeys": k.public, "rekor": {"ignoreTlog": True, "url": "https://rekor.sigstore.dev"},
                  "ctlog": {"ignoreSCT": True}}} for k in keys]}
    if count is not None:
        attestor_set["count"] = count
    return {"imageReferences": ["127.0.0.1:*"], "attestors": [attestor_set], **more}


# policy case -> (classic policy builder, the image cases of its pods)
POLICIES: dict[str, tuple[Callable[[Setup], dict[str, Any]], tuple[str, ...]]] = {
    "keys": (lambda s: _cpol("keys", _keys(s.key)),
             ("signed", "unsigned", "wrong", "tampered", "signed@")),
    # Deployments: classic autogen, and the ImageValidatingPolicy autogen of the conversion's extractors
    "keys-controllers": (lambda s: _cpol("keys-controllers", _keys(s.key)),
                         ("deployment:signed", "deployment:unsigned", "cronjob:signed", "cronjob:unsigned")),
    "count-one": (lambda s: _cpol("count-one", _keys(s.other, s.key, count=1)), ("signed", "wrong", "unsigned")),
    "count-all": (lambda s: _cpol("count-all", _keys(s.other, s.key)), ("signed", "wrong")),
    "digest-required": (lambda s: _cpol("digest-required", _keys(s.key, mutateDigest=False)),
                        ("signed", "signed@", "wrong@")),
    "not-required": (lambda s: _cpol("not-required", _keys(s.key, required=False, verifyDigest=False,
                                                          mutateDigest=False,
                                                          skipImageReferences=[s.images["unsigned"]]),
                                     action="Audit"),
                     ("unsigned", "signed", "wrong")),
    "notary": (lambda s: _cpol("notary", {"type": "Notary", "imageReferences": ["127.0.0.1:*"],
                                          "attestors": [{"entries": [{"certificates": {"cert": s.notary_root}}]}]}),
               ("notary", "signed", "unsigned")),
}


PROVENANCE = "https://slsa.dev/provenance/v0.2"
BUILDER = "https://ci.example/builder"


def _attestation_cpol(s: Setup) -> dict[str, Any]:
    """An attestation with conditions, verified with a key and the Rekor log skipped (what the test registry
    can hold): convert refuses it."""
    entry = _keys(s.key)
    entry["attestations"] = [{"type": PROVENANCE, "attestors": copy.deepcopy(entry["attestors"]),
                              "conditions": [{"all": [{"key": "{{ builder.id }}", "operator": "Equals",
                                                       "value": BUILDER}]}]}]
    return _cpol("attestation", entry)


def _attestation_ivpol(s: Setup) -> dict[str, Any]:
    """What a conversion of _attestation_cpol would write (Kyverno's own example's form): the signature, the
    attestation's signature and its payload's condition."""
    documents = converted(_cpol("attestation", _keys(s.key)))
    spec = documents[0]["spec"]
    spec["attestations"] = [{"name": "a0", "intoto": {"type": PROVENANCE}}]
    spec["validations"].append({"expression": "images.containers.all(i, !i.startsWith('127.0.0.1:') || "
                                              "(verifyAttestationSignatures(i, attestations.a0, [attestors.s0_e0]) "
                                              f">= 1 && extractPayload(i, attestations.a0).builder.id == '{BUILDER}'))",
                                "message": "attestation not verified"})
    return documents[0]


# refused conversions, with what a conversion would write: the CLI shows why it is refused
REFUSED: dict[str, tuple[Callable[[Setup], dict[str, Any]], Callable[[Setup], dict[str, Any]], tuple[str, ...]]] = {
    "attestation": (_attestation_cpol, _attestation_ivpol, ("attested", "signed")),
}


def converted(policy: dict[str, Any]) -> list[dict[str, Any]]:
    conv = convert_policy(policy)
    assert not conv.refusals, conv.refusals
    return conv.documents


def for_the_cli(documents: list[dict[str, Any]], setup: Setup, tuf: Path) -> list[dict[str, Any]]:
    """The conversion as the CLI can run it offline: a local TUF repository and the log keys inline on each
    cosign attestor (Kyverno's verifier initializes TUF and reads the log keys before any verification)."""
    out = copy.deepcopy(documents)
    for doc in out:
        for attestor in doc["spec"].get("attestors") or []:
            cosign = attestor.get("cosign")
            if cosign is None:
                continue
            public = setup.key.public
            cosign["ctlog"] = {"url": "https://rekor.invalid", "rekorPubKey": public, "ctLogPubKey": public,
                               **(cosign.get("ctlog") or {})}
            cosign["ctlog"]["url"] = "https://rekor.invalid"
            cosign["tuf"] = {"mirror": f"file://{tuf}/repository", "root": {"path": f"{tuf}/repository/root.json"}}
    return out


def pods(setup: Setup, cases: tuple[str, ...]) -> list[dict[str, Any]]:
    """A Pod per image case (`<kind>:<case>`: a Deployment or CronJob of that image instead)."""
    out = []
    for case in cases:
        kind, _, image = case.rpartition(":")
        name = f"{kind}-{image}" if kind else image.replace("@", "-by-digest")
        spec = {"containers": [{"name": "c", "image": setup.images[image]}]}
        template = {"metadata": {"labels": {"app": name}}, "spec": spec}
        meta = {"name": name, "namespace": "default"}
        if kind == "deployment":
            out.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                        "spec": {"selector": {"matchLabels": {"app": name}}, "template": template}})
        elif kind == "cronjob":
            out.append({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta,
                        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {
                            **template, "spec": {**spec, "restartPolicy": "Never"}}}}}})
        else:
            out.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
    return out


def prepare(registry: OciRegistry, directory: Path) -> tuple[Setup, Path]:
    keys = directory / "keys"
    key, other = make_key(keys, "ecdsa"), make_key(keys, "ecdsa")
    notary_ca = make_ca("kyrec notary root")
    leaf = make_leaf(keys, notary_ca, SUBJECT, ISSUER)
    repo = registry.repo("convimg-oracle")
    images: dict[str, str] = {}
    predicate = directory / "predicate.json"
    predicate.write_text(json.dumps({"builder": {"id": BUILDER}}))
    for case, args in {"signed": ("--sign", key.private), "unsigned": (), "wrong": ("--sign", other.private),
                       "attested": ("--sign", key.private, "--attest", PROVENANCE, predicate, "--key", key.private),
                       "tampered": ("--sign", key.private, "--tamper"),
                       "notary": ("--notary", notary_chain(leaf), leaf.private)}.items():
        images[case] = f"{repo}:{case}"
        digest = registry.push(images[case], *args)
        images[f"{case}@"] = f"{repo}@{digest}"
    tuf = directory / "tuf"
    done = subprocess.run([str(registry.binary), "tuf", str(tuf)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return Setup(key, other, notary_ca.pem, images), tuf


def verdict(results: list[str]) -> str:
    """A pod's verdict from its results (a skip and no result both admit it)."""
    for worst in ("fail", "error", "undetermined"):
        if worst in results:
            return worst
    return "pass"


Verdicts = dict[str, dict[str, dict[str, str]]]      # policy case -> side -> pod -> verdict


def kyverno_verdicts(exe: Path, setup: Setup, tuf: Path, directory: Path) -> Verdicts:
    env = {**os.environ, "TUF_ROOT": str(directory / "tuf-cache")}
    out: Verdicts = {}
    every = [(name, build, converted(build(setup)), cases) for name, (build, cases) in POLICIES.items()]
    every += [(name, build, [would_be(setup)], cases) for name, (build, would_be, cases) in REFUSED.items()]
    for name, build, conversion, cases in every:
        original = build(setup)
        sides = {"original": [original], "converted": for_the_cli(conversion, setup, tuf)}
        (directory / f"{name}.pods.yaml").write_text(yaml.safe_dump_all(pods(setup, cases)))
        out[name] = {}
        for side, docs in sides.items():
            (directory / f"{name}.{side}.yaml").write_text(yaml.safe_dump_all(docs))
            run = subprocess.run([str(exe), "apply", f"{name}.{side}.yaml", "--resource", f"{name}.pods.yaml",
                                  "--registry", "--remove-color", "-p", "--output-format", "json"],
                                 capture_output=True, text=True, timeout=TIMEOUT, cwd=directory, env=env)
            start = run.stdout.find("{")
            if start < 0:
                raise AssertionError(f"{name} ({side}): Kyverno's CLI printed no report (exit {run.returncode}):\n"
                                     f"{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
            report = json.loads(run.stdout[start:])
            found: dict[str, list[str]] = {p["metadata"]["name"]: [] for p in pods(setup, cases)}
            for r in report.get("results") or []:
                found[r["resources"][0]["name"]].append(r["result"])
            out[name][side] = {pod: verdict(results) for pod, results in found.items()}
    return out


def load_golden() -> dict[str, Any]:
    return read_golden(GOLDEN)


def main() -> None:
    from tests.registry import build

    exe = kyverno_exe_or_exit()
    registry = OciRegistry(build.build())
    registry.start()
    try:
        with tempfile.TemporaryDirectory(prefix="kyrec-convert-images-oracle-") as tmp:
            setup, tuf = prepare(registry, Path(tmp))
            results = kyverno_verdicts(exe, setup, tuf, Path(tmp))
    finally:
        registry.stop()
    data = {
        "description": "Kyverno's CLI on the verifyImages cases of tests/consistency/convert_images_oracle.py: "
                       "`kubectl-kyverno apply POLICY --resource PODS --registry -p --output-format json` on "
                       "each classic policy (original) and on kyrec's ImageValidatingPolicy conversion of it "
                       "(converted; with a local TUF repository and the log keys added for the offline run), "
                       "against the test registry; per policy case, side and pod (one image case each, "
                       "`-by-digest`: the image by its digest), the verdict: fail where a result fails, else "
                       "error where one errors, else pass. Cases under `refused`: kyrec refuses to convert the "
                       "original; `converted` is what a conversion would write (the CLI shows why).",
        "kyverno": kyverno_build(exe),
        "cases": {name: sides for name, sides in results.items() if name in POLICIES},
        "refused": {name: sides for name, sides in results.items() if name in REFUSED},
    }
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"{GOLDEN.relative_to(ROOT)}: {json.dumps(results)}")


if __name__ == "__main__":
    main()
