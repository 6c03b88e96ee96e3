"""A run that could not read everything ends with exit 5 (docs/output.md, exit codes), after the results it
could compute: a live read that met unreadable kinds, and an offline run on a capture that recorded such
reads (the capture exited 5 too; the file keeps the record, and a run on it must not look complete). Each
run result carries the reads (errors.FailedRead, errors.RunResult.failed_reads): every output shows them,
and the exit code counts them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubectl_kyrec.errors import ExitCode, FailedRead, worst

if TYPE_CHECKING:
    from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState
    from kubectl_kyrec.load.run_inputs.sources import Inputs


def failed_reads(state: ClusterState) -> list[FailedRead]:
    """The reads `state` could not make, each once (in the order they were made, or recorded), a capture
    file's record of them included."""
    out: dict[tuple[str, str], FailedRead] = {}
    for read in state.unreadable.values():
        out.setdefault((read.what(), read.message), read)
    return list(out.values())


def with_failed_reads(code: ExitCode, reads: list[FailedRead]) -> ExitCode:
    """`code`, or 5 by the table's precedence when a read failed."""
    return worst(code, ExitCode.CLUSTER) if reads else code


def known_kinds(inputs: Inputs) -> set[tuple[str, str]]:
    """(apiVersion, kind) to look for in a policy's text as what its evaluation reads: only those whose LIST
    failed, since these reads are soft (reconcile/reads.py: one that succeeded, or of which the state has
    no record, is satisfied whatever the policy says), and a policy's text is scanned once per kind."""
    return {(k.api_version, k.kind) for k in inputs.state.unreadable}
