"""Every invalid-policy case of the tests, and a set of valid policies, as the text of one policy file each:
the cases Kyverno's CLI decides in tests/consistency/test_kyverno_policy_validation.py (its verdicts are
recorded in testdata/kyverno-truth/policy-validation.json).

The cases are taken from where the tests define them, so a case added there is a case here (and needs a
verdict of Kyverno's recorded, or the replay fails naming it):
- tests/consistency/test_load_errors.py CASES (CEL, JMESPath, variables, schedules, per kind);
- tests/load/schema_cases.py invalid_cases() and EXTRA (the schema: unknown field, type, enum, required, the
  CRDs' CEL rules, metadata), and VALID (one valid document per kind);
- tests/cli/test_bad_input.py INPUT_ERRORS whose policy file is a bad one;
- tests/classic/test_variable_checks.py (the rules it refuses and allows, built with its own helpers);
- tests/evaluate/test_policy_validation.py TEXT (several bad expressions in one file);
- the valid policies of testdata/examples/policies;
- the policies tests/classic/test_policy_warnings.py expects a warning for (Kyverno only warns: it accepts
  them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Case:
    name: str           # `<origin>:<id>`, unique
    text: str           # the policy file: one or more YAML documents


def _dump(obj: dict[str, Any]) -> str:
    """JSON (a YAML subset): PyYAML writes strings such as `n` unquoted, which Kubernetes' YAML (YAML 1.1, as
    go-yaml v2 reads it) takes for booleans."""
    return json.dumps(obj, indent=2) + "\n"


def _load_errors() -> Iterator[Case]:
    from tests.consistency.test_load_errors import CASES

    for name, (text, *_) in CASES.items():
        yield Case(f"load-errors:{name}", text)


def _schema() -> Iterator[Case]:
    from tests.load.schema_cases import EXTRA, VALID, invalid_cases

    for case, _key, obj, _path in invalid_cases():
        yield Case(f"schema:{case}", _dump(obj))
    for case, (obj, _) in EXTRA.items():
        yield Case(f"schema-extra:{case}", _dump(obj))
    for key, obj in VALID.items():
        yield Case(f"valid-schema:{key}", _dump(obj))


def _bad_input() -> Iterator[Case]:
    from tests.cli.test_bad_input import INPUT_ERRORS, VPOL

    for name, files, *_ in INPUT_ERRORS:
        text = files.get("p.yaml")
        if isinstance(text, str) and text != VPOL:
            yield Case(f"bad-input:{name}", text)
    yield Case("valid-bad-input:VPOL", VPOL)


def _variable_rule(rule: dict[str, Any], background: bool = True) -> str:
    from tests.classic.test_variable_checks import MATCH

    return _dump({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"},
                  "spec": {"background": background, "rules": [{"name": "r", "match": MATCH, **rule}]}})


def _variables() -> Iterator[Case]:
    """The rules tests/classic/test_variable_checks.py gives `_problems`, under the names of its tests."""
    from tests.classic.test_variable_checks import _deny, test_what_kyverno_provides_is_allowed

    mark = getattr(test_what_kyverno_provides_is_allowed, "pytestmark", [])
    allowed = [v for m in mark if m.name == "parametrize" for v in m.args[1]]
    yield Case("variables:jmespath-syntax", _variable_rule(_deny("{{ request.object.metadata.labels.[?? }}")))
    yield Case("variables:undeclared", _variable_rule(
        {"context": [{"name": "cm", "configMap": {"name": "c", "namespace": "n"}},
                     {"name": "v", "variable": {"value": "{{ request.object.metadata.name }}"}}],
         "validate": {"message": "{{ v }} {{ cm.data.a }}",
                      "pattern": {"metadata": {"labels": {"app.kubernetes.io/name": "{{ other.x }}"}}}}}))
    for i, variable in enumerate(allowed):
        yield Case(f"valid-variables:provided-{i}", _variable_rule(_deny(variable)))
    yield Case("valid-variables:foreach-element", _variable_rule(
        {"validate": {"foreach": [{"list": "request.object.spec.containers",
                                   "context": [{"name": "img", "variable": {"value": "{{ element.image }}"}}],
                                   "deny": {"conditions": {"any": [{"key": "{{ img }}", "operator": "Equals",
                                                                    "value": "{{ element.name }}"}]}}}]}}))
    yield Case("variables:element-outside-foreach", _variable_rule(
        {"validate": {"message": "{{ element.name }}", "pattern": {"metadata": {"name": "?*"}}}}))
    yield Case("variables:in-exclude", _variable_rule(
        {"exclude": {"any": [{"resources": {"names": ["{{ request.object.metadata.name }}"]}}]},
         "validate": {"message": "m", "pattern": {"metadata": {"name": "?*"}}}}))
    yield Case("valid-variables:service-account-no-background",
               _variable_rule(_deny("{{ serviceAccountName }}"), background=False))
    yield Case("variables:service-account-background", _variable_rule(_deny("{{ serviceAccountName }}")))
    patch = {"metadata": {"labels": {"owner": "{{ target.metadata.name }}"}}}
    yield Case("valid-variables:target-in-mutate-existing", _variable_rule(
        {"mutate": {"targets": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": "n"}],
                    "patchStrategicMerge": patch}}))
    yield Case("variables:target-outside-mutate-existing", _variable_rule({"mutate": {"patchStrategicMerge": patch}}))
    yield Case("variables:target-in-target-name", _variable_rule(
        {"mutate": {"targets": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "{{ target.x }}"}],
                    "patchStrategicMerge": patch}}))


def _policy_validation() -> Iterator[Case]:
    from tests.evaluate.test_policy_validation import TEXT

    yield Case("policy-validation:multi", TEXT)


def _examples() -> Iterator[Case]:
    for path in sorted((ROOT / "testdata" / "examples" / "policies").glob("*.yaml")):
        yield Case(f"valid-examples:{path.name}", path.read_text())


def _warned() -> Iterator[Case]:
    """The policies tests/classic/test_policy_warnings.py expects a warning for: Kyverno accepts them."""
    from tests.classic.test_policy_warnings import WARNED

    for name, doc, _ in WARNED:
        yield Case(f"valid-warned:{name}", _dump(doc))


def _found_here() -> Iterator[Case]:
    """Cases this comparison found, which no other test defines."""
    from tests.classic.test_policy_warnings import _policy

    # kk: api/kyverno/v1 ImageVerification.Validate: mutateDigest (on by default) with an Audit policy
    yield Case("found:verify-images-mutate-digest-audit", _dump(_policy([{"verifyImages": [
        {"imageReferences": ["ghcr.io/*"], "attestations": [{"type": "https://slsa.dev/provenance/v0.2",
                                                               "conditions": []}]}]}])))


def all_cases() -> list[Case]:
    cases = [*_load_errors(), *_schema(), *_bad_input(), *_variables(), *_policy_validation(), *_examples(),
             *_warned(), *_found_here()]
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names repeat"
    return cases


def case_digest(case: Case) -> str:
    """The case's text as the golden data records it: a changed case needs Kyverno's verdict again."""
    import hashlib

    return hashlib.sha256(case.text.encode()).hexdigest()[:16]


if __name__ == "__main__":
    print(json.dumps([c.name for c in all_cases()], indent=1))
