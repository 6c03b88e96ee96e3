"""Issue 36, `apply --yes` of 3,000 creates, before its first write: the diff and then the plan ask, for every
downstream, whether each read it depends on was listed (reconcile/reads.py ReadRecord.unread): the same few
reads (the policy kinds, the trigger's kind) thousands of times. The record now asks the state once per read;
these pin that, and that the answers (which read is named, failed before never-read, soft reads) are the
ones the state gives.
"""

from __future__ import annotations

from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState, ListedKind
from kubectl_kyrec.reconcile.list_read import Read
from kubectl_kyrec.reconcile.reads import ReadRecord, policy_family_reads


class Counting:
    """A state's is_listed, counting the questions."""

    def __init__(self, listed: set[tuple[str, str, str]], failed: set[tuple[str, str, str]]) -> None:
        self.listed, self.failed, self.asked = listed, failed, 0

    def __call__(self, api_version: str, kind: str, namespace: str = "") -> bool | None:
        self.asked += 1
        key = (api_version, kind, namespace)
        return True if key in self.listed else False if key in self.failed else None


def test_a_plan_of_many_downstreams_asks_the_state_once_per_read() -> None:
    policy = policy_family_reads(False, "")
    listed = {(r.api_version, r.kind, r.namespace) for r in policy} | {("v1", "Namespace", "")}
    listed |= {("v1", "ConfigMap", f"team-{i}") for i in range(300)}
    state = Counting(listed, set())
    record = ReadRecord(state)
    for _ in range(2):      # the diff's hold_unread, then the plan's check
        for i in range(300):
            reads = (*policy, Read("v1", "Namespace"), Read("v1", "ConfigMap", f"team-{i}"))
            assert record.unread(reads) is None
    # each distinct read once (before: every read of every downstream, twice: 2 x 300 x (policy kinds + 2))
    assert state.asked == len(policy) + 1 + 300


def test_the_answers_are_the_states_failed_before_never_read_soft_kept() -> None:
    state = Counting({("v1", "Namespace", "")}, {("v1", "ConfigMap", "b")})
    record = ReadRecord(state, lambda api_version, kind, namespace: "forbidden")
    never = Read("v1", "Secret", "a")
    failed = Read("v1", "ConfigMap", "b")
    # asked first as never-read, then as part of a set with a failed read: the failed one is still named
    first = record.unread((never,))
    assert first is not None and first.read == never and first.listed is None
    both = record.unread((never, failed))
    assert both is not None and both.read == failed and both.listed is False and both.message == "forbidden"
    # a soft read of a kind with no record is satisfied; the same kind as a hard read is not
    assert record.unread((Read("v1", "Secret", "a", soft=True), Read("v1", "Namespace"))) is None
    again = record.unread((Read("v1", "Secret", "a"),))
    assert again is not None and again.listed is None
    # a failed read stays failed even asked soft
    soft_failed = record.unread((Read("v1", "ConfigMap", "b", soft=True),))
    assert soft_failed is not None and soft_failed.listed is False


def test_a_record_of_a_cluster_state_gives_its_answers() -> None:
    state = ClusterState.from_objects(
        [], listed={ListedKind("v1", "Namespace", "")},
        unreadable={ListedKind("v1", "ConfigMap", "b"): "forbidden"}, source="live")
    record = ReadRecord.of(state)
    for _ in range(2):
        assert record.unread((Read("v1", "Namespace"),)) is None
        gone = record.unread((Read("v1", "Namespace"), Read("v1", "ConfigMap", "b")))
        assert gone is not None and gone.listed is False
        assert gone.message and "forbidden" in gone.message
        # a namespace of a kind listed nowhere else: never read
        unread = record.unread((Read("v1", "ConfigMap", "c"),))
        assert unread is not None and unread.listed is None
