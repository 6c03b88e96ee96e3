"""Inputs that select nothing never pass silently (issue 8): no policy found is exit 3, a filter that matches
nothing says so, kind names resolve as kubectl resolves them, -l takes kubectl's whole grammar, and bad
policies of every kind are reported together while the rest still runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "testdata" / "examples"
POLICIES = str(EXAMPLES / "policies")
RESOURCES = str(EXAMPLES / "resources")
WORKLOADS = str(EXAMPLES / "resources" / "workloads.yaml")

POD_RULES = ("  matchConstraints:\n    resourceRules:\n    - apiGroups: ['']\n      apiVersions: [v1]\n"
             "      operations: [CREATE]\n      resources: [pods]\n")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def results(*args: str) -> list[dict[str, object]]:
    code, out, err = run("eval", "-p", POLICIES, "-r", RESOURCES, "-o", "json", *args)
    assert code in (0, 1), err
    return list(json.loads(out)["results"])


# --- no policy found ----------------------------------------------------------------------------------

def test_policy_directory_without_policies_is_exit_3(tmp_path: Path) -> None:
    code, out, err = run("eval", "-p", str(tmp_path), "-r", RESOURCES)
    assert code == 3
    assert "no policy found" in err
    assert "No policy matched" not in out


def test_resource_file_given_as_policy_is_exit_3() -> None:
    code, out, err = run("eval", "-p", WORKLOADS, "-r", RESOURCES)
    assert code == 3
    assert err.startswith(f"error: {WORKLOADS}:1: ")
    assert "Pod" in err and "not a policy" in err


@pytest.mark.parametrize("command", ["diff", "coverage"])
def test_no_policy_found_in_diff_and_coverage(tmp_path: Path, command: str) -> None:
    state = tmp_path / "state.json"
    # one object: an empty state is an input error of its own
    state.write_text('{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Namespace", '
                     '"metadata": {"name": "default"}}]}')
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run(command, "-p", str(empty), "--state", str(state))
    assert code == 3 and "no policy found" in err


def test_unknown_policy_name_is_exit_3() -> None:
    code, out, err = run("eval", "-p", POLICIES, "-r", RESOURCES, "--policy-name", "nope")
    assert code == 3
    assert "--policy-name nope" in err and "limit-memory" in err
    assert "No policy matched" not in out


# --- filters that match nothing -------------------------------------------------------------------------

def test_filter_matching_no_resource_says_so() -> None:
    code, out, err = run("eval", "-p", POLICIES, "-r", RESOURCES, "-l", "owner=nobody")
    assert code == 0
    assert "No policy matched" not in out
    assert "no resource matched" in out and "owner=nobody" in out
    assert "no resource matched" in err


# --- kind names as kubectl resolves them -------------------------------------------------------------

@pytest.mark.parametrize("name", ["Pod", "pod", "pods", "po", "POD", "Pods", "pods."])
def test_kind_names_resolve_as_kubectl(name: str) -> None:
    assert {r["subject"]["kind"] for r in results("--kind", name)} == {"Pod"}  # type: ignore[index]


@pytest.mark.parametrize("name", ["deploy", "deployments.apps", "deployment.v1.apps", "Deployment"])
def test_grouped_and_short_kind_names(name: str) -> None:
    assert {r["subject"]["kind"] for r in results("--kind", name)} == {"Deployment"}  # type: ignore[index]


def test_unknown_kind_name_is_an_error() -> None:
    code, out, err = run("eval", "-p", POLICIES, "-r", RESOURCES, "--kind", "podz")
    assert code == 3        # an input error, as a --policy-name that names no given policy
    assert "podz" in err
    assert "No policy matched" not in out


def test_crd_kind_names_resolve(tmp_path: Path) -> None:
    crd = tmp_path / "crd.yaml"
    crd.write_text("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n"
                   "  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n"
                   "  names: {kind: Widget, plural: widgets, singular: widget, shortNames: [wg]}\n"
                   "  versions: [{name: v1, served: true, storage: true}]\n")
    widget = tmp_path / "w.yaml"
    widget.write_text("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: shop}\n")
    policy = tmp_path / "p.yaml"
    policy.write_text("apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata:\n  name: any\n"
                      "spec:\n  matchConstraints:\n    resourceRules:\n    - apiGroups: ['*']\n"
                      "      apiVersions: ['*']\n      operations: [CREATE]\n      resources: ['*']\n"
                      "  validations:\n  - expression: 'true'\n")
    for name in ("wg", "widget", "WIDGETS", "widgets.example.com"):
        code, out, err = run("eval", "-p", str(policy), "-r", str(widget), "-r", WORKLOADS, "--crd", str(crd),
                             "-o", "json", "--kind", name)
        assert code == 0, err
        assert {r["subject"]["kind"] for r in json.loads(out)["results"]} == {"Widget"}


# --- label selectors: kubectl's whole grammar -----------------------------------------------------------

def test_set_based_selectors() -> None:
    assert {r["subject"]["name"] for r in results("-l", "owner in (team-web,team-x)")} == {"web"}  # type: ignore[index]
    assert {r["subject"]["name"] for r in results("-l", "owner notin (team-web)")} == {"batch", "api"}  # type: ignore[index]
    assert {r["subject"]["name"] for r in results("-l", "!owner")} == {"batch", "api"}  # type: ignore[index]
    assert {r["subject"]["name"] for r in results("-l", "owner==team-web")} == {"web"}  # type: ignore[index]


@pytest.mark.parametrize("command", ["eval", "diff"])
@pytest.mark.parametrize("selector", ["a=b=c", "env in (prod", "x in (a b)", "!x=y"])
def test_malformed_selector_is_exit_2(tmp_path: Path, command: str, selector: str) -> None:
    state = tmp_path / "state.json"
    state.write_text('{"apiVersion": "v1", "kind": "List", "items": []}')
    code, out, err = run(command, "-p", POLICIES, "-r", RESOURCES, "--state", str(state), "-l", selector)
    assert code == 2
    assert err.startswith("error: -l ") and len(err.splitlines()) == 1
    assert out == ""


# --- bad policies: one behaviour for every kind --------------------------------------------------------

def _bad_policies(tmp_path: Path) -> Path:
    d = tmp_path / "policies"
    d.mkdir()
    (d / "a-bad-vpol.yaml").write_text(
        "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata:\n  name: bad-vpol\nspec:\n"
        "  validationActions: Deny\n" + POD_RULES + "  validations:\n  - expression: 'true'\n")
    (d / "b-bad-gpol.yaml").write_text(
        "apiVersion: policies.kyverno.io/v1\nkind: GeneratingPolicy\nmetadata:\n  name: bad-gpol\nspec:\n"
        + POD_RULES + "  generate: []\n")
    (d / "c-good.yaml").write_text((EXAMPLES / "policies" / "require-owner-label.yaml").read_text())
    return d


def test_every_bad_policy_is_reported_and_the_rest_runs(tmp_path: Path) -> None:
    d = _bad_policies(tmp_path)
    code, out, err = run("eval", "-p", str(d), "-r", RESOURCES, "-o", "json")
    assert code == 3
    doc = json.loads(out)
    assert sorted(e["location"]["file"].rsplit("/", 1)[-1] for e in doc["errors"]) == \
        ["a-bad-vpol.yaml", "b-bad-gpol.yaml"]
    assert {r["policy"] for r in doc["results"]} == {"require-owner-label"}
    assert err.count("error: ") == 2


def test_no_policy_matched_is_never_printed_beside_an_error(tmp_path: Path) -> None:
    d = _bad_policies(tmp_path)
    (d / "c-good.yaml").unlink()
    code, out, err = run("eval", "-p", str(d), "-r", RESOURCES)
    assert code == 3
    assert "No policy matched" not in out
    assert err.count("error: ") == 2


# --- -p over a policy library checkout ---------------------------------------------------------------

def test_policy_directory_skips_hidden_folders_and_counts_non_policies(tmp_path: Path) -> None:
    lib = tmp_path / "library" / "require-owner"
    (lib / ".chainsaw-test").mkdir(parents=True)
    (lib / "require-owner.yaml").write_text((EXAMPLES / "policies" / "require-owner-label.yaml").read_text())
    (lib / "artifacthub-pkg.yml").write_text("name: require-owner\nversion: 1.0.0\nreadme: |\n  text\n")
    (lib / "kustomization.yaml").write_text("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                                            "resources: [require-owner.yaml]\n")
    (lib / ".chainsaw-test" / "bad-pod.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n")
    (lib / ".chainsaw-test" / "broken.yaml").write_text("key: [unclosed\n")
    code, out, err = run("eval", "-p", str(tmp_path / "library"), "-r", RESOURCES, "-o", "json")
    assert code == 1, err
    assert {r["policy"] for r in json.loads(out)["results"]} == {"require-owner-label"}
    notices = [line for line in err.splitlines() if "not policies" in line]
    assert len(notices) == 1 and "passed over 2 document(s)" in notices[0]
    assert "Kustomization" in notices[0]


# --- the same object twice in -r: the first one counts, everywhere, with a notice ------------------------

POD = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: twin\n  namespace: shop\n  labels: {{owner: {owner}}}\n"
       "spec:\n  containers: [{{name: c, image: nginx}}]\n")


def test_the_same_object_twice_in_resources_is_evaluated_once(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(POD.format(owner="team-a"))
    second.write_text(POD.format(owner="''"))
    policy = str(EXAMPLES / "policies" / "require-owner-label.yaml")
    code, out, err = run("eval", "-p", policy, "-r", str(first), "-r", str(second), "-o", "json")
    doc = json.loads(out)
    assert [(r["subject"]["name"], r["result"]) for r in doc["results"]] == [("twin", "pass")]
    assert code == 0
    notices = [line for line in err.splitlines() if "twin" in line]
    assert len(notices) == 1 and f"{second}:1" in notices[0] and f"{first}:1" in notices[0]
    _, reports, _ = run("eval", "-p", policy, "-r", str(first), "-r", str(second), "-o", "reports")
    assert "result: pass" in reports and "result: fail" not in reports


def test_the_same_object_in_two_state_files_is_one_subject(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(POD.format(owner="team-a"))
    second.write_text(POD.format(owner="''"))
    policy = str(EXAMPLES / "policies" / "require-owner-label.yaml")
    code, out, err = run("eval", "-p", policy, "--state", str(first), "--state", str(second), "-o", "json")
    assert [(r["subject"]["name"], r["result"]) for r in json.loads(out)["results"]] == [("twin", "pass")]
    assert "appear more than once in the state" in err


# --- times: one RFC 3339 parser, Go's strict form, for expiresAt too -----------------------------------

@pytest.mark.parametrize("expires", ["2020-01-01", "2020-01-01T00:00:00", "2020-01-01t00:00:00z"])
def test_an_expires_at_go_would_refuse_is_an_input_error(tmp_path: Path, expires: str) -> None:
    exception = tmp_path / "e.yaml"
    exception.write_text(
        "apiVersion: policies.kyverno.io/v1\nkind: PolicyException\nmetadata: {name: e, namespace: shop}\nspec:\n"
        "  policyRefs: [{name: require-owner-label, kind: ValidatingPolicy}]\n"
        f"  expiresAt: '{expires}'\n  matchConditions: [{{name: all, expression: 'true'}}]\n")
    code, _, err = run("eval", "-p", POLICIES, "-e", str(exception), "-r", RESOURCES)
    assert code == 3
    assert f"{exception}:6:" in err and "spec.expiresAt" in err


def test_an_expired_exception_no_longer_applies_and_a_live_one_does(tmp_path: Path) -> None:
    exception = tmp_path / "e.yaml"
    exception.write_text(
        "apiVersion: policies.kyverno.io/v1\nkind: PolicyException\nmetadata: {name: e, namespace: shop}\nspec:\n"
        "  policyRefs: [{name: require-owner-label, kind: ValidatingPolicy}]\n"
        "  expiresAt: '2020-01-01T00:00:00.5+01:00'\n  matchConditions: [{name: all, expression: 'true'}]\n")
    fails = {r["subject"]["name"] for r in results("-e", str(exception), "--policy-name", "require-owner-label")
             if r["result"] == "fail"}  # type: ignore[index]
    assert fails == {"batch"}
    exception.write_text(exception.read_text().replace("2020-01-01", "2099-01-01"))
    assert not [r for r in results("-e", str(exception)) if r["result"] == "fail" and
                r["policy"] == "require-owner-label"]
