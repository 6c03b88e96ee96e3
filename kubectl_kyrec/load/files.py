"""Which files a list of paths names, and their text, with kubectl's rules for directories.

A directory is walked recursively in lexical order (like `kubectl apply -R -f DIR`), taking files ending
`.yaml`, `.yml` or `.json`; `.git` directories are skipped, other hidden directories (`.kyverno-test`) are
not, except for policies (`skip_hidden`). A file named explicitly is read whatever its extension. `-` means
standard input.
"""

from __future__ import annotations

import codecs
import contextlib
import contextvars
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TextIO

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.model import Source

STDIN = "-"
STDIN_NAME = "<stdin>"
MANIFEST_EXTENSIONS = (".yaml", ".yml", ".json")
_SKIPPED_DIRS = frozenset({".git"})

# who is told of each input file as it is opened (the terminal's `loading N files`, render/progress.py); no
# clock here: the loaders only say that a file is read, the run's progress decides what to show and when
_ON_FILE: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar("on_file", default=None)


@contextlib.contextmanager
def reading_files(on_file: Callable[[str], None] | None) -> Iterator[None]:
    """Within the block, `on_file(name)` is called once for each input file (or `-`) opened for reading."""
    token = _ON_FILE.set(on_file)
    try:
        yield
    finally:
        _ON_FILE.reset(token)


def opened(name: str) -> None:
    """A loader opened `name` for reading: counted by the run's progress, if any."""
    on_file = _ON_FILE.get()
    if on_file is not None:
        on_file(name)


def expand_paths(paths: Sequence[str], *, skip_hidden: bool = False) -> list[str]:
    """Files (and `-`) in reading order; raises InputError for a path that does not exist.

    `skip_hidden`: below a directory, leave out hidden folders and files (`.chainsaw-test/`, `.github/`),
    as a checkout of a policy library holds test fixtures there that are no policies."""
    out: list[str] = []
    for path in paths:
        if path == STDIN:
            out.append(path)
        elif os.path.isdir(path):
            out.extend(_walk(path, skip_hidden))
        elif os.path.exists(path):
            out.append(path)
        else:
            raise InputError("no such file or directory", Source(path))
    return out


def _walk(root: str, skip_hidden: bool = False) -> list[str]:
    found: list[str] = []

    def fail(err: OSError) -> None:
        raise InputError(f"cannot read directory: {err.strerror or err}", Source(err.filename or root))

    for current, dirs, files in os.walk(root, onerror=fail):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not (skip_hidden and d.startswith(".")))
        found.extend(os.path.join(current, f) for f in sorted(files)
                     if f.endswith(MANIFEST_EXTENSIONS) and not (skip_hidden and f.startswith(".")))
    # os.walk yields a directory before its subdirectories; sort whole paths so that `a/x.yaml`,
    # `a/sub/y.yaml`, `b.yaml` come in the order kubectl's filepath.Walk gives.
    found.sort(key=lambda p: os.path.relpath(p, root).split(os.sep))
    return found


def read_text(path: str, stdin: TextIO | None = None) -> tuple[str, str]:
    """(display name, text) of a file or of `-`; raises InputError for unreadable or non-UTF-8 input."""
    opened(path)
    if path == STDIN:
        stream = stdin if stdin is not None else sys.stdin
        raw = getattr(stream, "buffer", None)
        try:
            if raw is not None:
                return STDIN_NAME, decode_text(raw.read(), STDIN_NAME)
            return STDIN_NAME, stream.read().lstrip("\ufeff")
        except UnicodeDecodeError as err:
            raise InputError(f"not valid UTF-8: {err.reason}", Source(STDIN_NAME)) from None
        except OSError as err:
            raise InputError(f"cannot read: {err.strerror or err}", Source(STDIN_NAME)) from None
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as err:
        reason = (err.strerror or str(err)).lower()
        raise InputError(f"cannot read: {reason}", Source(path)) from None
    return path, decode_text(data, path)


def decode_text(data: bytes, name: str) -> str:
    """UTF-8 (a BOM is dropped); UTF-16 with a BOM is accepted as go-yaml accepts it."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as err:
            raise InputError(f"not valid UTF-16: {err.reason}", Source(name)) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise InputError(f"not valid UTF-8: byte 0x{data[err.start]:02x} at column {column}",
                         Source(name, line)) from None
