"""Where rendered text goes: stdout, or the path of `-o FORMAT=FILE` exactly as the user gave it.

A path is written the way a shell's `>` would write it, so symlinks, devices, FIFOs, `/dev/fd/N` and
process substitution (`-o junit=>(wc -c)`) all receive the text; a path naming one of this process's open
descriptors (`/dev/fd/N`, `/dev/stdout`) is written through that descriptor. Only a regular file (or a path that does
not exist yet) is replaced atomically: the text goes to a temporary beside the real file and is renamed
over it, so a failed write never leaves a half-written report where a good one was. Every failure is an
`OutputError` naming the path (exit 74), never an internal error.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable
from typing import TextIO

import click

from kubectl_kyrec.errors import OutputError

Write = Callable[[int, bytes], int]
# a renderer: writes one output, piece by piece, into a text stream (see `write_stream`)
Writer = Callable[[TextIO], None]
_BUFFER = 1 << 20


def write_text(path: str | None, text: str, *, color: bool = False, write: Write = os.write) -> None:
    """Write `text` (a newline added when missing) to stdout (`path` None) or to `path`.

    `color`: keep escape sequences on a stdout that is not a terminal (click strips them otherwise).
    `write`: the low-level writer, so tests can simulate a full disk on a regular file.
    """
    if text and not text.endswith("\n"):
        text += "\n"
    if path is None:
        _to_stdout(text, color)
        return
    data = text.encode("utf-8")
    fd = _open_descriptor(path)
    if fd is not None:
        _to_descriptor(path, fd, data, write)
        return
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise _failed(path, exc) from None
    if info is None or stat.S_ISREG(info.st_mode):
        _replace(path, data, info, write)
    else:
        _through(path, data, write)


def write_stream(path: str | None, writer: Writer) -> None:
    """Run `writer` on a text stream to stdout (`path` None) or to `path`, with `write_text`'s rules.

    The renderer writes as it goes, so no output is ever held whole in memory; a regular file is still
    replaced atomically (the temporary is renamed over it only once the renderer has finished).
    """
    if path is None:
        _stream_to_stdout(writer)
        return
    fd = _open_descriptor(path)
    if fd is not None:
        if fd in (1, 2):
            (sys.stdout if fd == 1 else sys.stderr).flush()
        _stream_to_fd(path, os.dup(fd), writer, broken_pipe=True)
        return
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise _failed(path, exc) from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
        except OSError as exc:
            raise _failed(path, exc) from None
        _stream_to_fd(path, fd, writer)
        return
    real = os.path.realpath(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(real)}.", suffix=".kyrec-tmp",
                                   dir=os.path.dirname(real) or ".")
    except OSError as exc:
        raise _failed(path, exc) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", buffering=_BUFFER, newline="") as stream:
            writer(stream)
            stream.flush()
            os.fchmod(fd, stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~_umask())
            os.fsync(fd)
        os.replace(tmp, real)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _failed(path, exc) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _stream_to_fd(path: str, fd: int, writer: Writer, *, broken_pipe: bool = False) -> None:
    try:
        with os.fdopen(fd, "w", encoding="utf-8", buffering=_BUFFER, newline="") as stream:
            writer(stream)
    except BrokenPipeError:
        if broken_pipe:
            raise
        raise _failed(path, BrokenPipeError(32, "Broken pipe")) from None
    except OSError as exc:
        raise _failed(path, exc) from None


def _stream_to_stdout(writer: Writer) -> None:
    try:
        writer(sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        raise              # the reader went away: the CLI edge exits quietly with 141
    except OSError as exc:
        raise OutputError(f"standard output: cannot write: {exc.strerror or exc}") from None


# names of this process's open descriptors: /dev/fd/3, /proc/self/fd/3, /dev/stdout, /dev/stderr
_DESCRIPTOR = re.compile(r"^/(?:dev/fd|proc/self/fd)/(\d+)$")
_STANDARD = {"/dev/stdout": 1, "/dev/stderr": 2}


def _open_descriptor(path: str) -> int | None:
    """The descriptor a path names, when it names one this process has open.

    Reopening `/dev/fd/3` would truncate a `3>>log` the shell opened for appending, and renaming over
    what it resolves to would leave the descriptor on a deleted file: such paths are written through the
    descriptor itself, at its offset and with its flags, as the shell set them up.
    """
    found = _DESCRIPTOR.match(path)
    fd = int(found.group(1)) if found else _STANDARD.get(path)
    if fd is None:
        return None
    try:
        os.fstat(fd)
    except OSError:
        return None          # not open here: the path is opened like any other, and fails like one
    return fd


def _to_descriptor(path: str, fd: int, data: bytes, write: Write) -> None:
    if fd in (1, 2):
        # keep the order of what was printed before through Python's buffered streams
        (sys.stdout if fd == 1 else sys.stderr).flush()
    try:
        _write_all(fd, data, write)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise _failed(path, exc) from None


def _to_stdout(text: str, color: bool) -> None:
    try:
        click.echo(text, nl=False, color=True if color else None)
    except BrokenPipeError:
        raise              # the reader went away: the CLI edge exits quietly with 141
    except OSError as exc:
        raise OutputError(f"standard output: cannot write: {exc.strerror or exc}") from None


def _failed(path: str, exc: OSError) -> OutputError:
    return OutputError(f"{path}: cannot write: {exc.strerror or exc}")


def _write_all(fd: int, data: bytes, write: Write) -> None:
    view = memoryview(data)
    while view:
        done = write(fd, view[:1 << 20].tobytes())
        view = view[done:]


def _through(path: str, data: bytes, write: Write) -> None:
    """Devices, FIFOs, sockets, `/dev/fd/N`: open the path itself, as `>` does, and write into it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
    except OSError as exc:
        raise _failed(path, exc) from None
    try:
        _write_all(fd, data, write)
    except OSError as exc:
        raise _failed(path, exc) from None
    finally:
        os.close(fd)


def _replace(path: str, data: bytes, info: os.stat_result | None, write: Write) -> None:
    """A regular file, or a new one: temporary beside the real file (symlinks resolved), then rename."""
    real = os.path.realpath(path)
    directory = os.path.dirname(real) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(real)}.", suffix=".kyrec-tmp", dir=directory)
    except OSError as exc:
        raise _failed(path, exc) from None
    try:
        try:
            _write_all(fd, data, write)
            # the file keeps the mode it had; a new one gets what `>` would give it (0666 minus the umask)
            os.fchmod(fd, stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~_umask())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, real)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _failed(path, exc) from None


def _umask() -> int:
    # reading the umask means setting it; this process is single-threaded while it writes its outputs
    mask = os.umask(0)
    os.umask(mask)
    return mask


def flush_stdout_quietly() -> None:
    """After a broken pipe: point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def write_owned_files(directory: str, files: dict[str, str], header: str, flag: str) -> list[str]:
    """Write `files` (relative path -> text, each starting with `header`) under `directory`, made when
    missing; returns the paths written. Every target is checked before any is written: one that exists and
    does not start with `header` (so `flag` did not write it) is an OutputError, and nothing is written."""
    targets = {os.path.join(directory, name): text for name, text in files.items()}
    for path in targets:
        if os.path.lexists(path):
            try:
                with open(path, encoding="utf-8", errors="replace") as existing:
                    first = existing.readline()
            except OSError as exc:
                raise OutputError(f"{flag}: cannot read {path}: {exc.strerror}") from None
            if first != header.splitlines(keepends=True)[0]:
                raise OutputError(f"{flag}: {path} exists and was not written by {flag}; not overwritten "
                                  "(nothing was written): choose another directory")
    for path, text in targets.items():
        try:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{flag}: cannot create {os.path.dirname(path)}: {exc.strerror}") from None
        write_text(path, text)
    return list(targets)
