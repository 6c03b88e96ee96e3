"""Kyverno's image parsing (pkg/utils/image/infos.go GetImageInfo over distribution/reference.Parse), for
`images.*` variables and the image_normalize JMESPath function, with Kyverno's default configuration
(default registry `docker.io`, default-registry mutation enabled)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

DEFAULT_REGISTRY = "docker.io"

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


class ImageError(ValueError):
    """str() is Kyverno's `bad image: ...` text."""


@dataclass
class ImageInfo:
    registry: str
    name: str
    path: str
    tag: str
    digest: str
    reference: str
    reference_with_tag: str

    def __str__(self) -> str:
        image = f"{self.registry}/{self.path}" if self.registry else self.path
        return f"{image}@{self.digest}" if self.digest else f"{image}:{self.tag}"

    def to_json(self) -> dict[str, Any]:
        """The JSON Kyverno puts in the context (omitempty on registry, tag, digest, reference*)."""
        out: dict[str, Any] = {}
        if self.registry:
            out["registry"] = self.registry
        out["name"] = self.name
        out["path"] = self.path
        if self.tag:
            out["tag"] = self.tag
        if self.digest:
            out["digest"] = self.digest
        if self.reference:
            out["reference"] = self.reference
        if self.reference_with_tag:
            out["referenceWithTag"] = self.reference_with_tag
        return out


def _add_default_registry(name: str) -> str:
    i = name.find("/")
    if i == -1 or (not any(c in name[:i] for c in ".:") and name[:i] != "localhost" and name[:i].lower() == name[:i]):
        return f"{DEFAULT_REGISTRY}/{name}"
    return name


def _parse_reference(text: str) -> tuple[str, str, str, str]:
    """distribution/reference.Parse: (domain, path, tag, digest) or ValueError with its message."""
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


def get_image_info(image: str) -> ImageInfo:
    """Kyverno's GetImageInfo with the default configuration."""
    full = _add_default_registry(image)
    try:
        registry, path, tag, digest = _parse_reference(full)
    except ValueError as exc:
        raise ImageError(f"bad image: {full}, defaultRegistry: {DEFAULT_REGISTRY}, "
                         f"enableDefaultRegistryMutation: true: {exc}") from None
    name = path[path.rfind("/") + 1:]
    if not digest and not tag:
        tag = "latest"
    with_tag = f"{registry}/{path}:{tag}" if registry else f"{path}:{tag}"
    info = ImageInfo(registry, name, path, tag, digest, "", with_tag)
    info.reference = str(info)
    parts = path.split("/")
    if len(parts) > 1 and registry == "" and "_" in parts[0]:
        info.registry = parts[0]
        info.path = "/".join(parts[1:])
    return info
