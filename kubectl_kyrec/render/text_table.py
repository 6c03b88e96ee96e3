"""Plain text tables, written row by row in one pass over rows already made (no type guessing per cell).

The layout of tabulate's "plain" format, which the tables were first printed with: a header line, columns
two spaces apart, padded to the widest cell, text left-aligned and the columns named in `right`
right-aligned; no trailing spaces.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from itertools import islice, starmap
from typing import TextIO


def write_rows(stream: TextIO, headers: Sequence[str], rows: Iterable[Sequence[str]],
               right: Container[int] = (), chunk: int = 2000, below: Sequence[str] | None = None,
               pad: int = 0, cell_widths: Sequence[int] | None = None) -> None:
    """`below`, when given, holds one line per row written under it (empty: none), for text too long for
    a column (eval's messages). `pad`: each column at least that much wider than its header (coverage's
    count tables keep the 2 tabulate gave them). `cell_widths`: the longest cell of each column, when the
    caller knows them: the rows are then read once, not twice (eval's spilled rows are merged from a file
    each time they are read), and may be any iterable."""
    widths = [len(h) + pad for h in headers]
    if cell_widths is not None:
        widths = [max(w, cell) for w, cell in zip(widths, cell_widths, strict=True)]
    else:
        for row in rows:
            for i, cell in enumerate(row):
                if len(cell) > widths[i]:
                    widths[i] = len(cell)
    last = len(headers) - 1
    # one format for every line (str.format pads in C): text left, `right` columns right, the last
    # column unpadded; trailing spaces stripped after
    fmt = "  ".join("{}" if i == last and i not in right else f"{{:{'>' if i in right else '<'}{w}}}"
                    for i, w in enumerate(widths))
    render = fmt.format

    def line(cells: Sequence[str]) -> str:
        return render(*cells).rstrip() + "\n"

    stream.write(line(headers))
    if below is None:
        # each line made by C-level calls (format, strip, join), `chunk` rows at a time: eval's spilled table
        # writes 100,000s of rows here after its last result, on one core
        pending = iter(rows)
        while True:
            block = list(islice(pending, chunk))
            if not block:
                return
            stream.write("\n".join(map(str.rstrip, starmap(render, block))) + "\n")
    out: list[str] = []
    for n, row in enumerate(rows):
        out.append(line(row))
        if below[n]:
            out.append(below[n] + "\n")
        if len(out) >= chunk:
            stream.write("".join(out))
            out.clear()
    stream.write("".join(out))
