"""Tables that fit a terminal: the widest cuttable columns are cut first, names in the middle.

kubectl's own tables do not cut, but kyrec's rows hold long generated names, file paths and messages; a
140-column row wraps into noise on an 80-column terminal. Names and paths keep their start and end (the
distinguishing parts: `PolicyReport shop/1111...0002`), paths keep their end (`...manifests/web.yaml:16`),
messages keep their start.
`-o wide` shows every cell whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

TABLE_WIDTH = 80
GAP = 2                 # tabulate's "plain" format puts two spaces between columns
HEADER_PAD = 2          # and makes a column at least its header plus two wide
ELLIPSIS = "..."
MIDDLE, END, START = "middle", "end", "start"     # where the cut goes


def cut_middle(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    if width <= len(ELLIPSIS):
        return text[:width]
    keep = width - len(ELLIPSIS)
    head = (keep + 1) // 2
    return text[:head] + ELLIPSIS + text[len(text) - (keep - head):]


def cut_end(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return text[:width] if width <= len(ELLIPSIS) else text[: width - len(ELLIPSIS)] + ELLIPSIS


def cut_start(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return text[len(text) - width:] if width <= len(ELLIPSIS) else ELLIPSIS + text[len(text) - width + len(ELLIPSIS):]


_CUT = {MIDDLE: cut_middle, END: cut_end, START: cut_start}


def fit_rows(headers: Sequence[str], rows: Sequence[Sequence[Any]], cuttable: Mapping[int, str], *,
             width: int = TABLE_WIDTH, floor: int = 12,
             floors: Mapping[int, int] | None = None, header_pad: int = HEADER_PAD) -> list[list[Any]]:
    """`rows` with cells of the `cuttable` columns (index -> MIDDLE, END or START) cut to fit `width`.

    The columns are cut down to a common cap, widest first, each no narrower than its header and its
    floor (`floors[i]`, else `floor`); when even that does not fit, the floors are what is left.
    `header_pad`: how much wider than its header the table writer makes a column (tabulate 2,
    text_table.write_rows 0).
    """
    if not rows:
        return [list(r) for r in rows]
    widths = [max(len(str(h)) + header_pad, *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    total = sum(widths) + GAP * (len(widths) - 1)
    if total <= width:
        return [list(r) for r in rows]
    fixed = sum(w for i, w in enumerate(widths) if i not in cuttable) + GAP * (len(widths) - 1)
    least = {i: min(widths[i], max(len(str(headers[i])) + header_pad, (floors or {}).get(i, floor)))
             for i in cuttable}

    def used(cap: int) -> int:
        return fixed + sum(max(least[i], min(widths[i], cap)) for i in cuttable)

    cap = max(widths)
    while cap > 0 and used(cap) > width:
        cap -= 1
    limits = {i: max(least[i], min(widths[i], cap)) for i in cuttable}
    # the same cell text recurs down a column (a policy's name on each of its rows): cut each text once
    cuts: list[tuple[int, Any, int, dict[str, str]]] = [(i, _CUT[mode], limits[i], {}) for i, mode in cuttable.items()]
    out = []
    for row in rows:
        cells = list(row)
        for i, cut, limit, done in cuts:
            text = str(cells[i])
            cut_text = done.get(text)
            if cut_text is None:
                cut_text = done[text] = cut(text, limit)
            cells[i] = cut_text
        out.append(cells)
    return out


def wrap_counts(head: str, counts: Sequence[str], width: int = TABLE_WIDTH) -> str:
    """`head` then the comma-separated counts, continued on indented lines rather than past `width`."""
    lines = [head]
    for i, count in enumerate(counts):
        part = count + ("," if i < len(counts) - 1 else "")
        if len(lines[-1]) + 1 + len(part) > width and lines[-1].strip():
            lines.append("  " + part)
        else:
            lines[-1] += " " + part
    return "\n".join(lines)
