"""Test-file discovery, parsing and loading (kubectl_kyrec.testsuite.suite)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.run_inputs.values import parse_values_object as parse_values
from kubectl_kyrec.model import Source
from kubectl_kyrec.testsuite.suite import LoadedSuite, find_test_files, load_suite, parse_test_file

HEADER = "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: t\n"
POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: p}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations: [{expression: "true"}]
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_discovery_walks_hidden_directories_and_sorts(tmp_path: Path) -> None:
    write(tmp_path / "b" / ".kyverno-test" / "kyverno-test.yaml", HEADER)
    write(tmp_path / "a" / "kyverno-test.yaml", HEADER)
    write(tmp_path / "a" / "other.yaml", HEADER)
    found = find_test_files([str(tmp_path)])
    assert found == [
        str(tmp_path / "a" / "kyverno-test.yaml"),
        str(tmp_path / "b" / ".kyverno-test" / "kyverno-test.yaml"),
    ]
    assert find_test_files([str(tmp_path)], "other.yaml") == [str(tmp_path / "a" / "other.yaml")]


def test_discovery_takes_a_named_file_once_and_refuses_a_missing_path(tmp_path: Path) -> None:
    test = write(tmp_path / "custom.yaml", HEADER)
    assert find_test_files([str(test), str(tmp_path / "custom.yaml")]) == [str(test)]
    with pytest.raises(InputError, match="no such file"):
        find_test_files([str(tmp_path / "nope")])


def test_entries_keep_their_line_flags_and_generated_files(tmp_path: Path) -> None:
    path = write(
        tmp_path / "kyverno-test.yaml",
        HEADER
        + textwrap.dedent("""\
        policies: [p.yaml]
        resources: [r.yaml]
        results:
        - policy: ns1/pol
          isValidatingPolicy: true
          kind: Pod
          resources: [a, ns/b]
          result: fail
        - policy: gen
          isGeneratingPolicy: true
          kind: Namespace
          resources: [x]
          generatedResource: g1.yaml
          generatedResources: [g2.yaml]
          operation: update
          result: pass
        """),
    )
    suite = parse_test_file(str(path))
    first, second = suite.results
    assert first.source == Source(str(path), 8)
    assert first.policy_name == "pol" and first.flags == ("ValidatingPolicy",)
    assert first.resources == ("a", "ns/b")
    assert second.source.line == 13
    assert second.flags == ("GeneratingPolicy",) and second.generated == ("g1.yaml", "g2.yaml")
    assert second.operation == "UPDATE"
    assert suite.resolve("p.yaml") == str(tmp_path / "p.yaml")


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        ("results:\n- policy: p\n  result: passed\n", 7, "results[0].result: unknown result 'passed'"),
        ("results:\n- result: pass\n", 6, "results[0].policy: required field is missing"),
        (
            "results:\n- policy: p\n  resource: x\n  result: pass\n",
            7,
            "results[0].resource: deprecated field",
        ),
        (
            "results:\n- policy: p\n  result: pass\n  isValidatingPolicy: 'yes please'\n",
            8,
            "results[0].isValidatingPolicy: expected true or false",
        ),
        ("results: {}\n", 5, "results: expected a list"),
    ],
)
def test_bad_entries_name_file_line_and_field(tmp_path: Path, body: str, line: int, message: str) -> None:
    path = write(tmp_path / "kyverno-test.yaml", HEADER + body)
    with pytest.raises(InputError) as err:
        parse_test_file(str(path))
    assert err.value.source == Source(str(path), line)
    assert message in err.value.message


@pytest.mark.parametrize(
    "text",
    [
        "name: old\npolicies: [p.yaml]\n",  # no apiVersion/kind
        HEADER + "name: old\n",  # top-level name
    ],
)
def test_the_deprecated_schema_is_refused_as_kyverno_does(tmp_path: Path, text: str) -> None:
    path = write(tmp_path / "kyverno-test.yaml", text)
    with pytest.raises(InputError, match="deprecated schema"):
        parse_test_file(str(path))


def test_other_kinds_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "kyverno-test.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    with pytest.raises(InputError, match="expected apiVersion cli.kyverno.io/v1alpha1, kind Test"):
        parse_test_file(str(path))


def test_kind_test_under_another_api_version_is_read_with_a_notice(tmp_path: Path) -> None:
    # Kyverno decodes any apiVersion as its Test (its MutatingAdmissionPolicy suites use kyverno.io/v1)
    path = write(tmp_path / "kyverno-test.yaml", "apiVersion: kyverno.io/v1\nkind: Test\nmetadata:\n  name: old\n"
                                                 "policies: [p.yaml]\n")
    suite = parse_test_file(str(path))
    assert suite.policies == ("p.yaml",)
    assert [(n.message, n.source) for n in suite.notices] == [
        ("test 'old': apiVersion kyverno.io/v1 read as cli.kyverno.io/v1alpha1, as Kyverno does", Source(str(path), 1))]
    assert parse_test_file(str(write(tmp_path / "b" / "kyverno-test.yaml", HEADER))).notices == ()


def test_unevaluated_and_unknown_fields_become_notices(tmp_path: Path) -> None:
    path = write(tmp_path / "kyverno-test.yaml", HEADER + "checks: [{}]\nsurprise: 1\n")
    notes = [n.message for n in parse_test_file(str(path)).notices]
    assert any("does not evaluate checks" in n for n in notes)
    assert any("unknown field(s) surprise" in n for n in notes)


def test_values_namespaces_win_over_namespace_selector_and_set_the_operation() -> None:
    values = parse_values(
        {
            "globalValues": {"request.operation": "update"},
            "namespaces": [
                {
                    "apiVersion": "v1",
                    "kind": "namespace",
                    "metadata": {"name": "a", "labels": {"env": "prod"}},
                }
            ],
            "namespaceSelector": [
                {"name": "a", "labels": {"env": "dev"}},
                {"name": "b", "labels": {"x": "y"}},
            ],
        },
        Source("values.yaml", 1),
    )
    assert values.operation == "UPDATE"
    assert [(d.kind, d.name) for d in values.namespaces] == [("Namespace", "a")]
    assert values.namespace_labels == {"b": {"x": "y"}}


def test_values_refuse_an_unknown_operation() -> None:
    with pytest.raises(InputError, match="unknown request.operation"):
        parse_values({"globalValues": {"request.operation": "PATCH"}}, Source("v.yaml", 1))


def test_load_suite_resolves_paths_dedupes_resources_and_reads_userinfo(tmp_path: Path) -> None:
    write(tmp_path / "p.yaml", POLICY)
    write(
        tmp_path / "r" / "pods.yaml",
        """\
        apiVersion: v1
        kind: Pod
        metadata: {name: a}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: a, namespace: default}
        """,
    )
    write(
        tmp_path / "u.yaml",
        """\
        apiVersion: cli.kyverno.io/v1alpha1
        kind: UserInfo
        userInfo: {username: alice, groups: [dev]}
        """,
    )
    path = write(
        tmp_path / "kyverno-test.yaml", HEADER + "policies: [p.yaml]\nresources: [r]\nuserinfo: u.yaml\n"
    )
    loaded = load_suite(parse_test_file(str(path)))
    assert loaded.error is None
    assert [p.meta.name for p in loaded.policies.validating] == ["p"]
    # Kyverno's RemoveDuplicates: `a` without a namespace is `default/a`; the first wins
    assert len(loaded.resources) == 1 and loaded.resources[0].namespace == ""
    assert any("duplicate resource Pod" in n.message for n in loaded.notices)
    assert loaded.user_info == {"username": "alice", "groups": ["dev"]}


def test_load_suite_keeps_a_missing_input_as_the_suite_error(tmp_path: Path) -> None:
    path = write(tmp_path / "kyverno-test.yaml", HEADER + "policies: [missing.yaml]\n")
    loaded = load_suite(parse_test_file(str(path)))
    assert loaded.error is not None
    # the test file is where the mistake is; the message names the file it lacks
    assert loaded.error.source is not None and loaded.error.source.file == str(path)
    assert loaded.error.message.startswith("missing.yaml: no such file or directory")


def test_userinfo_without_apiversion_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "p.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p}\n")
    write(tmp_path / "u.yaml", "userInfo: {username: bob}\n")
    path = write(tmp_path / "kyverno-test.yaml", HEADER + "policies: [p.yaml]\nuserinfo: u.yaml\n")
    loaded = load_suite(parse_test_file(str(path)))
    assert loaded.error is not None


def test_a_generated_resource_that_does_not_load_is_kept_per_entry(tmp_path: Path) -> None:
    write(tmp_path / "p.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p}\n")
    path = write(
        tmp_path / "kyverno-test.yaml",
        HEADER
        + textwrap.dedent("""\
        policies: [p.yaml]
        results:
        - policy: p
          generatedResource: nothere.yaml
          result: pass
        """),
    )
    loaded = load_suite(parse_test_file(str(path)))
    assert loaded.error is None
    assert "cannot load generated resources" in loaded.entry_errors[0]
    assert os.path.basename(loaded.suite.path) == "kyverno-test.yaml"


# ---------------------------------------------------------------------------------------------------------
# apiCallResponses and globalContextEntries (testsuite/mocks.py): checked with Kyverno's texts before a run,
# resourceFiles read relative to the test, data resolved once; their evaluation is the golden case
# testdata/testrun/test-mocks.


def load_with_mocks(tmp_path: Path, body: str, **files: str) -> LoadedSuite:
    (tmp_path / "p.yaml").write_text(POLICY)
    for name, text in files.items():
        (tmp_path / name.replace("_", ".")).write_text(textwrap.dedent(text))
    path = tmp_path / "kyverno-test.yaml"
    path.write_text(HEADER + "policies: [p.yaml]\n" + textwrap.dedent(body))
    return load_suite(parse_test_file(str(path)))


def test_mocks_are_keyed_and_resolved_as_the_cli_does(tmp_path: Path) -> None:
    loaded = load_with_mocks(tmp_path, """\
        apiCallResponses:
        - {url: https://a.example/x, method: get, response: {body: {ok: true}}}
        - {urlPath: /api/v1/namespaces, response: {statusCode: 503, body: {items: []}}}
        globalContextEntries:
        - {name: d, data: {a: {b: [1, 2]}}, fieldPath: a, projections: [{name: size, path: length(b)}]}
        - {name: r, resourceFiles: [more.yaml]}
        """, more_yaml="apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\n---\n"
                       "apiVersion: v1\nkind: Namespace\nmetadata: {name: z}\n")
    assert loaded.error is None
    assert dict(loaded.mocks.http) == {"GET:https://a.example/x": (200, {"ok": True}),
                                       "/api/v1/namespaces": (503, {"items": []})}
    assert dict(loaded.mocks.global_entries) == {
        "d": {"size": 2},
        "r": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}},
              {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "z"}}]}


@pytest.mark.parametrize(("body", "message"), [
    ("apiCallResponses: [{response: {body: {}}}]", "apiCallResponses[0]: either url or urlPath is required"),
    ("apiCallResponses: [{url: ftp://a/x, response: {body: {}}}]",
     'apiCallResponses[0]: url "ftp://a/x" must be an absolute https/http URL'),
    ("apiCallResponses: [{url: https://a/x, method: PUT, response: {body: {}}}]",
     "apiCallResponses[0]: method must be GET or POST"),
    ("apiCallResponses: [{url: https://a/x, response: {body: [1]}}]",
     'apiCallResponses[0] "https://a/x": response.body must be a JSON object'),
    ("apiCallResponses: [{urlPath: /x, response: {statusCode: 99, body: {}}}]",
     'apiCallResponses[0] "/x": statusCode 99 must be between 100 and 599'),
    ("apiCallResponses: [{url: https://a/x, method: GET, response: {body: {}}},"
     " {url: https://a/x, method: get, response: {body: {}}}]",
     'apiCallResponses: duplicate entry for "https://a/x" (key "GET:https://a/x")'),
    ("globalContextEntries: [{name: g, data: [1]}]", 'globalContextEntries entry "g": data must be a JSON object'),
    ("globalContextEntries: [{name: g}]",
     'globalContextEntries entry "g": one of data, resources, or resourceFiles is required'),
    ("globalContextEntries: [{name: g, data: {}, resources: []}]",
     'globalContextEntries entry "g": data, resources, and resourceFiles are mutually exclusive'),
    ("globalContextEntries: [{name: g, data: {}}, {name: g, data: {}}]", 'globalContextEntries: duplicate name "g"'),
    ("globalContextEntries: [{name: g, data: {}, projections: [{name: p}]}]",
     'globalContextEntries entry "g" projection "p": path is required'),
    ("globalContextEntries: [{name: g, resourceFiles: [../up.yaml]}]",
     'globalContextEntries entry "g" resourceFiles[0]: file path must not escape the test directory'),
    ("globalContextEntries: [{name: g, resourceFiles: [gone.yaml]}]",
     'globalContextEntries "g" resourceFiles "gone.yaml"'),
    ("globalContextEntries: [{name: g, data: {a: 1}, fieldPath: 'a[?'}]", 'globalContextEntries "g" fieldPath: '),
])
def test_a_bad_mock_makes_the_test_an_error(tmp_path: Path, body: str, message: str) -> None:
    loaded = load_with_mocks(tmp_path, body + "\n")
    assert isinstance(loaded.error, InputError)
    assert message in loaded.error.message
    assert loaded.error.source is not None and loaded.error.source.file == str(tmp_path / "kyverno-test.yaml")
