"""What a child process wrote to a pseudo-terminal, for the tests that run kyrec on one."""

from __future__ import annotations

import os


def drain(main: int) -> bytes:
    """Everything read from the pty's main side until the child closes it (Linux answers EIO then)."""
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks)
