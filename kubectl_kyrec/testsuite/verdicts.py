"""Where Kyverno's CLI and a cluster decide a row differently, and which rows the CLI passes vacuously
(issue 27). Pure: the rows of one results entry, decided both ways, in; warnings out.

Suites are written against `kyverno test`, so its verdict is kyrec's default; a cluster (`--strict`) can
disagree, and the CLI passes some rows that check nothing: its most reported flaw. Each such row gets one
warning, the same in both modes (only which verdict counts differs); a vacuous one names its kind:

- matched-nothing: the policy gave the resource no response, and the CLI passes it "Excluded" whatever the
  row expects;
- missing-rule: the entry names a rule the (classic) policy does not have: "Excluded" again;
- missing-resource: a name of the entry selects nothing: the CLI drops it, or checks every resource when no
  name of the entry selects one;
- fail-met-by-skip: the row expects `fail` and the rule answered `skip`, which the CLI counts as a success.

Strict mode fails these rows by its own rules (not-matched, not-found, result-mismatch), so a vacuous row
is a warning by default and a failure with `--strict`; the one exception is a row the cluster does check
(an HTTP/Envoy request named as the test writes it, which the CLI names by its joined path), and its
warning says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubectl_kyrec.model import UNDETERMINED
from kubectl_kyrec.testsuite.row_types import (
    CLUSTER_DIFFERENCE,
    FAIL_MET_BY_SKIP,
    MATCHED_NOTHING,
    MISSING_PATCHED,
    MISSING_RESOURCE,
    MISSING_RULE,
    OK,
    Mode,
    Row,
    RowWarning,
)
from kubectl_kyrec.testsuite.suite import TestResultEntry

_WHY = {
    MATCHED_NOTHING: "the policy gave it no response, and Kyverno's CLI passes the row \"Excluded\" whatever "
                     "it expects",
    FAIL_MET_BY_SKIP: "the row expects fail and the rule answered skip, which Kyverno's CLI counts as a success",
    MISSING_PATCHED: "the patchedResources file has no document for the patched resource (its apiVersion, kind, "
                     "namespace and name), and Kyverno's CLI checks nothing then",
}


def entry_warnings(entry: TestResultEntry, mode: Mode, rows: Sequence[Row], other_rows: Sequence[Row],
                   missing: Sequence[str]) -> list[RowWarning]:
    """The warnings of one results entry: `rows` are decided in `mode`, `other_rows` in the other mode,
    `missing` are the entry's names that select nothing. A row of one mode is paired with the first row of
    the other for the same kind and resource."""
    cli, cluster = (rows, other_rows) if mode is Mode.KYVERNO else (other_rows, rows)
    if not any(r.evaluated for r in cli):
        return []       # kyrec checks nothing of the entry, in either mode: nothing to warn about
    out = []
    for name in missing:
        # a cluster may still select it: HTTP/Envoy requests are named as written there, by path in the CLI
        named = next((c for c in cluster if c.resource == name), None)
        in_cluster = _verdict(named) if named is not None else "fail (not-found)"
        out.append(RowWarning(MISSING_RESOURCE, entry.policy, entry.rule, entry.kind, name,
                              f"Kyverno's CLI selects no resource by the name {name!r}: it drops the name, or "
                              f"checks every resource when no name of the entry selects one; in a cluster: "
                              f"{in_cluster}", entry.source))
    unpaired = list(cluster)
    for row in cli:
        twin = next((c for c in unpaired if (c.kind, c.resource) == (row.kind, row.resource)), None)
        if twin is not None:
            unpaired.remove(twin)
        if twin is not None:
            in_cluster = f"; in a cluster: {_verdict(twin)}"
        elif entry.kind and row.kind != entry.kind:
            in_cluster = f"; a cluster does not check it (the entry's kind is {entry.kind})"
        else:
            in_cluster = ""
        if row.vacuous == MISSING_RULE:
            out.append(_warning(row, MISSING_RULE, f"the policy has no rule {row.rule!r}, and Kyverno's CLI passes "
                                                   f"the row \"Excluded\" whatever it expects{in_cluster}"))
        elif row.vacuous:
            out.append(_warning(row, row.vacuous, _WHY[row.vacuous] + in_cluster))
        elif twin is not None and row.evaluated and (
                twin.passed != row.passed or (twin.actual == UNDETERMINED and row.actual != UNDETERMINED)):
            # a cluster that cannot be known offline (a registry read) is said even when both rows fail
            out.append(_warning(row, CLUSTER_DIFFERENCE, f"Kyverno's CLI: {_verdict(row)}{in_cluster}"))
    for row in unpaired:
        if row.evaluated and not row.passed and row.resource not in missing:
            out.append(_warning(row, CLUSTER_DIFFERENCE, f"in a cluster: {_verdict(row)}; Kyverno's CLI has no "
                                                         "such row (it selects resources by name, of any kind)"))
    return out


def _warning(row: Row, reason: str, message: str) -> RowWarning:
    return RowWarning(reason, row.policy, row.rule, row.kind, row.resource, message, row.location)


def _verdict(row: Row) -> str:
    """`pass (ok)`, or `fail (reason: message)`: what a failing row says is why the modes differ."""
    if row.passed or not row.message or row.reason == OK:
        return f"{row.status} ({row.reason})"
    return f"{row.status} ({row.reason}: {' '.join(row.message.split())})"
