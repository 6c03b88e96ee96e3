"""Go emulation lives in golang/ only (docs/architecture.md#layers-and-what-each-owns: one place per concept): no module
elsewhere defines a
function under the name of one of golang's, or under a name its old copies had."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "kubectl_kyrec"
GOLANG = PACKAGE / "golang"
# names the copies golang/ replaced went by (a leading underscore is ignored when comparing)
FORMER_COPIES = {"go_quote", "go_print", "json_roundtrip", "rfc3339", "rfc3339nano", "go_float32_g",
                 "format_float_f32", "format_float_upper_e", "wildcard_match", "wildcard_regex", "quote_char",
                 "go_format_v", "go_value_text",
                 # expect/resource_hash.py's encoder, merged into golang.json.marshal
                 "go_json", "go_float", "go_encode"}
# names too common to claim (other concepts own functions called so)
GENERIC = {"match", "truncate",
           # the DER reader's element accessors (golang/der.py), read as `der.read`, `der.text`, ...
           "read", "expect", "boolean", "text", "time",
           # blang/semver's Parse and Compare (golang/semver.py)
           "parse", "compare",
           # goregen's (golang/regen.py), and Kyverno's generate rules
           "generate",
           # net/url's URL.Query (golang/url.py), and the JMESPath engine's queries
           "query",
           # an input document decoded with Go's strings (golang/json.py), and the result records' own
           # decoding (evaluate/pipeline.py: marshal or pickle)
           "loads",
           # the YAML loader words its own syntax errors (load/yaml_nodes.py)
           "syntax_error"}
# definitions outside golang/ under a claimed name, each with why it is not a copy
ALLOWED = {
    # metav1.Time's form: converts to UTC and calls golang.time.format_rfc3339
    ("k8s/times.py", "format_rfc3339"),
    # the Kubernetes decoder's integral-float-to-int64 step, not a Go any round trip (numbers stay ints)
    ("classic/variables.py", "_json_roundtrip"),
    # Python's json round trip the classic context store keeps: ints stay ints (the classic engine's
    # stand-in for integral float64), NaN passes; golang.json.roundtrip makes every number a float64
    # and refuses NaN, so the two are not one yet
    ("classic/context_loader.py", "_json_roundtrip"),
    # the CEL findAll binding: compiles the pattern as a CEL error, then calls golang.regexp.find_all
    ("cel/k8s_regex.py", "_find_all"),
    # the JMESPath x509_decode: golang.x509.x509_decode plus the x509.Certificate fields the CEL form leaves out
    ("classic/x509_certificate.py", "x509_decode"),
    # Go structs (fields in declaration order, strings only), which golang.json.marshal (maps: keys sorted)
    # does not write; the same escapes as golang.json.marshal_string
    ("classic/podsecurity.py", "_go_json"),
    # compact text Kyverno searches for words (`replicas`, `"status":`, `{{...}}`), never compared whole
    ("classic/policy_warnings.py", "_go_json"),
    # the JSON stream reader's parse_float hook (Python's json), not strconv.ParseFloat
    ("load/json_stream.py", "_parse_float"),
}


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def _claimed() -> set[str]:
    names = {n.name for p in GOLANG.glob("*.py") for n in ast.parse(p.read_text()).body
             if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}
    return (names - GENERIC) | FORMER_COPIES


def test_golang_imports_nothing_of_kyrec_outside_itself() -> None:
    # but errors.py, the one layer below: a Go error on user data is an EngineError, which the engines
    # turn into an `error` result (anything else raised in an engine is exit 70)
    for path in GOLANG.glob("*.py"):
        tree = ast.parse(path.read_text())
        modules = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        modules += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        outside = [m for m in modules if m.startswith("kubectl_kyrec")
                   and not m.startswith("kubectl_kyrec.golang") and m != "kubectl_kyrec.errors"]
        assert outside == [], path.name


def test_no_second_definition_of_a_go_helper() -> None:
    claimed = _claimed()
    found = sorted((p.relative_to(PACKAGE).as_posix(), name)
                   for p in PACKAGE.rglob("*.py") if GOLANG not in p.parents
                   for name in _functions(p) if name.lstrip("_") in claimed)
    assert [f for f in found if f not in ALLOWED] == []
    # an allowance whose definition is gone is stale
    assert sorted(ALLOWED - set(found)) == []
