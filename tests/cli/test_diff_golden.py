"""Golden cases for `kyrec diff`: testdata/diff/<case>/case.yaml names the policies, the state, optional
manifests (-r), values and flags, and the expected changes (every examined object) and exit code.

Policies written `corpus:<path>` are read in place from ../shared/corpus/kyverno-conformance (Kyverno's
chainsaw scenarios); the states beside them were written for kyrec from each scenario's steps. Cases
that need the corpus are skipped, with a reason, when it is absent.

KYREC_UPDATE_GOLDEN=1 rewrites `changes` and `exit` from what kyrec prints (review the result!).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.reconcile.masking import leaks

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "testdata" / "diff"
CORPUS = ROOT.parent / "shared" / "corpus" / "kyverno-conformance"
UPDATE = os.environ.get("KYREC_UPDATE_GOLDEN") == "1"


def _cases() -> list[Path]:
    return sorted(p.parent for p in CASES.glob("*/case.yaml"))


def _path(case: Path, name: str) -> Path:
    return CORPUS / name[len("corpus:"):] if name.startswith("corpus:") else case / name


def _args(case: Path, spec: dict[str, Any]) -> list[str]:
    args = ["diff", "--now", "2026-09-01T12:00:00Z"]
    for flag, key in (("-p", "policies"), ("-r", "resources"), ("--state", "state"), ("-e", "exceptions")):
        for name in spec.get(key) or []:
            path = _path(case, name)
            if name.startswith("corpus:") and not path.exists():
                pytest.skip(f"corpus not found: {path}")
            args += [flag, str(path)]
    if spec.get("values"):
        args += ["--values", str(case / spec["values"])]
    return args + [str(a) for a in spec.get("args") or []]


def _display(ref: dict[str, Any] | None) -> str | None:
    if ref is None:
        return None
    return f"{ref['kind']} {ref['namespace'] + '/' if ref['namespace'] else ''}{ref['name']}"


def _row(change: dict[str, Any]) -> dict[str, Any]:
    row = {"class": change["class"], "reason": change["reason"], "enforced": change["enforced"],
           "policy": change["policy"], "trigger": _display(change["trigger"]), "object": _display(change["object"])}
    if change["fields"]:
        row["fields"] = change["fields"]
    return row


def run(case: Path, extra: list[str]) -> Any:
    spec = yaml.safe_load((case / "case.yaml").read_text())
    return spec, CliRunner().invoke(cli, _args(case, spec) + extra, catch_exceptions=False)


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_diff_golden(case: Path) -> None:
    spec, result = run(case, ["-o", "json"])
    doc = json.loads(result.stdout)
    rows = [_row(c) for c in doc["changes"] if c["domain"] == "downstream"]
    if UPDATE:
        spec.update(changes=rows, exit=result.exit_code)
        (case / "case.yaml").write_text(yaml.safe_dump(spec, sort_keys=False, width=120))
        return
    assert not doc["errors"], doc["errors"]
    assert rows == spec["changes"]
    assert result.exit_code == spec["exit"], result.stderr


def _secrets(case: Path, spec: dict[str, Any]) -> list[dict[str, Any]]:
    names = [*(spec.get("state") or []), *(spec.get("resources") or []), *(spec.get("policies") or [])]
    paths = [str(_path(case, n)) for n in names if _path(case, n).exists()]
    objects = [d.obj for d in load_documents(paths)]
    secrets = [o for o in objects if o.get("kind") == "Secret"]
    # secrets written by a template or an expression: their literal values must not leak either
    for o in objects:
        if o.get("kind") in ("GeneratingPolicy", "NamespacedGeneratingPolicy"):
            text = yaml.safe_dump(o)
            for line in text.splitlines():
                if "password:" in line:
                    secrets.append({"apiVersion": "v1", "kind": "Secret",
                                    "stringData": {"p": line.split("password:", 1)[1].strip()}})
    return secrets


@pytest.mark.parametrize("case", [c for c in _cases() if "secret" in c.name], ids=lambda p: p.name)
@pytest.mark.parametrize("output", ["table", "wide", "json", "yaml", "diff"])
def test_no_format_leaks_a_secret(case: Path, output: str) -> None:
    spec, result = run(case, ["-o", output, "--color", "always"])
    secrets = _secrets(case, spec)
    assert secrets
    for secret in secrets:
        assert leaks(result.stdout + result.stderr, secret) == []
    assert "last-applied-configuration: '{" not in result.stdout
