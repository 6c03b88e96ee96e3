"""The `baseline` key of the JSON/YAML documents (eval, diff, coverage) when `--baseline` is given: which of
this run's findings the baseline accepts and which of its entries no longer occur (docs/output.md).

Entries are written as the baseline file writes them (reconcile/baseline.py), so a script can match a
finding to the file's entry by the same keys: command, policy, rule, subject, class.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubectl_kyrec.reconcile.baseline import BaselineEntry, entry_of
from kubectl_kyrec.reconcile.findings import Finding


def baseline_json(path: str, findings: Sequence[Finding], fixed: Sequence[BaselineEntry]) -> dict[str, Any]:
    baselined = [entry_of(f).to_json() for f in findings if f.baselined]
    new = sum(f.is_finding and not f.baselined for f in findings)
    return {"file": path, "summary": {"baselined": len(baselined), "new": new, "fixed": len(fixed)},
            "baselined": baselined, "fixed": [e.to_json() for e in fixed]}
