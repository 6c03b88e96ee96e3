"""Every document the code, the tests and the docs cite is in the repository (issue 35).

The project's design and Kyverno's semantics as kyrec follows them live in docs/ (architecture.md,
semantics/); a fresh clone must not point at documents it does not hold. So:

- no file cites the design or semantics documents the project started from, which are not in the
  repository (their names, followed by a section number, or as files);
- every path under docs/ (a Markdown or YAML file) cited in code, tests, benchmarks, packaging and docs exists, and so
  does the heading its `#anchor` names, as GitHub makes anchors from headings;
- every relative Markdown link in README.md and docs/ resolves to a file, anchors included.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# where references are written: the package, its tests and test data, benchmarks, packaging, CI and the docs
SCANNED = ("kubectl_kyrec", "tests", "testdata", "bench", "packaging", "docs", ".ci", "README.md", "action.yml",
           ".pre-commit-hooks.yaml", "pyproject.toml")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".sh", ""}

# the documents outside the repository, spelled so that this file does not cite them itself
_OUTSIDE = ("DES" + "IGN", "SEMAN" + "TICS", "INTER" + "FACES", "ST" + "YLE")
# any mention of those names as documents: the words in capitals, which the code uses for nothing else
OUTSIDE_NAME = re.compile(r"\b(?:" + "|".join(_OUTSIDE) + r")(?:\b|-)")

DOC_PATH = re.compile(r"(?<![\w/.-])docs/[\w./-]*\.(?:md|yaml)(?:#[\w-]+)?")
MD_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")


def _files() -> list[Path]:
    found: list[Path] = []
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(p for p in sorted(path.rglob("*"))
                         if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts
                         and not any(part.startswith(".") and part != ".ci" for part in p.relative_to(ROOT).parts))
    return found


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return ""


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: inline markup dropped, lower case, punctuation removed (letters,
    digits, `_`, `-` and spaces kept), each space a hyphen."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors of a Markdown file's headings (outside code blocks); a repeated slug gets -1, -2, ..."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in _text(path).splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return frozenset(out)


def _missing(target: Path, anchor: str) -> str | None:
    """Why `target#anchor` does not resolve, or None."""
    if not target.exists():
        return "no such file"
    if anchor and target.suffix == ".md" and anchor not in anchors(target):
        return f"no heading with anchor #{anchor}"
    return None


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


FILES = _files()
THIS = Path(__file__).resolve()


def test_the_scan_covers_the_tree() -> None:
    """The scan reads the package, the tests and the docs (a moved folder must not empty it)."""
    names = {p.relative_to(ROOT).parts[0] for p in FILES}
    assert {"kubectl_kyrec", "tests", "bench", "docs", "README.md"} <= names
    assert sum(p.suffix == ".py" for p in FILES) > 300
    assert (ROOT / "docs" / "architecture.md") in FILES


def test_no_citation_of_documents_outside_the_repository() -> None:
    found = []
    for path in FILES:
        if path == THIS:
            continue
        text = _text(path)
        for match in OUTSIDE_NAME.finditer(text):
            found.append(f"{path.relative_to(ROOT)}:{_line(text, match.start())}: "
                         f"{text[match.start():match.start() + 40].splitlines()[0]}")
    assert found == [], "cite docs/architecture.md or docs/semantics/ instead:\n" + "\n".join(found)


def test_every_cited_docs_path_exists_with_its_anchor() -> None:
    broken = []
    for path in FILES:
        text = _text(path)
        for match in DOC_PATH.finditer(text):
            cited, _, anchor = match.group(0).rstrip(".").partition("#")
            why = _missing(ROOT / cited, anchor)
            if why:
                broken.append(f"{path.relative_to(ROOT)}:{_line(text, match.start())}: {match.group(0)}: {why}")
    assert broken == [], "\n".join(broken)


MARKDOWN = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])


@pytest.mark.parametrize("page", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    text = _text(page)
    for match in MD_LINK.finditer(text):
        href = match.group(1)
        if re.match(r"[a-z]+:", href):
            continue                        # https:, mailto:
        target_text, _, anchor = href.partition("#")
        target = (page.parent / target_text).resolve() if target_text else page
        why = _missing(target, anchor)
        if why:
            broken.append(f"{page.relative_to(ROOT)}:{_line(text, match.start())}: ({href}): {why}")
    assert broken == [], "\n".join(broken)


def test_the_slug_is_githubs() -> None:
    """A few headings of this repository, with the anchors GitHub gives them."""
    assert slug("Deleting policies (`test`, `diff`, `apply --deletions`)") == \
        "deleting-policies-test-diff-apply---deletions"
    assert slug("The CEL engine (cel-expr-python 0.1.3) and its libraries") == \
        "the-cel-engine-cel-expr-python-013-and-its-libraries"
    assert slug("Kyverno's CLI offline") == "kyvernos-cli-offline"


def test_a_dangling_reference_is_found(tmp_path: Path) -> None:
    """The checks find what they are for: a cited section name, a missing file, a missing anchor."""
    assert OUTSIDE_NAME.search(_OUTSIDE[1] + " B.2")
    assert OUTSIDE_NAME.search("(" + _OUTSIDE[0] + " section 6)")
    assert OUTSIDE_NAME.search(_OUTSIDE[1] + "-CLASSIC 5")
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## A part\n\n```\n# not a heading\n```\n## A part\n")
    assert anchors(page) == {"title", "a-part", "a-part-1"}
    assert _missing(page, "a-part") is None
    assert _missing(page, "not-a-heading") == "no heading with anchor #not-a-heading"
    assert _missing(tmp_path / "nothing.md", "") == "no such file"
