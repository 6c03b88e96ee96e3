"""A bug in a CEL library function implemented in Python ends the run with exit 70 (`internal error`); what
Kyverno itself reports on user data (an EngineError, kubectl_kyrec/errors.py) stays an `error` result.

cel-expr-python turns any Python exception a function raises into a CEL error value, and `||`, `&&` and
`?:` may absorb that error: before cel/engine.py's `_wrap` kept such exceptions aside, a TypeError in a
library function became an `error` result, or vanished into a `pass`. The functions are patched where
their libraries look them up at call time (module globals), as test_handler_boundaries.py does for the
engines.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
RESOURCES = ROOT / "testdata" / "consistency" / "resources.yaml"
NOW = "2026-08-01T00:00:00Z"

POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: library-call
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}
  validations:
  - expression: "EXPRESSION"
"""

# (module whose global the library function calls, that global, an expression calling it on the Pods):
# a Kubernetes library (built once, at import) and a Kyverno one (built for each run)
CALLS = {
    "kubernetes-semver": ("kubectl_kyrec.cel.k8s_semver", "parse", "semver('1.2.3').major() == 1"),
    "kyverno-image": ("kubectl_kyrec.cel.kyverno_image", "parse_reference",
                      "object.spec.containers.all(c, parseImageReference(c.image).registry() != '')"),
}
# the same calls where CEL's `||` absorbs an error on its left: the bug used to vanish into a pass
ABSORBED = {name: (module, attribute, f"({expression}) || true")
            for name, (module, attribute, expression) in CALLS.items()}


def _policy(tmp_path: Path, expression: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY.replace("EXPRESSION", expression), encoding="utf-8")
    return path


def _eval(policy: Path, *extra: str) -> Any:
    return CliRunner().invoke(cli, ["eval", "-p", str(policy), "-r", str(RESOURCES), "--now", NOW, "-o", "json",
                                    *extra])


def _patch(monkeypatch: pytest.MonkeyPatch, module_name: str, attribute: str, error: BaseException) -> list[int]:
    import importlib

    calls: list[int] = []

    def bug(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        raise error

    monkeypatch.setattr(importlib.import_module(module_name), attribute, bug)
    return calls


@pytest.mark.parametrize("case", [*(("plain", n) for n in CALLS), *(("absorbed", n) for n in ABSORBED)],
                         ids=lambda case: "-".join(case))
@pytest.mark.parametrize("error", [TypeError("injected bug"), AttributeError("injected bug"),
                                   KeyError("injected bug")], ids=lambda e: type(e).__name__)
def test_a_bug_in_a_cel_library_function_is_exit_70(case: tuple[str, str], error: Exception,
                                                    monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KYREC_DEBUG", raising=False)
    kind, name = case
    module_name, attribute, expression = (CALLS if kind == "plain" else ABSORBED)[name]
    policy = _policy(tmp_path, expression)
    clean = _eval(policy)
    assert clean.exit_code == 0, clean.output      # the policy passes unpatched
    calls = _patch(monkeypatch, module_name, attribute, error)
    result = _eval(policy)
    assert calls, f"{attribute} was not called: the injection tests nothing"
    assert result.exit_code == 70, result.output
    assert f"internal error: {type(error).__name__}: {error}" in result.output
    assert "Traceback" not in result.output


def test_an_interrupt_in_a_cel_library_function_ends_the_run(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    # a Ctrl-C while a library function runs: the engine used to make it the error value `ABORTED:`
    module_name, attribute, expression = ABSORBED["kyverno-image"]
    calls = _patch(monkeypatch, module_name, attribute, KeyboardInterrupt())
    result = _eval(_policy(tmp_path, expression))
    assert calls
    assert result.exit_code == 130, result.output
    assert "interrupted" in result.output


def test_an_engine_error_of_a_cel_library_function_stays_an_error_result(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path) -> None:
    # an EngineError the library does not catch itself (a Go port's typed error on user data, not a
    # CelFunctionError): the CEL error with its message, as before
    import json

    from kubectl_kyrec.errors import EngineError

    class GoPortError(ValueError, EngineError):
        pass

    module_name, attribute, expression = CALLS["kyverno-image"]
    calls = _patch(monkeypatch, module_name, attribute, GoPortError("could not parse reference: x"))
    result = _eval(_policy(tmp_path, expression))
    assert calls
    assert result.exit_code == 1, result.output
    results = json.loads(result.stdout)["results"]
    assert results and {r["result"] for r in results} == {"error"}
    assert {r["message"] for r in results} == {"error: could not parse reference: x"}


def test_a_bug_in_a_cel_library_function_in_a_worker_is_exit_70(tmp_path: Path) -> None:
    """The console command, a new process, with workers evaluating (`--jobs 2`): the worker's bug reaches
    the parent as an internal error too."""
    policy = _policy(tmp_path, ABSORBED["kubernetes-semver"][2])
    # workers from the first pair on (the run is far below PARALLEL_PAIRS otherwise)
    prelude = ("import kubectl_kyrec.cel.k8s_semver as m\n"
               "import kubectl_kyrec.evaluate.pipeline as pipeline\n"
               "def bug(*args):\n    raise TypeError('injected bug')\n"
               "m.parse = bug\npipeline.PARALLEL_PAIRS = 1\n")
    code = f"import sys\n{prelude}\nsys.argv = ['kubectl-kyrec', *sys.argv[1:]]\n" \
           "from kubectl_kyrec.cli.console import main\nmain()\n"
    args = ["eval", "-p", str(policy), "-r", str(RESOURCES), "--now", NOW, "--jobs", "2"]
    env = {k: v for k, v in __import__("os").environ.items() if k != "KYREC_DEBUG"}
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 70, done.stderr
    assert "internal error" in done.stderr and "TypeError: injected bug" in done.stderr
    assert "worker failed" in done.stderr       # raised in a worker, reported by this process
