"""Loading kyverno.io ClusterPolicy / Policy / PolicyException documents."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.documents import documents_from_text
from kubectl_kyrec.load.policy.policies import PolicySet, classify


def _classify(text: str) -> PolicySet:
    return classify(documents_from_text(text, "p.yaml")).raise_errors()


POLICY = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-labels
  annotations:
    policies.kyverno.io/category: Best Practices
spec:
  validationFailureAction: enforce
  rules:
  - name: check
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: label required
      pattern:
        metadata:
          labels:
            app: "?*"
  - name: add
    match:
      resources:
        kinds: [Pod]
    mutate:
      patchStrategicMerge: {}
"""


def test_cluster_policy_is_classified_with_its_rules() -> None:
    ps = _classify(POLICY)
    assert not ps.others and len(ps.classic) == 1
    policy = ps.classic[0]
    assert policy.meta.key == "require-labels"
    assert policy.source_kind == "kyverno"
    # the CRD accepts lower-case actions; Kyverno treats them as Enforce
    assert policy.validation_failure_action == "Enforce"
    assert [(r.name, r.type, r.validate_kind) for r in policy.rules] == [("check", "validate", "pattern"),
                                                                         ("add", "mutate", "")]
    assert policy.background and policy.admission and policy.apply_rules == "All"
    assert policy.meta.category == "Best Practices"


def test_policy_lands_in_default_and_is_keyed_ns_name() -> None:
    ps = _classify(POLICY.replace("kind: ClusterPolicy", "kind: Policy"))
    assert ps.classic[0].meta.key == "default/require-labels"


def test_v2beta1_is_read_as_the_cli_does() -> None:
    ps = _classify(POLICY.replace("kyverno.io/v1", "kyverno.io/v2beta1"))
    assert len(ps.classic) == 1


@pytest.mark.parametrize(("change", "message"), [
    (("kyverno.io/v1", "kyverno.io/v9"), "unknown version 'kyverno.io/v9'"),
    (("validationFailureAction: enforce", "validationFailureAction: block"), "spec.validationFailureAction"),
    (("  - name: add\n", "  - name: check\n"), "Duplicate rule name: 'check'"),
    (("    mutate:\n      patchStrategicMerge: {}\n", ""), "must have exactly one of"),
    (("      any:\n      - resources:\n          kinds: [Pod]\n",
      "      any:\n      - resources:\n          kinds: Pod\n"), "spec.rules[0].match.any[0].resources.kinds"),
])
def test_bad_shapes_name_the_field(change: tuple[str, str], message: str) -> None:
    with pytest.raises(InputError) as info:
        _classify(POLICY.replace(*change))
    assert message in str(info.value)
    assert info.value.source is not None and info.value.source.file == "p.yaml"


def test_bad_field_error_points_at_its_line() -> None:
    from kubectl_kyrec.load.documents import load_documents_with_lines

    text = POLICY.replace("kinds: [Pod]\n    validate", "kinds: Pod\n    validate")
    import os
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.yaml")
        with open(path, "w") as fh:
            fh.write(text)
        located = load_documents_with_lines([path])
        lines = {d.document.source: d.lines for d in located}
        with pytest.raises(InputError) as info:
            classify([d.document for d in located], lines).raise_errors()
        err = info.value
    assert err.source is not None and err.source.line == 14   # the `kinds: Pod` line


def test_policy_exception_v2() -> None:
    ps = _classify("""\
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: ex, namespace: team}
spec:
  exceptions:
  - policyName: require-labels
    ruleNames: [check, autogen-check]
  match:
    any:
    - resources:
        kinds: [Pod]
        namespaces: [team]
""")
    exc = ps.classic_exceptions[0]
    assert exc.key == "team/ex"
    assert exc.contains("require-labels", "autogen-check")
    assert not exc.contains("require-labels", "other")
    assert not exc.contains("other", "check")


_USER_EXCEPTION = """\
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {{name: ex, namespace: team}}
spec:
{background}  exceptions:
  - policyName: require-labels
    ruleNames: [check]
  match:
    any:
    - resources:
        kinds: [Pod]
      subjects:
      - kind: User
        name: chip
"""


def test_a_background_exception_matching_on_users_is_refused_as_kyvernos_webhook_does() -> None:
    with pytest.raises(InputError) as info:
        _classify(_USER_EXCEPTION.format(background=""))
    assert "spec.match.any[0].subjects" in str(info.value)
    assert "Usage of user info is forbidden" in str(info.value)
    exc = _classify(_USER_EXCEPTION.format(background="  background: false\n")).classic_exceptions[0]
    assert not exc.background


def test_a_cel_rule_that_does_not_compile_names_the_line_of_its_expression(tmp_path: Any) -> None:
    import datetime

    from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
    from kubectl_kyrec.cel.libraries import library_factory
    from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
    from kubectl_kyrec.load.documents import load_documents_with_lines
    from kubectl_kyrec.load.run_inputs.kinds import KindTable

    path = tmp_path / "p.yaml"
    path.write_text(POLICY.replace("""      pattern:
        metadata:
          labels:
            app: "?*"
""", """      cel:
        expressions:
        - expression: "object.spec.containers.all(c, "
"""))
    located = load_documents_with_lines([str(path)])
    policies = classify([d.document for d in located], {d.document.source: d.lines for d in located})
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    outcome = run_eval(policies, documents_from_text(POD, "r.yaml"), [], kinds=KindTable(),
                       libraries=library_factory(LibraryContext(now=now, provider=EmptyProvider())),
                       options=EvalOptions(now=now))
    [error] = outcome.errors
    assert error.source is not None and error.source.line == 19      # the `- expression:` line
    assert "spec.rules[0].validate.cel.expressions[0].expression" in error.message
    assert outcome.results == []     # a policy that does not compile gives no results


POD = """\
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: d}
spec: {containers: [{name: c, image: nginx}]}
"""
