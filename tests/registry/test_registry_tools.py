"""The test registry itself (serve / push, cosign's formats) and kyrec's reading of it (load/registry.py,
load/cosign.py) on signed, unsigned, wrongly signed and tampered images."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

import pytest

from kubectl_kyrec.load.cosign import verify_attestations, verify_signatures
from kubectl_kyrec.load.registry import Registry, RegistryError, parse_image
from tests.registry.fixture import OciRegistry as TestRegistry
from tests.registry.keys import make_key

HERE = Path(__file__).resolve().parent


def _tags(reg: TestRegistry, repo: str) -> list[str]:
    path = repo.split("/", 1)[1]
    with urllib.request.urlopen(f"http://{reg.host}/v2/{path}/tags/list", timeout=10) as answer:
        return sorted(json.load(answer)["tags"])


def test_serve_prints_ready_and_push_prints_the_digest(oci_registry: TestRegistry, tmp_path: Path) -> None:
    key = make_key(tmp_path)
    repo = oci_registry.repo()
    digest = oci_registry.push(f"{repo}:v1", "--sign", key.private)
    assert digest.startswith("sha256:") and len(digest) == 71
    assert _tags(oci_registry, repo) == [f"sha256-{digest[7:]}.sig", "v1"]
    # the signature layer is cosign's: simple-signing payload naming the digest, signature annotation
    sig = parse_image(f"{repo}:sha256-{digest[7:]}.sig")
    manifest, _ = Registry().manifest(sig)
    layer = manifest["layers"][0]
    assert layer["mediaType"] == "application/vnd.dev.cosign.simplesigning.v1+json"
    assert "dev.cosignproject.cosign/signature" in layer["annotations"]
    payload = json.loads(Registry().blob(sig, layer["digest"]))
    assert payload["critical"] == {"identity": {"docker-reference": repo}, "image": {
        "docker-manifest-digest": digest}, "type": "cosign container image signature"}


def test_serve_sh_and_push_sh_by_hand(oci_registry: TestRegistry, tmp_path: Path) -> None:
    """The scripts the README points at: serve.sh prints `ready HOST:PORT` and stops on SIGTERM."""
    server = subprocess.Popen([str(HERE / "serve.sh")], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("ready 127.0.0.1:")
        host = line.split()[1]
        done = subprocess.run([str(HERE / "push.sh"), f"{host}/hand:v1"], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
        assert Registry().resolve(parse_image(f"{host}/hand:v1")) == done.stdout.strip()
    finally:
        server.terminate()
        assert server.wait(timeout=10) == 0


@pytest.mark.parametrize("kind", ["ecdsa", "rsa", "ed25519"])
def test_signed_image_verifies_with_its_key_only(oci_registry: TestRegistry, tmp_path: Path, kind: str) -> None:
    key, other = make_key(tmp_path, kind), make_key(tmp_path, kind)
    repo = oci_registry.repo()
    digest = oci_registry.push(f"{repo}:v1", "--sign", key.private)
    good = verify_signatures(Registry(), f"{repo}:v1", key.public)
    assert (good.verified, good.digest) == (1, digest)
    wrong = verify_signatures(Registry(), f"{repo}:v1", other.public)
    assert wrong.verified == 0 and "invalid signature" in wrong.reasons[0]


def test_unsigned_and_tampered_images_do_not_verify(oci_registry: TestRegistry, tmp_path: Path) -> None:
    key = make_key(tmp_path)
    repo = oci_registry.repo()
    oci_registry.push(f"{repo}:unsigned")
    unsigned = verify_signatures(Registry(), f"{repo}:unsigned", key.public)
    assert unsigned.verified == 0 and unsigned.reasons[0].startswith("no signatures found")
    oci_registry.push(f"{repo}:tampered", "--sign", key.private, "--tamper")
    tampered = verify_signatures(Registry(), f"{repo}:tampered", key.public)
    assert tampered.verified == 0 and "invalid signature" in tampered.reasons[0]


def test_attestations(oci_registry: TestRegistry, tmp_path: Path) -> None:
    key, other = make_key(tmp_path), make_key(tmp_path)
    predicate = tmp_path / "predicate.json"
    predicate.write_text('{"builder": {"id": "ci"}}')
    repo = oci_registry.repo()
    oci_registry.push(f"{repo}:v1", "--attest", "https://slsa.dev/provenance/v0.2", predicate, "--key", key.private)
    good = verify_attestations(Registry(), f"{repo}:v1", key.public, "https://slsa.dev/provenance/v0.2")
    assert good.verified == 1 and good.statements[0]["predicate"] == {"builder": {"id": "ci"}}
    assert verify_attestations(Registry(), f"{repo}:v1", key.public, "https://other/type").verified == 0
    assert verify_attestations(Registry(), f"{repo}:v1", other.public, "https://slsa.dev/provenance/v0.2"
                               ).verified == 0
    oci_registry.push(f"{repo}:t", "--attest", "https://slsa.dev/provenance/v0.2", predicate, "--key", key.private,
                      "--tamper")
    assert verify_attestations(Registry(), f"{repo}:t", key.public, "https://slsa.dev/provenance/v0.2"
                               ).verified == 0


def test_registry_failures_say_whether_the_registry_answered(oci_registry: TestRegistry, tmp_path: Path) -> None:
    key = make_key(tmp_path)
    missing = oci_registry.repo()
    with pytest.raises(RegistryError) as answered:
        verify_signatures(Registry(), f"{missing}:nope", key.public)
    assert answered.value.status == 404 and not answered.value.unreachable
    # a port nothing listens on: refused, within the bound
    with pytest.raises(RegistryError) as down:
        verify_signatures(Registry(timeout=2), "127.0.0.1:9/app:v1", key.public)
    assert down.value.unreachable
