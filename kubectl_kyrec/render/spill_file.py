"""An unlinked temporary file for what an output keeps aside until it writes (issue 36: the spilled results,
the table's rows, JUnit's cases), which turns into memory when the file system refuses more: a full disk
(ENOSPC) or the process's file size limit (EFBIG, RLIMIT_FSIZE). A spill only saves memory: it must not fail
a run whose output would be written, nor be taken for the output failing (render/sink.py names the output's
path in that error).

Each write is flushed at once, so a refusal comes from that write: what was written before it is copied into
memory, and the write goes there.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from typing import BinaryIO


class SpillFile:
    def __init__(self) -> None:
        self.file: BinaryIO = tempfile.TemporaryFile()     # noqa: SIM115 - closed by close()
        self._size = 0              # bytes written and flushed
        self.in_memory = False

    def write(self, data: bytes) -> None:
        """Append `data`."""
        file = self.file
        file.seek(self._size)
        try:
            file.write(data)
            file.flush()
        except OSError:
            if self.in_memory:
                raise
            self._to_memory()
            self.file.seek(self._size)
            self.file.write(data)
        self._size += len(data)

    def tell_end(self) -> int:
        return self._size

    def _to_memory(self) -> None:
        old = self.file
        old.seek(0)
        memory = io.BytesIO(old.read(self._size))
        with contextlib.suppress(OSError):      # its buffer still holds what the disk refused
            old.close()
        self.file = memory
        self.in_memory = True

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.file.close()
