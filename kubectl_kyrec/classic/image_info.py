"""Kyverno's image parsing (pkg/utils/image/infos.go GetImageInfo over distribution/reference.Parse), for
`images.*` variables and the image_normalize JMESPath function, with Kyverno's default configuration
(default registry `docker.io`, default-registry mutation enabled)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.k8s.image_reference import parse_reference

DEFAULT_REGISTRY = "docker.io"


class ImageError(ValueError, EngineError):
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


def get_image_info(image: str) -> ImageInfo:
    """Kyverno's GetImageInfo with the default configuration."""
    full = _add_default_registry(image)
    try:
        registry, path, tag, digest = parse_reference(full)
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
