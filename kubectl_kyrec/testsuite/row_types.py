"""What a test suite's run produces (testsuite/rows.py decides it): the rows with their reasons, the
warnings where Kyverno's CLI and a cluster part or a pass checks nothing, what a generating policy did for a
trigger, and a suite's run. Below rows.py and the modules it composes (verdicts.py, classic_generate.py),
which read these types."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from kubectl_kyrec.model import Notice, Obj, Ref, Source
from kubectl_kyrec.testsuite.suite import LoadedSuite


class Mode(enum.Enum):
    STRICT = "strict"
    KYVERNO = "kyverno"

    @property
    def other(self) -> Mode:
        return Mode.STRICT if self is Mode.KYVERNO else Mode.KYVERNO


# row reasons (the `TestResult` rows of docs/output.md)
OK = "ok"
EXCLUDED = "excluded"
NOT_MATCHED = "not-matched"
NOT_FOUND = "not-found"
RESULT_MISMATCH = "result-mismatch"
GENERATED_MISMATCH = "generated-mismatch"
PATCHED_MISMATCH = "patched-mismatch"     # the policy's patched resource differs from patchedResources
LOAD_ERROR = "load-error"
NOT_EVALUATED = "not-evaluated"     # a policy kind kyrec does not evaluate: neither passed nor failed

# warnings (RowWarning.reason): the cluster would decide the row differently from Kyverno's CLI, or the row
# is vacuous, passed by the CLI without checking anything
CLUSTER_DIFFERENCE = "cluster-difference"
MATCHED_NOTHING = "matched-nothing"         # the policy gave the resource no response: "Excluded"
MISSING_RULE = "missing-rule"               # the entry names a rule the (classic) policy does not have
MISSING_RESOURCE = "missing-resource"       # the entry names a resource the test does not have
FAIL_MET_BY_SKIP = "fail-met-by-skip"       # a `fail` expectation the policy answered with `skip`
# the patchedResources file has no document for the patched resource: the CLI checks nothing
MISSING_PATCHED = "missing-patched-resource"
VACUOUS = (MATCHED_NOTHING, MISSING_RULE, MISSING_RESOURCE, FAIL_MET_BY_SKIP, MISSING_PATCHED)

@dataclass(frozen=True)
class Row:
    file: str
    test: str
    policy: str
    kind: str
    resource: str
    expected: str
    actual: str
    passed: bool
    reason: str
    message: str = ""
    location: Source | None = None      # the results entry in the test file
    diff: str | None = None
    rule: str = ""                      # the entry's rule ("" for most CEL-kind entries)
    # set by the CLI's deciding when its pass checks nothing (verdicts.VACUOUS): the row would pass
    # whatever it expects
    vacuous: str = ""

    @property
    def evaluated(self) -> bool:
        return self.reason != NOT_EVALUATED

    @property
    def status(self) -> str:
        if not self.evaluated:
            return NOT_EVALUATED
        return "pass" if self.passed else "fail"


@dataclass(frozen=True)
class Generated:
    """What a generating policy did for one trigger: its result and the objects it generated."""

    policy: str
    trigger: Ref
    result: str
    message: str
    objects: tuple[Obj, ...] = ()
    skipped: bool = False         # matchConditions were false: Kyverno keeps no response
    rule: str = ""                # a classic generate rule's name ("" for a GeneratingPolicy)


@dataclass
class GenerationRun:
    outcomes: list[Generated] = field(default_factory=list)
    errors: list[tuple[str, str, Source | None]] = field(default_factory=list)   # (policy, message, where)


# (suite, operation) -> what every generating policy did for every trigger
GenerateFn = Callable[[LoadedSuite, str], GenerationRun]


@dataclass(frozen=True)
class RowWarning:
    """A row the cluster would decide differently from Kyverno's CLI, or one whose pass checks nothing
    (`reason`: verdicts.CLUSTER_DIFFERENCE or one of verdicts.VACUOUS). `resource` is the row's, or the
    name as the entry writes it when that name selects nothing."""

    reason: str
    policy: str
    rule: str
    kind: str
    resource: str
    message: str
    location: Source | None = None      # the results entry in the test file


@dataclass
class SuiteRun:
    file: str
    test: str
    rows: list[Row] = field(default_factory=list)
    errors: list[tuple[str, Source | None]] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    warnings: list[RowWarning] = field(default_factory=list)
