"""Findings made by hand for the CI-format tests, and the shipped schemas."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from kubectl_kyrec.model import Ref, Source
from kubectl_kyrec.reconcile.findings import Finding

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "testdata" / "schemas"


def finding(name: str = "web", *, outcome: str = "fail", policy: str = "require-labels", file: str | None = "m.yaml",
            line: int = 3, actions: tuple[str, ...] = ("Deny",), message: str = "label 'team' is required",
            namespace: str = "shop", command: str = "eval", message_class: str | None = None,
            baselined: bool = False) -> Finding:
    return Finding(command=command, suite=policy or command, policy=policy, rule=policy if policy else "",
                   subject=Ref("apps/v1", "Deployment", namespace, name, f"uid-{name}"), outcome=outcome,
                   message=message, message_class=message_class or outcome,
                   location=Source(file, line) if file else None,
                   policy_location=Source("policies/require-labels.yaml", 1) if policy else None,
                   policy_kind="KyvernoValidatingPolicy" if policy else "", category="Best Practices",
                   severity="medium", validation_actions=actions, baselined=baselined)


@cache
def sarif_schema() -> dict[str, Any]:
    return dict(json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text()))


def sarif_errors(doc: dict[str, Any]) -> list[str]:
    import jsonschema

    validator = jsonschema.Draft4Validator(sarif_schema(), format_checker=jsonschema.FormatChecker())
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]


@cache
def _junit_schema() -> Any:
    import xmlschema

    return xmlschema.XMLSchema(str(SCHEMAS / "junit-10.xsd"))


def junit_errors(text: str) -> list[str]:
    return [str(e.reason) for e in _junit_schema().iter_errors(text)]
