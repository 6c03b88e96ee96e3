"""Shared by the tests in this directory: evaluate generating policies over documents, offline."""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.cel.context import LibraryContext, ObjectsProvider
from kubectl_kyrec.evaluate.generating.engine import GenerateOptions, generating_environments, run_generating
from kubectl_kyrec.evaluate.generating.outcomes import GeneratingOutcome
from kubectl_kyrec.load.documents import documents_from_text
from kubectl_kyrec.load.policy.policies import PolicyException, classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Document, EvalError
from tests.shared_inputs import shared

NOW = datetime.datetime(2026, 9, 1, 12, 0, tzinfo=datetime.UTC)
CORPUS = shared("corpus")


def docs(text: str, name: str = "test.yaml") -> list[Document]:
    return documents_from_text(text, name)


def evaluate(policies: Sequence[Document], triggers: Sequence[Document], state: Sequence[Document] = (), *,
             exceptions: Sequence[PolicyException] = (), user_info: Mapping[str, Any] | None = None,
             operation: str = "CREATE", kinds: KindTable | None = None) -> GeneratingOutcome:
    kinds = kinds or KindTable()
    resource_of, kind_of = kinds.resource_of, kinds.kind_of
    provider = ObjectsProvider([d.obj for d in state], resource_of, kind_of=kind_of)
    envs, sink = generating_environments(LibraryContext(now=NOW, provider=provider))
    options = GenerateOptions(now=NOW, operation=operation, user_info=dict(user_info or {}),
                              user_info_known=user_info is not None)
    # policies are parsed where every run parses them (load.policy.policies.classify): a bad one is an error entry
    parsed = classify(policies)
    outcome = run_generating(parsed.generating, triggers, state, kinds=kinds, envs=envs, sink=sink, options=options,
                             exceptions=exceptions, locate=parsed.locate)
    outcome.errors[:0] = [EvalError(e.message, e.source) for e in parsed.errors]
    return outcome


def only(outcome: GeneratingOutcome) -> Any:
    assert not outcome.errors, outcome.errors
    assert len(outcome.outcomes) == 1, [(o.status, o.message) for o in outcome.outcomes]
    return outcome.outcomes[0]


def strip_ownership(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object without the labels Kyverno adds, as kyverno-test generatedResource files write it."""
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items()
              if not k.startswith("generate.kyverno.io/") and k != "app.kubernetes.io/managed-by"}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    out["metadata"] = meta
    return out
