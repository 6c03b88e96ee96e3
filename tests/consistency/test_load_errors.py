"""Consistency matrix, leg (e): every kind of load-time error in a policy, through every command that loads
policies, is refused the same way: exit 3 and, on standard error, one line
`error: FILE:LINE: Kind "name": <field>: <message>` at the line of the offending field; the command's JSON
names the same error, and no result of the refused policy is shown.

Invariants (each combination below checks all of them):
1. the exit code is 3 (errors.py: input error), not 0 (a clean run) nor 1 (findings) nor 70;
2. standard error holds the line, with the file, the line of the field, `Kind "name"` and the field path;
3. no traceback;
4. standard output shows no result of the refused policy (no `error` row per resource), and with `-o json`
   the document's `errors` carries the same message.

`apply` is the sixth command: its plan, against the API double of tests/kubeapi, refuses the policy and
writes nothing (every kind of error). Left out, with why: `capture` (loads no policy files); `test` with a
bad DeletingPolicy or ClusterCleanupPolicy schedule (Kyverno's CLI does not validate a schedule: only its
admission webhook does, and `test` follows the CLI); `-o json` of `explain` (it has none) and of `coverage`
(its document has no `errors` yet: the failure channel of issue 33 adds it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

PODS = """  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
"""
BAD_CEL = "object.metadata.name =="
POD = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\n"
       "spec:\n  containers: [{name: c, image: nginx}]\n")
NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata: {name: default}\n"
CLASSIC_HEAD = """apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: bad
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
"""

# name -> (policy text, kind, field path, marker: a text on the offending field's line)
CASES: dict[str, tuple[str, str, str, str]] = {
    "ValidatingPolicy CEL": (
        "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata:\n  name: bad\nspec:\n" + PODS
        + f"  validations:\n  - expression: \"{BAD_CEL}\"\n",
        "ValidatingPolicy", "spec.validations[0].expression", BAD_CEL),
    "NamespacedValidatingPolicy CEL": (
        "apiVersion: policies.kyverno.io/v1\nkind: NamespacedValidatingPolicy\nmetadata:\n  name: bad\n"
        "  namespace: default\nspec:\n" + PODS + f"  validations:\n  - expression: \"{BAD_CEL}\"\n",
        "NamespacedValidatingPolicy", "spec.validations[0].expression", BAD_CEL),
    "ValidatingAdmissionPolicy CEL": (
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata:\n  name: bad\n"
        "spec:\n" + PODS + f"  validations:\n  - expression: \"{BAD_CEL}\"\n",
        "ValidatingAdmissionPolicy", "spec.validations[0].expression", BAD_CEL),
    "GeneratingPolicy CEL": (
        "apiVersion: policies.kyverno.io/v1\nkind: GeneratingPolicy\nmetadata:\n  name: bad\nspec:\n" + PODS
        + "  generate:\n  - expression: \"generator.Apply(object.metadata.name, [)\"\n",
        "GeneratingPolicy", "spec.generate[0].expression", "generator.Apply"),
    "MutatingPolicy CEL": (
        "apiVersion: policies.kyverno.io/v1\nkind: MutatingPolicy\nmetadata:\n  name: bad\nspec:\n" + PODS
        + "  mutations:\n  - patchType: ApplyConfiguration\n    applyConfiguration:\n"
          "      expression: \"Object{metadata: Object.metadata{\"\n",
        "MutatingPolicy", "spec.mutations[0].applyConfiguration.expression", "Object{metadata"),
    "MutatingAdmissionPolicy CEL": (
        "apiVersion: admissionregistration.k8s.io/v1alpha1\nkind: MutatingAdmissionPolicy\nmetadata:\n  name: bad\n"
        "spec:\n" + PODS + "  failurePolicy: Fail\n  reinvocationPolicy: Never\n  mutations:\n"
        "  - patchType: ApplyConfiguration\n    applyConfiguration:\n"
        "      expression: \"Object{metadata: Object.metadata{\"\n",
        "MutatingAdmissionPolicy", "spec.mutations[0].applyConfiguration.expression", "Object{metadata"),
    "DeletingPolicy CEL": (
        "apiVersion: policies.kyverno.io/v1\nkind: DeletingPolicy\nmetadata:\n  name: bad\nspec:\n"
        "  schedule: \"*/5 * * * *\"\n" + PODS + f"  conditions:\n  - name: c\n    expression: \"{BAD_CEL}\"\n",
        "DeletingPolicy", "spec.conditions[0].expression", BAD_CEL),
    "ImageValidatingPolicy CEL": (
        "apiVersion: policies.kyverno.io/v1\nkind: ImageValidatingPolicy\nmetadata:\n  name: bad\nspec:\n" + PODS
        + "  matchImageReferences:\n  - glob: ghcr.io/*\n"
        + "  attestors:\n  - name: notary\n    notary: {certs: {value: x}}\n"
        + f"  validations:\n  - expression: \"{BAD_CEL}\"\n",
        "ImageValidatingPolicy", "spec.validations[0].expression", BAD_CEL),
    "PolicyException CEL": (
        "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata:\n  name: good\nspec:\n" + PODS
        + "  validations:\n  - expression: \"true\"\n---\n"
        "apiVersion: policies.kyverno.io/v1\nkind: PolicyException\nmetadata:\n  name: bad\n  namespace: default\n"
        "spec:\n  policyRefs:\n  - name: good\n    kind: ValidatingPolicy\n"
        f"  matchConditions:\n  - name: c\n    expression: \"{BAD_CEL}\"\n",
        "PolicyException", "spec.matchConditions[0].expression", BAD_CEL),
    "ClusterPolicy validate.cel": (
        CLASSIC_HEAD + f"    validate:\n      cel:\n        expressions:\n        - expression: \"{BAD_CEL}\"\n",
        "ClusterPolicy", "spec.rules[0].validate.cel.expressions[0].expression", BAD_CEL),
    "ClusterPolicy JMESPath syntax": (
        CLASSIC_HEAD + "    validate:\n      message: m\n      deny:\n        conditions:\n          any:\n"
        "          - key: \"{{ request.object.metadata.labels.[?? }}\"\n            operator: Equals\n"
        "            value: x\n",
        "ClusterPolicy", "spec.rules[0].validate.deny.conditions.any[0].key", "[??"),
    "ClusterPolicy undeclared variable": (
        CLASSIC_HEAD + "    validate:\n      message: \"{{ nothere.name }}\"\n      pattern:\n        metadata:\n"
        "          name: \"?*\"\n",
        "ClusterPolicy", "spec.rules[0].validate.message", "nothere"),
    "ClusterPolicy variable in match": (
        CLASSIC_HEAD.replace("kinds: [Pod]", "kinds: [Pod]\n          names: [\"{{ request.object.metadata.name }}\"]")
        + "    validate:\n      message: m\n      pattern:\n        metadata:\n          name: \"?*\"\n",
        "ClusterPolicy", "spec.rules[0].match", "match:"),
    "ClusterPolicy element outside foreach": (
        CLASSIC_HEAD + "    validate:\n      message: \"{{ element.name }}\"\n      pattern:\n        metadata:\n"
        "          name: \"?*\"\n",
        "ClusterPolicy", "spec.rules[0].validate.message", "element.name"),
    "DeletingPolicy cron": (
        "apiVersion: policies.kyverno.io/v1\nkind: DeletingPolicy\nmetadata:\n  name: bad\nspec:\n"
        "  schedule: \"every day\"\n" + PODS + "  conditions:\n  - name: c\n    expression: \"true\"\n",
        "DeletingPolicy", "spec.schedule", "every day"),
    "ClusterCleanupPolicy cron": (
        "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata:\n  name: good\nspec:\n" + PODS
        + "  validations:\n  - expression: \"true\"\n---\n"
        "apiVersion: kyverno.io/v2\nkind: ClusterCleanupPolicy\nmetadata:\n  name: bad\nspec:\n"
        "  schedule: \"0 0 * *\"\n  match:\n    any:\n    - resources:\n        kinds: [Pod]\n",
        "ClusterCleanupPolicy", "spec.schedule", "0 0 * *"),
    "ValidatingPolicy CEL regex": (
        "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata:\n  name: bad\nspec:\n" + PODS
        + "  validations:\n  - expression: \"object.metadata.name.matches('[')\"\n",
        "ValidatingPolicy", "spec.validations[0].expression", "matches("),
}
COMMANDS = ("eval", "diff", "coverage", "explain", "test")
# Kyverno's CLI leaves schedules alone (pkg/cel/policies/dpol/validate.go and the cleanup policies' validation
# are the admission webhook's), and its test command reads no cleanup policy
NOT_REFUSED_BY = {("DeletingPolicy cron", "test"), ("ClusterCleanupPolicy cron", "test")}
COMBINATIONS = [(case, command) for case in CASES for command in COMMANDS if (case, command) not in NOT_REFUSED_BY]


def _files(tmp_path: Path, case: str, command: str) -> tuple[Path, int]:
    """The policy file (for `test`, a PolicyException goes to a file of its own, which the test names under
    `exceptions:` as Kyverno's CLI reads them) and the line of the offending field in it."""
    text, _, _, marker = CASES[case]
    policy = tmp_path / "policy.yaml"
    exceptions = ""
    if command == "test" and "kind: PolicyException" in text:
        text, exception = text.split("---\n")
        (tmp_path / "exception.yaml").write_text(exception)
        exceptions = "exceptions: [exception.yaml]\n"
        policy, text = tmp_path / "exception.yaml", exception
    (tmp_path / "policy.yaml").write_text(CASES[case][0] if not exceptions else CASES[case][0].split("---\n")[0])
    line = next(i for i, t in enumerate(text.splitlines(), 1) if marker in t)
    (tmp_path / "pod.yaml").write_text(POD)
    (tmp_path / "state.yaml").write_text(POD + "---\n" + NAMESPACE)
    names = [n for n in ("bad", "good") if f"name: {n}\n" in CASES[case][0] and "kind: PolicyException\nmetadata:\n"
             f"  name: {n}" not in CASES[case][0]]
    (tmp_path / "kyverno-test.yaml").write_text(
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: t\npolicies: [policy.yaml]\n"
        + exceptions + "resources: [pod.yaml]\nresults:\n" + "".join(
            f"- policy: {n}\n  resources: [p]\n  kind: Pod\n  result: pass\n" for n in names))
    return policy, line


def _args(command: str, tmp_path: Path, policy: Path) -> list[str]:
    return {
        "eval": ["eval", "-p", str(policy), "-r", str(tmp_path / "pod.yaml")],
        "diff": ["diff", "--state", str(tmp_path / "state.yaml"), "-p", str(policy)],
        "coverage": ["coverage", "--state", str(tmp_path / "state.yaml"), "-p", str(policy)],
        "explain": ["explain", "-p", str(policy), "-r", str(tmp_path / "pod.yaml"), "-n", "default", "Pod/p"],
        "test": ["test", str(tmp_path)],
    }[command]


def _expected_line(tmp_path: Path, case: str, command: str) -> str:
    _, kind, field, _ = CASES[case]
    policy, line = _files(tmp_path, case, command)
    return f"{policy}:{line}: {kind} \"bad\": {field}: "


@pytest.mark.parametrize(("case", "command"), COMBINATIONS, ids=[f"{c}-{m}" for c, m in COMBINATIONS])
def test_refused_with_its_line(tmp_path: Path, case: str, command: str) -> None:
    expected = _expected_line(tmp_path, case, command)
    result = CliRunner().invoke(cli, _args(command, tmp_path, tmp_path / "policy.yaml"))
    assert result.exit_code == 3, (result.exit_code, result.stdout, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert any(line.startswith("error: " + expected) for line in errors), (expected, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    # the refused policy gives no result: no `error` row per resource, no pass
    shown = [line for line in result.stdout.splitlines() if line.startswith("bad ")]
    assert not shown, result.stdout


# explain has no -o json; coverage's JSON has no `errors` yet (the failure channel of issue 33 adds it)
JSON_COMBINATIONS = [(c, m) for c, m in COMBINATIONS if m not in ("explain", "coverage")]


@pytest.mark.parametrize(("case", "command"), JSON_COMBINATIONS, ids=[f"{c}-{m}" for c, m in JSON_COMBINATIONS])
def test_json_names_the_error(tmp_path: Path, case: str, command: str) -> None:
    expected = _expected_line(tmp_path, case, command)
    result = CliRunner().invoke(cli, [*_args(command, tmp_path, tmp_path / "policy.yaml"), "-o", "json"])
    assert result.exit_code == 3, (result.exit_code, result.stderr)
    document = json.loads(result.stdout)
    messages = [f"{e['location']['file']}:{e['location']['line']}: {e['message']}" for e in document["errors"]
                if e.get("location")]
    assert any(m.startswith(expected) for m in messages), (expected, messages)
    assert not [r for r in document.get("results", []) if r.get("policy") == "bad"]


def test_the_combinations_are_counted() -> None:
    # the note of issue 33 reports these numbers: keep them true
    assert (len(CASES), len(COMMANDS), len(COMBINATIONS), len(JSON_COMBINATIONS)) == (17, 5, 83, 49)
    # and apply: one per kind (test_apply_plans_nothing_from_a_refused_policy), 100 combinations in all


@pytest.mark.parametrize("case", list(CASES))
def test_apply_plans_nothing_from_a_refused_policy(tmp_path: Path, case: str) -> None:
    """`apply -p` against a cluster (the API double of tests/kubeapi): the plan loads the files through
    `diff`'s path and refuses the policy the same way, writing nothing."""
    from tests.kubeapi.server import ApiServer

    expected = _expected_line(tmp_path, case, "apply")
    with ApiServer() as api:
        for name in ("default", "kube-system"):
            api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        api.kubeconfig(tmp_path / "kubeconfig")
        api.clear_log()
        result = CliRunner().invoke(cli, ["apply", "-p", str(tmp_path / "policy.yaml"), "--yes"],
                                    env={"KUBECONFIG": str(tmp_path / "kubeconfig"),
                                         "XDG_CACHE_HOME": str(tmp_path / "cache")})
        assert result.exit_code == 3, (result.exit_code, result.stdout, result.stderr)
        assert any(line.startswith("error: " + expected) for line in result.stderr.splitlines()), result.stderr
        assert api.writes() == []
