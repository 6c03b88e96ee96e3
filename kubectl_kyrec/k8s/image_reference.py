"""Container image references (github.com/distribution/reference v0.6.0, the version k8s.io/kubernetes
v1.36.3 and Kyverno both use): `parse_reference` is reference.Parse (the grammar, no normalising),
`parse_normalized_named` is reference.ParseNormalizedNamed (docker.io/library/ completion first), the one the
API server's image pull policy default reads through pkg/util/parsers.ParseImageName."""

from __future__ import annotations

import re

DEFAULT_DOMAIN = "docker.io"          # normalize.go defaultDomain
_LEGACY_DEFAULT_DOMAIN = "index.docker.io"
_OFFICIAL_REPO_PREFIX = "library/"

_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = f"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[(?:[a-fA-F0-9:]+)\])"
_DOMAIN = rf"{_HOST}(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{32,}"
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_REFERENCE = re.compile(rf"({_NAME})(?::({_TAG}))?(?:@({_DIGEST}))?", re.ASCII)
_ANCHORED_NAME = re.compile(rf"(?:({_DOMAIN})/)?({_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)", re.ASCII)
_IDENTIFIER = re.compile(r"[a-f0-9]{64}")


def parse_reference(text: str) -> tuple[str, str, str, str]:
    """reference.Parse: (domain, path, tag, digest) or ValueError with its message."""
    m = _REFERENCE.fullmatch(text)
    if m is None:
        if text == "":
            raise ValueError("repository name must have at least one component")
        if _REFERENCE.fullmatch(text.lower()) is not None:
            raise ValueError("repository name must be lowercase")
        raise ValueError("invalid reference format")
    name = m.group(1)
    if len(name) > 255:
        raise ValueError("repository name must not be longer than 255 characters")
    nm = _ANCHORED_NAME.fullmatch(name)
    domain, path = (nm.group(1) or "", nm.group(2)) if nm else ("", name)
    digest = m.group(3) or ""
    if digest:
        algorithm, _, hexpart = digest.partition(":")
        sizes = {"sha256": 64, "sha384": 96, "sha512": 128}
        if algorithm not in sizes:
            raise ValueError("unsupported digest algorithm")
        if len(hexpart) != sizes[algorithm] or not re.fullmatch(r"[a-f0-9]+", hexpart):
            raise ValueError("invalid checksum digest length" if len(hexpart) != sizes[algorithm]
                             else "invalid checksum digest format")
    return domain, path, m.group(2) or "", digest


def _split_docker_domain(name: str) -> tuple[str, str]:
    """normalize.go splitDockerDomain."""
    maybe_domain, sep, maybe_remote = name.partition("/")
    if not sep:
        return DEFAULT_DOMAIN, _OFFICIAL_REPO_PREFIX + name
    if maybe_domain == "localhost":
        domain, remote = maybe_domain, maybe_remote
    elif maybe_domain == _LEGACY_DEFAULT_DOMAIN:
        domain, remote = DEFAULT_DOMAIN, maybe_remote
    elif any(c in maybe_domain for c in ".:") or maybe_domain.lower() != maybe_domain:
        domain, remote = maybe_domain, maybe_remote
    else:
        domain, remote = DEFAULT_DOMAIN, name
    if domain == DEFAULT_DOMAIN and "/" not in remote:
        remote = _OFFICIAL_REPO_PREFIX + remote
    return domain, remote


def parse_normalized_named(text: str) -> tuple[str, str, str, str]:
    """reference.ParseNormalizedNamed: (domain, path, tag, digest) of the normalised name, or ValueError."""
    if _IDENTIFIER.fullmatch(text):
        raise ValueError(f"invalid repository name ({text}), cannot specify 64-byte hexadecimal strings")
    domain, remainder = _split_docker_domain(text)
    remote = remainder.split(":", 1)[0]
    if remote.lower() != remote:
        raise ValueError(f"invalid reference format: repository name ({remote}) must be lowercase")
    return parse_reference(f"{domain}/{remainder}")
