"""What the user's filters select among the findings (`--policy-name`, `-n`, `--kind`, `-l`), so that every
row of `diff` and every action of `apply` stays inside them.

The filters never narrow what is evaluated (every policy over every trigger and subject read): a finding
kept has the class, reason and cause it has without them. This decides which findings are kept, including
those that do not come from a trigger, orphans above all, whose policy may not be in the run and whose
trigger may be gone:
- a downstream is selected when its policy and its trigger are: the policy by the finding's policy (an
  orphan's by its `policy-name` label), the trigger by its kind and, for `-l`, its labels as the state holds
  them; an orphan whose trigger is not in the state is judged by its own labels (the trigger's are gone);
  with `-n`, by its namespace, but a row standing for what a trigger would write whose namespace the policy
  does not state (downstreams.py unplaced) may be in any, so `-n` keeps it;
- a report is selected when its subject is (kind, namespace, labels as the state holds them); one whose
  subject is not in the state by its own labels; with `--policy-name`, a report that concerns a selected
  policy (owed or holding its results), and a report apply may delete only when every result in it is of a
  selected policy (deleting it must not take other policies' results with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_kyrec.load.run_inputs.selection import Selection
from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.downstreams import DownstreamChange, unplaced


def _labels(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def _holds_subject(selection: Selection, ref: Ref | None, subject: Mapping[str, Any] | None,
                   fallback_labels: Mapping[str, Any]) -> bool:
    if selection.kinds and (ref is None or ref.kind not in selection.kinds):
        return False
    if selection.selector is None or selection.selector.empty:
        return True
    return selection.selector.matches(_labels(subject) if subject is not None else fallback_labels)


def holds_downstream(selection: Selection, change: DownstreamChange, trigger: Mapping[str, Any] | None) -> bool:
    """`trigger`: the trigger object as the state holds it, None when it is not there."""
    if not selection.holds_policy(change.policy):
        return False
    if selection.namespace is not None and change.object.namespace != selection.namespace and \
            not unplaced(change):
        return False
    return _holds_subject(selection, change.trigger, trigger, _labels(change.actual))


def holds_report(selection: Selection, subject_ref: Ref | None, subject: Mapping[str, Any] | None,
                 report: Mapping[str, Any] | None, policies: set[str], *, deletable: bool = False) -> bool:
    """A report finding: `subject` as the state holds it (None when gone), the report as read (None when
    missing), the policies it concerns (`policies`). With --policy-name, one of them is selected; a report
    that may be deleted (`deletable`) only when all of them are."""
    if selection.policy_names and not (all if deletable else any)(selection.holds_policy(p) for p in policies):
        return False
    namespace = subject_ref.namespace if subject_ref is not None else \
        str(((report or {}).get("metadata") or {}).get("namespace") or "")
    if selection.namespace is not None and namespace != selection.namespace:
        return False
    return _holds_subject(selection, subject_ref, subject, _labels(report))
