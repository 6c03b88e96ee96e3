"""What a GeneratingPolicy's evaluation gives (evaluate/generating/engine.py): each (policy, trigger)'s
outcome and the run's. Apart from the engine so that what only reads outcomes (reconcile/, the renderers)
does not import the CEL libraries: `apply` imports these before its reads and the engine during them
(run/apply.py)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.load.policy.generating import GeneratingPolicy
from kubectl_kyrec.model import EvalError, Notice, Result, Subject


class TriggerStatus(enum.StrEnum):
    GENERATED = "generated"          # matched and evaluated: `objects` is the desired set (maybe empty)
    NO_MATCH = "no-match"            # matchConstraints do not select it
    SKIPPED = "skipped"              # a matchCondition is false
    EXEMPT = "exempt"                # a PolicyException exempts it fully
    ERROR = "error"                  # evaluation failed: Kyverno writes nothing and cleans nothing up
    NEEDS_REQUEST = "needs-request"  # depends on request data --values does not give
    # an expression reads image data only a registry gives (image.GetMetadata offline where a cluster reads the
    # registry): its result is undetermined, nothing is generated and nothing cleaned up
    NEEDS_REGISTRY = "needs-registry"
    # eval on manifests: the admitted trigger is not known and the objects it may be admitted as disagree
    # (evaluate/generating/admitted.py); its result is undetermined, nothing is generated
    ADMISSION_UNKNOWN = "admission-unknown"
    # an expression (a classic rule's context entry) rests on a lookup the state read from a cluster cannot
    # answer: the kind's LIST failed there, or it was never listed (errors.py LookupUnanswered); its result is
    # undetermined, nothing is generated and nothing cleaned up
    READ_FAILED = "read-failed"
    KIND_NOT_CAPTURED = "kind-not-captured"


# the statuses of a trigger whose evaluation rests on a lookup the state cannot answer
UNREAD_LOOKUP = frozenset({TriggerStatus.READ_FAILED, TriggerStatus.KIND_NOT_CAPTURED})


@dataclass(frozen=True)
class TriggerOutcome:
    policy: GeneratingPolicy
    trigger: Subject
    status: TriggerStatus
    objects: tuple[dict[str, Any], ...] = ()
    message: str = ""
    result: Result | None = None
    owed: bool = True
    operation: str = "CREATE"
    # False: the trigger is in the state and the policy's creation time is unknown, so whether the trigger
    # predates the policy (and is owed nothing) cannot be told; `owed` is then True (assume the worst)
    age_known: bool = True

    @property
    def key(self) -> tuple[str, str]:
        return self.policy.key, self.trigger.ref.uid


@dataclass
class GeneratingOutcome:
    """Every (policy, trigger) that matched, and which triggers were looked at at all."""

    policies: list[GeneratingPolicy] = field(default_factory=list)
    outcomes: list[TriggerOutcome] = field(default_factory=list)
    evaluated_uids: set[str] = field(default_factory=set)
    triggers: list[Subject] = field(default_factory=list)
    errors: list[EvalError] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)

    def by_key(self) -> dict[tuple[str, str], TriggerOutcome]:
        return {o.key: o for o in self.outcomes}

    @property
    def downstreams(self) -> list[tuple[TriggerOutcome, dict[str, Any]]]:
        return [(o, obj) for o in self.outcomes for obj in o.objects]
