"""A Kyverno CLI test suite's classic mutate rules, run as the CLI runs them (kk: cmd/cli/kubectl-kyverno/
processor/policy_processor.go ApplyPoliciesOnResource: every policy with a mutate rule, in the order loaded,
each on the previous one's PatchedResource), and the patched-resource check of its rows (commands/test/
command.go checkResult, compare.go getAndCompareResource, resource/compare.go Compare).

A row's `patchedResources` file is searched for the document with the policy's patched resource's
apiVersion, kind, namespace and name (both sides read as the CLI reads resources: an empty namespace is
`default`); none found, the CLI checks nothing for that rule response ("not found in manifest"). Found,
both sides lose their generate.kyverno.io/* labels and gain `app.kubernetes.io/managed-by: kyverno` when
absent (FixupGenerateLabels), are tidied (nulls, then empty maps and lists, dropped), and must be equal
as JSON merge patch sees them (numbers by value).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.classic.mutate import same_json
from kubectl_kyrec.evaluate.classic.mutator import ClassicMutator, TargetChange, has_mutate
from kubectl_kyrec.evaluate.namespaces import namespace_object, namespace_objects
from kubectl_kyrec.evaluate.pipeline import select_subjects
from kubectl_kyrec.evaluate.request import build_request
from kubectl_kyrec.evaluate.subjects import KindLookup, SubjectContext
from kubectl_kyrec.load.run_inputs.selection import Selection
from kubectl_kyrec.model import Document, Obj, Ref, Result


@dataclass
class SuiteMutations:
    """Every classic mutate policy's rule results, by (policy name, subject), and the PatchedResource of
    its engine response (an error leaves {}, as Kyverno's empty object)."""

    results: dict[tuple[str, Ref], list[Result]] = field(default_factory=dict)
    patched: dict[tuple[str, Ref], Obj] = field(default_factory=dict)
    rule_types: dict[tuple[str, str], str] = field(default_factory=dict)     # (policy, rule) -> type
    # the test's resources as the CLI validates them: each after every mutate policy (the resource as
    # given when a policy ended in an error, where the CLI would validate an empty object)
    admitted: list[Document] = field(default_factory=list)
    # mutate-existing rules: each trigger's target changes (every policy's), by trigger
    existing: dict[Ref, list[TargetChange]] = field(default_factory=dict)


def suite_mutations(loaded: Any, operation: str, kinds: KindLookup, now: Any, classic_options: Any
                    ) -> SuiteMutations:
    out = SuiteMutations()
    policies = [p for p in loaded.policies.classic if has_mutate(p)]
    if not policies:
        return out
    state = [*loaded.values.namespaces, *loaded.param_objects, *loaded.cluster_objects]
    mutator = ClassicMutator(policies, loaded.policies.classic_exceptions, state=state, now=now,
                             sources=classic_options.sources, options=classic_options)
    subjects, _ = select_subjects(loaded.resources, state, kinds, Selection())
    namespaces = namespace_objects([*state, *loaded.resources], loaded.values.namespace_labels)
    if len(subjects) != len(loaded.resources):
        return out
    for doc, subject in zip(loaded.resources, subjects):
        request = build_request(subject.obj, resource=subject.resource, namespaced=subject.namespaced,
                                operation=operation, user_info=loaded.user_info)
        ns_obj = namespace_object(request.namespace, namespaces) if request.namespace and subject.namespaced \
            else None
        sctx = SubjectContext(subject, request, ns_obj)
        final: Any = subject.obj
        errored = False
        for run in mutator.policy_responses(sctx, mutator.policies):
            key = (run.policy.meta.name, subject.ref)
            out.results.setdefault(key, []).extend(run.results)
            out.patched[key] = dict(run.after) if run.after is not None else {}
            if run.after is None:
                errored = True
            else:
                final = run.after
        changed = not errored and not same_json(final, subject.obj)
        if any(r.type == "mutate" and (r.raw.get("mutate") or {}).get("targets") for p in policies for r in p.rules):
            # the CLI's fake cluster holds the targetResources (and the clusterResources)
            out.existing[subject.ref] = mutator.mutate_existing(sctx, [*loaded.target_objects, *state])
        out.admitted.append(Document(dict(final), doc.source) if changed else doc)
    for policy in policies:
        for rule in policy.rules:
            out.rule_types[(policy.meta.name, rule.name)] = rule.type
    return out
