"""Image references with go-containerregistry's defaults (sdk image/lib_test.go, impl_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.kyverno_image import image_library, is_image, parse_reference

DIGEST = "sha256:6aefddb645ee6963afd681b1845c661d0ea4c3b20ab9db86d9e753b203d385f2"
K8S = "registry.k8s.io/kube-apiserver-arm64"


def run(expr: str) -> Any:
    env = Environment([image_library()], [])
    outcome = env.compile(expr).evaluate(env.activation({}))
    return outcome.error if outcome.error is not None else outcome.value


@pytest.mark.parametrize(("expr", "value"), [
    (f'isImage("{K8S}:latest")', True),
    (f'isImage("{K8S}:@")', False),
    (f'parseImageReference("{K8S}").containsDigest()', False),
    (f'parseImageReference("{K8S}:latest").containsDigest()', False),
    (f'parseImageReference("{K8S}@{DIGEST}").containsDigest()', True),
    (f'parseImageReference("{K8S}:latest@{DIGEST}").containsDigest()', True),
    (f'parseImageReference("{K8S}").registry()', "registry.k8s.io"),
    (f'parseImageReference("{K8S}").registry().matches("(registry.k8s.io|ghcr.io)")', True),
    (f'parseImageReference("{K8S}").repository()', "kube-apiserver-arm64"),
    (f'parseImageReference("{K8S}:testtag").identifier()', "testtag"),
    (f'parseImageReference("{K8S}").identifier()', "latest"),
    (f'parseImageReference("{K8S}@{DIGEST}").identifier()', DIGEST),
    # repo:tag@digest is a Digest to go-containerregistry; the sdk's identifier() is its digest
    (f'parseImageReference("{K8S}:latest@{DIGEST}").identifier()', DIGEST),
    (f'parseImageReference("{K8S}:testtag").tag()', "testtag"),
    (f'parseImageReference("{K8S}").tag()', "latest"),
    (f'parseImageReference("{K8S}@{DIGEST}").tag()', ""),
    # and its tag() only answers for a Tag reference
    (f'parseImageReference("{K8S}:latest@{DIGEST}").tag()', ""),
    (f'parseImageReference("{K8S}").digest()', ""),
    (f'parseImageReference("{K8S}:testtag").digest()', ""),
    (f'parseImageReference("{K8S}@{DIGEST}").digest()', DIGEST),
    (f'parseImageReference("{K8S}:1.25").identifierWithSeparator()', ":1.25"),
    (f'parseImageReference("{K8S}").identifierWithSeparator()', ":latest"),
    (f'parseImageReference("{K8S}:1.25@{DIGEST}").identifierWithSeparator()', f"@{DIGEST}"),
    # the deprecated spelling
    (f'image("{K8S}:testtag").tag()', "testtag"),
])
def test_kyverno_cases(expr: str, value: Any) -> None:
    assert run(expr) == value


@pytest.mark.parametrize(("ref", "registry", "repository", "tag"), [
    ("nginx", "index.docker.io", "library/nginx", "latest"),
    ("docker.io/nginx:1.25", "index.docker.io", "library/nginx", "1.25"),
    ("index.docker.io/bitnami/redis", "index.docker.io", "bitnami/redis", "latest"),
    ("localhost:5000/foo/bar:v1", "localhost:5000", "foo/bar", "v1"),
    ("localhost/foo", "index.docker.io", "localhost/foo", "latest"),  # no dot or colon: not a registry
    ("ghcr.io/kyverno/kyverno", "ghcr.io", "kyverno/kyverno", "latest"),
])
def test_docker_hub_defaults(ref: str, registry: str, repository: str, tag: str) -> None:
    assert run(f'[image("{ref}").registry(), image("{ref}").repository(), image("{ref}").tag()]') == [
        registry, repository, tag]


@pytest.mark.parametrize("ref", ["Nginx", "a", "my_reg.io/x", "reg.io:abc/x", "nginx@sha512:abc",
                                 f"a@b@{DIGEST}", "nginx:" + "t" * 128])
def test_invalid_references(ref: str) -> None:
    assert is_image(ref) is False
    assert run(f'parseImageReference("{ref}")') == f"could not parse reference: {ref}"


def test_an_empty_tag_is_accepted_and_defaults() -> None:
    # go-containerregistry only checks a tag that is non-empty
    assert run('image("nginx:").tag()') == "latest"


def test_parse_error_text_matches_kyverno() -> None:
    assert run(f'parseImageReference("{K8S}:@")') == f"could not parse reference: {K8S}:@"


def test_url_scheme_is_rejected_with_its_own_message() -> None:
    assert run('image("https://ghcr.io/x")') == (
        "image reference must not contain a URL scheme (http:// or https://): https://ghcr.io/x; to connect to "
        "a registry over plain HTTP, use name.Insecure")


def test_tag_and_digest_parse_as_a_digest_reference() -> None:
    ref = parse_reference(f"fictional.registry.example:10443/imagename:my_tag@{DIGEST}")
    assert (ref.registry, ref.repository, ref.digest) == ("fictional.registry.example:10443", "imagename", DIGEST)
    assert run(f'image("registry.example:5000/repo@{DIGEST}").tag()') == ""  # the port is no tag


def test_methods_reject_other_maps() -> None:
    assert run('{"registry": "x"}.registry()') == "no such overload"
