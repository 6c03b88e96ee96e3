"""GeneratingPolicy documents -> typed policies: defaults, versions, and what Kyverno's webhook refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.policy.generating import parse_generating_policy
from tests.generating.gen_support import CORPUS, docs
from tests.shared_inputs import present

CONFORMANCE = CORPUS / "kyverno-conformance" / "generating-policies"

BASE = """
apiVersion: policies.kyverno.io/{version}
kind: {kind}
metadata:
  name: p
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [namespaces]
  generate:
  - expression: "true"
"""


def test_defaults() -> None:
    policy = parse_generating_policy(docs(BASE.format(version="v1", kind="GeneratingPolicy"))[0])
    assert (policy.admission, policy.generate_existing, policy.synchronize, policy.orphan_on_policy_delete,
            policy.skip_background_requests, policy.use_server_side_apply) == (True, False, False, False, True,
                                                                               False)
    assert policy.generate[0].expression == "true" and policy.generate[0].template is None
    assert not policy.namespaced and policy.key == "p"


def test_evaluation_flags_are_read() -> None:
    text = BASE.format(version="v1beta1", kind="GeneratingPolicy") + """  evaluation:
    synchronize: {enabled: true}
    generateExisting: {enabled: true}
    orphanDownstreamOnPolicyDelete: {enabled: true}
    admission: {enabled: false}
  useServerSideApply: true
"""
    policy = parse_generating_policy(docs(text)[0])
    assert policy.synchronize and policy.generate_existing and policy.orphan_on_policy_delete
    assert not policy.admission and policy.use_server_side_apply


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1", "v1"])
def test_cluster_policy_versions(version: str) -> None:
    assert parse_generating_policy(docs(BASE.format(version=version, kind="GeneratingPolicy"))[0]).name == "p"


def test_namespaced_policy_has_no_v1alpha1_and_defaults_its_namespace() -> None:
    with pytest.raises(InputError, match="unknown version"):
        parse_generating_policy(docs(BASE.format(version="v1alpha1", kind="NamespacedGeneratingPolicy"))[0])
    policy = parse_generating_policy(docs(BASE.format(version="v1", kind="NamespacedGeneratingPolicy"))[0])
    assert policy.namespaced and policy.meta.namespace == "default" and policy.key == "default/p"


def test_template_entry() -> None:
    text = BASE.format(version="v1", kind="GeneratingPolicy").replace(
        '  - expression: "true"', "  - template:\n      interpolate: cel\n      value: 'a: b'")
    gen = parse_generating_policy(docs(text)[0]).generate[0]
    assert gen.template is not None and gen.template.interpolate == "cel" and gen.expression == ""


@pytest.mark.parametrize("replacement, message", [
    ("  - expression: \"true\"\n    template: {value: 'a: b'}", "exactly one of expression or template"),
    ("  - {}", "exactly one of expression or template"),
    ("  - template: {value: 'a: b', interpolate: go}", "Unsupported value: 'go'"),
])
def test_bad_generate_entries(replacement: str, message: str) -> None:
    text = BASE.format(version="v1", kind="GeneratingPolicy").replace('  - expression: "true"', replacement)
    with pytest.raises(InputError, match=message):
        parse_generating_policy(docs(text)[0])


def test_errors_name_file_line_and_field() -> None:
    text = BASE.format(version="v1", kind="GeneratingPolicy").replace("  generate:\n  - expression: \"true\"\n", "")
    with pytest.raises(InputError) as info:
        parse_generating_policy(docs(text, "pol.yaml")[0])
    assert str(info.value) == "pol.yaml:2: GeneratingPolicy \"p\": spec.generate: Required value"


@present(CONFORMANCE, "conformance GeneratingPolicy validation cases")
@pytest.mark.parametrize("case, message", [
    ("missing-generate", "spec.generate: Required value"),
    ("missing-match-constraints", "spec.matchConstraints: Required value: a matchConstraints with at least "
                                  "one resource rule is required"),
])
def test_conformance_invalid_policies(case: str, message: str) -> None:
    path: Path = CONFORMANCE / "validate" / case / "policy.yaml"
    with pytest.raises(InputError, match=message):
        parse_generating_policy(docs(path.read_text(), str(path))[0])
