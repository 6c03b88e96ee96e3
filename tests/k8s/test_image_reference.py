"""k8s.image_reference: distribution/reference v0.6.0's ParseNormalizedNamed (normalize.go), the parser the
API server's pull-policy default reads through pkg/util/parsers.ParseImageName."""

from __future__ import annotations

import pytest

from kubectl_kyrec.k8s.image_reference import parse_normalized_named, parse_reference


@pytest.mark.parametrize(("image", "parsed"), [
    ("nginx", ("docker.io", "library/nginx", "", "")),
    ("nginx:1.25", ("docker.io", "library/nginx", "1.25", "")),
    ("index.docker.io/nginx", ("docker.io", "library/nginx", "", "")),
    ("team/app:v1", ("docker.io", "team/app", "v1", "")),
    ("localhost/app", ("localhost", "app", "", "")),
    ("registry:5000/app:latest", ("registry:5000", "app", "latest", "")),
    ("Registry.Example.com/app", ("Registry.Example.com", "app", "", "")),   # an uppercase first part: a domain
    ("ghcr.io/org/app@sha256:" + "b" * 64, ("ghcr.io", "org/app", "", "sha256:" + "b" * 64)),
])
def test_normalized_names(image: str, parsed: tuple[str, str, str, str]) -> None:
    assert parse_normalized_named(image) == parsed


@pytest.mark.parametrize(("image", "message"), [
    ("a" * 64, "cannot specify 64-byte hexadecimal strings"),
    ("Nginx", "repository name (library/Nginx) must be lowercase"),
    ("nginx:bad tag", "invalid reference format"),
    ("", "invalid reference format"),
])
def test_refused_names(image: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_normalized_named(image)


def test_parse_reference_keeps_the_name_as_written() -> None:
    assert parse_reference("nginx:1") == ("", "nginx", "1", "")
