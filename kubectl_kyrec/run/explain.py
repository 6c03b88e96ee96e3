"""`explain`: for each policy x subject picked, the tree of decisions that gave its result (issue 27).

The inputs, the subjects, their requests and the compiled policies are made as `eval` makes them
(evaluate/pipeline.py), so each tree ends in the result `eval` gives for the pair.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.errors import ExitCode, FailedRead, InputError
from kubectl_kyrec.load.registry import Registry
from kubectl_kyrec.load.run_inputs.selection import Selection
from kubectl_kyrec.model import EvalError
from kubectl_kyrec.run.unreadable import failed_reads, with_failed_reads

if TYPE_CHECKING:
    from kubectl_kyrec.evaluate.admission_chain import Admission
    from kubectl_kyrec.evaluate.explain import Explanation
    from kubectl_kyrec.evaluate.generating.outcomes import TriggerOutcome
    from kubectl_kyrec.load.run_inputs.sources import InputSource


@dataclass(frozen=True)
class ExplainOptions:
    now: datetime.datetime
    selection: Selection = Selection()      # -n, --kind, -l, --policy-name
    subject: str = ""                       # KIND/NAME: the one subject to explain ("" for every one)
    mutate: bool = True                     # manifests admitted first, as eval admits them (`--no-mutate`)
    registry: Registry | None = None        # `--registry`, as eval's


@dataclass
class ExplainResult:
    explanations: list[Explanation]
    errors: list[EvalError] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    failed_reads: list[FailedRead] = field(default_factory=list)
    exit_code: ExitCode = ExitCode.CLEAN
    # what Kyverno accepts with a warning (PolicySet.warning_lines): printed as `warning:` lines, never an exit code
    warnings: list[str] = field(default_factory=list)

    def document(self) -> tuple[str, Iterable[tuple[str, Any]]]:
        from kubectl_kyrec.render.envelope import error_entries

        # errors and notices as every other document carries them (docs/output.md), after the trees
        return "ExplainResult", [("explanations", [e.to_json() for e in self.explanations]),
                                 ("errors", error_entries(self.errors)), ("notices", list(dict.fromkeys(self.notices)))]


def parse_subject(text: str) -> tuple[str, str]:
    """`KIND/NAME` (kubectl's form) -> (kind, name)."""
    kind, sep, name = text.partition("/")
    if not sep or not kind or not name or "/" in name:
        raise InputError(f"subject {text!r}: expected KIND/NAME (e.g. pod/nginx; the namespace with -n)")
    return kind, name


def run_explain(options: ExplainOptions, source: InputSource) -> ExplainResult:
    from kubectl_kyrec.evaluate.explain import recorded as recorded_trees
    from kubectl_kyrec.evaluate.explain_pairs import explain_pairs
    from kubectl_kyrec.load.policy.vocabulary import GENERATING_KINDS
    from kubectl_kyrec.run.eval import options_for_run, policy_errors
    from kubectl_kyrec.run.providers import validated_for_run
    from kubectl_kyrec.run.select import (
        check_policy_names,
        holds_object,
        nothing_selected,
        resolve_kinds,
        selects_any,
        with_namespaces_left_out,
    )

    now = options.now
    inputs = source.read()
    check_policy_names(options.selection.policy_names, inputs.policies)
    inputs, run_envs = validated_for_run(inputs, now, options.registry)
    documents = inputs.subjects
    kinds = options.selection.kinds
    name = ""
    if options.subject:
        kind, name = parse_subject(options.subject)
        kinds = (*kinds, kind)
    selection = dataclasses.replace(options.selection, kinds=resolve_kinds(kinds, inputs.kinds, documents))
    if selection.namespace:
        # the objects in it, and the Namespace itself, as eval's triggers (run/select.py holds_object)
        only = Selection(namespace=selection.namespace)
        documents = [d for d in documents if holds_object(only, d.kind, d.namespace, d.name, {})]
    if name:
        documents = [d for d in documents if d.name == name and d.kind in selection.kinds]
        if not documents:
            where = f" in namespace {selection.namespace}" if selection.namespace else ""
            raise InputError(f"subject {options.subject}: no such resource among those given{where}")
    eval_options = options_for_run(inputs, now, selection, mutate=options.mutate, registry=options.registry,
                                   classic=bool(inputs.policies.classic))
    # the Namespaces among the resources label their namespace whichever subjects are picked, as in eval
    eval_options = with_namespaces_left_out(eval_options, documents, inputs.subjects)
    from kubectl_kyrec.recording import Trace
    from kubectl_kyrec.run.generate import generate_for_inputs

    # what the GeneratingPolicy engine records in that run (their trees), and the run's outcome
    recorded, generated = Trace(), []

    def generate(admissions: Sequence[Admission]) -> list[TriggerOutcome]:
        # the downstreams as eval lists them: the same run over the same triggers, its outcomes explained
        generated.append(generate_for_inputs(inputs, now=now, selection=selection, recorder=recorded,
                                             admissions=admissions))
        # the run holds GeneratingPolicies and classic generate rules alike (evaluate/classic/generate_objects.py):
        # each drawn by its own kind's tree
        return [o for o in generated[0].outcomes if o.policy.meta.kind not in GENERATING_KINDS
                and (not name or o.trigger.ref.name == name)]

    outcome = explain_pairs(inputs.policies, documents, inputs.state.objects, kinds=inputs.kinds,
                            libraries=run_envs.libraries, options=eval_options,
                            generate=generate, envs=run_envs.envs)
    explanations = outcome.explanations
    # the GeneratingPolicies' trees, as their engine recorded them for each trigger
    explanations.extend(e for e in recorded_trees(recorded) if not name or e.subject.name == name)
    errors = list(dict.fromkeys([*policy_errors(inputs.policies), *outcome.errors, *generated[0].errors]))
    notices = [str(n) for n in [*inputs.notices, *outcome.notices, *generated[0].notices]]
    if (filters := options.selection.text()) and not selects_any(selection, inputs.subjects):
        # as `kubectl get -n nope`: a notice, not an error (a named subject that is not there is one)
        notices.append(nothing_selected(filters, len(inputs.subjects)))
    reads = failed_reads(inputs.state)
    code = ExitCode.INPUT if errors else ExitCode.CLEAN
    return ExplainResult(explanations, errors, notices, reads, with_failed_reads(code, reads),
                         inputs.policies.warning_lines())

