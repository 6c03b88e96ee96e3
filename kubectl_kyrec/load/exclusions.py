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
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.kyverno_config import wildcard_match
from kubectl_kyrec.model import Ref, Source

_KEYS = {"kind", "apiVersion", "namespace", "name", "selector", "reason", "expires", "evidence", "container"}
_MATCHERS = ("apiVersion", "kind", "namespace", "name")
_OPERATORS = {"In", "NotIn", "Exists", "DoesNotExist"}

# Go's time.RFC3339 layout: upper-case T and Z, optional fraction, offset hh:mm
_RFC3339_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def parse_rfc3339(text: str) -> datetime.datetime | None:
    """Parse as Go's `time.Parse(time.RFC3339, text)` accepts it; None when Go would fail."""
    m = _RFC3339_RE.match(text)
    if not m:
        return None
    zone = m.group(8)
    if zone != "Z" and (int(zone[1:3]) > 23 or int(zone[4:6]) > 59):
        return None
    frac = m.group(7)
    # fromisoformat takes at most 6 fraction digits; Go keeps nanoseconds, kyrec needs no more than micro
    head = text[:19] + ((frac + "000000")[:7] if frac else "")
    try:
        return datetime.datetime.fromisoformat(head + ("+00:00" if zone == "Z" else zone))
    except ValueError:
        return None


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values   # NotIn


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
    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()
    has_selector: bool = False
    expires: datetime.datetime | None = None
    evidence: str | None = None
    container: str | None = None

    def matches(self, ref: Ref, labels: Mapping[str, str] | None, container: str | None = None) -> bool:
        """`container`: the subject's container, None for subjects that are whole objects (which an entry
        naming a container never matches)."""
        if self.container is not None and (container is None or not wildcard_match(self.container, container)):
            return False
        for pattern, value in ((self.api_version, ref.api_version), (self.kind, ref.kind),
                               (self.namespace, ref.namespace), (self.name, ref.name)):
            if pattern is not None and not wildcard_match(pattern, value):
                return False
        if self.has_selector:
            have = labels or {}
            if any(have.get(k) != v for k, v in self.match_labels):
                return False
            if not all(r.matches(have) for r in self.match_expressions):
                return False
        return True

    def match_json(self) -> dict[str, Any]:
        """The matchers as written, for output (`unused_exclusions[].match`)."""
        out: dict[str, Any] = {}
        for key, value in (("apiVersion", self.api_version), ("kind", self.kind),
                           ("namespace", self.namespace), ("name", self.name)):
            if value is not None:
                out[key] = value
        if self.has_selector:
            selector: dict[str, Any] = {}
            if self.match_labels:
                selector["matchLabels"] = dict(self.match_labels)
            if self.match_expressions:
                selector["matchExpressions"] = [
                    {"key": r.key, "operator": r.operator, **({"values": list(r.values)} if r.values else {})}
                    for r in self.match_expressions]
            out["selector"] = selector
        return out

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.match_json().items())


def load_exclusions(path: str, *, now: datetime.datetime) -> tuple[Exclusion, ...]:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", Source(path)) from exc
    return parse_exclusions(text, path, now=now)


def parse_exclusions(text: str, filename: str, *, now: datetime.datetime) -> tuple[Exclusion, ...]:
    """Parse and validate; `now` decides expiry (DESIGN `--now`)."""
    try:
        doc = YAML(typ="rt").load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 0
        raise InputError(f"bad YAML: {getattr(exc, 'problem', None) or exc}", Source(filename, line)) from exc
    if doc is None:
        return ()
    entries = doc
    if isinstance(doc, Mapping):
        extra = set(doc) - {"exclusions"}
        if extra:
            raise InputError(f"unknown key {sorted(extra)[0]!r} (expected 'exclusions')",
                             _line_of(doc, filename))
        entries = doc.get("exclusions") or []
    if not isinstance(entries, Sequence) or isinstance(entries, str):
        raise InputError("expected a list of exclusions", _line_of(doc, filename))
    out: list[Exclusion] = []
    for index, entry in enumerate(entries):
        where = _item_source(entries, index, filename)
        out.append(_parse_entry(index, entry, where, now))
    return tuple(out)


def _line_of(node: Any, filename: str) -> Source:
    lc = getattr(node, "lc", None)
    return Source(filename, lc.line + 1) if lc is not None and lc.line is not None else Source(filename)


def _item_source(seq: Any, index: int, filename: str) -> Source:
    lc = getattr(seq, "lc", None)
    try:
        line, _col = lc.item(index)  # type: ignore[union-attr]
        return Source(filename, line + 1)
    except (AttributeError, KeyError, TypeError):
        return Source(filename)


def _key_source(node: Any, key: str, fallback: Source) -> Source:
    lc = getattr(node, "lc", None)
    try:
        line, _col = lc.key(key)  # type: ignore[union-attr]
        return Source(fallback.file, line + 1)
    except (AttributeError, KeyError, TypeError):
        return fallback


def _parse_entry(index: int, entry: Any, where: Source, now: datetime.datetime) -> Exclusion:
    label = f"exclusions[{index}]"
    if not isinstance(entry, Mapping):
        raise InputError(f"{label}: expected a map with matchers and a reason", where)
    for key in entry:
        if key not in _KEYS:
            raise InputError(f"{label}: unknown key {key!r}", _key_source(entry, str(key), where))
    reason = entry.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise InputError(f"{label}: reason is required: say why this subject may lack a current report",
                         _key_source(entry, "reason", where))
    evidence = entry.get("evidence")
    if evidence is not None and not isinstance(evidence, str):
        raise InputError(f"{label}: evidence must be a string", _key_source(entry, "evidence", where))
    matchers: dict[str, str] = {}
    for key in (*_MATCHERS, "container"):
        if key in entry:
            value = entry[key]
            if not isinstance(value, str):
                raise InputError(f"{label}: {key} must be a string", _key_source(entry, key, where))
            matchers[key] = value
    has_selector = "selector" in entry
    labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[Requirement, ...] = ()
    if has_selector:
        labels, expressions = _parse_selector(entry["selector"], label, _key_source(entry, "selector", where))
    if not matchers and not has_selector:
        raise InputError(f"{label}: give at least one of kind, namespace, name, apiVersion, container, selector",
                         where)
    expires = None
    if "expires" in entry:
        expires = _parse_expires(entry["expires"], label, _key_source(entry, "expires", where))
        if expires <= now:
            raise InputError(f"{label}: expired at {_utc(expires)} (now {_utc(now)}); renew or remove it",
                             _key_source(entry, "expires", where))
    return Exclusion(index=index, reason=reason.strip(), source=where,
                     api_version=matchers.get("apiVersion"), kind=matchers.get("kind"),
                     namespace=matchers.get("namespace"), name=matchers.get("name"),
                     match_labels=labels, match_expressions=expressions, has_selector=has_selector,
                     expires=expires, evidence=evidence.strip() if evidence else None,
                     container=matchers.get("container"))


def _utc(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_expires(value: Any, label: str, where: Source) -> datetime.datetime:
    if isinstance(value, datetime.datetime):
        # an unquoted YAML timestamp; RFC 3339 requires an offset
        if value.tzinfo is None:
            raise InputError(f"{label}: expires needs a time zone offset (RFC 3339)", where)
        return datetime.datetime(value.year, value.month, value.day, value.hour, value.minute, value.second,
                                 value.microsecond, tzinfo=value.tzinfo)
    if isinstance(value, str):
        parsed = parse_rfc3339(value)
        if parsed is not None:
            return parsed
    raise InputError(f"{label}: expires {str(value)!r} is not an RFC 3339 time "
                     f"(like 2026-12-31T00:00:00Z)", where)


def _parse_selector(value: Any, label: str, where: Source
                    ) -> tuple[tuple[tuple[str, str], ...], tuple[Requirement, ...]]:
    if not isinstance(value, Mapping):
        raise InputError(f"{label}: selector must be a map with matchLabels and/or matchExpressions", where)
    unknown = set(value) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise InputError(f"{label}: selector: unknown key {sorted(unknown)[0]!r}", where)
    match_labels = value.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in match_labels.items()):
        raise InputError(f"{label}: selector.matchLabels must map strings to strings", where)
    requirements: list[Requirement] = []
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
        requirements.append(Requirement(expr["key"], str(op), tuple(values)))
    return tuple(sorted(match_labels.items())), tuple(requirements)
