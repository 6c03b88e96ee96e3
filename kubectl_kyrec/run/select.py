"""What the filters (`--policy-name`, `--kind`, `-l`, `-n`) select, checked so that a typo never passes as
"nothing to report": a policy name that names no policy and a kind name no table knows are errors, and a
filter that matches no resource says so."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.errors import InputError

if TYPE_CHECKING:
    from kubectl_kyrec.evaluate.pipeline import EvalOptions
    from kubectl_kyrec.load.policy.policies import PolicySet
    from kubectl_kyrec.load.run_inputs.kinds import KindTable
    from kubectl_kyrec.load.run_inputs.selection import Selection
    from kubectl_kyrec.model import Document


def check_policy_names(names: Sequence[str], policies: PolicySet) -> None:
    """Every `--policy-name` names a given policy (by name, or ns/name for a namespaced one)."""
    known: dict[str, str] = {}
    for meta in [*(p.meta for p in policies.validating), *(p.meta for p in policies.admission),
                 *(p.meta for p in policies.generating), *(p.meta for p in policies.classic),
                 *(p.meta for p in policies.image_validating), *(p.meta for p in policies.deleting),
                 *(p.meta for p in policies.mutating), *(p.meta for p in policies.mutating_admission)]:
        known[meta.name] = meta.key
        known[meta.key] = meta.key
    missing = [n for n in names if n not in known]
    if missing:
        given = ", ".join(sorted(set(known.values()))) or "none"
        raise InputError(f"--policy-name {', '.join(missing)}: no such policy among those given ({given})")


def with_namespaces_left_out(options: EvalOptions, kept: Sequence[Document], documents: Sequence[Document]
                            ) -> EvalOptions:
    """`options` with the Namespaces of `documents` that a filter (-n, explain's picked subject) left out of
    `kept`, the documents evaluated: they label their namespaces all the same, as without the filter (after
    `kept`'s, before the values' own Namespaces: evaluate/namespaces.py namespace_objects)."""
    import dataclasses

    evaluated = {id(d) for d in kept}
    left_out = tuple(d for d in documents if d.kind == "Namespace" and id(d) not in evaluated)
    return dataclasses.replace(options, namespaces=(*left_out, *options.namespaces)) if left_out else options


def resolve_kinds(names: Sequence[str], table: KindTable, subjects: Sequence[Document]) -> tuple[str, ...]:
    """The kinds `--kind` names, resolved as kubectl resolves a resource type: kind, plural, singular or
    short name, any case, optionally `.group` or `.version.group` qualified. Kinds no table knows (custom
    kinds given without their CRD) resolve by their kind name or its plural, from the resources read."""
    from kubectl_kyrec.load.run_inputs.kinds import guess_plural

    out: list[str] = []
    for name in names:
        found = {info.kind for info in table.resolve(name)}
        if not found:
            wanted = name.strip().lower()
            found = {d.kind for d in subjects if wanted in (d.kind.lower(), guess_plural(d.kind))}
        if not found:
            # an input error (3), as a --policy-name that names no given policy: the name is checked
            # against what was read (the kind table, CRDs, the resources), not against the flags' grammar
            raise InputError(f"--kind {name}: no such resource type (kubectl's names are accepted: kind, "
                             "plural, singular or short name; add --crd for a custom kind)")
        out.extend(sorted(found - set(out)))
    return tuple(out)


def nothing_selected(filters: str, read: int) -> str:
    """The notice for filters that left no resource: what was asked, out of how many."""
    return f"no resource matched {filters} (of {read} read)"



def holds_object(selection: Selection, kind: str, namespace: str, name: str, labels: Mapping[str, Any]) -> bool:
    """-n, --kind and -l over one object read, as `kubectl get` lists it; a Namespace passes -n for itself
    (its triggers' downstreams live in it)."""
    from kubectl_kyrec.k8s.labels import matches_selector

    if selection.namespace and namespace != selection.namespace and not (
            kind == "Namespace" and name == selection.namespace):
        return False
    if selection.kinds and kind not in selection.kinds:
        return False
    return selection.selector is None or matches_selector(selection.selector, labels)


def selects_any(selection: Selection, documents: Sequence[Document]) -> bool:
    """Whether -n, --kind and -l leave any object read (else the run says so, as `kubectl get -n nope`
    says `No resources found`)."""
    return any(holds_object(selection, d.kind, d.namespace, d.name, (d.obj.get("metadata") or {}).get("labels") or {})
               for d in documents)
