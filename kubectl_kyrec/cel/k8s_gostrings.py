"""Go's ``strconv.Quote``: Kubernetes error texts quote their inputs with ``%q``.

Kyverno prints these texts verbatim, so the Kubernetes CEL libraries reproduce the quoting exactly
for every string a policy is likely to hold (printable text, control characters, invalid UTF-8).
"""

from __future__ import annotations

_SHORT_ESCAPES = {
    0x07: "\\a", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x0B: "\\v",
}


def go_quote(value: str | bytes) -> str:
    """Quote like Go's ``%q``; bytes that are not UTF-8 become ``\\xNN`` as Go prints them."""
    data = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else bytes(value)
    out = ['"']
    i = 0
    while i < len(data):
        rune, width = _decode_rune(data, i)
        if rune is None:
            out.append(f"\\x{data[i]:02x}")
        else:
            out.append(_quote_rune(rune))
        i += width
    out.append('"')
    return "".join(out)


def _decode_rune(data: bytes, i: int) -> tuple[int | None, int]:
    # Go decodes one rune at a time and treats each undecodable byte on its own.
    for width in (1, 2, 3, 4):
        chunk = data[i:i + width]
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if len(text) == 1:
            return ord(text), width
    return None, 1


def _quote_rune(rune: int) -> str:
    if rune in (0x22, 0x5C):
        return "\\" + chr(rune)
    if rune == 0x20 or (rune > 0x20 and rune != 0x7F and chr(rune).isprintable()):
        return chr(rune)
    if rune in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[rune]
    if rune < 0x20 or rune == 0x7F:
        return f"\\x{rune:02x}"
    if rune < 0x10000:
        return f"\\u{rune:04x}"
    return f"\\U{rune:08x}"
