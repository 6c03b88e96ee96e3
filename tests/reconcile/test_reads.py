"""reconcile/reads.py: a downstream finding carries the reads it depends on, held undetermined on one not listed."""

from __future__ import annotations

import dataclasses

import pytest

from kubectl_kyrec.model import Ref
from kubectl_kyrec.reconcile.downstreams import DownstreamChange, DownstreamClass, Reason
from kubectl_kyrec.reconcile.list_read import Read
from kubectl_kyrec.reconcile.reads import ReadRecord, hold_unread

TRIGGER = Ref("v1", "Namespace", "", "team-a", "ns-uid")
CM = Ref("v1", "ConfigMap", "team-a", "settings", "cm-uid", True)
READS = (Read("v1", "ConfigMap", "team-a"), Read("v1", "Namespace"), Read("v1", "Namespace", soft=True))


def every_field(change: DownstreamChange) -> dict[str, object]:
    return {f.name: getattr(change, f.name) for f in dataclasses.fields(change)}


@pytest.mark.parametrize("change", [
    DownstreamChange(DownstreamClass.MISSING, None, True, "p", TRIGGER, CM, expected={"kind": "ConfigMap"}),
    # __post_init__ made it enforced with kyverno_writes False: kept as it is, not decided again
    DownstreamChange(DownstreamClass.MISSING, Reason.POLICY_AGE_UNKNOWN, False, "p", TRIGGER, CM, expected={},
                     message="age", replace=True),
    DownstreamChange(DownstreamClass.ORPHAN, Reason.TRIGGER_UNKNOWN, False, "p", TRIGGER, CM, actual={}, prune=True),
])
@pytest.mark.parametrize("listed", [True, False, None])
def test_a_held_finding_is_the_finding_with_its_reads_or_undetermined(change: DownstreamChange,
                                                                      listed: bool | None) -> None:
    before = every_field(change)
    record = ReadRecord(lambda api_version, kind, namespace: True if kind == "Namespace" else listed,
                        lambda api_version, kind, namespace: "403")
    held = hold_unread(change, READS, record)
    assert every_field(change) == before       # the finding itself is left as it was
    carried = dataclasses.replace(change, depends_on=READS)
    if listed is True or (listed is None and change.reason is Reason.TRIGGER_UNKNOWN):
        assert every_field(held) == every_field(carried)
    else:
        assert every_field(held) == every_field(dataclasses.replace(
            carried, klass=DownstreamClass.UNDETERMINED, enforced=False, prune=False, kyverno_writes=None,
            reason=Reason.READ_FAILED if listed is False else Reason.KIND_NOT_CAPTURED, message=held.message))
        assert held.message.startswith("cannot tell: " + ("the LIST of ConfigMap in team-a failed (403)"
                                                          if listed is False else "ConfigMap in team-a objects"))
