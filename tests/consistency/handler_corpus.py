"""Runs of every corpus tree and testdata/ through the CLI, in-process, for the handler tests
(test_handler_boundaries.py): the exit code of each run and its `error` results.

- kyverno-policies and kyverno-policies-legacy: `kubectl-kyrec test TREE -o json`, the rows whose actual
  result is `error`.
- kyverno-conformance, kyverno-conformance-legacy and testdata/: every directory holding YAML is one
  scenario; its policy documents (Kyverno's groups and admissionregistration) and its other objects (minus
  chainsaw steps, Kyverno CLI test files and policy reports) go to `kubectl-kyrec eval -p ... -r ...
  -o json`, the results whose result is `error`.

`python -m tests.consistency.handler_corpus OUT.json` writes the measurement (the numbers in
test_handler_boundaries.py come from it).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
NOW = "2026-08-01T00:00:00Z"
POLICY_GROUPS = ("kyverno.io/", "policies.kyverno.io/", "admissionregistration.k8s.io/")
NOT_OBJECTS = ("chainsaw.kyverno.io/", "cli.kyverno.io/", "wgpolicyk8s.io/", "reports.kyverno.io/")
TEST_TREES = ("kyverno-policies", "kyverno-policies-legacy")
EVAL_TREES = ("kyverno-conformance", "kyverno-conformance-legacy")


def _documents(directory: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()):
        try:
            docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        except (yaml.YAMLError, UnicodeDecodeError):
            continue
        out.extend(d for d in docs if isinstance(d, dict) and isinstance(d.get("apiVersion"), str)
                   and isinstance(d.get("kind"), str))
    return out


def scenarios(root: Path) -> Iterator[tuple[Path, list[dict[str, Any]], list[dict[str, Any]]]]:
    """(directory, policies, objects) for each directory below root with both."""
    for directory in sorted({p.parent for p in root.rglob("*.y*ml")}):
        docs = _documents(directory)
        policies = [d for d in docs if d["apiVersion"].startswith(POLICY_GROUPS)]
        objects = [d for d in docs if not d["apiVersion"].startswith(POLICY_GROUPS + NOT_OBJECTS)]
        if policies and objects:
            yield directory, policies, objects


def _invoke(args: list[str]) -> tuple[int, Any, str]:
    result = CliRunner().invoke(cli, args, catch_exceptions=True)
    code = result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        code = 70      # escaped even the top-level handler: as bad as an internal error
    try:
        data = json.loads(result.stdout) if result.stdout.strip() else None
    except json.JSONDecodeError:
        data = None
    return code, data, result.stderr if hasattr(result, "stderr") else result.output


def eval_scenario(policies: list[dict[str, Any]], objects: list[dict[str, Any]]) -> tuple[int, list[str], str]:
    with tempfile.TemporaryDirectory() as tmp:
        pol, res = Path(tmp, "policies.yaml"), Path(tmp, "resources.yaml")
        pol.write_text(yaml.safe_dump_all(policies), encoding="utf-8")
        res.write_text(yaml.safe_dump_all(objects), encoding="utf-8")
        code, data, err = _invoke(["eval", "-p", str(pol), "-r", str(res), "--now", NOW, "-o", "json"])
    errors = sorted(f"{r['policy']}|{r.get('rule', '')}|{r['subject'].get('kind')}|"
                    f"{r['subject'].get('namespace', '')}|{r['subject'].get('name')}|{r.get('message', '')}"
                    for r in (data or {}).get("results", []) if r.get("result") == "error")
    return code, errors, err


def run_test_tree(tree: Path) -> tuple[int, list[str], str]:
    code, data, err = _invoke(["test", str(tree), "--now", NOW, "-o", "json"])
    errors = sorted(f"{Path(r['file']).relative_to(tree)}|{r['policy']}|{r.get('rule', '')}|{r['resource']}|"
                    f"{r.get('message', '')}" for r in (data or {}).get("rows", []) if r.get("actual") == "error")
    return code, errors, err


def measure(corpus: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in TEST_TREES:
        code, errors, err = run_test_tree(corpus / name)
        out[name] = {"codes": {str(code): 1}, "errors": errors, "internal": [name] if code == 70 else []}
    for name, root in [(n, corpus / n) for n in EVAL_TREES] + [("testdata", ROOT / "testdata")]:
        entry: dict[str, Any] = {"codes": {}, "errors": [], "internal": []}
        for directory, policies, objects in scenarios(root):
            code, errors, err = eval_scenario(policies, objects)
            entry["codes"][str(code)] = entry["codes"].get(str(code), 0) + 1
            rel = str(directory.relative_to(root))
            entry["errors"].extend(f"{rel}|{e}" for e in errors)
            if code == 70:
                entry["internal"].append(f"{rel}: {err.strip()[-300:]}")
        out[name] = entry
    return out


if __name__ == "__main__":
    from tests.shared_inputs import shared

    result = measure(shared("corpus"))
    Path(sys.argv[1]).write_text(json.dumps(result, indent=1, sort_keys=True), encoding="utf-8")
    for name, entry in result.items():
        print(name, "codes", entry["codes"], "errors", len(entry["errors"]), "internal", len(entry["internal"]))
