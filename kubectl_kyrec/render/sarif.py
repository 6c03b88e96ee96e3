"""SARIF 2.1.0 for code scanning: a rule per policy, a result per finding.

What code scanning needs and why each field is here:
- `partialFingerprints`: GitHub matches a result across commits by it; it is a hash of (command, policy,
  rule, object identity, kind of finding), never of a line number, so an edit above a manifest does not
  turn an old finding into a new one.
- `physicalLocation` relative to `--sarif-root` (the repository root) with `uriBaseId` `%SRCROOT%`:
  code scanning resolves paths from the repository root, not from where kyrec ran.
- objects read from a cluster have no file: a `logicalLocation` names them instead.
- `baselineState` says which findings a `--baseline` file already held (`unchanged`) and which are `new`.
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import urllib.parse
from collections.abc import Sequence
from typing import IO, Any

from kubectl_kyrec import __version__
from kubectl_kyrec.reconcile.findings import Finding
from kubectl_kyrec.reconcile.findings import summary as count_findings

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
LEVEL = {"fail": "error", "error": "error", "warn": "warning"}
FINGERPRINT_KEY = "kyrecFinding/v1"

# where each policy kind is documented: SARIF's helpUri must be an absolute URI
HELP_URI = {
    "KyvernoValidatingPolicy": "https://kyverno.io/docs/policy-types/validating-policy/",
    "KyvernoGeneratingPolicy": "https://kyverno.io/docs/policy-types/generating-policy/",
    "ValidatingAdmissionPolicy":
        "https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/",
    "kyverno": "https://kyverno.io/docs/policy-types/cluster-policy/",
}
DEFAULT_HELP_URI = "https://kyverno.io/docs/"
# GitHub ranks security findings by a CVSS-like number in `security-severity`
SECURITY_SEVERITY = {"critical": "9.5", "high": "8.0", "medium": "5.5", "low": "3.0", "info": "0.0"}

# rules of findings that belong to no policy (report and coverage gaps), by message class prefix
COMMAND_RULES = {
    "coverage": "A subject in scope must have exactly one current policy report.",
    "report": "A policy report must hold what Kyverno's background scan would write.",
    "downstream": "Generated objects must be what the generating policy would create.",
    "test": "A Kyverno CLI test row must hold.",
}


def artifact_uri(path: str, root: str | None) -> tuple[str, str | None]:
    """(uri, uriBaseId): relative to `root` when the file lies below it, else an absolute file URI."""
    absolute = os.path.abspath(path)
    if root is not None:
        base = os.path.abspath(root)
        if absolute == base or absolute.startswith(base.rstrip(os.sep) + os.sep):
            return urllib.parse.quote(pathlib.PurePath(os.path.relpath(absolute, base)).as_posix()), SRCROOT
        return pathlib.Path(absolute).as_uri(), None
    if os.path.isabs(path):
        return pathlib.Path(path).as_uri(), None
    return urllib.parse.quote(pathlib.PurePath(path).as_posix()), None


def rule_id(f: Finding) -> str:
    if f.policy:
        return f.policy
    return f"kyrec/{f.command}/{f.message_class}"


def _rule(f: Finding) -> dict[str, Any]:
    if f.policy:
        what = f"Kyverno {f.policy_kind or 'policy'} {f.policy}"
        text = what + (f", defined at {f.policy_location}." if f.policy_location else ".")
        if f.category:
            text += f" Category: {f.category}."
        if f.severity:
            text += f" Severity: {f.severity}."
        help_uri = HELP_URI.get(f.policy_kind, HELP_URI["kyverno"] if f.policy_kind.startswith("kyverno")
                                else DEFAULT_HELP_URI)
    else:
        prefix = f.message_class.split("-")[0] if f.command == "diff" else f.command
        what = f"kyrec {f.command}: {f.message_class}"
        text = COMMAND_RULES.get(prefix, what)
        help_uri = DEFAULT_HELP_URI
    properties: dict[str, Any] = {"tags": [t for t in ("kyverno", f.category) if t]}
    if f.category:
        properties["category"] = f.category
    if f.severity:
        properties["severity"] = f.severity
        if f.severity.lower() in SECURITY_SEVERITY:
            properties["security-severity"] = SECURITY_SEVERITY[f.severity.lower()]
    if f.policy_kind:
        properties["policyKind"] = f.policy_kind
    rule: dict[str, Any] = {
        "id": rule_id(f), "name": rule_id(f).replace("/", "-"),
        "shortDescription": {"text": what},
        "fullDescription": {"text": text},
        "help": {"text": text, "markdown": text},
        "helpUri": help_uri,
        "defaultConfiguration": {"level": "warning" if f.audit_only else "error"},
        "properties": properties,
    }
    return rule


def _logical(f: Finding) -> list[dict[str, Any]]:
    if f.subject is None:
        return []
    s = f.subject
    qualified = "/".join(p for p in (s.api_version, s.kind, s.namespace, s.name) if p)
    return [{"name": s.name, "fullyQualifiedName": qualified, "kind": "object",
             **({"decoratedName": s.display()} if s.kind else {})}]


def _result(f: Finding, index: int, root: str | None, baseline_used: bool) -> dict[str, Any]:
    text = f"{f.subject_display()}: {f.message}" if f.subject else f.message
    entry: dict[str, Any] = {
        "ruleId": rule_id(f), "ruleIndex": index,
        # an undetermined result is neither pass nor fail: SARIF's `review` kind, which requires level none
        **({"kind": "review", "level": "none"} if f.undetermined else {"level": LEVEL[f.outcome]}),
        "message": {"text": text or f.message_class},
        "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint},
    }
    location: dict[str, Any] = {}
    if f.location is not None:
        uri, base = artifact_uri(f.location.file, root)
        artifact: dict[str, Any] = {"uri": uri}
        if base:
            artifact["uriBaseId"] = base
        physical: dict[str, Any] = {"artifactLocation": artifact}
        if f.location.line:
            physical["region"] = {"startLine": f.location.line}
        location["physicalLocation"] = physical
    logical = _logical(f)
    if logical:
        location["logicalLocations"] = logical
    if location:
        entry["locations"] = [location]
    if baseline_used:
        entry["baselineState"] = "unchanged" if f.baselined else "new"
    properties: dict[str, Any] = {"result": f.outcome, "command": f.command}
    if f.subject is not None:
        properties["subject"] = f.subject.to_json()
    if f.rule:
        properties["rule"] = f.rule
    if f.validation_actions:
        properties["validationActions"] = list(f.validation_actions)
    entry["properties"] = properties
    return entry


def sarif_document(findings: Sequence[Finding], *, root: str | None = None,
                   baseline_used: bool = False) -> dict[str, Any]:
    shown = [f for f in findings if f.is_finding or f.undetermined]
    rules: dict[str, dict[str, Any]] = {}
    # every policy that ran is a rule, also those that found nothing: code scanning then knows a rule
    # that stops reporting was fixed, not dropped
    for f in findings:
        if f.policy and rule_id(f) not in rules:
            rules[rule_id(f)] = _rule(f)
    for f in shown:
        if rule_id(f) not in rules:
            rules[rule_id(f)] = _rule(f)
    order = {name: i for i, name in enumerate(rules)}
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "kyrec", "version": __version__, "semanticVersion": __version__,
                            "informationUri": "https://kyverno.io/", "rules": list(rules.values())}},
        "results": [_result(f, order[rule_id(f)], root, baseline_used) for f in shown],
        "columnKind": "unicodeCodePoints",
        "properties": {"summary": count_findings(findings)},
    }
    if root is not None:
        base_uri = pathlib.Path(os.path.abspath(root)).as_uri()
        run["originalUriBaseIds"] = {SRCROOT: {"uri": base_uri if base_uri.endswith("/") else base_uri + "/"}}
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def write(findings: Sequence[Finding], stream: IO[str], *, root: str | None = None,
          baseline_used: bool = False) -> None:
    json.dump(sarif_document(findings, root=root, baseline_used=baseline_used), stream, indent=2)
    stream.write("\n")


def render(findings: Sequence[Finding], *, root: str | None = None, baseline_used: bool = False) -> str:
    out = io.StringIO()
    write(findings, out, root=root, baseline_used=baseline_used)
    return out.getvalue()
