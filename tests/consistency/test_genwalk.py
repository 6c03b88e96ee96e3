"""Less work before apply's first write (issue 36): generator.Apply's objects walked once, and the
DeletingPolicy engine imported only by a run that has a DeletingPolicy.

The single walk's output (keys, their order, numbers) is held byte for byte by the goldens and
tests/generating; here its equality with the two walks it replaces, on values those do not reach."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from kubectl_kyrec.cel.engine import in_key_order
from kubectl_kyrec.evaluate.generating.downstreams import in_key_order_normalized, normalize_numbers

ROOT = Path(__file__).resolve().parents[2]


def _shape(value: Any) -> Any:
    """`value` with every map as its list of (key, value) pairs: equal shapes have equal key orders too."""
    if isinstance(value, dict):
        return [("map", type(k).__name__, k, _shape(v)) for k, v in value.items()]
    if isinstance(value, list):
        return ["list", *(_shape(v) for v in value)]
    return (type(value).__name__, value)


def test_one_walk_is_the_two_it_replaces() -> None:
    value = {"z": 1.0, "a": [{"y": 2.5, "b": [3.0, -0.0, 1e300, 2.0 ** 63]}, bytearray(b"x"), None, True],
             "m": {2: "two", "b": 1.0, 1: "one"}, "metadata": {"name": "n", "labels": {"b": "1", "a": "2"}},
             "apiVersion": "v1", "kind": "ConfigMap", "s": "1.0", "i": 7, "f": float("inf")}
    walked = in_key_order_normalized(value)
    assert _shape(walked) == _shape(normalize_numbers(in_key_order(value)))
    assert list(walked) == ["a", "apiVersion", "f", "i", "kind", "m", "metadata", "s", "z"]
    assert walked["z"] == 1 and type(walked["z"]) is int and walked["a"][1] == b"x"
    assert type(walked["a"][0]["b"][3]) is float         # 2**63 is out of int64: left a float, as before
    # new containers throughout: writing the downstream changes none of the policy's (or CEL's) values
    walked["metadata"]["labels"]["c"] = "3"
    assert "c" not in value["metadata"]["labels"]


_IMPORTED = """
import json, sys
from click.testing import CliRunner
from kubectl_kyrec.cli.main import cli
result = CliRunner().invoke(cli, ["diff", *sys.argv[1:], "--now", "2026-09-01T00:00:00Z"])
print(json.dumps({"exit": result.exit_code, "output": result.output,
                  "engine": "kubectl_kyrec.evaluate.deleting.engine" in sys.modules,
                  "deletions": "kubectl_kyrec.reconcile.deletions" in sys.modules}))
"""

GENERATING = {
    "apiVersion": "policies.kyverno.io/v1", "kind": "GeneratingPolicy",
    "metadata": {"name": "team-settings", "creationTimestamp": "2026-01-01T00:00:00Z"},
    "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                     "operations": ["CREATE", "UPDATE"],
                                                     "resources": ["namespaces"]}]},
             "generate": [{"expression": 'generator.Apply(object.metadata.name, [{"apiVersion": dyn("v1"), '
                                         '"kind": dyn("ConfigMap"), "metadata": dyn({"name": "team"}), '
                                         '"data": dyn({"n": 1.0})}])'}]},
}


def _diff(*args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _IMPORTED, *args], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_the_deleting_engine_is_imported_only_by_a_run_with_a_deleting_policy(tmp_path: Path) -> None:
    (tmp_path / "gpol.yaml").write_text(yaml.safe_dump(GENERATING))
    namespaces = [{"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": f"team-{i}", "uid": f"uid-{i}", "creationTimestamp": "2026-01-01T00:00:00Z"}}
                  for i in range(2)]
    (tmp_path / "state.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": namespaces}))
    ran = _diff("-p", str(tmp_path / "gpol.yaml"), "--state", str(tmp_path / "state.json"))
    assert ran["exit"] == 0 and "Downstreams:" in ran["output"], ran["output"]
    assert ran["deletions"] and not ran["engine"]
    # with one, the engine is there and the policy's deletions are diffed
    ran = _diff("-p", str(tmp_path / "gpol.yaml"),
                "-p", str(ROOT / "testdata" / "consistency" / "kinds" / "deletingpolicy.yaml"),
                "--state", str(tmp_path / "state.json"))
    assert ran["engine"]
    assert ran["exit"] in (0, 1) and "Scheduled deletions:" in ran["output"] and "dpol-scratch" in ran["output"]


def test_dedupe_keeps_the_last_content_at_the_first_position() -> None:
    from kubectl_kyrec.evaluate.generating.engine import dedupe

    def cm(name: str, value: str, api_version: str = "v1") -> dict[str, Any]:
        return {"apiVersion": api_version, "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"},
                "data": {"v": value}}

    one = cm("a", "1")
    assert dedupe([one]) == (one,) and dedupe([one])[0] is one
    assert dedupe([]) == ()
    # versions of a kind are one object: the second write of `a` updates the first in place
    assert dedupe([cm("a", "1"), cm("b", "2"), cm("a", "3", "v2")]) == (cm("a", "3", "v2"), cm("b", "2"))
