"""Image references: `image()` (deprecated), `parseImageReference()`, `isImage()` and the Image methods.

Parsing is go-containerregistry's `name.ParseReference` with default options, as Kyverno calls it
(sdk: image/impl.go): a reference is tried as a tag first, then as a digest; the registry defaults to
`index.docker.io` (`docker.io` is rewritten to it), a one-segment Docker Hub repository gains
`library/`, and a missing tag reads as `latest`. An Image is a tagged dict (`@type: kyverno.image`)
carrying what its methods answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn
from kubectl_kyrec.errors import EngineError

IMAGE_TYPE = "kyverno.image"
DEFAULT_REGISTRY = "index.docker.io"
_REGISTRY_ALIAS = "docker.io"
_DEFAULT_NAMESPACE = "library"
_DEFAULT_TAG = "latest"
_REPOSITORY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-./")
_TAG_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-.ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DIGEST_CHARS = frozenset("sh:0123456789abcdef")
# characters Go's url.Parse accepts in a host besides letters and digits (net/url shouldEscape)
_HOST_CHARS = frozenset("-_.~!$&'()*+,;=:[]<>\"")


class BadName(ValueError, EngineError):
    """go-containerregistry's ErrBadName."""


@dataclass(frozen=True)
class Reference:
    """A parsed reference: a Tag when `digest` is empty, else a Digest."""

    original: str
    registry: str
    repository: str  # RepositoryStr(): with the implicit `library/` for Docker Hub
    tag: str  # the tag as written ("" when none)
    digest: str

    @property
    def is_digest(self) -> bool:
        return bool(self.digest)


def _check_element(name: str, element: str, allowed: frozenset[str], low: int, high: int) -> None:
    if not low <= len(element) <= high:
        raise BadName(f"{name} must be between {low} and {high} characters in length: {element}")
    if any(c not in allowed for c in element):
        raise BadName(f"{name} can only contain the characters `{''.join(sorted(allowed))}`: {element}")


def _valid_port(port: str) -> bool:
    return port == "" or (port.startswith(":") and all("0" <= c <= "9" for c in port[1:]))


def _check_registry(name: str) -> None:
    """`url.Parse("//" + name).Host == name`, which is how go-containerregistry validates a registry."""
    bad = BadName(f"registries must be valid RFC 3986 URI authorities: {name}")
    if any(c in name for c in "/?#@%") or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise bad
    host = name
    if host.startswith("["):
        close = host.find("]")
        if close < 0 or not _valid_port(host[close + 1:]):
            raise bad
    elif ":" in host and not _valid_port(host[host.rindex(":"):]):
        raise bad
    for c in host:
        if ord(c) < 0x80 and not c.isalnum() and c not in _HOST_CHARS:
            raise bad


def _new_registry(name: str) -> str:
    _check_registry(name)
    if name in ("", _REGISTRY_ALIAS):
        return DEFAULT_REGISTRY
    return name


def _new_repository(name: str) -> tuple[str, str]:
    """(registry, RepositoryStr) for `name`, go-containerregistry's NewRepository."""
    if not name:
        raise BadName("a repository name must be specified")
    registry, repo = "", name
    parts = name.split("/", 1)
    if len(parts) == 2 and ("." in parts[0] or ":" in parts[0]):
        registry, repo = parts
    _check_element("repository", repo, _REPOSITORY_CHARS, 2, 255)
    registry = _new_registry(registry)
    if "/" not in repo and registry == DEFAULT_REGISTRY:
        repo = f"{_DEFAULT_NAMESPACE}/{repo}"
        _check_element("repository", repo, _REPOSITORY_CHARS, 2, 255)
    return registry, repo


def _new_tag(name: str) -> Reference:
    base, tag = name, ""
    parts = name.split(":")
    # a last segment holding a slash is a registry port, not a tag
    if len(parts) > 1 and "/" not in parts[-1]:
        base, tag = ":".join(parts[:-1]), parts[-1]
    if tag:
        _check_element("tag", tag, _TAG_CHARS, 1, 127)
    registry, repo = _new_repository(base)
    return Reference(name, registry, repo, tag, "")


def _new_digest(name: str) -> Reference:
    parts = name.split("@")
    if len(parts) != 2:
        raise BadName(f"a digest must contain exactly one '@' separator (e.g. registry/repository@digest) "
                      f"saw: {name}")
    base, digest = parts
    _check_element("digest", digest, _DIGEST_CHARS, 7 + 64, 7 + 64)
    try:
        tagged = _new_tag(base)
        base = f"{tagged.registry}/{tagged.repository}"
    except BadName:
        pass
    registry, repo = _new_repository(base)
    return Reference(name, registry, repo, "", digest)


def parse_reference(text: str) -> Reference:
    """name.ParseReference(text) with default (weak) options."""
    if text.startswith("http://") or text.startswith("https://"):
        raise BadName(f"image reference must not contain a URL scheme (http:// or https://): {text}; to "
                      f"connect to a registry over plain HTTP, use name.Insecure")
    for parse in (_new_tag, _new_digest):
        try:
            return parse(text)
        except BadName:
            continue
    raise BadName(f"could not parse reference: {text}")


def image_value(ref: Reference) -> dict[str, Any]:
    """The tagged dict an Image is in kyrec: every method's answer, precomputed."""
    if ref.is_digest:
        # go-containerregistry parses repo:tag@digest as a Digest, and the sdk's methods (main 376d911,
        # image/impl.go) look only at that: tag() is empty and identifier() is the digest, the tag in
        # the text is dropped (kyverno/kyverno#15273 asks for tag@digest; not in the sdk version followed)
        tag = ""
        identifier = ref.digest
        separated = "@" + ref.digest
    else:
        tag = ref.tag or _DEFAULT_TAG
        identifier = tag
        separated = ":" + tag
    return {"@type": IMAGE_TYPE, "reference": ref.original, "registry": ref.registry,
            "repository": ref.repository, "tag": tag, "digest": ref.digest, "identifier": identifier,
            "identifierWithSeparator": separated, "containsDigest": ref.is_digest}


def string_to_image(text: str) -> dict[str, Any]:
    try:
        return image_value(parse_reference(text))
    except BadName as exc:
        raise CelFunctionError(str(exc)) from None


def is_image(text: str) -> bool:
    try:
        parse_reference(text)
    except BadName:
        return False
    return True


def _method(field: str) -> Any:
    def call(value: Any) -> Any:
        # a map written by hand with the tag but not the field is no Image either
        if not isinstance(value, dict) or value.get("@type") != IMAGE_TYPE or field not in value:
            raise CelFunctionError("no such overload")
        return value[field]
    return call


def image_library() -> Library:
    methods = [("containsDigest", "bool"), ("registry", "string"), ("repository", "string"),
               ("identifier", "string"), ("identifierWithSeparator", "string"), ("tag", "string"),
               ("digest", "string")]
    functions = [
        fn("image", Overload("string_to_image_deprecated", ["string"], "map", string_to_image)),
        fn("parseImageReference", Overload("string_to_image", ["string"], "map", string_to_image)),
        fn("isImage", Overload("is_image_string", ["string"], "bool", is_image)),
    ]
    for name, result in methods:
        overload_id = "image_" + "".join("_" + c.lower() if c.isupper() else c for c in name)
        functions.append(fn(name, Overload(overload_id, ["map"], result, _method(name), member=True)))
    return Library("kyverno.image", functions)
