"""Plain JSON/YAML documents that JSON-mode ValidatingPolicies evaluate (`jsonPayloads`, `eval --json`).

A payload is any top-level mapping: no apiVersion or kind needed. Kyverno's CLI refuses a payload that is
empty or not a mapping (kk: cmd/cli/kubectl-kyverno/commands/test/test.go); so does kyrec, with file:line.
A YAML file may hold several documents, each a payload named `<file>#<n>` after the first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.golang import json as go_json
from kubectl_kyrec.model import Obj, Source


@dataclass(frozen=True)
class Payload:
    name: str           # as the test (or the command line) names it
    obj: Obj
    source: Source


def load_payloads(path: str, name: str) -> list[Payload]:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8: {exc.reason}", Source(path, 0)) from None
    except OSError as exc:
        raise InputError(f"cannot read JSON payload: {exc.strerror or exc}", Source(path, 0)) from None
    values: list[Any]
    try:
        values = [go_json.loads(text)]
    except ValueError:
        try:
            values = [v for v in yaml.safe_load_all(text) if v is not None]
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else 1
            raise InputError(f"JSON payload {name} is neither JSON nor YAML: {exc}", Source(path, line)) from None
    if not values or values == [None]:
        raise InputError(f"JSON payload {name} is empty or nil", Source(path, 1))
    out = []
    for i, value in enumerate(values):
        if not isinstance(value, dict):
            raise InputError(f"JSON payload {name} must be a top-level object (map)", Source(path, 1))
        out.append(Payload(name if i == 0 else f"{name}#{i}", value, Source(path, 1)))
    return out
