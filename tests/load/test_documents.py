import io
import json
import random
from pathlib import Path

import pytest
import yaml

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.documents import documents_from_text, load_documents, load_documents_with_lines
from kubectl_kyrec.load.files import read_text
from kubectl_kyrec.model import Source


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def one(text: str) -> dict:
    docs = documents_from_text(text, "t.yaml")
    assert len(docs) == 1
    return docs[0].obj


def error_of(text: str, name: str = "bad.yaml") -> InputError:
    with pytest.raises(InputError) as info:
        documents_from_text(text, name)
    return info.value


MULTI = """\
# leading comment
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: first
---
---

# an empty document above and a comment-only one here
---
apiVersion: v1
kind: Secret
metadata: {name: second}
--- null
---
  apiVersion: v1
  kind: Namespace
  metadata:
    name: third
"""


def test_multi_document_sources_are_the_line_of_each_first_key(tmp_path: Path) -> None:
    path = write(tmp_path / "multi.yaml", MULTI)
    docs = load_documents([path])
    assert [(d.kind, d.name) for d in docs] == [("ConfigMap", "first"), ("Secret", "second"),
                                               ("Namespace", "third")]
    assert [d.source for d in docs] == [Source(path, 3), Source(path, 12), Source(path, 17)]


def test_yaml_1_1_booleans_like_kubectl() -> None:
    obj = one("apiVersion: v1\nkind: ConfigMap\ndata:\n"
              "  a: yes\n  b: on\n  c: Off\n  d: NO\n  e: y\n  f: N\n  g: 'yes'\n  h: \"on\"\n  i: True\n"
              "  j: tRuE\n  k: !!str yes\n")
    assert obj["data"] == {"a": True, "b": True, "c": False, "d": False, "e": True, "f": False,
                           "g": "yes", "h": "on", "i": True, "j": "tRuE", "k": "yes"}


def test_boolean_and_number_keys_become_json_strings() -> None:
    obj = one("apiVersion: v1\nkind: X\non: 1\n3: a\n1.5: b\noff: c\n")
    assert list(obj) == ["apiVersion", "kind", "true", "3", "1.5", "false"]


def test_timestamps_stay_strings() -> None:
    obj = one("apiVersion: v1\nkind: X\nmetadata:\n  creationTimestamp: 2024-01-01T00:00:00Z\n"
              "spec:\n  day: 2024-01-01\n  spaced: 2001-12-14 21:59:43.10\n  quoted: '2024-01-01'\n")
    assert obj["metadata"]["creationTimestamp"] == "2024-01-01T00:00:00Z"
    assert obj["spec"] == {"day": "2024-01-01", "spaced": "2001-12-14 21:59:43.10", "quoted": "2024-01-01"}


def test_numbers_follow_go_yaml_and_the_json_round_trip() -> None:
    obj = one("apiVersion: v1\nkind: X\nspec:\n"
              "  replicas: 3\n  ratio: 1.5\n  whole: 1.0\n  exp: 1e3\n  half: .5\n  neg: -0.25\n"
              "  hex: 0x1F\n  octal: 0777\n  octal_o: 0o17\n  binary: 0b101\n  under: 1_000\n  plus: +7\n"
              "  sexagesimal: 1:30\n  huge: 99999999999999999999\n  quoted: '3'\n  word: 12abc\n"
              "  nine: 09\n  empty:\n  tilde: ~\n")
    spec = obj["spec"]
    assert spec == {"replicas": 3, "ratio": 1.5, "whole": 1, "exp": 1000, "half": 0.5, "neg": -0.25,
                    "hex": 31, "octal": 511, "octal_o": 15, "binary": 5, "under": 1000, "plus": 7,
                    "sexagesimal": "1:30", "huge": 1e20, "quoted": "3", "word": "12abc", "nine": 9,
                    "empty": None, "tilde": None}
    assert type(spec["replicas"]) is int and type(spec["whole"]) is int and type(spec["exp"]) is int
    assert type(spec["ratio"]) is float and type(spec["huge"]) is float


def test_values_are_plain_python_types() -> None:
    obj = one("apiVersion: v1\nkind: X\nspec:\n  a: [1, x, {b: c}]\n  t: 2024-01-01T00:00:00Z\n"
              "  s: |\n    x\n")
    spec = obj["spec"]
    assert type(obj) is dict and type(spec) is dict and type(spec["a"]) is list
    assert type(spec["a"][1]) is str and type(spec["a"][2]) is dict and type(spec["t"]) is str
    assert spec["s"] == "x\n"


def test_key_order_is_kept() -> None:
    obj = one("kind: X\napiVersion: v1\nspec:\n  zeta: 1\n  alpha: 2\n  mid: {z: 1, a: 2}\nmetadata: {}\n")
    assert list(obj) == ["kind", "apiVersion", "spec", "metadata"]
    assert list(obj["spec"]) == ["zeta", "alpha", "mid"]
    assert list(obj["spec"]["mid"]) == ["z", "a"]


def test_merge_keys_and_aliases_expand_to_independent_copies() -> None:
    obj = one("apiVersion: v1\nkind: X\nbase: &b {a: 1, b: 2}\nspec:\n  <<: *b\n  b: 3\n  c: *b\n")
    assert obj["spec"] == {"a": 1, "b": 3, "c": {"a": 1, "b": 2}}
    obj["spec"]["c"]["a"] = 99
    assert obj["base"]["a"] == 1


def test_list_kinds_are_expanded_with_each_items_line() -> None:
    docs = documents_from_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: v1\n  kind: Pod\n  metadata: {name: a}\n"
        "- apiVersion: v1\n  kind: List\n  items:\n"
        "  - apiVersion: v1\n    kind: Pod\n    metadata: {name: b}\n"
        "---\napiVersion: apps/v1\nkind: DeploymentList\nitems:\n- metadata: {name: c}\n"
        "---\napiVersion: v1\nkind: List\n", "list.yaml")
    assert [(d.api_version, d.kind, d.name, d.source.line) for d in docs] == [
        ("v1", "Pod", "a", 4), ("v1", "Pod", "b", 10), ("apps/v1", "Deployment", "c", 17)]


def test_directories_are_walked_recursively_in_kubectl_order(tmp_path: Path) -> None:
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}\n"
    write(tmp_path / "b.yaml", cm.format("b"))
    write(tmp_path / "a" / "z.yml", cm.format("a-z"))
    write(tmp_path / "a" / "sub" / "x.json", json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                                         "metadata": {"name": "a-sub-x"}}))
    write(tmp_path / "a.yaml", cm.format("a-file"))
    write(tmp_path / "notes.txt", "not: a manifest")
    write(tmp_path / ".git" / "config.yaml", "this: is not loaded")
    write(tmp_path / ".kyverno-test" / "r.yaml", cm.format("hidden-dir"))
    names = [d.name for d in load_documents([str(tmp_path)])]
    assert names == ["hidden-dir", "a-sub-x", "a-z", "a-file", "b"]


def test_a_file_named_explicitly_is_read_whatever_its_extension(tmp_path: Path) -> None:
    path = write(tmp_path / "manifest.txt", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: t}\n")
    assert [d.name for d in load_documents([path])] == ["t"]


def test_stdin_yaml_and_json() -> None:
    stdin = io.StringIO("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: why}\n")
    docs = load_documents(["-"], stdin=stdin)
    assert [(d.name, d.source) for d in docs] == [("why", Source("<stdin>", 1))]
    docs = load_documents(["-"], stdin=io.StringIO(
        '\n{\n  "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}, "on": "yes"}\n'
        '{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "k"}}'))
    assert [(d.name, d.source) for d in docs] == [("j", Source("<stdin>", 3)), ("k", Source("<stdin>", 4))]
    assert docs[0].obj["on"] == "yes"  # JSON strings are strings, and JSON keys are never booleans


def test_json_and_yaml_give_the_same_objects(tmp_path: Path) -> None:
    objs = [{"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": f"d{i}", "labels": {"app": "x", "on": "yes"},
                          "creationTimestamp": "2024-01-01T00:00:00Z"},
             "spec": {"replicas": i, "ratio": 0.25, "flag": i % 2 == 0, "none": None,
                      "list": ["1", 2, "2024-01-01", "0x10", "on"]}} for i in range(3)]
    jpath = write(tmp_path / "l.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    ypath = write(tmp_path / "l.yaml", yaml.safe_dump_all(objs, sort_keys=False))
    from_json = [d.obj for d in load_documents([jpath])]
    from_yaml = [d.obj for d in load_documents([ypath])]
    assert from_json == from_yaml == objs
    assert [list(o["metadata"]) for o in from_yaml] == [list(o["metadata"]) for o in objs]


def test_json_integral_floats_become_ints_as_kubectl_sends_them() -> None:
    obj = one('{"apiVersion": "v1", "kind": "X", "a": 1.0, "b": 2.5, "c": 1e3}')
    assert obj == {"apiVersion": "v1", "kind": "X", "a": 1, "b": 2.5, "c": 1000}
    assert type(obj["a"]) is int


def test_flow_yaml_that_looks_like_json_is_still_read_as_yaml() -> None:
    assert one("{apiVersion: v1, kind: X, a: yes}") == {"apiVersion": "v1", "kind": "X", "a": True}


def test_line_index_finds_nested_fields(tmp_path: Path) -> None:
    path = write(tmp_path / "p.yaml", "apiVersion: v1\nkind: List\nitems:\n"
                 "- apiVersion: policies.kyverno.io/v1\n  kind: ValidatingPolicy\n  metadata:\n    name: p\n"
                 "  spec:\n    validations:\n    - expression: 'true'\n"
                 "    - message: m\n      expression: x\n")
    [located] = load_documents_with_lines([path])
    lines = located.lines
    assert located.document.source == Source(path, 4)
    assert lines.line_of(()) == 4
    assert lines.line_of(("spec", "validations")) == 9
    assert lines.line_of(("spec", "validations", 1)) == 11
    assert lines.line_of(("spec", "validations", 1, "expression")) == 12
    assert lines.line_of(("spec", "validations", 7, "expression")) == 9   # deepest ancestor found
    assert lines.line_of(("metadata", "name")) == 7


def test_invalid_yaml_names_the_line_of_the_problem() -> None:
    err = error_of("apiVersion: v1\nkind: X\nspec:\n  a: [1, 2\n  b: 3\n")
    assert err.source == Source("bad.yaml", 5)
    assert str(err).startswith("bad.yaml:5: invalid YAML: did not find expected ',' or ']'")
    assert "started at line 4" in str(err)
    assert "\n" not in str(err)


def test_a_document_that_is_not_a_mapping() -> None:
    err = error_of("apiVersion: v1\nkind: X\n---\n- a\n- b\n")
    assert str(err) == "bad.yaml:4: document is a sequence, not a mapping (a Kubernetes object)"
    assert str(error_of("--- just text\n")) == (
        "bad.yaml:1: document is a string, not a mapping (a Kubernetes object)")


def test_missing_api_version_or_kind() -> None:
    assert str(error_of("---\n\nkind: Pod\nmetadata: {}\n")) == "bad.yaml:3: missing apiVersion"
    assert str(error_of("apiVersion: v1\nkind: ''\n")) == "bad.yaml:1: missing kind"
    assert str(error_of("apiVersion: 1\nkind: Pod\n")) == (
        "bad.yaml:1: apiVersion must be a string, not a number")
    assert str(error_of("apiVersion: v1\nkind: List\nitems:\n- {kind: Pod}\n")) == (
        "bad.yaml:4: missing apiVersion")


def test_duplicate_keys_are_refused_like_kubectl() -> None:
    err = error_of("apiVersion: v1\nkind: X\nspec:\n  a: 1\n  b: 2\n  a: 3\n")
    assert str(err) == 'bad.yaml:6: duplicate key "a" (first at line 4)'


def test_nan_and_infinity_are_refused() -> None:
    assert str(error_of("apiVersion: v1\nkind: X\nx: .inf\n")) == (
        "bad.yaml:3: `.inf` is not a JSON number (NaN and infinities are not)")
    err = error_of('{"apiVersion": "v1", "kind": "X", "x": NaN}', "bad.json")
    assert str(err) == "bad.json:1: invalid JSON: NaN is not valid JSON"


def test_invalid_json_file_names_line_and_column() -> None:
    err = error_of('{\n  "apiVersion": "v1",\n  "kind": "X",,\n}\n', "bad.json")
    assert err.source == Source("bad.json", 3)
    assert "invalid JSON: Expecting property name enclosed in double quotes (column 15)" in str(err)


def test_self_referencing_anchor_is_refused() -> None:
    assert str(error_of("apiVersion: v1\nkind: X\na: &a [1, *a]\n")) == (
        "bad.yaml:3: anchor value contains an alias to itself")


def test_alias_bomb_is_refused_quickly() -> None:
    lines = ["apiVersion: v1", "kind: X", "a: &a [" + ", ".join(['"lol"'] * 9) + "]"]
    for i in range(1, 10):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    # Fully expanded this is 9**10 (3.5 billion) strings: being refused at all shows the bound works.
    err = error_of("\n".join(lines) + "\n")
    assert err.source == Source("bad.yaml", 1)
    assert "document contains excessive aliasing" in str(err)
    assert "refusing to expand it" in str(err)


def test_moderate_aliasing_is_allowed() -> None:
    obj = one("apiVersion: v1\nkind: X\nbase: &b {x: [1, 2, 3]}\n"
              + "".join(f"k{i}: *b\n" for i in range(50)))
    assert obj["k49"] == {"x": [1, 2, 3]}


def test_nonexistent_path() -> None:
    with pytest.raises(InputError) as info:
        load_documents(["/nonexistent/policy.yaml"])
    assert str(info.value) == "/nonexistent/policy.yaml: no such file or directory"


def test_unreadable_path(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        read_text(str(tmp_path))
    assert str(info.value) == f"{tmp_path}: cannot read: is a directory"


def test_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"apiVersion: v1\nkind: ConfigMap\ndata:\n  name: caf\xe9\n")
    with pytest.raises(InputError) as info:
        load_documents([str(path)])
    assert str(info.value) == f"{path}:4: not valid UTF-8: byte 0xe9 at column 12"


def test_utf8_bom_and_utf16_are_accepted(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: é}\n"
    (tmp_path / "bom.yaml").write_bytes(b"\xef\xbb\xbf" + text.encode())
    (tmp_path / "u16.yaml").write_bytes(text.encode("utf-16"))
    assert [d.name for d in load_documents([str(tmp_path)])] == ["é", "é"]


def test_errors_can_be_collected_while_loading_goes_on(tmp_path: Path) -> None:
    good = write(tmp_path / "good.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n"
                 "---\nkind: NoVersion\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\n")
    broken = write(tmp_path / "broken.yaml", "apiVersion: v1\nkind: X\n---\na: [\n")
    errors: list[InputError] = []
    docs = load_documents([good, "/nope.yaml", broken], errors=errors)
    assert [d.name for d in docs] == ["ok", "s", ""]
    assert [str(e).split(": ")[0] for e in errors] == [f"{good}:5", "/nope.yaml", f"{broken}:5"]


def test_control_characters_are_reported_with_their_line() -> None:
    assert str(error_of("apiVersion: v1\nkind: X\na: \x01b\n")) == (
        "bad.yaml:3: invalid YAML: unacceptable character #x0001: control characters are not allowed")


def test_mangled_input_only_ever_raises_one_line_input_errors() -> None:
    # Seeded mutations of valid YAML and JSON: whatever the damage, never a traceback.
    bases = ["apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n"
             "  metadata: &m {name: a, labels: {on: yes}}\n- apiVersion: v1\n  kind: Pod\n  metadata: *m\n"
             "  spec:\n    <<: *m\n    x: [1, 2.0, 0x1F, !!int '3', !!binary aGk=, !!float 1]\n",
             json.dumps({"apiVersion": "v1", "kind": "List",
                         "items": [{"apiVersion": "v1", "kind": "Pod", "n": [1, 1.5, None, True]}]}, indent=2)]
    pieces = [*"{}[]:,-&*!|>'\"#%@`?\n\t ~.0189eE+yN<\\\x00", "---\n", "!!int ", "<<: ", "&a ", "*a", "? "]
    rng = random.Random(1234)
    raised = 0
    for _ in range(1500):
        text = list(rng.choice(bases))
        for _ in range(rng.randint(1, 6)):
            pos = rng.randrange(len(text))
            if rng.random() < 0.5:
                text.insert(pos, rng.choice(pieces))
            else:
                text[pos] = rng.choice(pieces)
        try:
            documents_from_text("".join(text), "m.yaml")
        except InputError as err:
            raised += 1
            assert "\n" not in str(err) and str(err).startswith("m.yaml")
    assert raised > 500  # the mutations did break most inputs, so the error paths were exercised
