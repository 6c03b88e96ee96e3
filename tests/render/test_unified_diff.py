"""Unified diffs are rendered at the edge (issue 8): reconcile keeps the masked before/after objects of
every drift, `render/unified_diff.py` writes the one text all three callers (downstreams, reports,
`--base-policy` impact) print, and only when an output prints it."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.reconcile.diff_pair import DiffPair, Layout
from kubectl_kyrec.reconcile.downstreams import compare
from kubectl_kyrec.reconcile.impact import object_pair
from kubectl_kyrec.reconcile.masking import MASK_AFTER, MASK_BEFORE
from kubectl_kyrec.render import unified_diff as unified
from tests.render.test_diff_direction import ARGS

PACKAGE = Path(__file__).resolve().parents[2] / "kubectl_kyrec"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted((PACKAGE / "reconcile").glob("*.py")), ids=lambda p: p.name)
def test_reconcile_writes_no_diff_text(path: Path) -> None:
    assert not _imports(path) & {"difflib", "yaml"}


def _secret(data: dict[str, str], *, manager_fields: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": "creds", "namespace": "team-a",
        "labels": {"app.kubernetes.io/managed-by": "kyverno"},
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": '{"data":{"password":"aHVudGVyMg=="}}'},
    }
    if manager_fields:
        meta["managedFields"] = [{"manager": "kyverno", "operation": "Apply", "fieldsType": "FieldsV1",
                                  "fieldsV1": {"f:data": {"f:password": {}}}}]
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": data, "type": "Opaque"}


def test_drift_keeps_the_masked_objects_and_leaves_its_inputs_alone() -> None:
    live = _secret({"password": "aHVudGVyMg==", "user": "YWRtaW4="})
    expected = _secret({"password": "c2VjcmV0"}, manager_fields=False)
    snapshot = json.dumps([live, expected], sort_keys=True)
    reason, fields, pair = compare(expected, live, server_side_apply=False)
    assert reason is not None and fields
    assert isinstance(pair, DiffPair)
    assert (pair.name, pair.before_dir, pair.after_dir, pair.layout) == (
        "v1.Secret.team-a.creds", "live", "merged", Layout.OBJECT)
    assert pair.before["data"] == {"password": MASK_BEFORE, "user": "***"}
    assert pair.after["data"]["password"] == MASK_AFTER
    assert "managedFields" not in pair.before["metadata"]      # kubectl diff hides them too
    assert pair.before["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] == "***"
    # built without copying the live object whole, and without changing it
    assert json.dumps([live, expected], sort_keys=True) == snapshot


def test_one_renderer_for_every_caller() -> None:
    before = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "a"},
              "data": {"k": "v"}}
    after = {**before, "data": {"k": "w"}}
    text = unified.unified_diff(object_pair(before, after))
    assert text is not None
    assert text.startswith("--- base/v1.ConfigMap.a.cm\n+++ head/v1.ConfigMap.a.cm\n")
    assert "\n-  k: v\n+  k: w\n" in text
    assert unified.unified_diff(None) is None
    same = DiffPair("v1.ConfigMap.a.cm", before, dict(before))
    assert unified.unified_diff(same) is None           # nothing to show: the contract's null
    results = DiffPair("x", [{"policy": "p", "result": "pass"}], [{"policy": "p", "result": "fail"}],
                       Layout.RESULTS)
    assert unified.unified_diff(results) == (
        "--- live/x\n+++ merged/x\n@@ -1,2 +1,2 @@\n - policy: p\n-  result: pass\n+  result: fail\n")


def test_text_is_built_only_for_outputs_that_print_it(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = unified.unified_diff

    def counting(pair: DiffPair | None) -> str | None:
        if pair is not None:
            calls.append(pair.name)
        return real(pair)

    monkeypatch.setattr(unified, "unified_diff", counting)
    result = CliRunner().invoke(cli, [*ARGS, "-o", "sarif"], catch_exceptions=False)
    assert result.exit_code == 1 and json.loads(result.stdout)["version"] == "2.1.0"
    assert calls == []
    for output in ("json", "diff", "table"):
        result = CliRunner().invoke(cli, [*ARGS, "-o", output], catch_exceptions=False)
        assert result.exit_code == 1
        assert "v1.Secret.team-a.app-credentials" in calls, output
        calls.clear()


# ---- an object's YAML: libyaml's emitter where it cannot differ from the pure-Python one -----------------

_PIECES = ["yes", "off", "null", "~", "1", "1.0", "0x1f", "12:30", "2026-01-01", "a: b", "a #b", "-x", "x ",
           "x\n", "x\ny\n", " x\ny", "x \ny", "it's", '"q"', "", "-", "?", "!x", "&a", "*a", "|", ".inf", "a,b",
           "http://x.y", "plain words", "/path/to.yaml", "é", "\x85", "\u2028", "\t", "\x00", "x" * 30,
           "a b c d e f g h", "ünï", "trailing ", "\\"]


def _text(rng: Any) -> str:
    roll = rng.random()
    if roll < 0.4:
        return str(rng.choice(_PIECES))
    if roll < 0.7:
        return " ".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 12)))
    return "".join(rng.choice("abc -:'\"\n#\\") for _ in range(rng.randint(0, 120)))


def _value(rng: Any, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 4 or roll < 0.5:
        return rng.choice([_text(rng), rng.randint(-5, 10**12), 1e16, 1.5, -0.0, True, False, None, _text(rng),
                           b"bytes\x00"])
    if roll < 0.75:
        return {_text(rng): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]


def test_an_objects_text_is_the_pure_python_dumpers_whichever_emitter_wrote_it() -> None:
    import random

    import yaml

    if unified._CObjectDumper is None:
        pytest.skip("PyYAML was built without libyaml: every object goes through the pure-Python emitter")
    rng = random.Random(11)
    fast = 0
    for _ in range(6000):
        data = {"metadata": {"name": _text(rng)}, "spec": _value(rng)}
        expected = yaml.dump(data, Dumper=unified._ObjectDumper, sort_keys=True, default_flow_style=False,
                             allow_unicode=True)
        assert unified.document(data, Layout.OBJECT) == expected, data
        fast += unified._same_in_c(data) and not unified._FOLDABLE.search(expected)
    # both paths were taken (a generator that never reached the fast one would prove nothing)
    assert 1000 < fast < 5000
