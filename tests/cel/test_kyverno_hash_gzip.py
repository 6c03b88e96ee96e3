"""sha1/sha256/md5 (and hash.*), gzip.compress/decompress."""

from __future__ import annotations

import gzip
from typing import Any

import pytest

from kubectl_kyrec.cel.engine import Environment
from kubectl_kyrec.cel.kyverno_gzip import gzip_library
from kubectl_kyrec.cel.kyverno_hash import hash_library


def run(expr: str, **variables: Any) -> Any:
    env = Environment([hash_library(), gzip_library()], list(variables))
    outcome = env.compile(expr).evaluate(env.activation(variables))
    return outcome.error if outcome.error is not None else outcome.value


@pytest.mark.parametrize(("name", "digest"), [
    ("sha1", "a9993e364706816aba3e25717850c26c9cd0d89d"),
    ("sha256", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    ("md5", "900150983cd24fb0d6963f7d28e17f72"),
])
def test_digests_of_abc_in_both_spellings(name: str, digest: str) -> None:
    assert run(f'{name}("abc")') == digest
    assert run(f'hash.{name}("abc")') == digest


def test_hash_is_over_utf8_bytes() -> None:
    assert run('md5("é")') == "66ddcd97cfdeabb2f6fb8a999b4bc76f"  # md5 of b"\xc3\xa9"


def test_gzip_round_trip() -> None:
    assert run('gzip.decompress(gzip.compress("hello world"))') == "hello world"


def test_gzip_header_is_gos() -> None:
    data = run('gzip.compress("x")')
    # magic, deflate, no flags, mtime 0, no extra flags, OS unknown (255)
    assert bytes(data[:10]) == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    assert gzip.decompress(bytes(data)) == b"x"


def test_decompress_reads_other_gzip_writers_and_multiple_members() -> None:
    data = gzip.compress(b"abc", mtime=12345) + gzip.compress(b"def")
    assert run("gzip.decompress(data)", data=bytearray(data)) == "abcdef"


@pytest.mark.parametrize(("data", "message"), [
    (b"", "EOF"),
    (b"not gzip data", "gzip: invalid header"),
    (gzip.compress(b"hello")[:-6], "unexpected EOF"),
    (gzip.compress(b"hello")[:-8] + b"\x00\x00\x00\x00" + gzip.compress(b"hello")[-4:], "gzip: invalid checksum"),
])
def test_decompress_errors(data: bytes, message: str) -> None:
    assert run("gzip.decompress(data)", data=bytearray(data)) == message


def test_compress_needs_a_string() -> None:
    assert run("gzip.compress(1)") == "type conversion error from int to 'string'"
