"""Golden cases for `kyrec diff`: testdata/diff/<case>/case.yaml names the policies, the state, optional
manifests (-r), values and flags, and the expected changes (every examined object) and exit code.

Policies written `corpus:<path>` are read in place from ../shared/corpus/kyverno-conformance (Kyverno's
chainsaw scenarios); the states beside them were written for kyrec from each scenario's steps. When the
corpus is absent, the cases that need it are one skip (a failure under CI=true: tests/shared_inputs.py).

KYREC_UPDATE_GOLDEN=1 rewrites `changes` and `exit` from what kyrec prints (review the result!).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.reconcile.masking import leaks
from tests.shared_inputs import cases, shared

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "testdata" / "diff"
CORPUS = shared("corpus/kyverno-conformance")
UPDATE = os.environ.get("KYREC_UPDATE_GOLDEN") == "1"


def _cases() -> list[Path]:
    return sorted(p.parent for p in CASES.glob("*/case.yaml"))


def _needs_corpus(case: Path) -> bool:
    return "corpus:" in (case / "case.yaml").read_text()


def _params(keep: Callable[[Path], bool] = lambda case: True) -> list[Any]:
    """The cases of this directory; those built on the corpus collapse to one skip when it is absent."""
    local = [pytest.param(c, id=c.name) for c in _cases() if keep(c) and not _needs_corpus(c)]
    on_corpus = [c for c in _cases() if keep(c) and _needs_corpus(c)]
    if not on_corpus:
        return local
    return [*local, *cases(CORPUS, "diff golden cases built on the conformance corpus", lambda: on_corpus,
                           ids=lambda p: p.name)]


def _path(case: Path, name: str) -> Path:
    return CORPUS / name[len("corpus:"):] if name.startswith("corpus:") else case / name


def _args(case: Path, spec: dict[str, Any]) -> list[str]:
    args = ["diff", "--now", "2026-09-01T12:00:00Z"]
    for flag, key in (("-p", "policies"), ("-r", "resources"), ("--state", "state"), ("-e", "exceptions")):
        for name in spec.get(key) or []:
            path = _path(case, name)
            # the corpus is present (else the case was not collected): a missing file is a broken case
            assert path.exists(), f"{case.name}: {path} does not exist"
            args += [flag, str(path)]
    if spec.get("values"):
        args += ["--values", str(case / spec["values"])]
    return args + [str(a) for a in spec.get("args") or []]


def _display(ref: dict[str, Any] | None) -> str | None:
    if ref is None:
        return None
    return f"{ref['kind']} {ref['namespace'] + '/' if ref['namespace'] else ''}{ref['name']}"


def _row(change: dict[str, Any], causes: bool = False) -> dict[str, Any]:
    row = {"class": change["class"], "reason": change["reason"], "enforced": change["enforced"],
           "policy": change["policy"], "trigger": _display(change["trigger"]), "object": _display(change["object"])}
    if change["fields"]:
        row["fields"] = change["fields"]
    if causes and change["cause"] is not None:
        cause = change["cause"]
        row["cause"] = {"kind": cause["kind"], "message": cause["message"],
                        "evidence": [_display(ref) for ref in cause["evidence"]]}
    return row


def _with_causes(spec: dict[str, Any]) -> bool:
    """A case whose expected changes carry a `cause` (the cause-* cases, issue 28) has its causes compared;
    the others were written before causes and hold the classes only."""
    return any("cause" in c for c in spec.get("changes") or [])


def run(case: Path, extra: list[str]) -> Any:
    spec = yaml.safe_load((case / "case.yaml").read_text())
    return spec, CliRunner().invoke(cli, _args(case, spec) + extra, catch_exceptions=False)


@pytest.mark.parametrize("case", _params())
def test_diff_golden(case: Path) -> None:
    spec, result = run(case, ["-o", "json"])
    doc = json.loads(result.stdout)
    rows = [_row(c, _with_causes(spec)) for c in doc["changes"] if c["domain"] == "downstream"]
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


@pytest.mark.parametrize("case", _params(lambda c: "secret" in c.name))
@pytest.mark.parametrize("output", ["table", "wide", "json", "yaml", "diff"])
def test_no_format_leaks_a_secret(case: Path, output: str) -> None:
    spec, result = run(case, ["-o", output, "--color", "always"])
    secrets = _secrets(case, spec)
    assert secrets
    for secret in secrets:
        assert leaks(result.stdout + result.stderr, secret) == []
    assert "last-applied-configuration: '{" not in result.stdout
