"""A lone UTF-16 surrogate escape (`"a\\ud800b"`, the six characters in the file) in any JSON input is read as
Go's encoding/json reads it, U+FFFD (golang/json.py `as_go_decodes`), on every path that decodes JSON: `-r`,
`--state` read as it is evaluated (a List, json_stream.iter_list_parts) and read whole (objects one after
another), `-p`: each run answers, in every format, byte for byte as the same input holding U+FFFD itself.
Before, Python's json kept the surrogate, which the CEL engine refused (an `error` result) and the UTF-8
outputs could not write (exit 70). Raw bytes that are not UTF-8 stay an input error at file:line (exit 3):
tests/cli/test_bad_input.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

NOW = ["--now", "2026-01-02T03:04:05Z"]
# what stands for the strings under test: in the file, a lone high and a lone low surrogate escape and a valid
# pair (LONE), or what Go reads of them, U+FFFD twice and the pair (TWIN); the outputs show SHOWN
MARK = "@@"
LONE = "\\ud800-\\uDC00-\\ud83d\\ude00"
TWIN = "\ufffd-\ufffd-\\ud83d\\ude00"
SHOWN = "\ufffd-\ufffd-\U0001f600"
# the label's value and key reach the message, and so every output; so does the policy's own text (-p)
POLICY = {
    "apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "team"},
    "spec": {"validationActions": ["Audit"],
             "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                     "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}]},
             "validations": [{"expression": "object.metadata.labels.team == 'ok'",
                              "messageExpression": "'team=' + object.metadata.labels.team + ' key='"
                                                   " + object.metadata.labels.filter(k, k.startsWith('k'))[0]"
                                                   f" + ' says {MARK}'"}]}}


def _pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"team": f"a{MARK}b", f"k{MARK}": "v"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def _json(value: Any, lone: bool) -> str:
    return json.dumps(value).replace(MARK, LONE if lone else TWIN)


LIST = {"apiVersion": "v1", "kind": "List", "items": [_pod("p1"), _pod("p2")]}
EXCEPTION = {"apiVersion": "policies.kyverno.io/v1", "kind": "PolicyException",
             "metadata": {"name": "p1", "namespace": "default"},
             "spec": {"policyRefs": [{"name": "team", "kind": "ValidatingPolicy"}],
                      "matchConditions": [{"name": "p1", "expression": "object.metadata.name == 'p1' && "
                                                                       f"object.metadata.labels.team == 'a{MARK}b'"}]}}
INPUTS: dict[str, tuple[Callable[[bool], dict[str, str]], list[str]]] = {
    # name -> (the files, written with lone escapes or with what Go reads of them; the arguments)
    "-r": (lambda lone: {"r.json": _json(LIST, lone), "p.json": _json(POLICY, False)},
           ["-p", "p.json", "-r", "r.json"]),
    "--state List": (lambda lone: {"s.json": _json(LIST, lone), "p.json": _json(POLICY, False)},
                     ["-p", "p.json", "--state", "s.json"]),
    "--state objects": (lambda lone: {"s.json": _json(_pod("p1"), lone) + "\n" + _json(_pod("p2"), lone),
                                      "p.json": _json(POLICY, False)}, ["-p", "p.json", "--state", "s.json"]),
    "-p": (lambda lone: {"r.json": _json(LIST, False), "p.json": _json(POLICY, lone)},
           ["-p", "p.json", "-r", "r.json"]),
    "-e": (lambda lone: {"r.json": _json(LIST, False), "p.json": _json(POLICY, False),
                         "e.json": _json(EXCEPTION, lone)},
           ["-p", "p.json", "-e", "e.json", "-r", "r.json"]),
}
FORMATS = {"table": [], "json": ["-o", "json"], "sarif": ["-o", "sarif"]}


def _run(tmp_path: Path, files: dict[str, str], args: list[str], fmt: list[str]) -> Any:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return CliRunner().invoke(cli, ["eval", *args, *fmt, *NOW])


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
@pytest.mark.parametrize("name", INPUTS)
def test_a_lone_surrogate_escape_reads_as_the_replacement_character(
        name: str, fmt: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        streamed_inputs: list[bool]) -> None:
    files, args = INPUTS[name]
    monkeypatch.chdir(tmp_path)   # the same file names in both runs: the locations are the same
    lone = _run(tmp_path, files(True), args, fmt)
    replaced = _run(tmp_path, files(False), args, fmt)
    assert lone.exit_code == replaced.exit_code == 1, lone.output
    assert lone.stdout == replaced.stdout
    assert lone.stderr == replaced.stderr
    # the strings reached the engine and the output: each failing result's message holds them (both Pods'; only
    # p2's with the exception, which applies to p1 when its text and the label's value decode the same)
    if fmt == ["-o", "json"]:
        messages = [r["message"] for r in json.loads(lone.stdout)["results"]]
    elif fmt == ["-o", "sarif"]:
        messages = [r["message"]["text"] for r in json.loads(lone.stdout)["runs"][0]["results"]]
    else:
        messages = lone.stdout.splitlines()
    failing = [m for m in messages if f"team=a{SHOWN}b key=k{SHOWN} says {SHOWN}" in m]
    assert len(failing) == (1 if name == "-e" else 2), messages
    if "--state" in args:   # the List read as it was evaluated, the objects one after another whole
        assert streamed_inputs[0] is (name == "--state List")
