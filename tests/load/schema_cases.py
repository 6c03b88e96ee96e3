"""One minimal valid document per policy kind kyrec reads, and the refusals the tests of the schema check
(tests/load/test_schema_validation.py, tests/realapi/test_schema_oracle.py) make of them: for each kind an
unknown field, a wrong type, an unsupported value, a missing required field and (where the CRD has one) a
broken CEL rule, each with the field path the API server names."""

from __future__ import annotations

import copy
from typing import Any

RULES = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
MATCH_CONSTRAINTS = {"resourceRules": [RULES]}
CLASSIC_MATCH = {"any": [{"resources": {"kinds": ["Pod"]}}]}


def _doc(api_version: str, kind: str, spec: dict[str, Any], namespaced: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "case"}
    if namespaced:
        meta["namespace"] = "default"
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec}


def _kyverno(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return _doc("policies.kyverno.io/v1", kind, spec, namespaced=kind.startswith("Namespaced"))


VALIDATING = {"matchConstraints": MATCH_CONSTRAINTS, "validations": [{"expression": "true"}]}
GENERATING = {"matchConstraints": MATCH_CONSTRAINTS, "generate": [{"expression": "generator.Apply('x', [])"}]}
MUTATING = {"matchConstraints": MATCH_CONSTRAINTS,
            "mutations": [{"patchType": "ApplyConfiguration",
                           "applyConfiguration": {"expression": "Object{metadata: Object.metadata{}}"}}]}
DELETING = {"matchConstraints": MATCH_CONSTRAINTS, "conditions": [{"name": "c", "expression": "true"}],
            "schedule": "*/5 * * * *"}
IMAGE = {"matchConstraints": MATCH_CONSTRAINTS, "matchImageReferences": [{"glob": "ghcr.io/*"}],
         "attestors": [{"name": "notary", "notary": {"certs": {"value": "x"}}}],
         "validations": [{"expression": "true"}]}
CLASSIC = {"rules": [{"name": "r", "match": CLASSIC_MATCH,
                      "validate": {"message": "m", "pattern": {"metadata": {"labels": {"a": "?*"}}}}}]}

VALID: dict[str, dict[str, Any]] = {
    "ValidatingPolicy": _kyverno("ValidatingPolicy", VALIDATING),
    "NamespacedValidatingPolicy": _kyverno("NamespacedValidatingPolicy", VALIDATING),
    "GeneratingPolicy": _kyverno("GeneratingPolicy", GENERATING),
    "NamespacedGeneratingPolicy": _kyverno("NamespacedGeneratingPolicy", GENERATING),
    "MutatingPolicy": _kyverno("MutatingPolicy", MUTATING),
    "NamespacedMutatingPolicy": _kyverno("NamespacedMutatingPolicy", MUTATING),
    "DeletingPolicy": _kyverno("DeletingPolicy", DELETING),
    "NamespacedDeletingPolicy": _kyverno("NamespacedDeletingPolicy", DELETING),
    "ImageValidatingPolicy": _kyverno("ImageValidatingPolicy", IMAGE),
    "NamespacedImageValidatingPolicy": _kyverno("NamespacedImageValidatingPolicy", IMAGE),
    "policies.kyverno.io/PolicyException": _kyverno(
        "PolicyException", {"policyRefs": [{"name": "p", "kind": "ValidatingPolicy"}],
                            "matchConditions": [{"name": "c", "expression": "true"}]}),
    "ClusterPolicy": _doc("kyverno.io/v1", "ClusterPolicy", CLASSIC),
    "Policy": _doc("kyverno.io/v1", "Policy", CLASSIC, namespaced=True),
    "kyverno.io/PolicyException": _doc(
        "kyverno.io/v2", "PolicyException", {"exceptions": [{"policyName": "p", "ruleNames": ["r"]}],
                                             "match": CLASSIC_MATCH}, namespaced=True),
    "ClusterCleanupPolicy": _doc("kyverno.io/v2", "ClusterCleanupPolicy",
                                 {"match": CLASSIC_MATCH, "schedule": "*/5 * * * *"}),
    "CleanupPolicy": _doc("kyverno.io/v2", "CleanupPolicy", {"match": CLASSIC_MATCH, "schedule": "*/5 * * * *"},
                          namespaced=True),
    "ValidatingAdmissionPolicy": _doc("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy",
                                      {"matchConstraints": MATCH_CONSTRAINTS, "validations": [{"expression": "true"}]}),
    "ValidatingAdmissionPolicyBinding": _doc("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding",
                                             {"policyName": "case", "validationActions": ["Deny"]}),
    "MutatingAdmissionPolicy": _doc(
        "admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy",
        {"matchConstraints": MATCH_CONSTRAINTS, "reinvocationPolicy": "Never",
         "mutations": [{"patchType": "ApplyConfiguration",
                        "applyConfiguration": {"expression": "Object{metadata: Object.metadata{}}"}}]}),
    "MutatingAdmissionPolicyBinding": _doc("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicyBinding",
                                           {"policyName": "case"}),
}

# per kind: (where, value) for a wrong type, an unsupported value, and the required field to remove
WRONG_TYPE = {k: ("spec.failurePolicy", 5) for k in VALID}
WRONG_TYPE.update({
    "GeneratingPolicy": ("spec.generate", "x"), "NamespacedGeneratingPolicy": ("spec.generate", "x"),
    "DeletingPolicy": ("spec.schedule", 5), "NamespacedDeletingPolicy": ("spec.schedule", 5),
    "policies.kyverno.io/PolicyException": ("spec.policyRefs", "p"),
    "kyverno.io/PolicyException": ("spec.background", "yes"),
    "ClusterCleanupPolicy": ("spec.schedule", 5), "CleanupPolicy": ("spec.schedule", 5),
    "ValidatingAdmissionPolicyBinding": ("spec.policyName", 5),
    "MutatingAdmissionPolicyBinding": ("spec.policyName", 5),
})
UNSUPPORTED = {k: ("spec.failurePolicy", "Sometimes") for k in VALID}
UNSUPPORTED.update({
    "GeneratingPolicy": ("spec.generate", [{"template": {"value": "x", "interpolate": "Sometimes"}}]),
    "NamespacedGeneratingPolicy": ("spec.generate", [{"template": {"value": "x", "interpolate": "Sometimes"}}]),
    "DeletingPolicy": ("spec.deletionPropagationPolicy", "Sometimes"),
    "NamespacedDeletingPolicy": ("spec.deletionPropagationPolicy", "Sometimes"),
    "policies.kyverno.io/PolicyException": ("spec.reportResult", "Sometimes"),
    "kyverno.io/PolicyException": ("spec.match.any[0].resources.operations", ["SOMETIMES"]),
    "ClusterCleanupPolicy": ("spec.deletionPropagationPolicy", "Sometimes"),
    "CleanupPolicy": ("spec.deletionPropagationPolicy", "Sometimes"),
    "ValidatingAdmissionPolicyBinding": ("spec.validationActions", ["Sometimes"]),
    "MutatingAdmissionPolicyBinding": ("spec.matchResources.matchPolicy", "Sometimes"),
})
REQUIRED = {
    "ValidatingPolicy": "spec.validations[0].expression",
    "NamespacedValidatingPolicy": "spec.validations[0].expression",
    "GeneratingPolicy": "spec.generate", "NamespacedGeneratingPolicy": "spec.generate",
    "MutatingPolicy": "spec.mutations[0].patchType", "NamespacedMutatingPolicy": "spec.mutations[0].patchType",
    "DeletingPolicy": "spec.schedule", "NamespacedDeletingPolicy": "spec.schedule",
    "ImageValidatingPolicy": "spec.attestors", "NamespacedImageValidatingPolicy": "spec.attestors",
    "policies.kyverno.io/PolicyException": "spec.policyRefs",
    "ClusterPolicy": "spec.rules[0].name", "Policy": "spec.rules[0].name",
    "kyverno.io/PolicyException": "spec.exceptions", "ClusterCleanupPolicy": "spec.schedule",
    "CleanupPolicy": "spec.schedule", "ValidatingAdmissionPolicy": "spec.validations[0].expression",
    "ValidatingAdmissionPolicyBinding": "spec.validationActions",
    "MutatingAdmissionPolicy": "spec.mutations[0].patchType",
    "MutatingAdmissionPolicyBinding": "spec.matchResources.objectSelector.matchExpressions[0].operator",
}
# the CRDs' x-kubernetes-validations: GeneratingPolicy's generate items hold an expression or a template
CEL_RULE = {k: ("spec.generate[0]", {"expression": "generator.Apply('x', [])", "template": {"value": "x"}})
            for k in ("GeneratingPolicy", "NamespacedGeneratingPolicy")}


def _steps(path: str) -> list[str | int]:
    out: list[str | int] = []
    for part in path.split("."):
        name, *indexes = part.split("[")
        out.append(name)
        out.extend(int(i.rstrip("]")) for i in indexes)
    return out


def with_value(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    node: Any = out
    steps = _steps(path)
    for step in steps[:-1]:
        if isinstance(step, str) and step not in node:
            node[step] = {}
        node = node[step]
    node[steps[-1]] = value
    return out


def without(doc: dict[str, Any], path: str) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    node: Any = out
    steps = _steps(path)
    for step in steps[:-1]:
        node = node[step]
    del node[steps[-1]]
    return out


def invalid_cases() -> list[tuple[str, str, dict[str, Any], str]]:
    """(case id, kind key, document, the field path the server names) for every refusal."""
    cases = []
    for key, doc in VALID.items():
        cases.append((f"unknown-{key}", key, with_value(doc, "spec.validation", []), "spec.validation"))
        where, value = WRONG_TYPE[key]
        cases.append((f"type-{key}", key, with_value(doc, where, value), where))
        where, value = UNSUPPORTED[key]
        named = where + "[0]" if isinstance(value, list) else where
        if key.endswith("GeneratingPolicy"):
            named = "spec.generate[0].template.interpolate"
        cases.append((f"enum-{key}", key, with_value(doc, where, value), named))
        if key == "MutatingAdmissionPolicyBinding":
            bound = with_value(doc, "spec.matchResources.objectSelector", {"matchExpressions": [{"key": "a"}]})
            cases.append((f"required-{key}", key, bound, REQUIRED[key]))
        else:
            cases.append((f"required-{key}", key, without(doc, REQUIRED[key]), REQUIRED[key]))
    for key, (where, value) in CEL_RULE.items():
        cases.append((f"cel-{key}", key, with_value(VALID[key], where, value), where))
    return cases


# more of the server's rules, each with the lines the server prints (the ones with `<nil>: ` name no field)
EXTRA: dict[str, tuple[dict[str, Any], list[str]]] = {
    "set-duplicate": (with_value(VALID["ValidatingPolicy"], "spec.validationActions", ["Deny", "Deny"]),
                      ['spec.validationActions[1]: Duplicate value: "Deny"']),
    "map-duplicate": (with_value(VALID["ValidatingPolicy"], "spec.variables",
                                 [{"name": "a", "expression": "1"}, {"name": "a", "expression": "2"}]),
                      ['spec.variables[1]: Duplicate value: {"name":"a"}']),
    "null-item": (with_value(VALID["ValidatingPolicy"], "spec.validations", [None]),
                  ['spec.validations[0]: Invalid value: "null": spec.validations[0] in body must be of type object: '
                   '"null"']),
    "null-field": (with_value(VALID["ValidatingPolicy"], "spec.evaluation", None), []),
    "label-number": (with_value(VALID["ValidatingPolicy"], "metadata.labels", {"a": 1}),
                     ['metadata.labels.a: Invalid value: "integer": metadata.labels.a in body must be of type string: '
                      '"integer"']),
    "number-for-string": (with_value(VALID["DeletingPolicy"], "spec.schedule", 1.5),
                          ['spec.schedule: Invalid value: "number": spec.schedule in body must be of type string: '
                           '"number"']),
    "too-long": (with_value(VALID["ClusterPolicy"], "spec.rules[0].name", "x" * 70),
                 ["spec.rules[0].name: Too long: may not be more than 63 bytes"]),
    "one-of-none": (with_value(VALID["ClusterPolicy"], "spec.rules[0].context", [{"name": "x"}]),
                    ['<nil>: Invalid value: "": "spec.rules[0].context[0]" must validate one and only one schema '
                     "(oneOf). Found none valid", "spec.rules[0].context[0].configMap: Required value"]),
    "one-of-two": (with_value(VALID["ClusterPolicy"], "spec.rules[0].context",
                              [{"name": "x", "variable": {"value": 1}, "configMap": {"name": "a", "namespace": "b"}}]),
                   ['<nil>: Invalid value: "": "spec.rules[0].context[0]" must validate one and only one schema '
                    "(oneOf). Found 2 valid alternatives"]),
    "not-any-and-all": (with_value(VALID["ClusterPolicy"], "spec.rules[0].exclude",
                                   {"any": [{"resources": {"kinds": ["Pod"]}}],
                                    "all": [{"resources": {"kinds": ["Pod"]}}]}),
                        ['<nil>: Invalid value: "": "spec.rules[0].exclude" must not validate the schema (not)']),
    "vap-null-item": (with_value(VALID["ValidatingAdmissionPolicy"], "spec.validations", [None]),
                      ["spec.validations[0].expression: Required value"]),
    "vap-duplicate-variables": (with_value(VALID["ValidatingAdmissionPolicy"], "spec.variables",
                                           [{"name": "a", "expression": "1"}, {"name": "a", "expression": "2"}]), []),
    "vap-operation": (with_value(VALID["ValidatingAdmissionPolicy"],
                                 "spec.matchConstraints.resourceRules[0].operations", ["NOPE"]),
                      ['spec.matchConstraints.resourceRules[0].operations[0]: Unsupported value: "NOPE": supported '
                       'values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"']),
}

# apimachinery's messages (k8s.io/apimachinery/pkg/util/validation), as the server printed them
_SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
              "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
              "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
_NAME_PART = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
              "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
              "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
_LABEL_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
                "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
                "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
EXTRA.update({
    "name-not-a-subdomain": (with_value(VALID["ValidatingPolicy"], "metadata.name", "Bad_Name"),
                             [f'metadata.name: Invalid value: "Bad_Name": {_SUBDOMAIN}']),
    "name-too-long": (with_value(VALID["ClusterPolicy"], "metadata.name", "x" * 254),
                      [f'metadata.name: Invalid value: "{"x" * 254}": must be no more than 253 characters']),
    "no-name": (with_value(VALID["ClusterPolicy"], "metadata", {"labels": {"a": "b"}}),
                ["metadata.name: Required value: name or generateName is required"]),
    "label-key-and-value": (with_value(VALID["ValidatingPolicy"], "metadata.labels", {"a b": "c d", "/a": "x" * 64}),
                            [f'metadata.labels: Invalid value: "a b": {_NAME_PART}',
                             f'metadata.labels: Invalid value: "c d": {_LABEL_VALUE}',
                             'metadata.labels: Invalid value: "/a": prefix part must be non-empty',
                             f'metadata.labels: Invalid value: "{"x" * 64}": must be no more than 63 bytes']),
    "annotation-key": (with_value(VALID["ValidatingAdmissionPolicy"], "metadata.annotations", {"Bad Key": "x"}),
                       [f'metadata.annotations: Invalid value: "Bad Key": {_NAME_PART}']),
})
EXTRA.update({
    # the status is reset on create: its values are not checked, its unknown fields are (strict decoding)
    "status-unknown": (with_value(VALID["ValidatingPolicy"], "status", {"foo": 1, "generated": True}),
                       ['strict decoding error: unknown field "status.foo"']),
    "status-values": (with_value(VALID["ValidatingPolicy"], "status", {"generated": "x"}), []),
    # Kubernetes' own kinds decode their status as Go: a wrong type is refused
    "vap-status-type": (with_value(VALID["ValidatingAdmissionPolicy"], "status", {"conditions": "x"}),
                        ['status.conditions: Invalid value: "string": status.conditions in body must be of type array: '
                         '"string"']),
})
EXTRA["too-few-items"] = (with_value(VALID["GeneratingPolicy"], "spec.generate", []),
                          ["spec.generate: Invalid value: 0: spec.generate in body should have at least 1 items"])
EXTRA["int32-overflow"] = (
    with_value(VALID["ValidatingPolicy"], "spec.webhookConfiguration", {"timeoutSeconds": 2**31}),
    ['<nil>: Invalid value: "": Checked value must be of type integer with format int32 in '
     "spec.webhookConfiguration.timeoutSeconds"])
