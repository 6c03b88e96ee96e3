"""Key pairs for the registry tests: unencrypted PKCS#8 private keys (what push.sh --sign reads) and the
PEM public keys a policy names."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa


@dataclass(frozen=True)
class KeyPair:
    private: Path
    public: str


def make_key(directory: Path, kind: str = "ecdsa") -> KeyPair:
    if kind == "ecdsa":
        key: object = ec.generate_private_key(ec.SECP256R1())
    elif kind == "rsa":
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    else:
        key = ed25519.Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,  # type: ignore[attr-defined]
                            serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM,  # type: ignore[attr-defined]
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{kind}-{len(list(directory.iterdir()))}.pem"
    path.write_bytes(pem)
    return KeyPair(path, public)
