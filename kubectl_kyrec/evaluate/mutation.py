"""What every mutation engine hands the admission chain: the object after its step, and what it changed.

The chain (`eval` on manifests) is defaulting -> mutation -> validation, as an API server admits an object:
its defaults first (k8s/defaulting.py), then mutating admission, in the API server's plugin order (the
in-tree MutatingAdmissionPolicy plugin before the MutatingAdmissionWebhook plugin, which calls Kyverno), and
within Kyverno's webhooks in Kyverno's order (docs/admission.md#mutation-order). Each engine takes the request
as the chain has made it so far and answers a `MutationStep`; the chain feeds the step's object to the
next engine, and the last object to validation.

An engine never guesses an order it cannot know: where the outcome depends on an order Kyverno does not
fix (it ranges over a Go map), the step says so in `undetermined` (reason `order-dependent`), and the
chain reports the subject's validation results as undetermined rather than pick one of the outcomes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.k8s.json_patch import make_patch
from kubectl_kyrec.model import Result, Source

# the report sources of mutation results: an error of one of these policies with failurePolicy Fail denies
# the request (reconcile/impact.py)
MUTATION_SOURCES = frozenset({"KyvernoMutatingPolicy", "MutatingAdmissionPolicy"})

# why a subject's admitted object cannot be known offline
ORDER_DEPENDENT = "order-dependent"
NEEDS_REGISTRY = "needs-registry"
# an apply configuration sets a list whose merge depends on the kind's OpenAPI schema, which kyrec lacks
NEEDS_SCHEMA = "needs-schema"


@dataclass(frozen=True)
class Mutation:
    """One policy's (or classic rule's) change to the object: the JSON patch from its input to its output."""

    policy: str                     # `name`, or `ns/name` for a namespaced policy
    policy_kind: str                # MutatingPolicy, MutatingAdmissionPolicy, ClusterPolicy, Policy, ...
    rule: str                       # a classic rule's name; a MutatingAdmissionPolicy's binding; "" otherwise
    patch: tuple[Mapping[str, Any], ...]
    location: Source | None = None  # the policy's file:line

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"policy": self.policy, "kind": self.policy_kind}
        if self.rule:
            out["rule"] = self.rule
        out["patch"] = [dict(op) for op in self.patch]
        return out


@dataclass
class MutationStep:
    """An engine's answer for one request.

    `obj`: the object after every policy of the engine that applied (the input object when none did).
    `mutations`: each applying policy's change, in the order applied; a policy that matched and changed
    nothing gives none. `results`: the per policy (rule) outcomes Kyverno reports for mutation (pass when
    applied, skip, error, fail), with the same fields as validation results. `undetermined`: reasons the
    admitted object cannot be known (ORDER_DEPENDENT, NEEDS_REGISTRY, ...), each a short sentence naming
    the policies concerned.
    """

    obj: Mapping[str, Any] | None
    mutations: list[Mutation] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    undetermined: list[str] = field(default_factory=list)


class MutationEngine(Protocol):
    """One stage of mutating admission (an engine over its compiled policies)."""

    def mutate(self, ctx: SubjectContext) -> MutationStep:
        """The step for the request `ctx` makes (ctx.request.obj is the object as the chain has it so
        far; ctx.request.old_obj is the stored object for UPDATE and DELETE)."""
        ...


def mutation_of(policy: str, policy_kind: str, rule: str, before: Any, after: Any,
                location: Source | None = None) -> Mutation | None:
    """The Mutation from `before` to `after`, or None when the policy changed nothing."""
    ops = make_patch(before, after)
    if not ops:
        return None
    return Mutation(policy, policy_kind, rule, tuple(ops), location)


def chain_steps(steps: Sequence[MutationStep]) -> tuple[list[Mutation], list[Result], list[str]]:
    """Every step's mutations, results and undetermined reasons, in order."""
    mutations = [m for s in steps for m in s.mutations]
    results = [r for s in steps for r in s.results]
    reasons = [u for s in steps for u in s.undetermined]
    return mutations, results, reasons
