"""A bug in an engine ends the run with exit 70 (`internal error`), never an `error` result; what Kyverno itself
reports (an EngineError, kubectl_kyrec/errors.py) stays a result. tests/shape/test_broad_handlers.py keeps the
handlers that catch everything at the boundaries.

- A TypeError injected into each engine: `eval` exits 70 and says `internal error`.
- Malformed resources (wrong types, nulls, huge numbers, deep nesting, strings where maps are) against every
  kind's policies of testdata/consistency/kinds and the corpus: no exit 70.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
KINDS = ROOT / "testdata" / "consistency" / "kinds"
RESOURCES = ROOT / "testdata" / "consistency" / "resources.yaml"
NOW = "2026-08-01T00:00:00Z"


def _bug(*args: Any, **kwargs: Any) -> Any:
    raise TypeError("injected bug")


# engine -> (policy file of testdata/consistency/kinds, module, attribute raising the injected TypeError): a
# function each engine calls while it evaluates that policy on RESOURCES
ENGINES = {
    "validating": ("validatingpolicy.yaml", "kubectl_kyrec.evaluate.validating.engine", "evaluate_variant"),
    "validating-admission": ("validatingadmissionpolicy.yaml", "kubectl_kyrec.evaluate.validating_admission.engine",
                             "_validate"),
    "mutating": ("mutatingpolicy.yaml", "kubectl_kyrec.evaluate.mutating.engine", "run_mutations"),
    "mutating-admission": ("mutatingadmissionpolicy.yaml", "kubectl_kyrec.evaluate.mutating_admission.engine",
                           "MutatingAdmissionEngine._cluster"),
    "generating": ("generatingpolicy.yaml", "kubectl_kyrec.evaluate.generating.engine", "trigger_info"),
    # eval leaves DeletingPolicies to diff (a notice): diff runs their engine
    "deleting": ("deletingpolicy.yaml", "kubectl_kyrec.evaluate.deleting.engine", "evaluate_object"),
    "image-validating": ("imagevalidatingpolicy.yaml", "kubectl_kyrec.evaluate.image_validating.engine", "_result"),
    # the classic engine's core: what its handlers wrapped (they caught Exception until issue 35)
    "classic-validate": ("clusterpolicy-validate.yaml", "kubectl_kyrec.classic.core_adapter", "Core.substitute"),
    "classic-mutate": ("clusterpolicy-mutate.yaml", "kubectl_kyrec.classic.core_adapter", "Core.substitute"),
    "classic-generate": ("clusterpolicy-generate.yaml", "kubectl_kyrec.classic.core_adapter", "Core.substitute"),
    # with a precondition added (_with_precondition): the rule's preconditions are what its engine evaluates
    "classic-verifyImages": ("clusterpolicy-verifyimages.yaml", "kubectl_kyrec.classic.conditions",
                             "evaluate_conditions"),
}


def _with_precondition(policy: Path, tmp_path: Path) -> Path:
    doc = yaml.safe_load(policy.read_text(encoding="utf-8"))
    for rule in doc["spec"]["rules"]:
        rule["preconditions"] = {"all": [{"key": "{{ request.object.kind }}", "operator": "Equals", "value": "Pod"}]}
    out = tmp_path / policy.name
    out.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return out


def _eval(policy: Path, resources: Path, command: str = "eval") -> Any:
    if command == "diff":
        return CliRunner().invoke(cli, ["diff", "-p", str(policy), "--state", str(resources), "--now", NOW])
    return CliRunner().invoke(cli, ["eval", "-p", str(policy), "-r", str(resources), "--now", NOW, "-o", "json"])


@pytest.mark.parametrize("engine", list(ENGINES))
def test_a_bug_in_an_engine_is_exit_70(engine: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import importlib

    monkeypatch.delenv("KYREC_DEBUG", raising=False)
    policy, module_name, attribute = ENGINES[engine]
    command = "diff" if engine == "deleting" else "eval"
    path = _with_precondition(KINDS / policy, tmp_path) if engine == "classic-verifyImages" else KINDS / policy
    assert _eval(path, RESOURCES, command).exit_code in (0, 1)    # the policy runs cleanly unpatched
    owner: Any = importlib.import_module(module_name)
    *parents, name = attribute.split(".")
    for part in parents:
        owner = getattr(owner, part)
    calls: list[int] = []

    def bug(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        raise TypeError("injected bug")

    monkeypatch.setattr(owner, name, bug)
    result = _eval(path, RESOURCES, command)
    assert calls, f"{attribute} was not called: the injection tests nothing"
    assert result.exit_code == 70, result.output
    assert "internal error: TypeError: injected bug" in result.output


# -- malformed resources ------------------------------------------------------------------------------------

_ODD_VALUES: tuple[Any, ...] = (None, "", "x", 0, -1, 2**64, 10**400 // 10**300, 1e308, -0.0, True, [], {},
                                [None], {"": None}, "{{ x }}", "*", "?", "100Gi", "1e3", "2026-13-45T99:00:00Z")


def _deep(depth: int) -> Any:
    value: Any = "leaf"
    for i in range(depth):
        value = {"a": value} if i % 2 else [value]
    return value


def _mutate(doc: Any, rng: random.Random) -> Any:
    """One malformed variant of `doc`: a field set to an odd value, deep nesting, or a string for a map."""
    doc = copy.deepcopy(doc)
    paths: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k in list(node):
                paths.append((node, k))
                walk(node[k])
        elif isinstance(node, list):
            for i in range(len(node)):
                paths.append((node, i))
                walk(node[i])

    walk(doc)
    # the identity (apiVersion, kind, metadata, its name and namespace) keeps the object one kyrec loads; a
    # variant the loader refuses anyway is dropped (_loadable): that is an input error, not an engine's
    meta = doc.get("metadata")
    paths = [(n, k) for n, k in paths if not (n is doc and k in ("apiVersion", "kind", "metadata"))
             and not (n is meta and k in ("name", "namespace"))]
    for _ in range(rng.randint(1, 3)):
        if not paths:
            break
        node, key = rng.choice(paths)
        roll = rng.random()
        if roll < 0.7:
            node[key] = rng.choice(_ODD_VALUES)
        elif roll < 0.85:
            node[key] = _deep(rng.randint(20, 200))
        else:
            node[key] = str(node[key])          # a string where a map or a list is
    return doc


def _loadable(docs: list[Any], tmp_path: Path) -> list[Any]:
    from kubectl_kyrec.errors import InputError
    from kubectl_kyrec.load.documents import load_documents

    out = []
    probe = tmp_path / "probe.yaml"
    for doc in docs:
        probe.write_text(yaml.safe_dump(doc), encoding="utf-8")
        errors: list[InputError] = []
        try:
            load_documents([str(probe)], errors=errors)
        except InputError:
            continue
        if not errors:
            out.append(doc)
    return out


def _kind_policies() -> list[Path]:
    return sorted(p for p in KINDS.glob("*.yaml") if "exception" not in p.name)


def _internal(result: Any) -> bool:
    return result.exit_code == 70 or (result.exception is not None and not isinstance(result.exception, SystemExit))


def test_malformed_resources_are_never_exit_70(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KYREC_DEBUG", raising=False)
    rng = random.Random(35)
    base = [d for d in yaml.safe_load_all(RESOURCES.read_text(encoding="utf-8")) if d]
    internal = []
    for round_ in range(4):
        variants = _loadable([_mutate(doc, rng) for doc in base for _ in range(6)], tmp_path)
        assert len(variants) >= 15
        resources = tmp_path / f"resources-{round_}.yaml"
        resources.write_text(yaml.safe_dump_all(variants), encoding="utf-8")
        for policy in _kind_policies():
            result = _eval(policy, resources, "diff" if "deleting" in policy.name else "eval")
            if _internal(result):
                internal.append(f"{policy.name} round {round_}: {result.output.strip()[-300:]}")
    assert internal == [], "\n".join(internal)


_PSS_POLICY = {
    "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "pss-baseline"},
    "spec": {"background": True, "rules": [{
        "name": "baseline", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "validate": {"podSecurity": {"level": "baseline", "version": "latest",
                                     "exclude": [{"controlName": "Host Ports", "images": ["nginx*"]}]}}}]},
}


@pytest.mark.parametrize("containers", [5, 1.5, "web", {"name": "web"}])
@pytest.mark.parametrize("policy", ["pattern", "podSecurity", "verifyImages"])
def test_containers_that_are_not_a_list_are_results_not_exit_70(containers: Any, policy: str,
                                                                tmp_path: Path) -> None:
    """Found by the fuzz: the JSON context's `images`, a podSecurity exclusion's images and verifyImages read
    `spec.containers` as a list (a TypeError, exit 70); now as the podSecurity checks read it, none."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "odd", "namespace": "team", "labels": {"app": "x"}},
           "spec": {"containers": containers}}
    if policy == "podSecurity":
        # an init container that fails Host Ports, so the exclusion looks for its images in every list
        pod["spec"]["initContainers"] = [{"name": "init", "image": "nginx:1",
                                          "ports": [{"containerPort": 80, "hostPort": 80}]}]
    resources = tmp_path / "pod.yaml"
    resources.write_text(yaml.safe_dump(pod), encoding="utf-8")
    name = "clusterpolicy-verifyimages.yaml" if policy == "verifyImages" else "clusterpolicy-validate.yaml"
    policy_file = KINDS / name
    if policy == "podSecurity":
        policy_file = tmp_path / "pss.yaml"
        policy_file.write_text(yaml.safe_dump(_PSS_POLICY), encoding="utf-8")
    result = _eval(policy_file, resources)
    assert result.exit_code in (0, 1), result.output


def _corpus_dirs() -> list[Path]:
    """The policy directories of both kyverno-policies trees: those with a Kyverno CLI test."""
    from tests.shared_inputs import require, shared

    out = []
    for tree in ("kyverno-policies", "kyverno-policies-legacy"):
        root = shared(f"corpus/{tree}")
        require(root, f"malformed resources against the {tree} corpus")
        for test in root.rglob("kyverno-test.yaml"):
            out.append(test.parent.parent if test.parent.name == ".kyverno-test" else test.parent)
    return sorted(set(out))


def test_malformed_resources_against_corpus_policies_are_never_exit_70(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.consistency.handler_corpus import POLICY_GROUPS, _documents

    monkeypatch.delenv("KYREC_DEBUG", raising=False)
    rng = random.Random(3535)
    dirs = _corpus_dirs()
    assert len(dirs) > 300
    internal, ran = [], 0
    for directory in rng.sample(dirs, 60):
        docs = [d for sub in sorted({p.parent for p in directory.rglob("*.y*ml")}) for d in _documents(sub)]
        policies = [d for d in docs if d["apiVersion"].startswith(POLICY_GROUPS)]
        objects = [d for d in docs if not d["apiVersion"].startswith(POLICY_GROUPS)
                   and "kyverno" not in d["apiVersion"] and "wgpolicyk8s" not in d["apiVersion"]]
        if not policies or not objects:
            continue
        variants = _loadable([_mutate(doc, rng) for doc in objects for _ in range(3)], tmp_path)
        if not variants:
            continue
        policy_file, resources = tmp_path / "policies.yaml", tmp_path / "resources.yaml"
        policy_file.write_text(yaml.safe_dump_all(policies), encoding="utf-8")
        resources.write_text(yaml.safe_dump_all(variants), encoding="utf-8")
        result = _eval(policy_file, resources)
        ran += result.exit_code in (0, 1)
        if _internal(result):
            internal.append(f"{directory.name}: {result.output.strip()[-300:]}")
    assert internal == [], "\n".join(internal)
    assert ran >= 30        # most runs reach the engines (not refused as input errors)


# -- the corpus and testdata/ ---------------------------------------------------------------------------------

# measured before the handlers were narrowed (issue 35) and unchanged by it: per tree, how many runs ended with
# each exit code, and how many `error` results (test rows whose actual result is `error`) they gave. A new
# scenario in testdata/ changes them: measure again with `python -m tests.consistency.handler_corpus OUT.json`.
# Changed since by a decision, not by a handler: `image.GetMetadata` without `--registry` is `undetermined`
# (needs-registry), no longer the CLI's `error` (issue 37), so kyverno-conformance's
# validating-policies/context/image-data and image-data-arch end 0 with 3 error results fewer (was 63/51, 41).
CORPUS_RUNS = {
    "kyverno-policies": ({"0": 1}, 0),
    "kyverno-policies-legacy": ({"0": 1}, 0),
    "kyverno-conformance": ({"0": 65, "1": 49, "3": 15}, 38),
    "kyverno-conformance-legacy": ({"0": 238, "1": 124, "3": 21}, 13),
    "testdata": ({"0": 42, "1": 37, "3": 6}, 46),
}


def test_corpus_and_testdata_runs_keep_their_exit_codes_and_error_results(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.consistency.handler_corpus import EVAL_TREES, TEST_TREES, measure
    from tests.shared_inputs import require, shared

    monkeypatch.delenv("KYREC_DEBUG", raising=False)
    for tree in TEST_TREES + EVAL_TREES:
        require(shared(f"corpus/{tree}"), f"the {tree} corpus runs")
    measured = measure(shared("corpus"))
    assert {name: entry["internal"] for name, entry in measured.items()} == {name: [] for name in CORPUS_RUNS}
    assert {name: (entry["codes"], len(entry["errors"])) for name, entry in measured.items()} == CORPUS_RUNS
