"""Bad input, as a hostile new user gives it: one line `error: file:line: ...`, the exit code of the table
(2 usage, 3 input, 74 output), never an internal error, and nothing the user had is overwritten.

Each case is a set of small files written into tmp_path and one command line run in that directory.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: pod1, namespace: default, labels: {app: a}}
spec: {containers: [{name: c, image: nginx}]}
"""

VPOL = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: vp}
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}
  validations:
  - expression: has(object.metadata.labels)
"""

VAP = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: vap}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: has(object.metadata.labels)
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: vapb}
spec:
  policyName: vap
  validationActions: [Deny]
  matchResources:
    namespaceSelector: SELECTOR
"""

# a state of one object (an empty state is an input error of its own)
ONE_NAMESPACE = json.dumps({"apiVersion": "v1", "kind": "List",
                            "items": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}]})

CLASSIC = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: cp}
spec:
  rules:
  - name: r
    match:
      any:
      - ANY
    context: CONTEXT
    RULE
"""
VALUES = "apiVersion: cli.kyverno.io/v1alpha1\nkind: Values\n"
VALIDATE = "validate: {message: m, pattern: {metadata: {labels: {app: '?*'}}}}"


def classic(any_: str = "resources: {kinds: [Pod]}", context: str = "[]", rule: str = VALIDATE) -> str:
    return CLASSIC.replace("ANY", any_).replace("CONTEXT", context).replace("RULE", rule)


def pod_with(metadata: str) -> str:
    return f"apiVersion: v1\nkind: Pod\nmetadata: {metadata}\nspec: {{}}\n"


def run(tmp_path: Path, files: dict[str, str | bytes], *args: str) -> tuple[int, str]:
    for name, content in files.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = CliRunner().invoke(cli, list(args))
    finally:
        os.chdir(cwd)
    return result.exit_code, result.stderr


# (id, files, command line, exit code, the start of the error line: file:line and what is wrong)
INPUT_ERRORS = [
    ("policy-metadata-scalar", {"p.yaml": VPOL.replace("metadata: {name: vp}", "metadata: x")},
     ["eval", "-p", "p.yaml", "-r", "r.yaml"], "p.yaml:1: metadata must be a mapping, not a string"),
    ("manifest-metadata-list", {"r.yaml": pod_with("[x]")},
     ["eval", "-p", "p.yaml", "-r", "r.yaml"], "r.yaml:1: metadata must be a mapping, not a sequence"),
    ("manifest-name-mapping", {"r.yaml": pod_with("{name: {a: b}}")},
     ["eval", "-p", "p.yaml", "-r", "r.yaml"], "r.yaml:1: metadata.name must be a string, not a mapping"),
    ("manifest-labels-list", {"r.yaml": pod_with("{name: a, labels: [x]}")},
     ["eval", "-p", "p.yaml", "-r", "r.yaml"], "r.yaml:1: metadata.labels must be a mapping, not a sequence"),
    ("state-metadata-number", {"s.json": json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": 5}]})},
     ["diff", "-p", "p.yaml", "--state", "s.json"], "s.json:1: metadata must be a mapping, not a number"),
    ("binding-matchlabels-number", {"p.yaml": VAP.replace("SELECTOR", "{matchLabels: 5}")},
     ["eval", "-p", "p.yaml", "-r", "r.yaml"],
     'p.yaml:18: ValidatingAdmissionPolicyBinding "vapb": spec.matchResources.namespaceSelector.matchLabels: '
     'Invalid value: "integer": spec.matchResources.namespaceSelector.matchLabels in body must be of type object: '
     '"integer"'),
    ("binding-selector-string", {"p.yaml": VAP.replace("SELECTOR", "x")},
     ["eval", "-p", "p.yaml", "-r", "r.yaml"], 'p.yaml:18: ValidatingAdmissionPolicyBinding "vapb": '
                                               'spec.matchResources.namespaceSelector: Invalid value: "string"'),
    ("binding-expression-scalar", {"p.yaml": VAP.replace("SELECTOR", "{matchExpressions: [5]}")},
     ["eval", "-p", "p.yaml", "-r", "r.yaml"], 'p.yaml:18: ValidatingAdmissionPolicyBinding "vapb": '
                                               "spec.matchResources.namespaceSelector.matchExpressions[0]"),
    ("classic-null-filter", {"p.yaml": classic(any_="null")},
     ["eval", "-p", "p.yaml", "-r", "r.yaml"], 'p.yaml:9: ClusterPolicy "cp": spec.rules[0].match.any[0]: '
                                               'Invalid value: "null": spec.rules[0].match.any[0] in body must be of '
                                               'type object: "null"'),
    ("classic-generate-scalar", {"p.yaml": classic(rule="generate: 5")},
     ["eval", "-p", "p.yaml", "-r", "r.yaml"], 'p.yaml:11: ClusterPolicy "cp": spec.rules[0].generate: '
                                               'Invalid value: "integer"'),
    ("classic-generate-kind-list", {"p.yaml": classic(rule="generate: {apiVersion: v1, kind: [x], name: cfg, "
                                                           "data: {}}")},
     ["eval", "-p", "p.yaml", "-r", "r.yaml"], 'p.yaml:11: ClusterPolicy "cp": spec.rules[0].generate.kind: '
                                               'Invalid value: "array"'),
    ("classic-generate-synchronize-string", {"p.yaml": classic(rule="generate: {kind: ConfigMap, name: cfg, "
                                                                    "synchronize: x, data: {}}")},
     ["eval", "-p", "p.yaml", "-r", "r.yaml"], 'p.yaml:11: ClusterPolicy "cp": spec.rules[0].generate.synchronize: '
                                               'Invalid value: "string"'),
    ("classic-validate-list", {"p.yaml": classic(rule="validate: [x]")},
     ["eval", "-p", "p.yaml", "-r", "r.yaml"], 'p.yaml:11: ClusterPolicy "cp": spec.rules[0].validate: '
                                               'Invalid value: "array"'),
    ("classic-context-entry-number", {"p.yaml": classic(context="[5]")},
     ["eval", "-p", "p.yaml", "-r", "r.yaml"], 'p.yaml:10: ClusterPolicy "cp": spec.rules[0].context[0]: '
                                               'Invalid value: "integer"'),
    ("classic-context-without-name", {"p.yaml": classic(context="[{variable: {value: 1}}]")},
     ["eval", "-p", "p.yaml", "-r", "r.yaml"], 'p.yaml:10: ClusterPolicy "cp": spec.rules[0].context[0].name: '
                                               "Required value"),
    ("classic-context-variable-string", {"p.yaml": classic(context="[{name: c, variable: x}]")},
     ["eval", "-p", "p.yaml", "-r", "r.yaml"], 'p.yaml:10: ClusterPolicy "cp": spec.rules[0].context[0].variable: '
                                               'Invalid value: "string"'),
    ("baseline-not-utf8", {"b.json": b"{\"apiVersion\": \"caf\xe9\"}"},
     ["eval", "-p", "p.yaml", "-r", "r.yaml", "--baseline", "b.json"], "b.json: cannot read baseline: not valid UTF-8"),
    ("baseline-nested-too-deeply", {"b.json": "[" * 100000 + "]" * 100000},
     ["eval", "-p", "p.yaml", "-r", "r.yaml", "--baseline", "b.json"], "b.json:1: not a kyrec baseline: nested"),
    ("exclusions-binary", {"s.json": json.dumps({"apiVersion": "v1", "kind": "List", "items": []}),
                           "x.yaml": b"\x00\x01\xff\xfe\x89PNG"},
     ["coverage", "-p", "p.yaml", "--state", "s.json", "--exclusions", "x.yaml"], "x.yaml:1: not valid UTF-8"),
    ("kyverno-config-not-utf8", {"s.json": ONE_NAMESPACE,
                                 "k.yaml": b"kind: ConfigMap\ndata: {a: caf\xe9}\n"},
     ["diff", "-p", "p.yaml", "--state", "s.json", "--reports", "--kyverno-config", "k.yaml"],
     "k.yaml: not valid UTF-8"),
    # raw bytes that are not UTF-8 in a JSON string, streamed or read whole: Go's JSON decoder would read U+FFFD,
    # Kyverno's CLI (a manifest through go-yaml) refuses the file, as kyrec does every input (docs/compatibility.md)
    ("state-json-list-not-utf8", {"s.json": b'{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod",\n'
                                            b'"metadata": {"name": "caf\xe9"}}]}'},
     ["eval", "-p", "p.yaml", "--state", "s.json"], "s.json:2: not valid UTF-8: byte 0xe9 at column 26"),
    ("resources-json-not-utf8", {"r.json": b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "caf\xe9"}}'},
     ["eval", "-p", "p.yaml", "-r", "r.json"], "r.json:1: not valid UTF-8: byte 0xe9 at column 62"),
    # go-yaml refuses a surrogate escape in YAML, a valid pair too (scannerc.go), as Kyverno's CLI reads it
    ("resources-yaml-surrogate-escape", {"r.yaml": POD.replace("app: a", 'app: "a\\ud83d\\ude00"')},
     ["eval", "-p", "p.yaml", "-r", "r.yaml"], "r.yaml:3: invalid YAML: found invalid Unicode character escape code"),
    ("state-json-number-too-long", {"s.json": '{"apiVersion": "v1", "kind": "List", "items": [{"a": '
                                              + "9" * 5000 + "}]}"},
     ["diff", "-p", "p.yaml", "--state", "s.json"], "s.json:1: invalid JSON: a number of more than"),
    ("state-json-nested-too-deeply", {"s.json": '{"items": [' + "[" * 100000 + "]" * 100000 + "]}"},
     ["diff", "-p", "p.yaml", "--state", "s.json"], "s.json:1: invalid JSON: nested too deeply"),
    ("values-username-list", {"v.yaml": VALUES + "request: {userInfo: {username: [a]}}\n"},
     ["eval", "-p", "p.yaml", "-r", "r.yaml", "--values", "v.yaml"],
     "v.yaml:1: values: request.userInfo.username must be a string"),
    ("userinfo-groups-number", {"v.yaml": "apiVersion: cli.kyverno.io/v1alpha1\nkind: UserInfo\n"
                                          "userInfo: {groups: 5}\n"},
     ["eval", "-p", "p.yaml", "-r", "r.yaml", "--values", "v.yaml"], "v.yaml:1: values: userInfo.groups must be"),
    ("values-policy-resource-values-string",
     {"v.yaml": VALUES + "policies: [{name: vp, resources: [{name: a, values: x}]}]\n"},
     ["eval", "-p", "p.yaml", "-r", "r.yaml", "--values", "v.yaml"],
     "v.yaml:1: values: policies[0].resources[0].values must be a mapping"),
    ("context-file-empty", {"c.yaml": ""},
     ["eval", "-p", "p.yaml", "-r", "r.yaml", "--context-file", "c.yaml"],
     "c.yaml: --context-file: expected one cli.kyverno.io/v1alpha1 Context document, found 0 documents"),
    ("values-policies-string", {"v.yaml": VALUES + "policies: x\n"},
     ["eval", "-p", "p.yaml", "-r", "r.yaml", "--values", "v.yaml"], "v.yaml:1: values: policies must be a list"),
]


@pytest.mark.parametrize(("files", "args", "error"), [case[1:] for case in INPUT_ERRORS],
                         ids=[case[0] for case in INPUT_ERRORS])
def test_bad_input_is_one_located_line_and_exit_3(tmp_path: Path, files: dict[str, str | bytes],
                                                  args: list[str], error: str) -> None:
    code, err = run(tmp_path, {"p.yaml": VPOL, "r.yaml": POD, **files}, *args)
    lines = err.splitlines()
    assert code == 3, err
    assert [line for line in lines if line.startswith("error:")] == lines[-1:], err
    assert lines[-1].startswith(f"error: {error}"), err


@pytest.mark.parametrize("number", ["9" * 400, "9" * 5000, "0x" + "f" * 5000])
def test_a_yaml_integer_beyond_float64_stays_text_as_go_yaml_keeps_it(tmp_path: Path, number: str) -> None:
    # go-yaml's ParseFloat overflows and keeps the scalar as a string: no internal error, a plain result
    from kubectl_kyrec.load.documents import documents_from_text

    doc = documents_from_text(f"apiVersion: v1\nkind: Pod\nmetadata: {{name: a}}\nspec: {{x: {number}}}\n",
                              "big.yaml")[0]
    assert doc.obj["spec"]["x"] == number
    code, err = run(tmp_path, {"p.yaml": VPOL, "big.yaml": doc_text(number)}, "eval", "-p", "p.yaml", "-r", "big.yaml")
    assert code == 0, err


def doc_text(number: str) -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: a, namespace: default, labels: {{a: b}}}}\n"
            f"spec: {{x: {number}}}\n")


# Outputs that would overwrite an input: refused before anything is read (exit 2), the input kept as it was.
OVERWRITES = [
    ("eval-json-over-resource", ["eval", "-p", "p.yaml", "-r", "r.yaml", "-o", "json=r.yaml"], "r.yaml"),
    ("eval-json-over-policy-spelled-otherwise", ["eval", "-p", "p.yaml", "-r", "r.yaml", "-o", "json=./p.yaml"],
     "p.yaml"),
    ("eval-sarif-into-resource-dir", ["eval", "-p", "p.yaml", "-r", "dir", "-o", "sarif=dir/more.yaml"],
     "dir/more.yaml"),
    ("diff-json-over-state", ["diff", "-p", "p.yaml", "--state", "s.json", "-o", "json=s.json"], "s.json"),
    ("coverage-json-over-policy", ["coverage", "-p", "p.yaml", "--state", "s.json", "-o", "json=p.yaml"], "p.yaml"),
    ("test-junit-over-test-file", ["test", ".", "-o", "junit=kyverno-test.yaml"], "kyverno-test.yaml"),
    ("eval-write-baseline-over-policy", ["eval", "-p", "p.yaml", "-r", "r.yaml", "--write-baseline", "p.yaml"],
     "p.yaml"),
    ("capture-over-policy", ["capture", "-p", "p.yaml", "-o", "p.yaml"], "p.yaml"),
]


@pytest.mark.parametrize(("args", "kept"), [case[1:] for case in OVERWRITES], ids=[case[0] for case in OVERWRITES])
def test_an_output_over_an_input_is_refused_and_the_input_kept(tmp_path: Path, args: list[str], kept: str) -> None:
    files: dict[str, str | bytes] = {
        "p.yaml": VPOL, "r.yaml": POD, "dir/more.yaml": POD,
        "s.json": json.dumps({"apiVersion": "v1", "kind": "List", "items": []}),
        "kyverno-test.yaml": "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata: {name: t}\n"
                             "policies: [p.yaml]\nresources: [r.yaml]\nresults: []\n"}
    before = files[kept]
    code, err = run(tmp_path, files, *args)
    assert code == 2, err
    assert re.match(r"error: (-o|--write-baseline) \S+: \S+ is an input of this command", err.splitlines()[-1]), err
    assert (tmp_path / kept).read_text() == before


def test_two_outputs_to_one_file_are_refused(tmp_path: Path) -> None:
    code, err = run(tmp_path, {"p.yaml": VPOL, "r.yaml": POD},
                    "eval", "-p", "p.yaml", "-r", "r.yaml", "-o", "json=out.json", "-o", "yaml=./out.json")
    assert code == 2
    assert err.splitlines()[-1] == "error: -o yaml=./out.json and -o json=out.json write the same file ./out.json"
    assert not (tmp_path / "out.json").exists()


def test_write_baseline_may_update_the_baseline_it_read(tmp_path: Path) -> None:
    code, err = run(tmp_path, {"p.yaml": VPOL, "r.yaml": POD}, "eval", "-p", "p.yaml", "-r", "r.yaml",
                    "--write-baseline", "b.json")
    assert code == 0, err
    code, err = run(tmp_path, {}, "eval", "-p", "p.yaml", "-r", "r.yaml", "--baseline", "b.json",
                    "--write-baseline", "b.json")
    assert code == 0, err


def test_a_baseline_that_cannot_be_written_is_an_output_error(tmp_path: Path) -> None:
    code, err = run(tmp_path, {"p.yaml": VPOL, "r.yaml": POD}, "eval", "-p", "p.yaml", "-r", "r.yaml",
                    "--write-baseline", "missing/dir/b.json")
    assert code == 74
    assert err.splitlines()[-1] == "error: missing/dir/b.json: cannot write: No such file or directory"


def test_a_file_the_test_names_that_is_missing_points_at_the_test(tmp_path: Path) -> None:
    code, err = run(tmp_path, {"kyverno-test.yaml": "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\n"
                                                    "metadata: {name: t}\npolicies: [nope.yaml]\nresources: []\n"
                                                    "results: []\n"}, "test", ".")
    assert code == 3
    assert err.splitlines()[-1].startswith("error: ./kyverno-test.yaml:1: nope.yaml: no such file or directory")
