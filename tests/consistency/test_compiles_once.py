"""Every command that evaluates policies compiles each CEL expression once (issue 36): the policy validation
every command runs first (evaluate/policy_validation.py) and the command's own evaluation share the run's
environments (run/providers.py run_environments), and an environment compiles a text once (cel/engine.py
Environment.compile), so the run evaluates the programs the validation compiled.

Counted where kyrec calls the CEL binding's compile, per (declared variables, text): the checking
environment (`variables` a plain dyn, cel/compiler.py) and the real one compile different texts or hold
different variables, so each is one key. An ImageValidatingPolicy's environment holds functions bound to
the policy (evaluate/image_validating/engine.py): its variables are the same as another ImageValidatingPolicy's,
so the test gives one (a second one compiling the same text in its own environment would count twice).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from kubectl_kyrec.cel import engine
from kubectl_kyrec.cli.main import cli
from tests.kubeapi.server import ApiServer

ROOT = Path(__file__).resolve().parents[2]
KINDS = ROOT / "testdata" / "consistency" / "kinds"
RESOURCES = ROOT / "testdata" / "consistency" / "resources.yaml"
NOW = "2026-08-01T00:00:00Z"

# every CEL kind; the classic policy of CLASSIC_CEL holds validate.cel rules, the mutating ones run through
# the admission chain
POLICIES = ("validatingpolicy.yaml", "namespacedvalidatingpolicy.yaml", "validatingadmissionpolicy.yaml",
            "mutatingpolicy.yaml", "mutatingadmissionpolicy.yaml", "generatingpolicy.yaml",
            "imagevalidatingpolicy.yaml", "deletingpolicy.yaml", "clusterpolicy-validate.yaml",
            "celpolicyexception.yaml")
CLASSIC_CEL = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: cpol-cel-image-tags
  annotations:
    pod-policies.kyverno.io/autogen-controllers: none
spec:
  background: true
  rules:
  - name: require-tag
    match:
      any:
      - resources: {kinds: [Pod]}
    celPreconditions:
    - name: not-system
      expression: "object.metadata.namespace != 'kube-system'"
    validate:
      cel:
        expressions:
        - expression: "object.spec.containers.all(c, c.image.contains(':'))"
          messageExpression: "'untagged: ' + object.metadata.name"
"""

Counts = Counter[tuple[tuple[str, ...], str]]


class _Counting:
    """The binding's environment, its compile calls counted."""

    def __init__(self, env: Any, variables: tuple[str, ...], counts: Counts) -> None:
        self._env = env
        self._variables = variables
        self._counts = counts

    def compile(self, text: str) -> Any:
        self._counts[(self._variables, text)] += 1
        return self._env.compile(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> Counts:
    counts: Counts = Counter()
    init = engine.Environment.__init__

    def counting_init(self: engine.Environment, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._env = _Counting(self._env, tuple(sorted(self.variables)), counts)

    monkeypatch.setattr(engine.Environment, "__init__", counting_init)
    return counts


@pytest.fixture
def policies(tmp_path: Path) -> list[str]:
    classic = tmp_path / "cpol-cel.yaml"
    classic.write_text(CLASSIC_CEL)
    return [*(str(KINDS / name) for name in POLICIES), str(classic)]


def _p(paths: list[str]) -> list[str]:
    return [a for path in paths for a in ("-p", path)]


def _invoke(args: list[str], env: dict[str, str] | None = None) -> Result:
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code in (0, 1), (result.output, result.stderr)
    return result


def _once(compiles: Counts) -> None:
    # the run compiled something of every kind (the check below would hold trivially for one that compiled nothing)
    texts = {text for _, text in compiles}
    for expected in ("images.containers.all(i, !i.endsWith(':latest'))",      # ImageValidatingPolicy
                     "object.spec.containers.all(c, c.image.contains(':'))"):   # classic validate.cel
        assert expected in texts, sorted(texts)
    assert len(compiles) >= 20
    twice = {text: n for (_, text), n in compiles.items() if n > 1}
    assert twice == {}


def test_eval(compiles: Counts, policies: list[str]) -> None:
    result = _invoke(["eval", *_p(policies), "-r", str(RESOURCES), "--now", NOW, "-o", "json"])
    doc = json.loads(result.stdout)
    assert not doc.get("errors"), doc.get("errors")
    assert {r["policy"] for r in doc["results"]} >= {"vpol-team-label", "gpol-team-config", "ivpol-registry",
                                                     "cpol-cel-image-tags"}, doc["results"]
    _once(compiles)


def test_explain(compiles: Counts, policies: list[str]) -> None:
    _invoke(["explain", *_p(policies), "-r", str(RESOURCES), "--now", NOW, "-o", "json"])
    _once(compiles)


def test_diff(compiles: Counts, policies: list[str]) -> None:
    _invoke(["diff", *_p(policies), "--state", str(RESOURCES), "--reports", "--now", NOW, "-o", "json"])
    _once(compiles)


def test_coverage(compiles: Counts, policies: list[str]) -> None:
    _invoke(["coverage", *_p(policies), "--state", str(RESOURCES), "--now", NOW, "-o", "json"])
    _once(compiles)


def test_test(compiles: Counts, policies: list[str], tmp_path: Path) -> None:
    suite = {"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Test", "metadata": {"name": "kinds"},
             "policies": [p for p in policies if "exception" not in p],
             "exceptions": [str(KINDS / "celpolicyexception.yaml")],
             "resources": [str(RESOURCES)],
             "results": [{"policy": "vpol-team-label", "resources": ["web"], "kind": "Pod", "result": "pass"},
                         {"policy": "cpol-cel-image-tags", "rule": "require-tag", "resources": ["web"],
                          "kind": "Pod", "result": "pass"}]}
    (tmp_path / "kyverno-test.yaml").write_text(yaml.safe_dump(suite))
    _invoke(["test", str(tmp_path), "--now", NOW, "-o", "json"])
    _once(compiles)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ApiServer]:
    with ApiServer() as api:
        api.seed(*yaml.safe_load_all(RESOURCES.read_text()))
        api.kubeconfig(tmp_path / "kubeconfig")
        yield api


def test_apply_dry_run(compiles: Counts, policies: list[str], cluster: ApiServer, tmp_path: Path) -> None:
    _invoke(["apply", *_p(policies), "--dry-run=client", "--yes", "--now", NOW],
            env={"KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    _once(compiles)


def test_convert_verify(compiles: Counts, tmp_path: Path) -> None:
    """convert --verify evaluates each side of a comparison (the original policy, its conversion) for its
    verdicts, and again for its downstreams or mutations: one read of the side's inputs (run/convert.py
    _ReadOnce), one compile. The conversion is also compiled once in convert's load check, which evaluates
    it on a probe Pod of its own (other inputs, other environments): at most twice, not once per run."""
    result = _invoke(["convert", "-p", str(KINDS / "clusterpolicy-validate.yaml"),
                      "-p", str(KINDS / "clusterpolicy-generate.yaml"), "-o", str(tmp_path / "out"), "--verify",
                      "-r", str(RESOURCES)])
    assert "cpol-generate-netpol': converted exactly" in result.stdout, result.output
    assert len(compiles) >= 2
    assert {text: n for (_, text), n in compiles.items() if n > 2} == {}
