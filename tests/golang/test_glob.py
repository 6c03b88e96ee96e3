"""gobwas/glob without separators, as Kyverno compiles matchImageReferences globs."""

from __future__ import annotations

import pytest

from kubectl_kyrec.golang.glob import GlobError, compile_glob, glob_match


@pytest.mark.parametrize(("pattern", "text", "want"), [
    ("ghcr.io/*", "ghcr.io/kyverno/test-verify-image:signed", True),     # `*` crosses `/`
    ("ghcr.io/*", "docker.io/ghcr.io/x", False),                          # anchored at both ends
    ("*", "", True),
    ("ghcr.io/kyverno/*:v?", "ghcr.io/kyverno/kyverno:v1", True),
    ("ghcr.io/kyverno/*:v?", "ghcr.io/kyverno/kyverno:v10", False),
    ("{ghcr.io,quay.io}/**", "quay.io/a/b", True),
    ("{ghcr.io,quay.io}/**", "docker.io/a/b", False),
    ("reg[0-9].io/*", "reg7.io/x", True),
    ("reg[!0-9].io/*", "reg7.io/x", False),
    ("a.b/c", "aXb/c", False),                                           # `.` is literal
    ("a\\*b", "a*b", True),
    ("a\\*b", "axb", False),
])
def test_matches_as_gobwas(pattern: str, text: str, want: bool) -> None:
    assert glob_match(pattern, text) is want


@pytest.mark.parametrize("pattern", ["ghcr.io/[a", "{a,b", "x\\"])
def test_refuses_what_gobwas_refuses(pattern: str) -> None:
    with pytest.raises(GlobError):
        compile_glob(pattern)
