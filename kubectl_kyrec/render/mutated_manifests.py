"""`eval --write-mutated DIR`: the manifests as the API server would store them, one file per input file.

Each input file's admitted objects go to the same relative path under DIR (an absolute or outside path by
its file name; standard input as `stdin.yaml`, a kustomization's render as `kustomize-<dir>.yaml`), in the
order they were read, as a YAML stream. Every file starts with HEADER: a later run replaces a file that
starts with it and refuses any other (nothing the user had is overwritten), so pointing DIR at the
manifests themselves is an error, not a loss.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from kubectl_kyrec.evaluate.admission_chain import Admission
from kubectl_kyrec.render.yaml_emit import to_yaml

HEADER = "# written by kubectl kyrec eval --write-mutated: the objects as admission would store them\n"


def target_name(file: str) -> str:
    """Where under DIR the admitted objects of input `file` go."""
    if file.startswith("<stdin>"):
        return "stdin.yaml"
    if file.startswith("<kustomize "):
        inner = file[len("<kustomize "):].rstrip(">").strip("/") or "root"
        return f"kustomize-{inner.replace(os.sep, '-')}.yaml"
    relative = os.path.relpath(file) if os.path.isabs(file) else os.path.normpath(file)
    if relative.startswith(os.pardir):
        return os.path.basename(file)
    return relative


def mutated_files(admissions: Sequence[Admission]) -> dict[str, str]:
    """Relative path under DIR -> the file's text. DELETE requests store nothing and write nothing."""
    by_file: dict[str, list[str]] = {}
    for admission in admissions:
        if admission.operation == "DELETE":
            continue
        source = admission.subject.source
        name = target_name((source.via or source.file) if source is not None else "<stdin>")
        by_file.setdefault(name, []).append(to_yaml(admission.subject.obj))
    return {name: HEADER + "---\n".join(docs) for name, docs in by_file.items()}

