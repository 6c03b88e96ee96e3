"""RE2 (google-re2) against kyrec's RE2->`re` translation for the Kubernetes regex library.

Prints which patterns each accepts, answers on non-ASCII text, the cost of one search, and the time of a
pattern that backtracks exponentially in `re`. Run: `python bench/regex_re2.py` (needs google-re2).
Figures are quoted in docs/compatibility.md ("Regular expressions").
"""

from __future__ import annotations

import re
import time

import re2

from kubectl_kyrec.golang import regexp as go_regexp

PATTERNS = [r"\pL+", r"\p{Greek}+", r"[[:^alpha:]]+", r"(?U)a+", r"\C", r"a(?=b)", r"(a)\1", r"a**",
            r"x{1001}", r"\Qa.b\E", r"\x{41}", r"[[:alpha:]]+", r"(?P<n>a)", r"\z", r"[\D]"]
HOSTNAME = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]{2,}$"


def _quiet() -> re2.Options:
    options = re2.Options()
    options.log_errors = False
    return options


def _accepts_re2(pattern: str) -> str:
    try:
        re2.compile(pattern, _quiet())
        return "ok"
    except re2.error as exc:
        return f"error: {exc}"


def _accepts_translation(pattern: str) -> str:
    try:
        re.compile(go_regexp.to_python_pattern(pattern))
        return "ok"
    except go_regexp.RegexSyntaxError as exc:
        return str(exc)


def main() -> None:
    print("pattern | RE2 | translation to re")
    for pattern in PATTERNS:
        print(f"{pattern} | {_accepts_re2(pattern)} | {_accepts_translation(pattern)}")
    print("\nnon-ASCII text: pattern, text, RE2, re")
    for pattern, text in [(r"\w+", "naïve"), (r"\bé", "é"), (r"[\D]+", "٣a")]:
        a = re2.compile(pattern, _quiet()).search(text)
        b = re.compile(go_regexp.to_python_pattern(pattern)).search(text)
        print(pattern, repr(text), a.group(0) if a else None, b.group(0) if b else None)
    text = "registry.example.com"
    for name, compiled in [("RE2", re2.compile(HOSTNAME, _quiet())),
                           ("re", re.compile(go_regexp.to_python_pattern(HOSTNAME)))]:
        start = time.perf_counter()
        for _ in range(20000):
            compiled.search(text)
        print(f"\n{name}: one search of a hostname pattern {1e6 * (time.perf_counter() - start) / 20000:.2f} µs")
    print("\n(a+)+$ on 'a' * n + 'b': RE2 ms, re ms")
    for n in (16, 20, 22, 24):
        subject = "a" * n + "b"
        timings = []
        for compiled in (re2.compile(r"(a+)+$", _quiet()), re.compile(r"(a+)+$")):
            start = time.perf_counter()
            compiled.search(subject)
            timings.append(1e3 * (time.perf_counter() - start))
        print(f"n={n}: {timings[0]:.3f} {timings[1]:.1f}")


if __name__ == "__main__":
    main()
