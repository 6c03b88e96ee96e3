"""The top-level apiVersion and kind of each document of a YAML stream, read from its lines, not composed.

Below a `-p` directory most files are no policies (an earlier `-o yaml`, a state, CI files); composing a
multi-MB one to find that out costs seconds. A block-style document's own `apiVersion:` and `kind:` stand
at column 0 (content of a block scalar or a nested node under a top-level key is indented), so a plain
look at the lines decides it, and only documents that may be policies are composed.

Whatever this cannot read plainly is left to the composer: JSON, directives, text after `---`, a
top-level merge key, a key given twice, a value that is quoted oddly, an alias or a tag, and Lists (their
items may be policies).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from typing import BinaryIO

# a document marker (`---`, `...`); a text where one is followed by more than a comment is left whole
_ANY_MARKER = re.compile(r"^(?:---|\.\.\.)(?=[ \t\r\n]|$)", re.MULTILINE)
_BARE_MARKER = re.compile(r"(?:---|\.\.\.)[ \t]*(?:#.*)?\r?$", re.MULTILINE)
_DIRECTIVE = re.compile(r"^%", re.MULTILINE)
_TOP_KEY = {key: re.compile(rf"^{key}[ \t]*:(.*)$", re.MULTILINE) for key in ("apiVersion", "kind")}
_UNSURE = re.compile(r"^(?:<<|[\"'{\[&*!?|>])", re.MULTILINE)
_VALUE = re.compile(r"""^(?:"([\w./-]+)"|'([\w./-]+)'|([\w./-]+))[ \t]*(?:#.*)?\r?$""")


# plain scalars YAML 1.1 reads as no string (go-yaml's rules): the composer says what such a document is
_NOT_TEXT = re.compile(r"^(?:[-+.\d].*|~|null|true|false|yes|no|on|off|y|n)$", re.IGNORECASE)


def _value(raw: str) -> str | None:
    match = _VALUE.match(raw.strip())
    if match is None:
        return None
    quoted = match.group(1) or match.group(2)
    if quoted is not None:
        return quoted
    plain = match.group(3)
    return None if _NOT_TEXT.match(plain) else plain


def _kind_of(chunk: str) -> tuple[str, str] | None:
    """(apiVersion, kind) when the chunk is plainly a block mapping that states each once; else None."""
    if _UNSURE.search(chunk):
        return None
    found = []
    for pattern in _TOP_KEY.values():
        matches = pattern.findall(chunk)
        if len(matches) != 1:
            return None
        value = _value(matches[0])
        if value is None:
            return None
        found.append(value)
    return found[0], found[1]


def blank_plain_non_policies(text: str, is_policy: Callable[[str, str], bool]) -> tuple[str, list[str]]:
    """`text` with every document that plainly is no policy (`is_policy(apiVersion, kind)` false, not a
    List) replaced by as many empty lines, so that the composer reads only the rest, at the same lines;
    and the `apiVersion/kind` of each document blanked. Text this cannot read plainly comes back whole."""
    if _DIRECTIVE.search(text) or text.lstrip().startswith(("{", "[")):
        return text, []
    markers = list(_ANY_MARKER.finditer(text))
    if any(_BARE_MARKER.match(text, m.start()) is None for m in markers):
        return text, []
    # each document: from after its marker line to the next marker
    bounds = [0, *(text.find("\n", m.start()) + 1 or len(text) for m in markers)]
    starts = [m.start() for m in markers] + [len(text)]
    out: list[str] = []
    blanked: list[str] = []
    position = 0
    for begin, end in zip(bounds, starts, strict=True):
        chunk = text[begin:end]
        found = _kind_of(chunk) if chunk.strip() else None
        if found is None or found[1].endswith("List") or is_policy(*found):
            continue
        out.append(text[position:begin])
        out.append("\n" * chunk.count("\n"))
        position = end
        blanked.append(f"{found[0]}/{found[1]}")
    if not blanked:
        return text, []
    out.append(text[position:])
    return "".join(out), blanked


_COMMENTS_ONLY = re.compile(r"\A(?:[ \t]*(?:#[^\n]*)?\r?\n?)*\Z")


def _plain_chunk_kinds(text: str) -> list[tuple[str, str]] | None:
    """(apiVersion, kind) of each document of `text`, a run of whole documents (it starts at a document's
    start and ends at one's end), when every one is plainly a block mapping that states them; else None."""
    if _DIRECTIVE.search(text) or text.lstrip().startswith(("{", "[")):
        return None
    markers = list(_ANY_MARKER.finditer(text))
    if any(_BARE_MARKER.match(text, m.start()) is None for m in markers):
        return None
    bounds = [0, *(text.find("\n", m.start()) + 1 or len(text) for m in markers)]
    starts = [m.start() for m in markers] + [len(text)]
    found = []
    for begin, end in zip(bounds, starts, strict=True):
        chunk = text[begin:end]
        if _COMMENTS_ONLY.match(chunk):
            continue        # no document: blank lines and comments between two markers
        kind = _kind_of(chunk)
        if kind is None:
            return None
        found.append(kind)
    return found


# a stream's text is looked at this many bytes at a time (plus the document the piece ends in)
_PIECE = 1 << 20
_MARKER_LINE = re.compile(r"^(?:---|\.\.\.)(?=[ \t\r\n]|$)", re.MULTILINE)


def plain_stream_kinds(stream: BinaryIO) -> dict[tuple[str, str], int] | None:
    """How many documents of each (apiVersion, kind) a YAML stream holds, read a piece at a time (never held
    whole), when each states them plainly as `_kind_of` reads them; None when any does not (JSON, flow style, a tag, an
    alias, a directive, text that is not UTF-8...): the composer must then say what the documents are."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    pending = ""
    found: dict[tuple[str, str], int] = {}
    while True:
        data = stream.read(_PIECE)
        try:
            pending += decoder.decode(data, final=not data)
        except UnicodeDecodeError:
            return None
        cut = len(pending)
        if data:
            # the whole documents read so far: up to the start of the last marker line
            cut = max((m.start() for m in _MARKER_LINE.finditer(pending)), default=0)
            if not cut:
                continue
        kinds = _plain_chunk_kinds(pending[:cut])
        if kinds is None:
            return None
        for kind in kinds:
            found[kind] = found.get(kind, 0) + 1
        pending = pending[cut:]
        if not data:
            return found


# kyrec's own outputs, by their first lines as kyrec writes them (render/envelope.py puts apiVersion and kind
# first; render/sarif.py `$schema` first): `-o json=FILE` below an -r directory is no manifest of the user's
KYREC_API_VERSION = "kyrec/v1"
_KYREC_HEAD = re.compile(r'\A(?:[ \t]*(?:#[^\n]*)?\r?\n)*[ \t]*(?:---[ \t]*\r?\n[ \t]*)?'
                         r'(?:\{\s*"apiVersion"\s*:\s*"kyrec/v1"\s*,\s*"kind"\s*:\s*"(\w+)"'
                         r'|apiVersion:[ \t]*["\']?kyrec/v1["\']?[ \t]*\r?\nkind:[ \t]*["\']?(\w+))')
_SARIF_HEAD = re.compile(r'\A\s*\{\s*"\$schema"\s*:\s*"[^"]*sarif[^"]*"')


def kyrec_output(text: str) -> str | None:
    """What kyrec output `text` is (`kyrec/v1 EvalResult`, `SARIF log`), read from its first lines as kyrec
    writes them, without parsing the rest; None for anything else."""
    head = text[:4096]
    match = _KYREC_HEAD.match(head)
    if match is not None:
        return f"{KYREC_API_VERSION} {match.group(1) or match.group(2)}"
    if _SARIF_HEAD.match(head):
        return "SARIF log"
    return None
