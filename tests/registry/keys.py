"""Key pairs for the registry tests: unencrypted PKCS#8 private keys (what push.sh --sign reads) and the
PEM public keys a policy names; a test certificate authority and the leaf certificates it issues for
keyless-style signing (push.sh --sign KEY --cert CERT --chain CHAIN; the policy names the root)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


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


# Fulcio's OIDC-issuer extensions (cosign CertExtensions.GetIssuer reads the second, then the first):
# 1.3.6.1.4.1.57264.1.1 holds the issuer's bytes as they are, 1.3.6.1.4.1.57264.1.8 a DER UTF8String
ISSUER_V1 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
ISSUER_V2 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.8")


@dataclass(frozen=True)
class TestCA:
    """A root certificate authority standing in for Fulcio: its key signs the leaf certificates."""

    __test__ = False             # a helper class, not tests (its name starts like one)

    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate
    pem: str                     # this certificate, as a policy's `roots` gives it (for a root)
    chain: str = ""              # this certificate and its issuers up to the root, root last


@dataclass(frozen=True)
class Leaf:
    """A keyless-style signer: its private key (push.sh --sign), certificate (--cert) and chain (--chain)."""

    private: Path
    cert: Path
    chain: Path


def make_ca(name: str = "kyrec test CA", parent: TestCA | None = None) -> TestCA:
    """A root CA, or with `parent` an intermediate it issues."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    issuer = parent.cert.subject if parent else subject
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=30))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(parent.key if parent else key, hashes.SHA256()))
    pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    return TestCA(key, cert, pem, pem + (parent.chain if parent else ""))


def make_leaf(directory: Path, ca: TestCA, subject: str, issuer: str, *, expired: bool = False,
              ocsp: str = "", rsa_key: bool = False) -> Leaf:
    """A code-signing certificate as Fulcio issues one: the identity (an email, or a URI with a scheme) as
    the SAN, the OIDC issuer in Fulcio's extensions; `expired`: valid only in the past; `ocsp`: an OCSP
    responder URL in its authority information access (a certificate Notary checks for revocation); `rsa_key`:
    an RSA 2048 key instead of ECDSA P-256."""
    key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048) if rsa_key
        else ec.generate_private_key(ec.SECP256R1()))
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = ((now - datetime.timedelta(days=3), now - datetime.timedelta(days=2)) if expired
                  else (now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1)))
    san: x509.GeneralName = (x509.UniformResourceIdentifier(subject) if "://" in subject
                             else x509.RFC822Name(subject))
    builder = (x509.CertificateBuilder().subject_name(x509.Name([])).issuer_name(ca.cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(start).not_valid_after(end)
               .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
               .add_extension(x509.SubjectAlternativeName([san]), critical=True)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False)
               .add_extension(x509.UnrecognizedExtension(ISSUER_V1, issuer.encode()), critical=False)
               .add_extension(x509.UnrecognizedExtension(ISSUER_V2, _der_utf8(issuer)), critical=False))
    if ocsp:
        builder = builder.add_extension(x509.AuthorityInformationAccess([x509.AccessDescription(
            x509.oid.AuthorityInformationAccessOID.OCSP, x509.UniformResourceIdentifier(ocsp))]), critical=False)
    cert = builder.sign(ca.key, hashes.SHA256())
    directory.mkdir(parents=True, exist_ok=True)
    stem = directory / f"leaf-{len(list(directory.iterdir()))}"
    private = stem.with_suffix(".key.pem")
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    cert_path = stem.with_suffix(".crt.pem")
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    chain = stem.with_suffix(".chain.pem")
    chain.write_text(ca.chain)
    return Leaf(private, cert_path, chain)


def notary_chain(leaf: Leaf) -> Path:
    """The leaf's certificate followed by its chain (root last): what push.sh --notary CHAIN.pem reads."""
    path = leaf.cert.with_name(leaf.cert.name.replace(".crt.pem", ".notary-chain.pem"))
    path.write_text(leaf.cert.read_text() + leaf.chain.read_text())
    return path


def _der_utf8(text: str) -> bytes:
    body = text.encode()
    assert len(body) < 128            # short form length: issuer URLs of the tests
    return bytes([0x0C, len(body)]) + body
