"""The registry failure matrix: every way a registry can fail, for each kind of policy that reads one with
`--registry` (an ImageValidatingPolicy's image fetch, a classic verifyImages rule, a classic imageRegistry
context entry), mapped to Kyverno's result in bounded time, never a crash (exit 70) and never a `fail`
whose cause is a registry that could not be reached.

Kyverno's CLI v1.17.2 on the same failures (403, 500, 404, TLS, down are recorded in
testdata/kyverno-truth/registry.json; 401 was run by hand): a registry that answers gives the classic rule
`failed to update digest` (error), the verification's fail and the validate phase's `missing digest`
(fail), and the ImageValidatingPolicy `failed to evaluate policy: ...` (error); one that is down gives
errors but for that validate-phase fail. It treats only a refused connection (Go's *net.OpError,
handleRegistryErrors) as the rule's error: a TLS failure or a timeout is a verification `fail` there, and
an error in kyrec, as a refused connection is (docs/compatibility.md)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_kyrec.load.registry import Registry
from tests.registry import test_classic_registry as classic
from tests.registry import test_ivpol_registry as ivpol
from tests.registry.failing import ANSWERED, UNREACHABLE, failing_host
from tests.registry.keys import make_key

BOUND = 15.0                    # seconds an evaluation may take, each request bounded by the Registry's timeout


@pytest.fixture
def failing() -> Iterator[Any]:
    """`host(mode)`: a registry host that fails as `mode` says; everything it started is stopped after."""
    stops: list[Any] = []

    def host(mode: str) -> str:
        return failing_host(mode, stops)

    yield host
    for stop in stops:
        stop()


def _timed(call: Any) -> Any:
    began = time.monotonic()
    answer = call()
    assert time.monotonic() - began < BOUND
    return answer


@pytest.mark.parametrize("mode", ANSWERED + UNREACHABLE)
def test_image_validating_policy(failing: Any, tmp_path: Path, mode: str) -> None:
    pol = ivpol.policy(make_key(tmp_path))
    pol["spec"]["matchImageReferences"] = [{"glob": "127.0.0.*"}]
    status, message = _timed(lambda: ivpol.evaluate(pol, f"{failing(mode)}/app:v1", Registry(timeout=1.5)))
    # kk policy.go: ictx.AddImages fails before any validation: the policy's error, whatever the cause
    assert status == "error" and message.startswith("failed to evaluate policy: "), message


@pytest.mark.parametrize("mode", ANSWERED + UNREACHABLE)
def test_classic_verify_images(failing: Any, tmp_path: Path, mode: str) -> None:
    pol = classic.policy(make_key(tmp_path))
    pol["spec"]["rules"][0]["verifyImages"][0]["imageReferences"] = ["127.0.0.*"]
    image = f"{failing(mode)}/app:v1"
    results = _timed(lambda: classic.evaluate(pol, image, Registry(timeout=1.5)))
    assert results[0][0] == "error" and results[0][1].startswith(
        f"failed to update digest: failed to fetch image reference: {image}, error: ")
    assert results[1][1].startswith(f"failed to verify image {image}: .attestors[0].entries[0].keys: ")
    if mode in ANSWERED:
        # the registry said no: the image is not verified (Kyverno's rows)
        assert [s for s, _ in results] == ["error", "fail", "fail"]
        assert results[2][1] == f"missing digest for {image}"
    else:
        # no answer says nothing about the image: errors, never a fail
        assert [s for s, _ in results] == ["error", "error", "error"]
        assert results[2][1].endswith("(not a fail: the registry could not be reached)")


@pytest.mark.parametrize("mode", ANSWERED + UNREACHABLE)
def test_classic_image_registry_context(failing: Any, mode: str) -> None:
    image = f"{failing(mode)}/app:v1"
    [(status, message)] = _timed(lambda: classic.evaluate(classic._context_policy(), image, Registry(timeout=1.5)))
    # kk loaders/imagedata.go: the loader's error is the rule's error
    assert status == "error" and f"failed to fetch image descriptor: {image}" in message, message


def test_the_cli_exits_with_findings_never_70(failing: Any, tmp_path: Path) -> None:
    key = make_key(tmp_path)
    policies = [ivpol.policy(key), classic.policy(key), classic._context_policy()]
    policies[0]["spec"]["matchImageReferences"] = [{"glob": "127.0.0.*"}]        # 127.0.0.2 (tls) too
    policies[1]["spec"]["rules"][0]["verifyImages"][0]["imageReferences"] = ["127.0.0.*"]
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all(policies))
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": mode, "namespace": "default"},
             "spec": {"containers": [{"name": "c", "image": f"{failing(mode)}/app:v1"}]}}
            for mode in ("403", "500", "down", "tls")]
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(pods))
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kubectl_kyrec", "eval", "-p", str(tmp_path / "policies.yaml"),
                           "-r", str(tmp_path / "pods.yaml"), "--registry", "-o", "json"],
                          capture_output=True, text=True, timeout=120)
    assert time.monotonic() - began < 60
    assert done.returncode == 1, done.stderr          # findings, not a crash
    rows = yaml.safe_load(done.stdout)["results"]
    assert {r["subject"]["name"] for r in rows} >= {"403", "500", "down"}
    unreachable_fails = [r for r in rows if r["subject"]["name"] in ("down", "tls") and r["result"] == "fail"]
    assert unreachable_fails == []
