"""The DeletingPolicy rows of a test suite, as Kyverno's CLI answers them.

kk: cmd/cli/kubectl-kyverno/commands/test/test.go applyDeletingPolicies: every resource of the test, then
every JSON payload, against every DeletingPolicy (engine Handle); `pass` when it would be deleted, `fail`
otherwise (no match, a false condition, an exception), `error` when Handle fails. The schedule plays no
part. Namespaces come from the values file, else the one a cluster would have (as for the other kinds).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from kubectl_kyrec.cel.environment import Environments
from kubectl_kyrec.evaluate.deleting.engine import compile_deleting_policies, evaluate_object, subject_context
from kubectl_kyrec.evaluate.namespaces import namespace_objects
from kubectl_kyrec.evaluate.validating.json_payloads import payload_subject
from kubectl_kyrec.model import EvalError, Result, Subject
from kubectl_kyrec.testsuite.suite import LoadedSuite


def suite_deletions(loaded: LoadedSuite, subjects: Sequence[Subject], *, envs: Environments,
                    now: datetime.datetime) -> tuple[list[Result], list[EvalError]]:
    """One result per (subject, DeletingPolicy) for the resources' `subjects` and the test's JSON payloads;
    a policy that does not compile gives an error and no results. `envs`: the suite's (rows.run_suite)."""
    policies = loaded.policies
    compiled, errors = compile_deleting_policies(policies, envs, now)
    state = [*loaded.values.namespaces, *loaded.cluster_objects, *loaded.resources]
    namespaces = namespace_objects(state, loaded.values.namespace_labels)
    results: list[Result] = []
    payloads = [payload_subject(p) for p in loaded.payloads]
    for subject in [*(s for s in subjects if s.ref.kind), *payloads]:
        ctx = subject_context(subject, namespaces if subject.ref.kind else None)
        results.extend(evaluate_object(cp, ctx).result() for cp in compiled)
    return results, errors
