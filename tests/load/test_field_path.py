"""field_path reads the field paths errors name, so that PolicySet.locate finds the field's line."""

from __future__ import annotations

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.documents import load_documents_with_lines
from kubectl_kyrec.load.policy.policies import classify, field_path


def test_indexes_and_bracketed_keys() -> None:
    assert field_path("spec.validations[2].expression") == ["spec", "validations", 2, "expression"]
    # a map key with dots and slashes, bracketed as Kubernetes writes it, is one step
    assert field_path("spec.rules[0].validate.pattern.metadata.labels[app.kubernetes.io/name]") == [
        "spec", "rules", 0, "validate", "pattern", "metadata", "labels", "app.kubernetes.io/name"]


def test_an_error_at_a_dotted_label_key_is_located_at_its_line(tmp_path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: p\nspec:\n  rules:\n"
                      "  - name: r\n    match:\n      any:\n      - resources:\n          kinds: [Pod]\n"
                      "    validate:\n      pattern:\n        metadata:\n          labels:\n"
                      "            team: x\n            app.kubernetes.io/name: y\n")
    located = load_documents_with_lines([str(policy)])
    policies = classify([d.document for d in located], {d.document.source: d.lines for d in located})
    source = policies.classic[0].meta.source
    error = InputError("m", source, "spec.rules[0].validate.pattern.metadata.labels[app.kubernetes.io/name]")
    assert policies.locate(error).source.line == 17
