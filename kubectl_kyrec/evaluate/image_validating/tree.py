"""The decision tree of an ImageValidatingPolicy / NamespacedImageValidatingPolicy for one subject (issue 27),
built from what evaluate/image_validating/engine.py recorded (recording.py) in the evaluation whose results the
tree ends in, for each variant (the policy, then its autogen copies; kk: pkg/cel/policies/ivpol/engine/engine.go,
compiler/policy.go Evaluate): matchConstraints, matchConditions with their values, the exceptions, the images
extracted, which of them the policy's imageRules selected and whether the run was given their data (Kyverno
fetches them from a registry: without the data the result is `undetermined`, with its reason), then each
validation up to the first not true, and the variant's answer. The tree stops where the engine stopped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubectl_kyrec.cel.engine import Outcome
from kubectl_kyrec.evaluate.explain import (
    ALL_TRUE,
    ERROR,
    MATCHED,
    NONE,
    NOT_EVALUATED,
    NOT_MATCHED,
    Explanation,
    Node,
    conditions_node,
    constraints_node,
    one_line,
    outcome_node,
    result_node,
    show,
    value_node,
)
from kubectl_kyrec.evaluate.image_validating.engine import CompiledImageValidatingPolicy, CompiledImageVariant
from kubectl_kyrec.evaluate.subjects import SubjectContext
from kubectl_kyrec.model import Result
from kubectl_kyrec.recording import Step, Trace


def explain_image_validating(cp: CompiledImageValidatingPolicy, ctx: SubjectContext, trace: Trace,
                             results: Sequence[Result]) -> Explanation:
    """`trace`, `results`: what `evaluate_image_validating` recorded and returned for `ctx`, the call eval
    makes on the same (admitted) subject."""
    meta = cp.policy.meta
    root = Node(f"{meta.kind} {meta.key}")
    done = Explanation(meta.key, meta.kind, ctx.subject.ref, root, list(results))
    if trace.root.children:
        root.children.append(Node("namespace", NOT_MATCHED, f"a {meta.kind} of {meta.namespace!r} on a request in "
                                                            f"{ctx.request.namespace or 'no namespace'!r}"))
        root.children.append(result_node(None))
        return done
    for cv in cp.variants:
        recorded = trace.rules[(meta.key, cv.name)]
        root.children.append(_variant_node(cp, cv, ctx, {step.name: step for step in recorded.children}))
    if len(cp.variants) > 1:
        root.detail = "each variant that answers replaces the previous answer (one result per policy)"
    root.children.append(result_node(results[0] if results else None))
    return done


def _variant_node(cp: CompiledImageValidatingPolicy, cv: CompiledImageVariant, ctx: SubjectContext,
                  recorded: Mapping[str, Step]) -> Node:
    match_step = recorded["matchConstraints"]
    if cv.name and match_step.outcome == NOT_MATCHED and not match_step.data:
        return Node(f"autogen copy {cv.name}", NOT_MATCHED, f"the subject is a {ctx.subject.ref.kind}")
    node = Node(f"autogen copy {cv.name}" if cv.name else "policy")
    answer = recorded["answer"].data
    node.outcome = answer.result if answer is not None else NONE
    steps = node.children
    # the engine's decision, shown with the rules and selectors it was made of
    steps.append(constraints_node(cv.match_constraints, ctx))
    if match_step.outcome != MATCHED:
        return node
    activation = recorded["activation"].data
    steps.append(conditions_node(cp.policy.match_conditions, cv.conditions, activation, "the policy gives no result"))
    if recorded.get("matchConditions", _HELD).outcome != "true":
        return node
    if "exceptions" in recorded:
        exceptions = Node("exceptions", NOT_MATCHED)
        for ce, held in recorded["exceptions"].data:
            child = Node(ce.key, MATCHED if held else NOT_MATCHED)
            exc_activation = ctx.activation(ce.env)
            for i, (named, program) in enumerate(zip(ce.exception.match_conditions, ce.conditions)):
                # the values its matchConditions had, shown (whether it held is the engine's, recorded)
                value = value_node(f"matchConditions[{i}] {named.name}", program, exc_activation)
                value.detail = one_line(named.expression)
                child.children.append(value)
            if held:
                exceptions.outcome = MATCHED
            exceptions.children.append(child)
        steps.append(exceptions)
        if "images" not in recorded:
            return node
    images_step = recorded["images"]
    images = images_step.data
    if images is None:
        steps.append(Node("images", ERROR, images_step.detail))
        return node
    found = Node("images", f"{sum(len(v) for v in images.values())} found")
    for name, listed in images.items():
        if listed:
            found.children.append(Node(name, show(listed)))
    steps.append(found)
    references = recorded["matchImageReferences"]
    if references.outcome == ERROR:
        steps.append(Node("matchImageReferences", ERROR, references.detail))
        return node
    selected, missing = references.data
    fetched = Node("matchImageReferences", "needs registry" if missing else f"{len(set(selected))} selected")
    for image in dict.fromkeys(i for listed in images.values() for i in listed):
        if image not in selected:
            fetched.children.append(Node(image, NOT_MATCHED))
            continue
        fetched.children.append(Node(image, MATCHED, "Kyverno fetches it from the registry: kyrec has no registry "
                                     "access" if image in missing else "its data given in the context file"))
    steps.append(fetched)
    if "validations" in recorded:
        steps.append(_validations_node(cp, cv, recorded["validations"].data, bool(missing)))
    # the variant's answer; the policy's result (the root's) is the last variant's that answered
    said = result_node(answer, "no answer")
    said.name = "answer"
    steps.append(said)
    return node


_HELD = Step("matchConditions", "true")


def _validations_node(cp: CompiledImageValidatingPolicy, cv: CompiledImageVariant,
                      decided: tuple[int, Outcome] | None, missing: bool) -> Node:
    """The validations as the engine ran them: true up to `decided` (index, Outcome), the first not true."""
    validations = Node("validations", ALL_TRUE, "as they run once the images' data is fetched" if missing else "")
    for i, spec in enumerate(cp.policy.validations[:len(cv.validations)]):
        name = f"[{i}] {one_line(spec.expression)}"
        if decided is None or i < decided[0]:
            validations.children.append(Node(name, "true"))
            continue
        if i > decided[0]:
            validations.children.append(Node(name, NOT_EVALUATED, "an earlier validation decided"))
            continue
        child = outcome_node(name, decided[1])
        validations.outcome = f"[{i}] not true"
        if child.outcome != ERROR and (spec.message or spec.message_expression):
            child.detail = "message: " + (spec.message or one_line(spec.message_expression))
        validations.children.append(child)
    return validations
