"""Consistency matrix, leg (c) of issue 33: `explain` vs `eval` for every pair of policy kinds loaded together.

testdata/consistency/kinds/ holds one small file per kind kyrec evaluates (the CEL kinds, ValidatingAdmission-
and MutatingAdmissionPolicy with their bindings, ClusterPolicy and Policy with each rule type, and each
PolicyException kind with the policy it exempts a Pod from); testdata/consistency/resources.yaml the
subjects: a Namespace, two Pods and a ConfigMap (each matched by some kinds; a Pod and the ConfigMap share a
name) and a Service no kind matches. For every unordered pair of those files, on the same inputs:

- neither `eval` nor `explain` exits 70;
- `explain -o json`'s results (policy, subject, rule, result, message) are `eval -o json`'s, and so are its
  errors; each tree's `result` nodes say what its results are;
- `explain KIND/NAME` for each subject gives exactly eval's results for that subject, the Service none;
- the same with the subjects as a state (--state, objects read from a cluster: not admitted).

DeletingPolicies are the one difference by design: `eval` does not evaluate them (it says so in a notice) and
`explain` shows the verdict of their next scheduled run, as `test` gives it; their results are checked apart.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.errors import ExitCode
from kubectl_kyrec.load.policy.vocabulary import DELETING_KINDS
from tests.realapi.fixture import RealServer

DATA = Path(__file__).resolve().parents[2] / "testdata" / "consistency"
KINDS = sorted((DATA / "kinds").glob("*.yaml"))
RESOURCES = DATA / "resources.yaml"
PAIRS = list(itertools.combinations(KINDS, 2))
NOW = ["--now", "2026-08-01T00:00:00Z"]
# the subjects of resources.yaml as `explain` picks them (-n for the namespaced ones)
SUBJECTS = (("Namespace", "", "team"), ("Pod", "team", "web"), ("Pod", "team", "legacy"),
            ("ConfigMap", "team", "web"), ("Service", "team", "lonely"))
UNMATCHED = ("Service", "team", "lonely")
# what explain draws that is not a policy's result of its own: the admission of a manifest, whose results are
# the mutating policies' (their own trees give them too)
ADMISSION = "Admission"

Row = tuple[str, str, str, str, str, str, str]


def kyrec(*args: str, env: Mapping[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(cli, list(args), env=env)
    assert result.exit_code != ExitCode.INTERNAL, f"{' '.join(args)}\n{result.stderr}"
    assert result.exit_code in (ExitCode.CLEAN, ExitCode.FINDINGS), f"{' '.join(args)}\n{result.output}"
    return result.exit_code, json.loads(result.stdout)


def policy_args(files: Sequence[Path]) -> list[str]:
    return [arg for f in files for arg in ("-p", str(f))]


def _subject(ref: Mapping[str, Any]) -> tuple[str, str, str]:
    return ref["kind"], ref.get("namespace") or "", ref["name"]


def eval_rows(document: Mapping[str, Any]) -> list[Row]:
    return sorted((r["policy"], *_subject(r["subject"]), r["rule"], r["result"], r["message"])
                  for r in document["results"])


def explain_rows(document: Mapping[str, Any], *, deleting: bool = False) -> list[Row]:
    """The results of explain's trees (the admission trees left out: they repeat the mutating policies'
    results); `deleting`: the DeletingPolicies' trees only, else all others."""
    return sorted((e["policy"], *_subject(e["subject"]), r["rule"], r["result"], r["message"])
                  for e in document["explanations"] if e["policyKind"] != ADMISSION
                  and (e["policyKind"] in DELETING_KINDS) == deleting for r in e["results"])


def _leaves(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    if node["name"] == "result":
        return [node]
    return [leaf for child in node.get("children", ()) for leaf in _leaves(child)]


def assert_trees_say_their_results(document: Mapping[str, Any]) -> None:
    for e in document["explanations"]:
        said = [leaf.get("outcome") for leaf in _leaves(e["tree"]) if leaf.get("outcome") != "none"]
        assert said == [r["result"] for r in e["results"]], (e["policy"], e["subject"])


def test_the_matrix_covers_every_kind() -> None:
    """22 fixtures (12 CEL kinds with the admission policies, 8 classic kind x rule type, 2 exception kinds):
    231 pairs."""
    assert len(KINDS) == 22
    assert len(PAIRS) == 231


@pytest.mark.parametrize("kind", KINDS, ids=lambda p: p.stem)
def test_each_kind_gives_results(kind: Path) -> None:
    """No fixture is idle: each gives a result to some subject of resources.yaml, none to the Service (a
    DeletingPolicy, in explain only, deletes the ConfigMap and not the Service: `fail`, as `kyverno test` says)."""
    inputs = ["-p", str(kind), "-r", str(RESOURCES), *NOW, "-o", "json"]
    _, explained = kyrec("explain", *inputs)
    if "deleting" in kind.stem:
        rows = {r[1:4]: r[5] for r in explain_rows(explained, deleting=True)}
        assert rows[("ConfigMap", "team", "web")] == "pass" and rows[UNMATCHED] == "fail"
        return
    rows = explain_rows(explained)
    assert rows
    assert not [r for r in rows if r[1:4] == UNMATCHED]


@pytest.mark.parametrize("pair", PAIRS, ids=lambda pair: "+".join(p.stem for p in pair))
def test_explain_gives_evals_results(pair: tuple[Path, Path]) -> None:
    assert_explain_gives_evals_results(pair)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda pair: "+".join(p.stem for p in pair))
def test_explain_gives_evals_results_on_a_state(pair: tuple[Path, Path]) -> None:
    """The same subjects as objects read from a cluster (--state): not admitted, so no mutating policy
    answers, in eval as in explain."""
    inputs = [*policy_args(pair), "--state", str(RESOURCES), *NOW, "-o", "json"]
    _, evaluated = kyrec("eval", *inputs)
    code, explained = kyrec("explain", *inputs)
    assert code == ExitCode.CLEAN
    assert explained["errors"] == evaluated["errors"]
    assert explain_rows(explained) == eval_rows(evaluated)
    assert_trees_say_their_results(explained)


def test_every_kind_at_once() -> None:
    """The 22 loaded together: the admission chain runs every mutating kind on the same manifests, the
    generate run both generating kinds, before the validating kinds see the result."""
    assert_explain_gives_evals_results(KINDS)


@pytest.mark.parametrize("where", ["-r", "--state"])
def test_every_kind_at_once_in_a_namespace(where: str) -> None:
    """-n team: the generate rules still see the Namespace team itself as a trigger (run/generate.py's
    filter), in eval and so in explain, whose classic trees missed it."""
    inputs = [*policy_args(KINDS), where, str(RESOURCES), "-n", "team", *NOW, "-o", "json"]
    _, evaluated = kyrec("eval", *inputs)
    _, explained = kyrec("explain", *inputs)
    want = eval_rows(evaluated)
    assert explain_rows(explained) == want
    assert {r[0] for r in want if r[1:4] == ("Namespace", "", "team")} == {"cpol-generate-netpol", "gpol-team-config"}
    assert_trees_say_their_results(explained)


def assert_explain_gives_evals_results(files: Sequence[Path]) -> None:
    inputs = [*policy_args(files), "-r", str(RESOURCES), *NOW, "-o", "json"]
    _, evaluated = kyrec("eval", *inputs)
    code, explained = kyrec("explain", *inputs)
    assert code == ExitCode.CLEAN       # explain finds nothing: it explains
    assert explained["errors"] == evaluated["errors"]
    want = eval_rows(evaluated)
    assert explain_rows(explained) == want
    assert not [r for r in want if r[1:4] == UNMATCHED]
    assert_trees_say_their_results(explained)
    # what the admission trees say the mutating policies did, their own trees say too
    admitted = [(*_subject(e["subject"]), r["rule"], r["result"], r["message"])
                for e in explained["explanations"] if e["policyKind"] == ADMISSION for r in e["results"]]
    assert {row[1:] for row in want} >= set(admitted)
    # the DeletingPolicies: no result from eval (a notice says why), their next run's verdict from explain
    deleting = explain_rows(explained, deleting=True)
    if any("deleting" in p.stem for p in files):
        assert deleting
        assert any("DeletingPolicy(ies) not evaluated by eval" in n for n in evaluated["notices"])
    else:
        assert not deleting
    # each subject picked alone: eval's results for it, nothing of another subject of the same name
    for kind, namespace, name in SUBJECTS:
        where = ["-n", namespace] if namespace else []
        _, picked = kyrec("explain", *inputs, f"{kind}/{name}", *where)
        subject = (kind, namespace, name)
        assert {_subject(e["subject"]) for e in picked["explanations"]} <= {subject}
        assert explain_rows(picked) == [r for r in want if r[1:4] == subject], subject
        assert_trees_say_their_results(picked)


def test_a_generating_policy_beside_a_classic_generate_rule() -> None:
    """Issue 33 item 3 as reported: a GeneratingPolicy and a ClusterPolicy generate rule loaded together, a
    Namespace the GeneratingPolicy matches and one its matchCondition leaves out, each picked alone: explain
    exited 70 (the classic rule compiled as a GeneratingPolicy)."""
    gpol = DATA.parent / "explain" / "generatingpolicy"
    inputs = ["-p", str(gpol / "policy.yaml"), "-p", str(DATA / "kinds" / "clusterpolicy-generate.yaml"),
              "-r", str(gpol / "resources.yaml"), *NOW, "-o", "json"]
    _, evaluated = kyrec("eval", *inputs)
    want = eval_rows(evaluated)
    for namespace, generated in (("shop", True), ("kube-extra", False)):
        _, picked = kyrec("explain", *inputs, f"Namespace/{namespace}")
        assert {_subject(e["subject"]) for e in picked["explanations"]} == {("Namespace", "", namespace)}
        rows = explain_rows(picked)
        assert rows == [r for r in want if r[1:4] == ("Namespace", "", namespace)]
        assert [r[0] for r in rows] == (["cpol-generate-netpol", "team-config"] if generated
                                        else ["cpol-generate-netpol"])
        assert_trees_say_their_results(picked)


@pytest.mark.parametrize("where", ["-r", "--state"])
def test_an_exception_for_every_kind(where: str) -> None:
    """Every kind loaded with PolicyExceptions (CEL and kyverno.io/v2) exempting its subject `web` (and the
    Namespace from the classic generate rule): explain's skips are eval's, for every kind."""
    files = [f for f in KINDS if "exception" not in f.stem]
    inputs = [*policy_args(files), "-e", str(DATA / "exceptions-all.yaml"), where, str(RESOURCES), *NOW, "-o", "json"]
    _, evaluated = kyrec("eval", *inputs)
    _, explained = kyrec("explain", *inputs)
    assert explained["errors"] == evaluated["errors"]
    want = eval_rows(evaluated)
    assert explain_rows(explained) == want
    assert_trees_say_their_results(explained)
    skipped = {r[0] for r in want if r[5] == "skip"}
    # every policy with a result is exempted somewhere (the mutating ones only where manifests are admitted),
    # but the admission policies (no Kyverno exception applies to them) and the GeneratingPolicy (its one
    # trigger, the Namespace, is not named web)
    assert skipped == {r[0] for r in want} - {"vap-app-label", "map-env", "gpol-team-config"}
    mutating = {"mpol-stamp", "team/nmpol-tier", "cpol-mutate-owner", "team/pol-mutate-note"}
    assert mutating & skipped == (mutating if where == "-r" else set())


# the pairs run again on the real API server through --live: the item 3 pair, and two mixes of a classic and
# a CEL kind (in a namespace of the test's own: the server is shared by the session)
LIVE_PAIRS = (("clusterpolicy-generate", "generatingpolicy"), ("clusterpolicy-verifyimages", "imagevalidatingpolicy"),
              ("policy-validate", "validatingadmissionpolicy"))


def _in_namespace(text: str, namespace: str) -> str:
    """A fixture's text with the namespace `team` renamed."""
    return re.sub(r"^(\s*(?:namespace|name): )team$", rf"\g<1>{namespace}", text, flags=re.MULTILINE)


@pytest.mark.parametrize("pair", LIVE_PAIRS, ids="+".join)
def test_explain_live_gives_evals_results(pair: tuple[str, str], realapi: RealServer, tmp_path: Path) -> None:
    namespace = realapi.unique("pairs")
    resources = _in_namespace(RESOURCES.read_text(), namespace)
    realapi.seed(*(d for d in yaml.safe_load_all(resources) if d))
    files = []
    for stem in pair:
        path = tmp_path / f"{stem}.yaml"
        path.write_text(_in_namespace((DATA / "kinds" / f"{stem}.yaml").read_text(), namespace))
        files.append(path)
    env = {"KUBECONFIG": str(realapi.kubeconfig), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    inputs = [*policy_args(files), "--live", *NOW, "-o", "json"]
    # -n: the shared server holds other tests' objects (the Namespace itself is a trigger of the generate rules)
    _, evaluated = kyrec("eval", *inputs, "-n", namespace, env=env)
    want = eval_rows(evaluated)
    assert want, "each live pair gives results"
    for kind, where, name in SUBJECTS:
        subject = (kind, namespace if where else "", namespace if kind == "Namespace" else name)
        picked_args = [f"{kind}/{subject[2]}", *(["-n", namespace] if where else [])]
        _, picked = kyrec("explain", *inputs, *picked_args, env=env)
        assert explain_rows(picked) == [r for r in want if r[1:4] == subject], subject
        assert_trees_say_their_results(picked)
