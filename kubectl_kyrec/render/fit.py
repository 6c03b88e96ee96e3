"""Tables fitted to a width the kubectl way: no cell is ever cut.

What a table prints (kinds, namespaces, names, policy and rule names, file paths) is copied into kubectl or
an editor, and a cut one (`Deploym...nt/web`) cannot be: it is neither the name nor a prefix of it. So a
table too wide for its width is fitted by what it shows, never by cutting a cell, in this order (each step
costs the reader more than the one before):

1. object identities with kubectl's short kind names, as `kubectl get` prints them: `shop deploy/web` for
   `Deployment shop/web` (the namespace, then kubectl's TYPE/NAME), `ns/team-a` for `Namespace team-a`;
2. free text (messages, reasons) moved under its row, indented and wrapped at spaces (a word, which may
   be a name, is never broken);
3. optional columns dropped, the least needed first (`-o wide` shows them); a column that says where
   the row is (eval's LOCATION, `file:line`, which a terminal user opens in an editor) is moved under its
   row instead, whole on a line of its own.

What still does not fit is printed whole: the terminal wraps the line, as it wraps kubectl's. A width of
None is no limit at all: on a pipe or in a file kubectl does not fit its tables either.
`-o wide` shows every column, every cell whole.
"""

from __future__ import annotations

import functools
import io
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TextIO

from kubectl_kyrec.render.text_table import write_rows

GAP = 2                 # text_table puts two spaces between columns
INDENT = "    "         # text moved under its row
ID, REF, TEXT = "id", "ref", "text"     # what a column holds (Column.role)


@dataclass(frozen=True)
class Column:
    """A column of a fitted table.

    role: ID (printed as it is), REF (object identities, `Kind ns/name`: may take kubectl's short kind
    names), TEXT (free text: may move under its row). drop: 0 for a column always shown; otherwise the
    column may be dropped when the table does not fit, the highest number first. label: how text moved
    under its row is introduced (`reason: ...`); "" for none (a message reads as itself). under: at its
    turn to be dropped, the column moves under its row instead (never wrapped: an identifier)."""

    header: str
    role: str = ID
    drop: int = 0
    right: bool = False
    label: str = ""
    under: bool = False


@functools.cache
def short_kinds() -> dict[str, str]:
    """Kind -> the name `kubectl get` takes for it: its first short name in the built-in kind table
    (`deploy`, `cm`, `netpol`, `cpol`), else the kind in lower case (kubectl takes the singular too). A
    kind whose API groups disagree (none today) keeps the lower-case kind."""
    from kubectl_kyrec.load.run_inputs.kinds import builtin_kinds

    names: dict[str, set[str]] = {}
    for info in builtin_kinds():
        names.setdefault(info.kind, set()).add(info.short_names[0] if info.short_names else info.kind.lower())
    return {kind: next(iter(found)) for kind, found in names.items() if len(found) == 1}


def short_kind(kind: str) -> str:
    return short_kinds().get(kind) or kind.lower()


def short_ref(text: str) -> str:
    """`Deployment shop/web` -> `shop deploy/web`, `Namespace team-a` -> `ns/team-a`: kubectl's TYPE/NAME
    after the namespace, as `kubectl get -A` shows them. Any other text (`-`, a name alone) is returned
    as it is. Kubernetes names and namespaces hold no space and no `/`, so the split is unambiguous."""
    kind, space, rest = text.partition(" ")
    if not space or not kind or not rest or " " in rest:
        return text
    namespace, slash, name = rest.partition("/")
    if not slash:
        return f"{short_kind(kind)}/{rest}"
    return f"{namespace} {short_kind(kind)}/{name}"


def wrap(text: str, width: int | None, indent: str = INDENT, first: str | None = None) -> list[str]:
    """`text` as lines of at most `width` (None: one line), each starting with `indent` (the first with
    `first` when given), broken only at spaces: a word longer than the width stays whole on its own line."""
    start = indent if first is None else first
    if width is None:
        return [start + text]
    return textwrap.wrap(text, max(width, len(indent) + 20), initial_indent=start, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False) or [start]


def wrap_counts(head: str, counts: Sequence[str], width: int | None) -> str:
    """`head` then the comma-separated counts, continued on indented lines rather than past `width` (None:
    one line)."""
    lines = [head]
    for i, count in enumerate(counts):
        part = count + ("," if i < len(counts) - 1 else "")
        if width is not None and len(lines[-1]) + 1 + len(part) > width and lines[-1].strip():
            lines.append("  " + part)
        else:
            lines[-1] += " " + part
    return "\n".join(lines)


@dataclass
class Fitted:
    """A table as it is written: its headers, rows and right-aligned columns (indices), and for each row
    the lines under it ("" for none) or None when no text was moved."""

    headers: list[str]
    rows: Sequence[Sequence[str]]
    right: list[int]
    below: list[str] | None


def _memo(convert: Callable[[str], str]) -> Callable[[str], str]:
    """`convert` once per distinct cell: a name or a message recurs down a column (10,000s of rows)."""
    done: dict[str, str] = {}

    def once(text: str) -> str:
        out = done.get(text)
        if out is None:
            out = done[text] = convert(text)
        return out
    return once


def fit_table(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None,
              under: Sequence[str] | None = None) -> Fitted:
    """`rows` (cells as text) fitted to `width` as the module says; None: every column, as it is. `under`:
    a text per row ("" for none) always printed under it, wrapped at `width`, after any text moved there."""
    keep = list(range(len(columns)))
    extra = None if under is None else ["\n".join(wrap(text, width)) if text else "" for text in under]
    if width is None:       # no limit: the rows as they are, not even copied (a long eval has 100,000s)
        return Fitted([c.header for c in columns], rows, [i for i in keep if columns[i].right], extra)
    cells = [list(row) for row in rows]
    widths: dict[int, int] = {}         # a column's width (header or widest cell), measured once

    def column_width(i: int) -> int:
        found = widths.get(i)
        if found is None:
            found = widths[i] = max(len(columns[i].header), *(len(row[i]) for row in cells))
        return found

    def fitted(below: list[str] | None = None) -> Fitted:
        shown = cells if len(keep) == len(columns) else [[row[i] for i in keep] for row in cells]
        if extra is not None:
            below = ["\n".join(t for t in pair if t) for pair in zip(below or [""] * len(extra), extra, strict=True)]
        return Fitted([columns[i].header for i in keep], shown, [n for n, i in enumerate(keep) if columns[i].right],
                      below)

    def fits(moved: Sequence[int] = ()) -> bool:
        shown = [i for i in keep if i not in moved]
        return width is None or sum(map(column_width, shown)) + GAP * (len(shown) - 1) <= width

    if not rows or fits():
        return fitted()
    # 1. kubectl's short kind names
    refs = [i for i in keep if columns[i].role == REF]
    if refs:
        short = _memo(short_ref)
        for row in cells:
            for i in refs:
                row[i] = short(row[i])
        for i in refs:
            widths.pop(i, None)
        if fits():
            return fitted()
    # 2. free text under its row, the widest column first, until the rest fits
    texts = sorted((i for i in keep if columns[i].role == TEXT),
                   key=lambda i: -column_width(i))
    moved: list[int] = []
    for i in texts:
        if fits(moved):
            break
        moved.append(i)
    # 3. optional columns, the highest `drop` first: dropped, or moved under the row
    for i in sorted((i for i in keep if columns[i].drop and i not in moved), key=lambda i: -columns[i].drop):
        if fits(moved):
            break
        if columns[i].under:
            moved.append(i)
        else:
            keep.remove(i)
    if not moved:
        return fitted()
    moved.sort()            # under the row in the table's order
    lines: list[_Lines] = [_lines(columns[i], width) for i in moved]
    below = ["\n".join(line for n, i in enumerate(moved) if row[i] for line in lines[n](row[i])) for row in cells]
    keep = [i for i in keep if i not in moved]
    return fitted(below)


_Lines = Callable[[str], list[str]]


def _lines(column: Column, width: int | None) -> _Lines:
    done: dict[str, list[str]] = {}
    label = f"{column.label}: " if column.label else ""

    def lines(text: str) -> list[str]:
        out = done.get(text)
        if out is None:
            # an identifier (a file:line) on one line whole; free text wrapped at spaces
            out = done[text] = [INDENT + label + text] if column.role != TEXT else wrap(label + text, width)
        return out
    return lines


def write_table(stream: TextIO, columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None,
                under: Sequence[str] | None = None, cell_widths: Sequence[int] | None = None) -> None:
    """`cell_widths` (text_table.write_rows's): the longest cell of each column, used when `width` is None
    (the rows are then written as they are, and read once)."""
    table = fit_table(columns, rows, width, under)
    write_rows(stream, table.headers, table.rows, right=table.right, below=table.below,
               cell_widths=cell_widths if width is None else None)


def render_table(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None,
                 under: Sequence[str] | None = None) -> str:
    """`write_table` as text, without the last newline."""
    out = io.StringIO()
    write_table(out, columns, rows, width, under)
    return out.getvalue().rstrip("\n")


# ---- a change's cause (reconcile/causes.py): a CAUSE column in -o wide, a line under its row otherwise ------

def cause_header(causes: Sequence[str]) -> list[str]:
    """["CAUSE"] when some row has one (a table of changes made without causes keeps its columns)."""
    return ["CAUSE"] if any(causes) else []


def with_causes(rows: Sequence[list[str]], causes: Sequence[str]) -> Sequence[list[str]]:
    return [[*row, cause] for row, cause in zip(rows, causes, strict=True)] if any(causes) else rows


def cause_lines(causes: Sequence[str]) -> list[str] | None:
    return [f"cause: {cause}" if cause else "" for cause in causes] if any(causes) else None
