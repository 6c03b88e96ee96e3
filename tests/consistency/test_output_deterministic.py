"""`eval` writes the same bytes on every run, in every output format (issue 36): nothing in an output may
depend on the process (Python's hash seed, cel-cpp's map order, which is seeded per process too).

The generate case builds maps in CEL (a downstream's labels and data, a variable holding the object): cel-cpp
iterates them in an order of its own per process, which reached the downstreams of `-o json` before the
engine's results were put in key order (cel/engine.py in_key_order). Two processes with different
PYTHONHASHSEED values run the same command; every format's file must be equal byte for byte.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KINDS = ROOT / "testdata" / "consistency" / "kinds"
RESOURCES = ROOT / "testdata" / "consistency" / "resources.yaml"
FORMATS = ("table", "wide", "json", "yaml", "reports", "junit", "sarif", "github")
GENERATING = """\
apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: gpol-many-keys
spec:
  evaluation:
    synchronize:
      enabled: true
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [namespaces]}
  variables:
  - name: cm
    expression: >-
      {"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"),
      "metadata": dyn({"name": "many", "namespace": object.metadata.name,
                       "labels": {"team": "a", "tier": "b", "zone": "c", "owner": "d", "cost": "e"}}),
      "data": dyn({"alpha": "1", "beta": "2", "gamma": "3", "delta": "4", "epsilon": "5", "zeta": "6",
                   "eta": "7", "theta": "8"})}
  generate:
  - expression: generator.Apply(object.metadata.name, [variables.cm])
"""


def _outputs(tmp_path: Path, seed: str) -> dict[str, bytes]:
    policy = tmp_path / "gpol.yaml"
    policy.write_text(GENERATING)
    out = tmp_path / seed
    out.mkdir()
    args = [sys.executable, "-m", "kubectl_kyrec", "eval", "-p", str(policy),
            "-p", str(KINDS / "validatingpolicy.yaml"), "-p", str(KINDS / "generatingpolicy.yaml"),
            "-r", str(RESOURCES), "--now", "2026-08-01T00:00:00Z",
            *(a for f in FORMATS for a in ("-o", f"{f}={out / f}"))]
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr        # the ValidatingPolicy fails a Pod: every format has content
    return {f: (out / f).read_bytes() for f in FORMATS}


def test_every_format_is_the_same_in_two_processes(tmp_path: Path) -> None:
    first = _outputs(tmp_path, "1")
    second = _outputs(tmp_path, "2")
    # the generated object is in the documents (its map built in CEL), in a fixed key order
    assert b'"alpha": "1",\n          "beta": "2",\n          "delta": "4"' in first["json"], first["json"].decode()
    assert {f for f in FORMATS if first[f] != second[f]} == set()
