"""The policy documents of the corpus trees (../shared/corpus) and of testdata/ that are policies to apply,
for the schema tests (tests/consistency/test_schema_corpus.py, tests/realapi/test_schema_oracle.py).

In a chainsaw scenario (a folder with chainsaw-test.yaml) a file that a step only asserts (`assert`/`error`
operations), or that is named as an assertion (`*assert*`, `*ready*`, `check-autogen.yaml`) and that no step
applies (`apply`/`create`, `kubectl apply|create -f FILE` in a script, a step template's binding), holds
partial objects (`status.ready: true` and no spec) that chainsaw compares with the cluster's: no policies."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import yaml

from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import is_policy_document
from kubectl_kyrec.model import Document

_SCRIPT_FILE = re.compile(r"kubectl\s+(?:apply|create)\b[^\n]*?-f\s+(\S+)")


_ASSERTION_NAME = re.compile(r"assert|ready|check-autogen|-error-")


@cache
def _files(folder: Path) -> tuple[frozenset[str], frozenset[str]]:
    """(applied, asserted) file names of one scenario."""
    try:
        spec = yaml.safe_load((folder / "chainsaw-test.yaml").read_text())
    except (OSError, yaml.YAMLError):
        return frozenset(), frozenset()
    applied: set[str] = set()
    asserted: set[str] = set()

    def visit(value: object) -> None:
        if isinstance(value, dict):
            for verbs, names in ((("apply", "create"), applied), (("assert", "error"), asserted)):
                for verb in verbs:
                    op = value.get(verb)
                    if isinstance(op, dict) and isinstance(op.get("file"), str):
                        names.add(op["file"])
            script = value.get("script")
            if isinstance(script, dict) and isinstance(script.get("content"), str):
                applied.update(_SCRIPT_FILE.findall(script["content"]))
            if isinstance(value.get("value"), str) and value["value"].endswith((".yaml", ".yml", ".json")):
                applied.add(value["value"])          # a step template's binding
            for item in value.values():
                visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)

    visit(spec)
    return (frozenset(os.path.normpath(n) for n in applied), frozenset(os.path.normpath(n) for n in asserted))


def applied_file(path: Path) -> bool:
    """Whether the file holds objects to apply: outside chainsaw scenarios every file does."""
    for folder in (path.parent, path.parent.parent):
        if (folder / "chainsaw-test.yaml").exists():
            applied, asserted = _files(folder)
            name = os.path.normpath(str(path.relative_to(folder)))
            if name in applied:
                return True
            return name not in asserted and not _ASSERTION_NAME.search(path.name)
    return True


def policy_documents(root: Path) -> Iterator[Document]:
    """Every policy document (load/policy/policies.py is_policy_document) of the files below `root` to apply."""
    for dirpath, dirnames, files in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(files):
            path = Path(dirpath) / name
            if not name.endswith((".yaml", ".yml", ".json")) or not applied_file(path):
                continue
            errors: list = []
            for doc in load_documents([str(path)], errors=errors):
                if is_policy_document(doc):
                    yield doc
