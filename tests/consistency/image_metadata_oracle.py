"""Kyverno's CLI as the oracle of `image.GetMetadata` with `--registry` (issue 37): ValidatingPolicies that read
an image's data, on images of the test registry (tests/registry: signed, unsigned, named by digest, a missing
tag, a registry that is down, one that answers 401 or 403, one that fails TLS).

Kyverno's CLI answers `image.GetMetadata` from its fake context provider (a context file's images only)
whenever it runs without `--cluster` (kk: cmd/cli/kubectl-kyverno/processor/utils.go NewContextProvider), so
the oracle runs it with `--cluster` against the real API server of tests/realapi holding the same pods:
`kubectl-kyverno apply POLICY --cluster --registry -n NAMESPACE -p`. Its results are recorded in
testdata/kyverno-truth/image-metadata.json with its version and commit, per policy case and pod (each pod is
one image case), run-specific text replaced (REPO, REGISTRY, FAILING-*, PATH, sha256:DIGEST);
test_image_metadata_oracle.py replays kyrec (`kubectl kyrec eval -p POLICY -r PODS --registry`) against it.

    KYVERNO_BIN_DIR=/path/to/dir KYVERNO_VERSION=v1.17.2 KYVERNO_COMMIT=<sha> \\
        python tests/consistency/image_metadata_oracle.py
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.consistency.kyverno_policy_validation import (  # noqa: E402
    kyverno_build,
    kyverno_exe_or_exit,
    read_golden,
)
from tests.registry.failing import failing_host  # noqa: E402
from tests.registry.fixture import OciRegistry  # noqa: E402
from tests.registry.keys import make_key  # noqa: E402

GOLDEN = ROOT / "testdata" / "kyverno-truth" / "image-metadata.json"
TIMEOUT = 300
PODS = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["pods"]}]}
# image cases; "signed" is signed with a key (a signature is no part of the image's data), "digest" names the
# unsigned image by its digest, "missing" a tag never pushed, the rest registries that fail
CASES = ("signed", "unsigned", "digest", "missing", "down", "http-401", "http-403", "tls")

# every field, printed in the message of a validation that always fails: a difference in any one shows
_PIECES = ("'image=' + m.image", "' resolved=' + m.resolvedImage", "' registry=' + m.registry",
           "' repository=' + m.repository", "' identifier=' + m.identifier",
           "' tag=' + (has(m.tag) ? m.tag : '-')", "' digest=' + (has(m.digest) ? m.digest : '-')",
           "' index=' + string(has(m.imageIndex))", "' schema=' + string(m.manifest.schemaVersion)",
           "' mediaType=' + m.manifest.mediaType", "' config=' + m.manifest.config.digest",
           "' layers=' + string(size(m.manifest.layers))", "' layerType=' + m.manifest.layers[0].mediaType",
           "' rootfs=' + m.config.rootfs.type", "' diffIDs=' + string(size(m.config.rootfs.diff_ids))",
           "' history=' + m.config.history[0].created_by", "' os=' + m.config.os",
           "' user=' + string(has(m.config.config.User))")
# in groups: one chain of 18 `+` is deeper than kyrec's CEL parser takes (cel-expr-python stops at 32 levels)
_FIELDS = " + ".join("(" + " + ".join(_PIECES[i:i + 4]) + ")" for i in range(0, len(_PIECES), 4))


def _vpol(name: str, expression: str, message_expression: str = "") -> dict[str, Any]:
    validation: dict[str, Any] = {"expression": expression.replace("m.", "variables.m."), "message": "unexpected"}
    if message_expression:
        validation["messageExpression"] = message_expression.replace("m.", "variables.m.")
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": name},
            "spec": {"validationActions": ["Audit"], "matchConstraints": PODS,
                     "variables": [{"name": "m", "expression": "image.GetMetadata(object.spec.containers[0].image)"}],
                     "validations": [validation]}}


# policy case -> the policy
POLICIES: dict[str, dict[str, Any]] = {
    "vpol-metadata-fields": _vpol("metadata-fields", "m.image == ''", _FIELDS),
    "vpol-metadata-check": _vpol("metadata-check", "m.manifest.schemaVersion == 2 && "
                                                   "m.config.rootfs.type == 'layers'"),
    # CEL's `||` absorbs the function's error where its other side decides
    "vpol-metadata-absorbed": _vpol("metadata-absorbed", "m.manifest.schemaVersion == 2 || true"),
}


@dataclass(frozen=True)
class Prepared:
    directory: Path
    images: dict[str, str]            # image case -> reference
    replace: dict[str, str]           # run-specific text -> its stand-in in the golden's messages
    stops: list[Callable[[], Any]] = field(default_factory=list)

    def close(self) -> None:
        for stop in self.stops:
            stop()

    def pods(self, namespace: str = "default") -> list[dict[str, Any]]:
        return [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": case, "namespace": namespace},
                 "spec": {"containers": [{"name": "c", "image": self.images[case]}]}} for case in CASES]


def prepare(registry: OciRegistry, directory: Path) -> Prepared:
    """Images pushed, failing registries started, and per policy case a policy file; pods.yaml."""
    key = make_key(directory / "keys", "ecdsa")
    repo = registry.repo("metadata-oracle")
    images = {"signed": f"{repo}:signed", "unsigned": f"{repo}:unsigned", "missing": f"{repo}:missing"}
    registry.push(images["signed"], "--sign", key.private)
    images["digest"] = f"{repo}@{registry.push(images['unsigned'])}"
    stops: list[Callable[[], Any]] = []
    hosts = {mode: failing_host(mode, stops, head=True) for mode in ("down", "401", "403", "tls")}
    for mode, host in hosts.items():
        images[mode if mode in ("down", "tls") else f"http-{mode}"] = f"{host}/app:v1"
    for name, policy in POLICIES.items():
        (directory / f"{name}.policy.yaml").write_text(yaml.safe_dump(policy))
    prepared = Prepared(directory, images, {repo: "REPO", registry.host: "REGISTRY",
                                            **{host: f"FAILING-{mode.upper()}" for mode, host in hosts.items()},
                                            repo.split("/", 1)[1]: "PATH"},     # last: the bare repository
                        stops)
    (directory / "pods.yaml").write_text(yaml.safe_dump_all(prepared.pods()))
    return prepared


_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
Rows = dict[str, dict[str, list[dict[str, str]]]]        # policy case -> pod -> results, sorted


def normalize(prepared: Prepared, message: str) -> str:
    for text, stand_in in prepared.replace.items():
        message = message.replace(text, stand_in)
    return _DIGEST.sub("sha256:DIGEST", message)


def _collect(prepared: Prepared, rows: list[tuple[str, str, str, str]]) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {case: [] for case in CASES}
    for pod, rule, result, message in rows:
        out[pod].append({"rule": rule, "result": result, "message": normalize(prepared, message)})
    return {pod: sorted(results, key=lambda r: (r["result"], r["message"])) for pod, results in out.items()}


def kyverno_results(exe: Path, prepared: Prepared, kubeconfig: Path, namespace: str) -> Rows:
    """`kubectl-kyverno apply POLICY --cluster --registry -n NAMESPACE -p`: its report's results."""
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    out: Rows = {}
    for name in POLICIES:
        run = subprocess.run([str(exe), "apply", f"{name}.policy.yaml", "--cluster", "--registry", "-n", namespace,
                              "--remove-color", "-p", "--output-format", "json"],
                             capture_output=True, text=True, timeout=TIMEOUT, cwd=prepared.directory, env=env)
        start = run.stdout.find("{")
        if start < 0:
            raise AssertionError(f"{name}: Kyverno's CLI printed no report (exit {run.returncode}):\n"
                                 f"{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
        report = json.loads(run.stdout[start:])
        out[name] = _collect(prepared, [(r["resources"][0]["name"], r.get("rule", ""), r["result"],
                                         r.get("message", "")) for r in report.get("results") or []])
    return out


def kyrec_results(prepared: Prepared) -> Rows:
    """`kubectl kyrec eval -p POLICY -r pods.yaml --registry -o json`: its results."""
    out: Rows = {}
    for name in POLICIES:
        run = subprocess.run([sys.executable, "-m", "kubectl_kyrec", "eval", "-p", f"{name}.policy.yaml", "-r",
                              "pods.yaml", "--no-mutate", "--registry", "-o", "json"],
                             capture_output=True, text=True, timeout=TIMEOUT, cwd=prepared.directory)
        if run.returncode not in (0, 1):
            raise AssertionError(f"{name}: kyrec exit {run.returncode}: {run.stderr[-2000:]}")
        doc = json.loads(run.stdout)
        out[name] = _collect(prepared, [(r["subject"]["name"], r.get("rule", ""), r["result"], r.get("message", ""))
                                        for r in doc["results"]])
    return out


def load_golden() -> dict[str, Any]:
    return read_golden(GOLDEN)


def main() -> None:
    import tempfile

    from tests.realapi import build as realapi_build
    from tests.realapi.fixture import CRDS, RealServer
    from tests.registry import build

    exe = kyverno_exe_or_exit()
    registry = OciRegistry(build.build())
    registry.start()
    try:
        with tempfile.TemporaryDirectory(prefix="kyrec-metadata-oracle-") as tmp:
            server = RealServer(realapi_build.build("server"), Path(tmp))
            server.start(CRDS)
            prepared = prepare(registry, Path(tmp))
            try:
                namespace = server.namespace("metadata")
                server.seed(*prepared.pods(namespace))
                results = kyverno_results(exe, prepared, server.kubeconfig, namespace)
            finally:
                prepared.close()
                server.stop()
    finally:
        registry.stop()
    data = {
        "description": "Kyverno's CLI on the image.GetMetadata cases of tests/consistency/image_metadata_oracle.py: "
                       "`kubectl-kyverno apply POLICY --cluster --registry -n NS -p --output-format json` "
                       "against the test registry, the pods stored in a real API server (without --cluster "
                       "the CLI's fake context provider never reads a registry); per policy case and pod (one "
                       "image case each), the report's results sorted by (result, message), messages with the "
                       "repository, registries and digests replaced (REPO, REGISTRY, FAILING-*, PATH, sha256:DIGEST).",
        "kyverno": kyverno_build(exe),
        "cases": results,
    }
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"{GOLDEN.relative_to(ROOT)}: " + json.dumps(
        {name: {pod: [r["result"] for r in rows] for pod, rows in pods.items()} for name, pods in results.items()}))


if __name__ == "__main__":
    main()
