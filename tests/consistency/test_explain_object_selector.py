"""explain's objectSelector node agrees with the engine on an UPDATE: the engine's selector holds when either
the new or the old object's labels match (evaluate/match.py `matches_constraints`), so a node reading the new
labels alone said `not matched` under a matchConstraints node the engine had `matched`."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from kubectl_kyrec.evaluate.explain import MATCHED, NOT_MATCHED, constraints_node
from kubectl_kyrec.evaluate.match import matches_constraints
from kubectl_kyrec.evaluate.request import RequestInfo
from kubectl_kyrec.load.policy.vocabulary import MatchResources, ResourceRule

RULES = (ResourceRule(api_groups=("",), api_versions=("v1",), operations=("CREATE", "UPDATE"),
                      resources=("pods",)),)
SELECTED = MatchResources(resource_rules=RULES, object_selector={"matchLabels": {"tier": "web"}})


def _pod(labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "shop", "labels": labels}}


def _request(new: dict[str, str] | None, old: dict[str, str] | None) -> RequestInfo:
    return RequestInfo(obj=_pod(new) if new is not None else None, old_obj=_pod(old) if old is not None else None,
                       group="", version="v1", kind="Pod", resource="pods", subresource="", namespace="shop",
                       name="p", operation="UPDATE" if old is not None and new is not None else "CREATE",
                       namespaced=True)


@pytest.mark.parametrize(("new", "old", "outcome", "whose"), [
    ({"tier": "db"}, {"tier": "web"}, MATCHED, "the old object's"),      # before: not matched
    ({"tier": "web"}, {"tier": "db"}, MATCHED, "the object's"),
    ({"tier": "db"}, {"tier": "db"}, NOT_MATCHED, "the object's"),
    ({"tier": "db"}, None, NOT_MATCHED, "the object's"),
])
def test_the_object_selector_node_says_what_the_engine_decided(new: dict[str, str] | None,
                                                               old: dict[str, str] | None, outcome: str,
                                                               whose: str) -> None:
    req = _request(new, old)
    ctx: Any = SimpleNamespace(request=req, namespace_obj=None)
    engine = matches_constraints(SELECTED, req, None)
    node = constraints_node(SELECTED, ctx, decided=(MATCHED if engine else NOT_MATCHED, ""))
    selector = next(c for c in node.children if c.name == "objectSelector")
    assert (selector.outcome == MATCHED) is engine
    assert selector.outcome == outcome
    assert f"on {whose} labels" in selector.detail
