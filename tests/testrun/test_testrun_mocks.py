"""A test's apiCallResponses and globalContextEntries (kubectl_kyrec.testsuite.mocks): checked with
Kyverno's texts before a run, resourceFiles read relative to the test, data resolved once.
The evaluation side is the golden case testdata/testrun/test-mocks."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.testsuite.suite import load_suite, parse_test_file

HEADER = "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: t\npolicies: [p.yaml]\n"
POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: p}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations: [{expression: "true"}]
"""


def load(tmp_path: Path, body: str, **files: str):  # type: ignore[no-untyped-def]
    (tmp_path / "p.yaml").write_text(POLICY)
    for name, text in files.items():
        (tmp_path / name.replace("_", ".")).write_text(textwrap.dedent(text))
    path = tmp_path / "kyverno-test.yaml"
    path.write_text(HEADER + textwrap.dedent(body))
    return load_suite(parse_test_file(str(path)))


def test_mocks_are_keyed_and_resolved_as_the_cli_does(tmp_path: Path) -> None:
    loaded = load(tmp_path, """\
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
    loaded = load(tmp_path, body + "\n")
    assert isinstance(loaded.error, InputError)
    assert message in loaded.error.message
    assert loaded.error.source is not None and loaded.error.source.file == str(tmp_path / "kyverno-test.yaml")
