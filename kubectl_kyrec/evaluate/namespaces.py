"""The Namespace objects `namespaceObject` and namespaceSelectors see, for validating and generating alike."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from kubectl_kyrec.k8s.namespaces import default_namespace
from kubectl_kyrec.model import Document


def namespace_objects(docs: Sequence[Document], labels: Mapping[str, Mapping[str, str]], *,
                      only: Collection[str] | None = None) -> dict[str, dict[str, Any]]:
    """Namespaces by name from the state/resources; `--values` labels add or override. `only`: the names a
    caller will look up (None: every one); the others' copies are not made."""
    out: dict[str, dict[str, Any]] = {}
    built_from: dict[str, Any] = {}
    for doc in docs:
        if doc.kind == "Namespace" and doc.api_version == "v1":
            name = doc.name     # read once, not four times (a property that reads the metadata each time)
            if only is not None and name not in only:
                continue
            if built_from.get(name) is doc.obj:
                # the same object given again (a trigger read from the state, also in it): it would be built
                # the same (3,000 live Namespaces were built twice before apply's first write)
                continue
            built_from[name] = doc.obj
            meta = dict(doc.obj.get("metadata") or {})
            # the API server labels every namespace with its name; manifests often lack it
            meta["labels"] = {"kubernetes.io/metadata.name": name, **(meta.get("labels") or {})}
            out[name] = {**doc.obj, "metadata": meta}
    for name, extra in labels.items():
        base = out.get(name) or default_namespace(name)
        meta = dict(base.get("metadata") or {})
        meta["labels"] = {**(meta.get("labels") or {}), **extra}
        out[name] = {**base, "metadata": meta}
    return out


def namespace_object(name: str, namespaces: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The namespace called `name`: from the inputs, else the one a cluster would have."""
    found = namespaces.get(name)
    return dict(found) if found is not None else default_namespace(name)
