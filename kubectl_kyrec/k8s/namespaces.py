"""Namespaces as a cluster has them."""

from __future__ import annotations

from typing import Any


def default_namespace(name: str) -> dict[str, Any]:
    """A namespace absent from the inputs: in a cluster it exists, labelled with its name, and Active."""
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
