"""The `--exclusions FILE` of `kyrec coverage`: subjects allowed to lack a current report, and why.

Format: a YAML list of entries, or a map `{exclusions: [...]}`. Each entry names what it matches and why:

```yaml
exclusions:
  - kind: Pod                 # optional; Kyverno wildcards: * any run, ? one character
    namespace: batch-*        # optional; "" matches cluster-scoped subjects only
    name: report-job-*        # optional
    apiVersion: v1            # optional
    selector:                 # optional Kubernetes label selector (matchLabels, matchExpressions)
      matchLabels: {app: report-job}
    reason: short-lived Jobs finish before the hourly background scan   # required, not blank
    expires: 2026-12-31T00:00:00Z                                       # optional, RFC 3339
    evidence: "kubectl get jobs -n batch: every run completes in < 5m"  # optional, kept in the output
    container: istio-proxy    # optional, for producers whose subjects are containers (Kubescape)
```

An entry matches a subject when every matcher it gives matches (at least one is required: an entry that
matches everything would silence the whole check). Entries are numbered from 0 in file order; the number
and the file:line of the entry appear in every message about it.

An entry without a reason, with an unknown key, a malformed matcher, or an `expires` that is not RFC 3339
or is not after `now`, is an input error (exit 3) naming its file:line: an exclusion that has lapsed must
be renewed or removed on purpose, never silently ignored. An entry that matches no subject in scope is
reported as unused, so stale entries do not pile up.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.golang.wildcard import match as wildcard_match
from kubectl_kyrec.k8s.labels import Selector, SelectorError, from_label_selector
from kubectl_kyrec.k8s.times import format_rfc3339, lacks_offset, parse_rfc3339
from kubectl_kyrec.load.files import read_text
from kubectl_kyrec.load.line_index import LineIndex
from kubectl_kyrec.load.yaml_nodes import iter_yaml_documents
from kubectl_kyrec.model import Ref, Source

__all__ = ["Exclusion", "load_exclusions", "parse_exclusions", "parse_rfc3339"]

_KEYS = {"kind", "apiVersion", "namespace", "name", "selector", "reason", "expires", "evidence", "container"}
_MATCHERS = ("apiVersion", "kind", "namespace", "name")
_OPERATORS = {"In", "NotIn", "Exists", "DoesNotExist"}


@dataclass(frozen=True)
class Exclusion:
    """One entry of the exclusions file."""

    index: int
    reason: str
    source: Source
    api_version: str | None = None
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    selector: Mapping[str, Any] | None = None      # the label selector as written
    expires: datetime.datetime | None = None
    evidence: str | None = None
    container: str | None = None

    @property
    def has_selector(self) -> bool:
        return self.selector is not None

    @property
    def _selector(self) -> Selector:
        return from_label_selector(self.selector)

    def matches(self, ref: Ref, labels: Mapping[str, str] | None, container: str | None = None) -> bool:
        """`container`: the subject's container, None for subjects that are whole objects (which an entry
        naming a container never matches)."""
        if self.container is not None and (container is None or not wildcard_match(self.container, container)):
            return False
        for pattern, value in ((self.api_version, ref.api_version), (self.kind, ref.kind),
                               (self.namespace, ref.namespace), (self.name, ref.name)):
            if pattern is not None and not wildcard_match(pattern, value):
                return False
        return not self.has_selector or self._selector.matches(labels)

    def match_json(self) -> dict[str, Any]:
        """The matchers as written, for output (`unused_exclusions[].match`)."""
        out: dict[str, Any] = {}
        for key, value in (("apiVersion", self.api_version), ("kind", self.kind),
                           ("namespace", self.namespace), ("name", self.name)):
            if value is not None:
                out[key] = value
        if self.selector is not None:
            out["selector"] = {k: v for k, v in self.selector.items() if v}
        return out

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.match_json().items())


def load_exclusions(path: str, *, now: datetime.datetime) -> tuple[Exclusion, ...]:
    _, text = read_text(path)     # unreadable or not UTF-8: an InputError naming the file
    return parse_exclusions(text, path, now=now)


def parse_exclusions(text: str, filename: str, *, now: datetime.datetime) -> tuple[Exclusion, ...]:
    """Parse and validate; `now` decides expiry (docs/architecture.md#pure-stages-and-time). Read as every other
    input is (YAML 1.1 with go-yaml's scalars: an unquoted time stays a string)."""
    try:
        docs = list(iter_yaml_documents(text, filename))
    except InputError as exc:
        raise InputError(f"bad YAML: {exc.message}", exc.source) from None
    if not docs:
        return ()
    if len(docs) > 1:
        raise InputError("expected one YAML document", Source(filename, docs[1].line))
    doc = docs[0].value
    lines = _Lines(filename, LineIndex(docs[0].line, docs[0].node))
    entries = doc
    prefix: tuple[str, ...] = ()
    if isinstance(doc, Mapping):
        extra = set(doc) - {"exclusions"}
        if extra:
            raise InputError(f"unknown key {sorted(extra)[0]!r} (expected 'exclusions')", lines.at())
        entries = doc.get("exclusions") or []
        prefix = ("exclusions",)
    if not isinstance(entries, Sequence) or isinstance(entries, str):
        raise InputError("expected a list of exclusions", lines.at())
    return tuple(_parse_entry(index, entry, lines, (*prefix, index), now) for index, entry in enumerate(entries))


@dataclass(frozen=True)
class _Lines:
    file: str
    index: LineIndex

    def at(self, *path: str | int) -> Source:
        return Source(self.file, self.index.line_of(list(path)))


def _parse_entry(index: int, entry: Any, lines: _Lines, path: tuple[str | int, ...],
                 now: datetime.datetime) -> Exclusion:
    label = f"exclusions[{index}]"
    where = lines.at(*path)

    def key_source(key: str) -> Source:
        return lines.at(*path, key)

    if not isinstance(entry, Mapping):
        raise InputError(f"{label}: expected a map with matchers and a reason", where)
    for key in entry:
        if key not in _KEYS:
            raise InputError(f"{label}: unknown key {key!r}", key_source(str(key)))
    reason = entry.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise InputError(f"{label}: reason is required: say why this subject may lack a current report",
                         key_source("reason"))
    evidence = entry.get("evidence")
    if evidence is not None and not isinstance(evidence, str):
        raise InputError(f"{label}: evidence must be a string", key_source("evidence"))
    matchers: dict[str, str] = {}
    for key in (*_MATCHERS, "container"):
        if key in entry:
            value = entry[key]
            if not isinstance(value, str):
                raise InputError(f"{label}: {key} must be a string", key_source(key))
            matchers[key] = value
    has_selector = "selector" in entry
    selector = _parse_selector(entry["selector"], label, key_source("selector")) if has_selector else None
    if not matchers and not has_selector:
        raise InputError(f"{label}: give at least one of kind, namespace, name, apiVersion, container, selector",
                         where)
    expires = None
    if "expires" in entry:
        expires = _parse_expires(entry["expires"], label, key_source("expires"))
        if expires <= now:
            raise InputError(f"{label}: expired at {format_rfc3339(expires)} (now {format_rfc3339(now)}); "
                             "renew or remove it", key_source("expires"))
    return Exclusion(index=index, reason=reason.strip(), source=where,
                     api_version=matchers.get("apiVersion"), kind=matchers.get("kind"),
                     namespace=matchers.get("namespace"), name=matchers.get("name"),
                     selector=selector, expires=expires, evidence=evidence.strip() if evidence else None,
                     container=matchers.get("container"))


def _parse_expires(value: Any, label: str, where: Source) -> datetime.datetime:
    if isinstance(value, str):
        parsed = parse_rfc3339(value)
        if parsed is not None:
            return parsed
        if lacks_offset(value):
            raise InputError(f"{label}: expires needs a time zone offset (RFC 3339)", where)
    raise InputError(f"{label}: expires {str(value)!r} is not an RFC 3339 time "
                     f"(like 2026-12-31T00:00:00Z)", where)


def _parse_selector(value: Any, label: str, where: Source) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(f"{label}: selector must be a map with matchLabels and/or matchExpressions", where)
    unknown = set(value) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise InputError(f"{label}: selector: unknown key {sorted(unknown)[0]!r}", where)
    match_labels = value.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in match_labels.items()):
        raise InputError(f"{label}: selector.matchLabels must map strings to strings", where)
    for i, expr in enumerate(value.get("matchExpressions") or []):
        at = f"{label}: selector.matchExpressions[{i}]"
        if not isinstance(expr, Mapping) or not isinstance(expr.get("key"), str):
            raise InputError(f"{at}: needs a key and an operator", where)
        op = expr.get("operator")
        if op not in _OPERATORS:
            raise InputError(f"{at}: operator {op!r} is not one of {', '.join(sorted(_OPERATORS))}", where)
        values = expr.get("values") or []
        if not isinstance(values, Sequence) or isinstance(values, str) or not all(
                isinstance(v, str) for v in values):
            raise InputError(f"{at}: values must be a list of strings", where)
        if op in ("In", "NotIn") and not values:
            raise InputError(f"{at}: {op} needs values", where)
        if op in ("Exists", "DoesNotExist") and values:
            raise InputError(f"{at}: {op} takes no values", where)
    try:
        from_label_selector(value)      # the one matcher: what it refuses, the file is refused for
    except SelectorError as exc:
        raise InputError(f"{label}: selector: {exc}", where) from None
    return {"matchLabels": dict(sorted(match_labels.items())),
            "matchExpressions": [dict(e) for e in value.get("matchExpressions") or []]}
