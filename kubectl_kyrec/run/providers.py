"""The context provider a run's CEL functions consult: the state (as the cluster) and a Context file.

`resource.Get/List` are answered from the run's ClusterState objects."""

from __future__ import annotations

import os
from typing import Any

from kubectl_kyrec.cel.context import ObjectsProvider
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.run_inputs.sources import Inputs


def provider_for(inputs: Inputs, extra_objects: list[dict[str, Any]] | None = None,
                 base_dir: str | None = None) -> ObjectsProvider:
    """The provider answering `resource.*`, images and global context: the state and the Context file.

    Indexing a large state costs time, and several stages of one run ask: the plain one is built once.
    """
    plain = extra_objects is None and base_dir is None
    if plain and inputs.provider is not None:
        return inputs.provider  # type: ignore[no-any-return]
    provider = _build_provider(inputs, extra_objects, base_dir)
    if plain:
        inputs.provider = provider
    return provider


def _build_provider(inputs: Inputs, extra_objects: list[dict[str, Any]] | None,
                    base_dir: str | None) -> ObjectsProvider:
    resource_of, kind_of = inputs.kinds.resource_of, inputs.kinds.kind_of

    def read_file(path: str) -> Any:
        from kubectl_kyrec.load.documents import load_documents

        full = path if os.path.isabs(path) or base_dir is None else os.path.join(base_dir, path)
        docs = load_documents([full])
        return docs[0].obj if len(docs) == 1 else [d.obj for d in docs]

    def refused(api_version: str, kind: str, namespace: str) -> str | None:
        """Why the cluster refused the state's LIST of this kind there (401/403), else None."""
        group = api_version.rpartition("/")[0]
        for key, read in inputs.state.unreadable.items():
            if key.api_version.rpartition("/")[0] == group and key.kind == kind and \
                    key.namespace in ("", namespace) and (read.status in (401, 403) or
                                                          read.reason in ("Forbidden", "Unauthorized")):
                return read.message or read.status_text()
        return None

    objects = inputs.state.objs + list(extra_objects or [])
    try:
        return ObjectsProvider(objects, resource_of, inputs.context_file, kind_of=kind_of, read_file=read_file,
                               refused=refused, implicit_namespaces=True)
    except ValueError as exc:
        raise InputError(f"--context-file: {exc}") from None
