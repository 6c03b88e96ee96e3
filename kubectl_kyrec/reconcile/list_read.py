"""One LIST a finding depends on (`depends_on`): what downstreams, reports and the rule that holds a finding
on a partial read (reconcile/reads.py) share, below all three."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Read:
    """One LIST a finding depends on: a kind in a scope (namespace "" = cluster-wide or cluster-scoped)."""

    api_version: str
    kind: str
    namespace: str = ""
    # only a failed LIST counts, not the absence of a record: for what an evaluation may look at and the
    # report kinds, which a live run always lists where it can; a plain `kubectl get` dump records no
    # kind it holds no object of, and there the capture notice names what it lacks
    soft: bool = False

    def text(self) -> str:
        group = self.api_version.rpartition("/")[0]
        what = f"{self.kind}.{group}" if group else self.kind
        return f"{what} in {self.namespace}" if self.namespace else what
