"""A small client of the OCI distribution API, for `--registry` (read only): resolve a reference to its
manifest digest, read manifests and blobs, with the anonymous token dance registries ask for.

kyrec contacts a registry only when the run was given `--registry`, and only the registries image
references name. Every call is bounded (TIMEOUT seconds a request); a failure is a RegistryError saying
whether the registry answered (`unreachable` False: 401/403, a missing manifest, ...) or could not be reached
(`unreachable` True: refused, timed out, TLS failure), because the two lead to different results: a
signature the registry says is absent is an unverified image, a registry that did not answer says nothing
about the image.

Scheme as go-containerregistry's name.Registry.Scheme: plain HTTP for localhost, 127.0.0.1/::1 and hosts
the run lists as insecure, HTTPS otherwise.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.k8s.image_reference import parse_normalized_named

TIMEOUT = 10.0
MAX_BODY = 16 << 20            # manifests, configs and signature layers are small; a larger one is refused

MANIFEST_TYPES = ", ".join((
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
))


class RegistryError(EngineError):
    def __init__(self, message: str, *, unreachable: bool = False, status: int = 0) -> None:
        super().__init__(message)
        self.unreachable = unreachable
        self.status = status


@dataclass(frozen=True)
class ImageRef:
    """A parsed image reference: the registry host to call, the repository, a tag and/or a digest."""

    registry: str          # as written ("docker.io" for Docker Hub)
    repository: str
    tag: str
    digest: str

    @property
    def host(self) -> str:
        # go-containerregistry: Docker Hub's API answers at index.docker.io
        return "index.docker.io" if self.registry == "docker.io" else self.registry

    @property
    def name(self) -> str:
        """The repository's full name (ggcr Repository.Name()), as cosign's payloads write it."""
        return f"{self.registry}/{self.repository}" if self.registry != "docker.io" else \
            f"index.docker.io/{self.repository}"

    def with_digest(self, digest: str) -> ImageRef:
        return ImageRef(self.registry, self.repository, self.tag, digest)


def parse_image(text: str) -> ImageRef:
    """An image reference as Kyverno parses it (docker.io/library completion, tag `latest` by default);
    ValueError with reference.Parse's message."""
    domain, path, tag, digest = parse_normalized_named(text)
    return ImageRef(domain, path, tag or ("" if digest else "latest"), digest)


def _local(host: str) -> bool:
    bare = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
    return bare in ("localhost", "127.0.0.1", "[::1]") or bare.endswith(".localhost")


@dataclass(frozen=True)
class DockerCredentials:
    """What a docker config file says about credentials: `auths` (host -> base64 "user:password"), the
    per-host `credHelpers` and the default `credsStore` (programs `docker-credential-<name>`)."""

    auths: dict[str, str] = field(default_factory=dict)
    helpers: dict[str, str] = field(default_factory=dict)
    store: str = ""

    def helper_for(self, host: str) -> str:
        """The helper docker would ask for `host` (docker/cli configfile GetCredentialsStore: the host's
        credHelpers entry, else credsStore; "" when the file's `auths` answer)."""
        return self.helpers.get(host) or self.store


def _config_host(key: str) -> str:
    """A docker config key ("https://index.docker.io/v1/", "ghcr.io") as the host kyrec calls."""
    host = re.sub(r"^https?://", "", str(key)).split("/", 1)[0]
    return "index.docker.io" if host in ("index.docker.io", "registry-1.docker.io", "docker.io") else host


def docker_credentials(text: str, where: str) -> DockerCredentials:
    """A docker config file (`--registry-config`): each `auths` entry's `auth`, else its
    `username`/`password`, and the credential helpers it names. ValueError naming `where` for a file that
    is no such config."""
    try:
        config = json.loads(text)
    except ValueError as err:
        raise ValueError(f"{where}: not a docker config file: {err}") from None
    if not isinstance(config, dict) or not any(isinstance(config.get(k), t) for k, t in (
            ("auths", dict), ("credHelpers", dict), ("credsStore", str))):
        raise ValueError(f"{where}: no `auths` object (nor `credHelpers` or `credsStore`)")
    auths = {}
    for key, entry in (config.get("auths") or {}).items():
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("auth"), str) and entry["auth"]:
            auths[_config_host(key)] = entry["auth"]
        elif isinstance(entry.get("username"), str):
            pair = f"{entry['username']}:{entry.get('password') or ''}".encode()
            auths[_config_host(key)] = base64.b64encode(pair).decode()
    helpers = {_config_host(k): v for k, v in (config.get("credHelpers") or {}).items()
               if isinstance(v, str) and v}
    store = config.get("credsStore") if isinstance(config.get("credsStore"), str) else ""
    return DockerCredentials(auths, helpers, store or "")


def _from_helper(helper: str, host: str, timeout: float) -> str:
    """`docker-credential-<helper> get` for `host` (the credential helper protocol: the server address on
    stdin, `{"Username", "Secret"}` on stdout): base64 "user:secret", or "" when the helper has none for
    the host (its "credentials not found" answer: anonymous, as go-containerregistry's keychain falls back).
    Anything else is a RegistryError marked `unreachable`: like a registry that did not answer, a helper that
    failed says nothing about the image, so it never reads as an unsigned one."""
    import subprocess  # here, as urllib.request in _open: only a run given --registry asks a helper

    program = f"docker-credential-{helper}"
    server = "https://index.docker.io/v1/" if host == "index.docker.io" else host
    try:
        done = subprocess.run([program, "get"], input=server, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except OSError as err:
        raise RegistryError(f"error getting credentials - {program}: {err.strerror or err}",
                            unreachable=True) from None
    except subprocess.TimeoutExpired:
        raise RegistryError(f"error getting credentials - {program}: no answer in {timeout:g}s",
                            unreachable=True) from None
    if done.returncode != 0:
        said = (done.stdout.strip() or done.stderr.strip())
        if said == "credentials not found in native keychain":
            return ""
        raise RegistryError(f"error getting credentials - err: exit status {done.returncode}, out: `{said}`",
                            unreachable=True)
    try:
        answer = json.loads(done.stdout)
        user, secret = str(answer["Username"]), str(answer["Secret"])
    except (ValueError, KeyError, TypeError):
        raise RegistryError(f"error getting credentials - {program}: not the helper protocol's JSON",
                            unreachable=True) from None
    if user == "<token>":
        # an identity token (OAuth refresh token) is exchanged at the token endpoint; not done here
        raise RegistryError(f"error getting credentials - {program}: identity tokens are not supported by kyrec",
                            unreachable=True)
    return base64.b64encode(f"{user}:{secret}".encode()).decode()


@dataclass
class Registry:
    """The registries of one run: `insecure` hosts are called over plain HTTP (loopback always is);
    `credentials`: a docker config's (docker_credentials), sent where a registry asks; `now`:
    the run's time."""

    insecure: frozenset[str] = frozenset()
    timeout: float = TIMEOUT
    credentials: DockerCredentials = field(default_factory=DockerCredentials)
    # the run's time, when a signing certificate must be valid (keyless); None: keyless is not verified
    now: datetime.datetime | None = None
    _tokens: dict[tuple[str, str], str] = field(default_factory=dict)
    _helped: dict[str, str] = field(default_factory=dict)
    _cache: dict[str, tuple[bytes, str, str]] = field(default_factory=dict)

    def _base(self, host: str) -> str:
        scheme = "http" if _local(host) or host in self.insecure else "https"
        return f"{scheme}://{host}"

    def _open(self, url: str, accept: str, token: str) -> tuple[bytes, str, str]:
        """GET `url`; `token` is the Authorization header's value ("Bearer ...", "Basic ...") or ""."""
        # here, not at the top: urllib.request, http.client and ssl are a tenth of eval's imports, and only a
        # run given --registry calls one
        import ssl
        import urllib.request

        request = urllib.request.Request(url, headers={"Accept": accept, "User-Agent": "kubectl-kyrec"})
        if token:
            request.add_header("Authorization", token)
        with urllib.request.urlopen(request, timeout=self.timeout,
                                    context=ssl.create_default_context()) as answer:
            body = answer.read(MAX_BODY + 1)
            if len(body) > MAX_BODY:
                raise RegistryError(f"GET {url}: answer larger than {MAX_BODY} bytes")
            return (body, answer.headers.get("Content-Type", ""),
                    answer.headers.get("Docker-Content-Digest", ""))

    def _basic(self, host: str) -> str:
        """The host's base64 "user:password": from its credential helper when the config names one (asked
        once a run), else from `auths`; "" for anonymous."""
        helper = self.credentials.helper_for(host)
        if not helper:
            return self.credentials.auths.get(host, "")
        if host not in self._helped:
            self._helped[host] = _from_helper(helper, host, self.timeout)
        return self._helped[host]

    def _token(self, challenge: str, host: str, repository: str) -> str:
        """The Authorization value a 401's `WWW-Authenticate` asks for: Basic with the host's credentials, or
        a Bearer token from the challenge's realm for pull (anonymous, or with the credentials)."""
        basic = self._basic(host)
        if challenge.lower().startswith("basic"):
            return f"Basic {basic}" if basic else ""
        params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
        realm = params.pop("realm", "")
        if not challenge.lower().startswith("bearer") or not realm:
            return ""
        params.setdefault("scope", f"repository:{repository}:pull")
        url = realm + ("&" if "?" in realm else "?") + urllib.parse.urlencode(params)
        body, _, _ = self._open(url, "application/json", f"Basic {basic}" if basic else "")
        data = json.loads(body)
        token = str(data.get("token") or data.get("access_token") or "")
        return f"Bearer {token}" if token else ""

    def get(self, ref: ImageRef, path: str, accept: str) -> tuple[bytes, str, str]:
        """GET /v2/<repository>/<path>: (body, content type, Docker-Content-Digest); RegistryError."""
        import ssl  # as in _open: the errors of a call only a run given --registry makes
        import urllib.error

        url = f"{self._base(ref.host)}/v2/{ref.repository}/{path}"
        cached = self._cache.get(url)
        if cached is not None:
            return cached
        key = (ref.host, ref.repository)
        try:
            try:
                answer = self._open(url, accept, self._tokens.get(key, ""))
            except urllib.error.HTTPError as err:
                challenge = err.headers.get("WWW-Authenticate", "") if err.code == 401 else ""
                token = self._token(challenge, ref.host, ref.repository) if challenge else ""
                if not token:
                    raise
                self._tokens[key] = token
                answer = self._open(url, accept, token)
        except urllib.error.HTTPError as err:
            raise RegistryError(f"GET {url}: {err.code} {err.reason}", status=err.code) from None
        except (urllib.error.URLError, TimeoutError, ssl.SSLError, ConnectionError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise RegistryError(f"GET {url}: {reason}", unreachable=True) from None
        except ValueError as err:           # a token endpoint that answers no JSON
            raise RegistryError(f"GET {url}: {err}") from None
        self._cache[url] = answer
        return answer

    def manifest(self, ref: ImageRef, reference: str = "") -> tuple[dict[str, Any], str]:
        """The manifest (or index) `reference` (default: the ref's digest, else its tag) names, and its
        digest; a body whose digest differs from the one asked for is refused (a tampered manifest)."""
        wanted = reference or ref.digest or ref.tag
        body, _, header = self.get(ref, f"manifests/{wanted}", MANIFEST_TYPES)
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        if wanted.startswith("sha256:") and wanted != digest:
            raise RegistryError(f"manifest {ref.name}@{wanted}: the registry answered content of digest {digest}")
        try:
            return json.loads(body), digest
        except ValueError as err:
            raise RegistryError(f"manifest {ref.name}@{wanted}: not JSON: {err}") from None

    def resolve(self, ref: ImageRef) -> str:
        """The digest the reference names (its own, or its tag's now)."""
        return ref.digest or self.manifest(ref)[1]

    def blob(self, ref: ImageRef, digest: str) -> bytes:
        body, _, _ = self.get(ref, f"blobs/{digest}", "*/*")
        if digest.startswith("sha256:") and "sha256:" + hashlib.sha256(body).hexdigest() != digest:
            raise RegistryError(f"blob {ref.name}@{digest}: content does not match its digest")
        return body

    def tag_manifest(self, ref: ImageRef, tag: str) -> dict[str, Any] | None:
        """The manifest tagged `tag` in the ref's repository, None when the registry says there is none."""
        try:
            return self.manifest(ref, tag)[0]
        except RegistryError as err:
            if err.status == 404:
                return None
            raise

    def image_data(self, image: str) -> dict[str, Any]:
        """What Kyverno's imageRegistry context entry holds for `image` (kk: pkg/registryclient ForRef and
        pkg/engine/context/loaders/imagedata.go): image, resolvedImage, registry, repository, identifier,
        manifest, configData; an index resolves to its linux/amd64 manifest, as go-containerregistry's
        Descriptor.Image() does. ValueError for a bad reference, RegistryError for the registry."""
        ref = parse_image(image)
        manifest, digest = self.manifest(ref)
        if "manifests" in manifest:
            chosen = next((m for m in manifest.get("manifests") or []
                           if isinstance(m, dict) and (m.get("platform") or {}).get("os") == "linux"
                           and (m.get("platform") or {}).get("architecture") == "amd64"), None)
            if chosen is None:
                raise RegistryError(f"no child with platform linux/amd64 in index {ref.name}@{digest}")
            manifest, _ = self.manifest(ref, str(chosen.get("digest")))
        config_digest = (manifest.get("config") or {}).get("digest")
        config = json.loads(self.blob(ref, config_digest)) if isinstance(config_digest, str) else None
        return {"image": image, "resolvedImage": f"{ref.name}@{digest}", "registry": ref.host,
                "repository": ref.repository, "identifier": ref.digest or ref.tag, "manifest": manifest,
                "configData": config}

    def image_descriptor(self, image: str) -> dict[str, Any]:
        """What an ImageValidatingPolicy's `getImageData` answers (kyverno/sdk imagedataloader FetchImageData,
        ImageDescriptor's JSON): image, resolvedImage (`name:tag@digest`, or `name@digest`), registry,
        repository, identifier, tag or digest, imageIndex for an index, manifest, config. The manifest and
        config are the registry's JSON as served (go-containerregistry re-encodes its structs: fields it
        does not know would be dropped there)."""
        ref = parse_image(image)
        data = self.image_data(image)
        top, digest = self.manifest(ref)
        out: dict[str, Any] = {"image": image, "registry": ref.host, "repository": ref.repository,
                               "identifier": ref.digest or ref.tag}
        if ref.digest:
            out["digest"] = ref.digest
            out["resolvedImage"] = f"{ref.name}@{ref.digest}"
        else:
            out["tag"] = ref.tag
            out["digest"] = digest
            out["resolvedImage"] = f"{ref.name}:{ref.tag}@{digest}"
        if "manifests" in top:
            out["imageIndex"] = top
        out["manifest"] = data["manifest"]
        if data["configData"] is not None:
            out["config"] = data["configData"]
        return out
