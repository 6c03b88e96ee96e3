"""Baselines: accept today's findings so a pull request fails only on what it adds.

An entry is keyed by (command, policy, rule, subject identity, message class), never by file or line:
editing a manifest elsewhere moves line numbers and must not turn an accepted finding into a new one. The
subject identity is group/kind/namespace/name (no version, no uid: a re-created object or an apiVersion bump
is still the same finding). The message itself is kept in the file for the reader, not for matching.

Pure: `parse_baseline` takes the decoded document, `baseline_document` returns one; the CLI reads and
writes the file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.model import Source
from kubectl_kyrec.reconcile.findings import Finding

API_VERSION = "kyrec/v1"
KIND = "Baseline"
Key = tuple[str, str, str, str, str]


@dataclass(frozen=True)
class BaselineEntry:
    command: str
    policy: str
    rule: str
    subject: str            # group/kind/namespace/name, as Finding.subject_key
    message_class: str
    message: str = ""       # for the reader; not matched
    location: str = ""      # where it was when recorded; not matched

    @property
    def key(self) -> Key:
        return (self.command, self.policy, self.rule, self.subject, self.message_class)

    def display(self) -> str:
        who = " ".join(p for p in (self.policy or self.command, self.rule if self.rule != self.policy else "",
                                   self.subject) if p)
        return f"{who} ({self.message_class})" + (f" at {self.location}" if self.location else "")

    def to_json(self) -> dict[str, str]:
        return {"command": self.command, "policy": self.policy, "rule": self.rule, "subject": self.subject,
                "class": self.message_class, "message": self.message, "location": self.location}


@dataclass(frozen=True)
class BaselineOutcome:
    findings: list[Finding]             # every finding, those in the baseline marked `baselined`
    fixed: list[BaselineEntry]          # entries of this command that no longer occur

    @property
    def baselined(self) -> int:
        return sum(f.baselined for f in self.findings)


def entry_of(f: Finding) -> BaselineEntry:
    return BaselineEntry(command=f.command, policy=f.policy, rule=f.rule, subject=f.subject_key,
                         message_class=f.message_class, message=f.message, location=f.where)


def parse_baseline(doc: Any, source: Source) -> list[BaselineEntry]:
    """The entries of a decoded baseline file; a wrong shape is an input error at the file."""
    if not isinstance(doc, Mapping) or doc.get("kind") != KIND or doc.get("apiVersion") != API_VERSION:
        raise InputError(f"not a kyrec baseline (expected apiVersion {API_VERSION}, kind {KIND}; write one with "
                         "--write-baseline)", source)
    entries = doc.get("entries")
    if not isinstance(entries, list):
        raise InputError("entries: must be a list", source)
    out = []
    for i, item in enumerate(entries):
        if not isinstance(item, Mapping) or not isinstance(item.get("command"), str) or \
                not isinstance(item.get("class"), str):
            raise InputError(f"entries[{i}]: needs at least `command` and `class` strings", source)
        out.append(BaselineEntry(command=item["command"], policy=str(item.get("policy") or ""),
                                 rule=str(item.get("rule") or ""), subject=str(item.get("subject") or ""),
                                 message_class=item["class"], message=str(item.get("message") or ""),
                                 location=str(item.get("location") or "")))
    return out


def apply_baseline(findings: Sequence[Finding], entries: Iterable[BaselineEntry], command: str) -> BaselineOutcome:
    """Mark the findings the baseline holds; list its entries (of this command) that no longer occur."""
    accepted = {e.key for e in entries if e.command == command}
    marked = [f._replace(baselined=True) if f.is_finding and f.key in accepted else f
              for f in findings]
    present = {f.key for f in findings if f.is_finding}
    fixed = sorted({e for e in entries if e.command == command and e.key not in present}, key=lambda e: e.key)
    return BaselineOutcome(marked, fixed)


def baseline_document(findings: Iterable[Finding], keep: Iterable[BaselineEntry] = ()) -> dict[str, Any]:
    """Every current finding as a baseline, sorted so the file diffs well between runs.

    `keep`: entries of other commands already in the file, so one file can serve eval, diff and coverage.
    """
    entries = {e.key: e for e in keep}
    entries.update((entry_of(f).key, entry_of(f)) for f in findings if f.is_finding)
    return {"apiVersion": API_VERSION, "kind": KIND,
            "entries": [entries[k].to_json() for k in sorted(entries)]}
