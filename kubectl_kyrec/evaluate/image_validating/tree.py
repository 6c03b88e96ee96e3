"""The decision tree of an ImageValidatingPolicy / NamespacedImageValidatingPolicy for one subject (issue 27).

It walks evaluate/image_validating/engine.py's steps for each variant (the policy, then its autogen copies; kk:
pkg/cel/policies/ivpol/engine/engine.go, compiler/policy.go Evaluate): matchConstraints, matchConditions
with their values, the exceptions, the images extracted, which of them the policy's imageRules select and
whether the run was given their data (Kyverno fetches them from a registry: without the data the result is
`undetermined`, with its reason), then each validation's value up to the first not true. The results are
those `evaluate_image_validating` gives, the call `eval` makes; a variant's own answer is `evaluate_variant`'s.
"""

from __future__ import annotations

from kubectl_kyrec.cel.decl import CelFunctionError
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
    result_node,
    show,
    value_node,
)
from kubectl_kyrec.evaluate.image_validating.engine import (
    CompiledImageValidatingPolicy,
    CompiledImageVariant,
    evaluate_image_validating,
    evaluate_variant,
    extract_images,
)
from kubectl_kyrec.evaluate.match import may_match
from kubectl_kyrec.evaluate.subjects import SubjectContext


def explain_image_validating(cp: CompiledImageValidatingPolicy, ctx: SubjectContext) -> Explanation:
    policy = cp.policy
    meta = policy.meta
    # the call eval makes (pipeline.run_eval), on the same (admitted) subject
    results = evaluate_image_validating(cp, ctx)
    root = Node(f"{meta.kind} {meta.key}")
    done = Explanation(meta.key, meta.kind, ctx.subject.ref, root, results)
    if meta.kind.startswith("Namespaced") and ctx.request.namespace != meta.namespace:
        root.children.append(Node("namespace", NOT_MATCHED, f"a {meta.kind} of {meta.namespace!r} on a request in "
                                                            f"{ctx.request.namespace or 'no namespace'!r}"))
        root.children.append(result_node(None))
        return done
    for cv in cp.variants:
        root.children.append(_variant_node(cp, cv, ctx))
    if len(cp.variants) > 1:
        root.detail = "each variant that answers replaces the previous answer (one result per policy)"
    root.children.append(result_node(results[0] if results else None))
    return done


def _variant_node(cp: CompiledImageValidatingPolicy, cv: CompiledImageVariant, ctx: SubjectContext) -> Node:
    if cv.name and not may_match(cv.match_constraints, ctx.request):
        return Node(f"autogen copy {cv.name}", NOT_MATCHED, f"the subject is a {ctx.subject.ref.kind}")
    node = Node(f"autogen copy {cv.name}" if cv.name else "policy")
    answer = evaluate_variant(cp, cv, ctx)
    node.outcome = answer.result if answer is not None else NONE
    steps = node.children
    match = constraints_node(cv.match_constraints, ctx)
    steps.append(match)
    if match.outcome != MATCHED:
        return node
    activation = ctx.activation(cp.env)
    conditions = conditions_node(cp.policy.match_conditions, cv.conditions, activation,
                                 "the policy gives no result")
    steps.append(conditions)
    if conditions.outcome not in (ALL_TRUE, NONE):
        return node
    if cv.exceptions:
        exceptions = Node("exceptions", NOT_MATCHED)
        for ce in cv.exceptions:
            child = Node(ce.key)
            held = True
            exc_activation = ctx.activation(ce.env)
            for i, (named, program) in enumerate(zip(ce.exception.match_conditions, ce.conditions)):
                value = value_node(f"matchConditions[{i}] {named.name}", program, exc_activation)
                value.detail = one_line(named.expression)
                held = held and value.outcome == "true"
                child.children.append(value)
            child.outcome = MATCHED if held else NOT_MATCHED
            if held:
                exceptions.outcome = MATCHED
            exceptions.children.append(child)
        steps.append(exceptions)
        if exceptions.outcome == MATCHED:
            return node
    images, error = extract_images(cp, cv, ctx, activation)
    if images is None:
        steps.append(Node("images", ERROR, error or ""))
        return node
    found = Node("images", f"{sum(len(v) for v in images.values())} found")
    for name, listed in images.items():
        if listed:
            found.children.append(Node(name, show(listed)))
    steps.append(found)
    fetched = Node("matchImageReferences")
    missing, selected_count = False, 0
    for image in dict.fromkeys(i for listed in images.values() for i in listed):
        try:
            selected = cp.matches_image(image)
        except CelFunctionError as exc:
            fetched.children.append(Node(image, ERROR, str(exc)))
            continue
        if not selected:
            fetched.children.append(Node(image, NOT_MATCHED))
            continue
        selected_count += 1
        supplied = cp.supplied_data(image) is not None
        missing = missing or not supplied
        fetched.children.append(Node(image, MATCHED, "its data given in the context file" if supplied
                                     else "Kyverno fetches it from the registry: kyrec has no registry access"))
    fetched.outcome = "needs registry" if missing else f"{selected_count} selected"
    steps.append(fetched)
    bound = ctx.activation(cp.env, extra={
        "images": images,
        "attestors": {a.name: dict(a.raw) for a in cp.policy.attestors},
        "attestations": {name: name for name in cp.policy.attestations},
    })
    validations = Node("validations", ALL_TRUE, "as they run once the images' data is fetched" if missing else "")
    decided = False
    for i, (spec, compiled) in enumerate(zip(cp.policy.validations, cv.validations)):
        name = f"[{i}] {one_line(spec.expression)}"
        if decided:
            validations.children.append(Node(name, NOT_EVALUATED, "an earlier validation decided"))
            continue
        child = value_node(name, compiled.program, bound)
        if child.outcome != "true":
            decided = True
            validations.outcome = f"[{i}] not true"
            if child.outcome != ERROR and (spec.message or spec.message_expression):
                child.detail = "message: " + (spec.message or one_line(spec.message_expression))
        validations.children.append(child)
    steps.append(validations)
    # the variant's answer; the policy's result (the root's) is the last variant's that answered
    said = result_node(answer, "no answer")
    said.name = "answer"
    steps.append(said)
    return node
