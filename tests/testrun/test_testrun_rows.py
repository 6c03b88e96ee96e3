"""Deciding rows (kubectl_kyrec.testsuite.rows), on in-memory suites: no files, no CLI."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from typing import Any

import pytest

from kubectl_kyrec.cel.decl import Library
from kubectl_kyrec.cel.k8s_libs import kubernetes_libraries
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.evaluate.subjects import make_subjects
from kubectl_kyrec.load.policy.policies import classify, parse_validating_policy
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.load.run_inputs.values import Values as SuiteValues
from kubectl_kyrec.model import Document, Source
from kubectl_kyrec.testsuite.row_types import Generated, GenerateFn, GenerationRun, Mode, Row
from kubectl_kyrec.testsuite.rows import compare_generated, is_complex, normalize_generated, owner_of, run_suite, tidy
from kubectl_kyrec.testsuite.suite import (
    LoadedSuite,
    ResourceSpec,
    TestResultEntry,
    TestSuite,
)

NOW = datetime.datetime(2026, 1, 2, tzinfo=datetime.UTC)
K8S = list(kubernetes_libraries())


def libraries(kind: str, namespace: str) -> Sequence[Library]:
    return K8S


def doc(obj: dict[str, Any], line: int = 1) -> Document:
    return Document(obj, Source("in-memory.yaml", line))


def vpol(
    name: str,
    resources: Sequence[str] = ("pods",),
    expression: str = "true",
    operations: Sequence[str] = ("CREATE",),
    **match: Any,
) -> dict[str, Any]:
    group = "apps" if resources == ("deployments",) else ""
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "ValidatingPolicy",
        "metadata": {"name": name},
        "spec": {
            "validationActions": ["Audit"],
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [group],
                        "apiVersions": ["v1"],
                        "operations": list(operations),
                        "resources": list(resources),
                    }
                ],
                **match,
            },
            "validations": [{"expression": expression, "message": "no"}],
        },
    }


def pod(name: str, namespace: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels} if labels else {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def entry(
    policy: str,
    result: str,
    *resources: str,
    kind: str = "Pod",
    flags: tuple[str, ...] = ("ValidatingPolicy",),
    index: int = 0,
    operation: str = "",
    specs: tuple[ResourceSpec, ...] = (),
    generated: tuple[str, ...] = (),
) -> TestResultEntry:
    return TestResultEntry(
        index=index,
        policy=policy,
        rule="",
        kind=kind,
        result=result,
        resources=resources,
        resource_specs=specs,
        operation=operation,
        flags=flags,
        generated=generated,
        patched_resources="",
        source=Source("kyverno-test.yaml", 10 + index),
    )


def suite(
    policies: Sequence[dict[str, Any]],
    resources: Sequence[dict[str, Any]],
    entries: Sequence[TestResultEntry],
    **extra: Any,
) -> LoadedSuite:
    test = TestSuite(
        path="kyverno-test.yaml",
        name="t",
        source=Source("kyverno-test.yaml", 1),
        policies=("p",),
        resources=("r",),
        exceptions=(),
        variables="",
        values=None,
        userinfo="",
        context="",
        cluster_resources=(),
        param_resources=(),
        results=tuple(entries),
    )
    return LoadedSuite(
        test,
        policies=classify([doc(p, i + 1) for i, p in enumerate(policies)]),
        resources=[doc(r) for r in resources],
        **extra,
    )


def run(loaded: LoadedSuite, mode: Mode = Mode.STRICT, generate: GenerateFn | None = None) -> list[Row]:
    return run_suite(loaded, kinds=KindTable(), libraries=libraries, now=NOW, mode=mode, generate=generate).rows


def brief(rows: Sequence[Row]) -> list[tuple[str, str, str, str, str]]:
    return [(r.status, r.reason, r.kind, r.resource, r.actual) for r in rows]


# --- selecting resources ---------------------------------------------------------------------------------


def test_strict_respects_kind_and_namespace() -> None:
    loaded = suite(
        [vpol("p", ("pods", "configmaps"))],
        [pod("x", "team"), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}],
        [entry("p", "pass", "x", "other/x", "team/x")],
    )
    assert brief(run(loaded)) == [
        ("pass", "ok", "Pod", "team/x", "pass"),
        ("fail", "not-found", "Pod", "other/x", ""),
        ("pass", "ok", "Pod", "team/x", "pass"),
    ]


def test_strict_names_the_kinds_a_name_was_found_with() -> None:
    loaded = suite(
        [vpol("p", ("pods", "configmaps"))],
        [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}],
        [entry("p", "pass", "x")],
    )
    (row,) = run(loaded)
    assert (row.reason, row.message) == ("not-found", "no Pod named 'x' in the test (only ConfigMap)")


def test_kyverno_mode_ignores_kind_and_checks_everything_when_no_name_matches() -> None:
    loaded = suite(
        [vpol("p", ("pods", "configmaps"))],
        [pod("x"), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, pod("y")],
        [entry("p", "pass", "x"), entry("p", "pass", "nothing", index=1)],
    )
    assert [(r.kind, r.resource) for r in run(loaded, Mode.KYVERNO)] == [
        ("Pod", "default/x"),
        ("ConfigMap", "default/x"),
        ("Pod", "default/x"),
        ("ConfigMap", "default/x"),
        ("Pod", "default/y"),
    ]


def test_kyverno_mode_puts_cluster_scoped_resources_in_default() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    loaded = suite([vpol("p", ("namespaces",))], [ns], [entry("p", "pass", "default/team", kind="Namespace")])
    assert brief(run(loaded)) == [("fail", "not-found", "Namespace", "default/team", "")]
    assert brief(run(loaded, Mode.KYVERNO)) == [("pass", "ok", "Namespace", "team", "pass")]


def test_resource_specs_match_group_version_namespace_and_name() -> None:
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns"},
        "spec": {"template": {"spec": {"containers": []}}},
    }
    specs = (ResourceSpec("apps", "v1", "Deployment", "ns", "d"), ResourceSpec("apps", "v2", "", "ns", "d"))
    loaded = suite([vpol("p", ("deployments",))], [deploy], [entry("p", "pass", kind="Deployment", specs=specs)])
    assert brief(run(loaded)) == [
        ("pass", "ok", "Deployment", "ns/d", "pass"),
        ("fail", "not-found", "Deployment", "apps/v2/ns/d", ""),
    ]


# --- deciding rows ---------------------------------------------------------------------------------------


def test_result_mismatch_keeps_the_policy_message() -> None:
    loaded = suite([vpol("p", expression="false")], [pod("x")], [entry("p", "pass", "x")])
    (row,) = run(loaded)
    assert (row.status, row.reason, row.expected, row.actual, row.message) == (
        "fail",
        "result-mismatch",
        "pass",
        "fail",
        "no",
    )
    assert row.location == Source("kyverno-test.yaml", 10)


def test_no_response_is_not_matched_in_strict_and_depends_on_constraints_in_kyverno_mode() -> None:
    simple = vpol("simple", ("configmaps",))
    complex_ = vpol("complex", namespaceSelector={"matchLabels": {"env": "prod"}})
    loaded = suite(
        [simple, complex_], [pod("x")], [entry("simple", "pass", "x"), entry("complex", "fail", "x", index=1)]
    )
    assert brief(run(loaded)) == [
        ("fail", "not-matched", "Pod", "default/x", ""),
        ("fail", "not-matched", "Pod", "default/x", ""),
    ]
    assert brief(run(loaded, Mode.KYVERNO)) == [
        ("fail", "not-found", "Pod", "default/x", ""),
        ("pass", "excluded", "Pod", "default/x", ""),
    ]


def test_a_false_match_condition_is_a_response() -> None:
    policy = vpol("p")
    policy["spec"]["matchConditions"] = [{"name": "never", "expression": "false"}]
    loaded = suite([policy], [pod("x")], [entry("p", "skip", "x")])
    assert brief(run(loaded)) == [("pass", "ok", "Pod", "default/x", "skip")]


def test_without_a_flag_a_cel_kind_is_still_checked_as_it_answers() -> None:
    # kk 111e07bb output.go: a ValidatingPolicy response is "ruleless" (command.go isRulelessPolicyKind),
    # so every rule response is compared, whatever is<Kind>Policy flags the row carries (none are read)
    loaded = suite([vpol("p")], [pod("x")], [entry("p", "fail", "x", flags=())])
    assert brief(run(loaded)) == [("fail", "result-mismatch", "Pod", "default/x", "pass")]
    assert brief(run(loaded, Mode.KYVERNO)) == [("fail", "result-mismatch", "Pod", "default/x", "pass")]


def test_the_operation_comes_from_the_row_then_the_values() -> None:
    policy = vpol("p", operations=("UPDATE",))
    rows = run(
        suite(
            [policy],
            [pod("x")],
            [entry("p", "pass", "x"), entry("p", "pass", "x", index=1, operation="UPDATE")],
        )
    )
    assert [r.reason for r in rows] == ["not-matched", "ok"]
    rows = run(suite([policy], [pod("x")], [entry("p", "pass", "x")], values=SuiteValues(operation="UPDATE")))
    assert [r.reason for r in rows] == ["ok"]


def test_only_the_name_part_of_the_policy_is_compared() -> None:
    loaded = suite([vpol("p")], [pod("x")], [entry("somewhere/p", "pass", "x")])
    assert brief(run(loaded)) == [("pass", "ok", "Pod", "default/x", "pass")]


def test_unknown_unevaluated_and_uncompilable_policies() -> None:
    # ClusterPolicy is evaluated since issue 12; a cleanup policy still is not
    cpol = {"apiVersion": "kyverno.io/v2", "kind": "ClusterCleanupPolicy", "metadata": {"name": "legacy"}}
    broken = vpol("broken", expression="object.spec.containers.all(")
    loaded = suite(
        [cpol, broken],
        [pod("x")],
        [
            entry("absent", "pass", "x"),
            entry("legacy", "pass", "x", index=1),
            entry("broken", "pass", "x", index=2),
            # every is<Kind> flag names a kind kyrec evaluates (ImageValidatingPolicy the last): the policy decides
            entry("ivp", "pass", "x", index=3, flags=("ImageValidatingPolicy",)),
        ],
    )
    result = run_suite(loaded, kinds=KindTable(), libraries=libraries, now=NOW, mode=Mode.STRICT)
    assert [(r.reason, r.message.split(":")[0]) for r in result.rows] == [
        ("not-found", "policy 'absent' is not among the test's policies"),
        ("not-evaluated", "kyrec does not evaluate ClusterCleanupPolicy policies"),
        ("load-error", "in-memory.yaml"),
        ("not-found", "policy 'ivp' is not among the test's policies"),
    ]
    # neither passed nor failed
    assert [r.status for r in result.rows] == ["fail", "not-evaluated", "fail", "fail"]
    assert "spec.validations[0].expression" in result.rows[2].message
    assert result.errors and result.errors[0][1] == Source("in-memory.yaml", 2)


def test_a_suite_whose_inputs_did_not_load_reports_every_row_as_load_error() -> None:
    loaded = suite(
        [],
        [],
        [entry("p", "pass", "a", "b"), entry("q", "fail", index=1)],
        error=InputError("no such file or directory", Source("missing.yaml")),
    )
    result = run_suite(loaded, kinds=KindTable(), libraries=libraries, now=NOW)
    assert [(r.resource, r.reason) for r in result.rows] == [
        ("a", "load-error"),
        ("b", "load-error"),
        ("*", "load-error"),
    ]
    assert result.errors == [("no such file or directory", Source("missing.yaml"))]


def test_is_complex_follows_the_cli() -> None:
    def policy(**match: Any) -> Any:
        return parse_validating_policy(doc(vpol("p", **match)))

    assert not is_complex(policy())
    assert not is_complex(policy(namespaceSelector={}))
    assert is_complex(policy(objectSelector={"matchLabels": {"a": "b"}}))
    assert is_complex(policy(excludeResourceRules=[{"resources": ["pods"]}]))
    two = vpol("p")
    two["spec"]["matchConstraints"]["resourceRules"].append({"resources": ["configmaps"]})
    assert is_complex(parse_validating_policy(doc(two)))


def test_owner_of_picks_the_last_policy_starting_before_the_error() -> None:
    starts = [
        (Source("a.yaml", 1), "first"),
        (Source("a.yaml", 20), "second"),
        (Source("b.yaml", 1), "other"),
    ]
    assert owner_of(Source("a.yaml", 25), starts) == "second"
    assert owner_of(Source("a.yaml", 3), starts) == "first"
    assert owner_of(Source("c.yaml", 3), starts) == ""
    assert owner_of(None, starts) == ""


# --- generated resources ---------------------------------------------------------------------------------

CM: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "c", "namespace": "n"},
    "data": {"k": "v"},
}


def test_normalization_drops_generate_labels_adds_managed_by_and_tidies() -> None:
    actual = {
        **CM,
        "metadata": {
            **CM["metadata"],
            "labels": {"generate.kyverno.io/policy-name": "p", "app.kubernetes.io/managed-by": "kyverno"},
        },
        "extra": {"e": None},
    }
    assert normalize_generated(actual) == normalize_generated(CM)
    assert normalize_generated(CM)["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "kyverno"}
    assert tidy({"a": [], "b": {"c": None}, "d": [{}, 0]}) == {"d": [0]}


def test_compare_generated_finds_by_identity_and_diffs() -> None:
    assert compare_generated(CM, [doc(CM)]) is None
    other = {**CM, "data": {"k": "w"}}
    mismatch = compare_generated(CM, [doc({**CM, "metadata": {"name": "c", "namespace": "x"}}), doc(other, 7)])
    assert mismatch is not None
    message, diff = mismatch
    assert message == "generated ConfigMap c differs from in-memory.yaml:7"
    assert diff is not None and "-  k: w" in diff and "+  k: v" in diff
    missing = compare_generated(CM, [doc({**CM, "metadata": {"name": "d", "namespace": "n"}})])
    assert missing is not None and "has no document with its apiVersion, kind, namespace and name" in missing[0]


def test_an_existing_managed_by_label_is_kept_so_it_must_match() -> None:
    helm = {**CM, "metadata": {**CM["metadata"], "labels": {"app.kubernetes.io/managed-by": "helm"}}}
    assert compare_generated(CM, [doc(helm)]) is not None


def generated_suite(expected: list[Document], **extra: Any) -> LoadedSuite:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}
    gpol = {"apiVersion": "policies.kyverno.io/v1", "kind": "GeneratingPolicy", "metadata": {"name": "g"},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                              "operations": ["CREATE"],
                                                              "resources": ["namespaces"]}]},
                     "generate": [{"expression": "true"}]}}
    return suite(
        [gpol],
        [ns],
        [entry("g", "pass", "n", kind="Namespace", flags=("GeneratingPolicy",), generated=("expected.yaml",))],
        generated={0: expected},
        **extra,
    )


def fake(objects: tuple[dict[str, Any], ...], result: str = "pass", trigger: bool = True) -> GenerateFn:
    """A stand-in evaluator: policy `g` generated `objects` for the suite's first resource."""

    def generate(loaded: LoadedSuite, operation: str) -> GenerationRun:
        out = GenerationRun()
        if trigger:
            ref = make_subjects(loaded.resources, KindTable()).subjects[0].ref
            out.outcomes.append(Generated("g", ref, result, "policy evaluated successfully", objects))
        return out

    return generate


def test_generated_rows_pass_mismatch_or_generate_nothing() -> None:
    ok = run(generated_suite([doc(CM)]), generate=fake((CM,)))
    assert brief(ok) == [("pass", "ok", "Namespace", "n", "pass")]
    wrong = run(generated_suite([doc({**CM, "data": {"k": "w"}})]), generate=fake((CM,)))
    assert brief(wrong) == [("fail", "generated-mismatch", "Namespace", "n", "pass")]
    assert wrong[0].diff
    nothing = run(generated_suite([doc(CM)]), generate=fake(()))
    assert (nothing[0].reason, nothing[0].message) == (
        "generated-mismatch",
        "the policy generated nothing for this trigger",
    )


def test_generated_rows_without_a_response_and_without_the_evaluator() -> None:
    loaded = generated_suite([doc(CM)])
    assert brief(run(loaded, generate=fake((CM,), trigger=False))) == [("fail", "not-matched", "Namespace", "n", "")]
    assert brief(run(loaded, Mode.KYVERNO, generate=fake((CM,), trigger=False))) == [
        ("fail", "not-found", "Namespace", "n", "")
    ]
    (row,) = run(loaded)
    assert (row.reason, row.message) == ("load-error", "generating policies not supported yet")


def test_a_generated_file_that_did_not_load_fails_its_rows() -> None:
    loaded = generated_suite([], entry_errors={0: "cannot load generated resources: x.yaml: missing"})
    (row,) = run(loaded, generate=fake((CM,)))
    assert (row.reason, row.message) == ("load-error", "cannot load generated resources: x.yaml: missing")


@pytest.mark.parametrize("mode", list(Mode))
def test_rows_are_one_per_entry_and_resource(mode: Mode) -> None:
    loaded = suite([vpol("p")], [pod("a"), pod("b")], [entry("p", "pass", "a", "b")])
    assert [r.resource for r in run(loaded, mode)] == ["default/a", "default/b"]


def test_kyverno_mode_generating_rows_follow_the_cli() -> None:
    loaded = generated_suite([doc({**CM, "data": {"k": "w"}})])
    # a mismatch fails a `pass` row ...
    assert brief(run(loaded, Mode.KYVERNO, generate=fake((CM,)))) == [
        ("fail", "generated-mismatch", "Namespace", "n", "pass")
    ]
    # ... a response that generated nothing is "Excluded" ...
    assert brief(run(loaded, Mode.KYVERNO, generate=fake(()))) == [("pass", "excluded", "Namespace", "n", "")]
    # ... and a row expecting `fail` succeeds whatever was generated
    fail_entry = entry("g", "fail", "n", kind="Namespace", flags=("GeneratingPolicy",), generated=("x",))
    failing = dataclasses.replace(loaded, suite=dataclasses.replace(loaded.suite, results=(fail_entry,)))
    assert brief(run(failing, Mode.KYVERNO, generate=fake((CM,)))) == [("pass", "ok", "Namespace", "n", "pass")]
    assert brief(run(failing, generate=fake((CM,)))) == [("fail", "generated-mismatch", "Namespace", "n", "pass")]


def test_a_generating_skip_is_a_response_only_in_strict_mode() -> None:
    def skipped(loaded: LoadedSuite, operation: str) -> GenerationRun:
        ref = make_subjects(loaded.resources, KindTable()).subjects[0].ref
        return GenerationRun([Generated("g", ref, "skip", "skip", (), skipped=True)])

    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}
    gpol = {"apiVersion": "policies.kyverno.io/v1", "kind": "GeneratingPolicy", "metadata": {"name": "g"},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                              "operations": ["CREATE"],
                                                              "resources": ["namespaces"]}]},
                     "generate": [{"expression": "true"}]}}
    loaded = suite([gpol], [ns], [entry("g", "skip", "n", kind="Namespace", flags=("GeneratingPolicy",))])
    assert brief(run(loaded, generate=skipped)) == [("pass", "ok", "Namespace", "n", "skip")]
    assert brief(run(loaded, Mode.KYVERNO, generate=skipped)) == [("fail", "not-found", "Namespace", "n", "")]


def test_an_entry_naming_no_resource_checks_every_resource_of_its_kind() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    loaded = suite([vpol("p", ("pods", "configmaps"))], [pod("a"), cm, pod("b")], [entry("p", "pass")])
    assert [(r.kind, r.resource) for r in run(loaded)] == [("Pod", "default/a"), ("Pod", "default/b")]
    empty = suite([vpol("p")], [cm], [entry("p", "pass")])
    assert brief(run(empty)) == [("fail", "not-found", "Pod", "*", "")]


# --- mutating policies -----------------------------------------------------------------------------------


def _mpol(name: str) -> dict[str, Any]:
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": name},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                             "operations": ["CREATE"], "resources": ["pods"]}]},
                     "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                         "expression": 'Object{metadata: Object.metadata{labels: {"team": "a"}}}'}}]}}


def _patched_entry(expected: dict[str, Any]) -> tuple[TestResultEntry, dict[int, list[Document]]]:
    row = dataclasses.replace(entry("m", "pass", "x", flags=("MutatingPolicy",)), patched_resources="patched.yaml")
    return row, {0: [Document(expected, Source("patched.yaml", 1))]}


def test_a_mutating_policy_row_compares_the_patched_resource_as_the_cli_does() -> None:
    # the CLI reads both sides into namespace `default` and tidies them (resource.Compare)
    expected = pod("x")
    expected["metadata"]["labels"] = {"team": "a"}
    expected["status"] = {}
    row, patched = _patched_entry(expected)
    loaded = suite([_mpol("m")], [pod("x")], [row])
    loaded.patched = patched
    assert brief(run(loaded, Mode.KYVERNO)) == [("pass", "ok", "Pod", "default/x", "pass")]
    expected["metadata"]["labels"] = {"team": "b"}
    rows = run(loaded, Mode.KYVERNO)
    assert brief(rows) == [("fail", "patched-mismatch", "Pod", "default/x", "pass")]
    assert rows[0].diff is not None and "-    team: b" in rows[0].diff
