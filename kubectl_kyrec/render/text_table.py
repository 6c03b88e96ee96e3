"""Plain text tables, written row by row in one pass over rows already made (no type guessing per cell).

Laid out as tabulate's "plain" format: a header line, columns two spaces apart, padded to the widest
cell, text left-aligned and the columns named in `right` right-aligned; no trailing spaces.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import TextIO


def write_rows(stream: TextIO, headers: Sequence[str], rows: Sequence[Sequence[str]],
               right: Container[int] = (), chunk: int = 2000, below: Sequence[str] | None = None) -> None:
    """`below`, when given, holds one line per row written under it (empty: none), for text too long for
    a column (eval's messages)."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            if len(cell) > widths[i]:
                widths[i] = len(cell)
    last = len(headers) - 1

    def line(cells: Sequence[str]) -> str:
        parts = [cell.rjust(widths[i]) if i in right else (cell if i == last else cell.ljust(widths[i]))
                 for i, cell in enumerate(cells)]
        return "  ".join(parts).rstrip() + "\n"

    stream.write(line(headers))
    out: list[str] = []
    for n, row in enumerate(rows):
        out.append(line(row))
        if below is not None and below[n]:
            out.append(below[n] + "\n")
        if len(out) >= chunk:
            stream.write("".join(out))
            out.clear()
    stream.write("".join(out))
