"""Consistency matrix, leg (a), on the real API server: the narrowing flags of `diff`, `eval --live`, `coverage`
and `apply`'s plan keep the verdicts of the rows they keep, and a flag that narrows what is read (a user allowed
only `-n NS`) makes a row that depends on what was not read `undetermined`, naming the read, never another
class. Runs under CI=true (tests/realapi/fixture.py: without the server it is a visible skip, a failure in CI).

The server is shared by the session: every run here takes `-p` with this test's own GeneratingPolicy, whose
matchConditions pick this test's namespaces only, so no other test's objects become rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.realapi.fixture import RealServer, plural_path
from tests.realapi.test_real_only import cm, gpol, kyrec


def rows(stdout: str) -> dict[str, tuple[Any, ...]]:
    """A diff's downstream rows by their object, as (class, reason, cause)."""
    return {f"{c['object']['namespace']}/{c['object']['name']}": (c["class"], c["reason"], c["cause"])
            for c in json.loads(stdout)["changes"] if c["domain"] == "downstream"}


def planned(stdout: str) -> dict[str, str]:
    """apply's plan: what each action would do, by its object."""
    out = {}
    for o in json.loads(stdout)["outcomes"]:
        ref = o.get("object") or {}
        out[f"{ref.get('namespace', '')}/{ref.get('name', '')}"] = f"{o.get('action')}/{o.get('status')}"
    return out


@pytest.fixture()
def grant(realapi: RealServer) -> Iterator[Any]:
    """A ClusterRole and its binding for the restricted user, reading only the core resources named (removed at
    the end: the user is shared by the session)."""
    made: list[str] = []

    def bind(resources: list[str]) -> None:
        name = realapi.unique("narrow-read")
        realapi.seed({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
                      "rules": [{"apiGroups": [""], "resources": resources, "verbs": ["get", "list"]}]},
                     {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                      "metadata": {"name": name},
                      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                      "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                    "name": "restricted-users"}]})
        made.append(name)

    yield bind
    for name in made:
        realapi.kube.delete(plural_path("rbac.authorization.k8s.io/v1", "clusterrolebindings", "", name))
        realapi.kube.delete(plural_path("rbac.authorization.k8s.io/v1", "clusterroles", "", name))


def test_live_narrowing_keeps_the_verdicts_and_the_plan_stays_inside(realapi: RealServer, tmp_path: Path) -> None:
    policy, [a, b] = gpol(realapi, tmp_path, "narrow")
    realapi.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": a, "labels": {"tier": "gold"}}})
    assert kyrec(realapi, tmp_path, "apply", "-p", policy, "--yes").exit_code == 0
    realapi.kube.delete(plural_path("v1", "configmaps", b, "base"))        # b's downstream: missing
    full = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, "-o", "json")
    assert full.exit_code == 1, full.stderr
    everything = rows(full.stdout)
    assert {k: v[0] for k, v in everything.items()} == {f"{a}/base": "in-sync", f"{b}/base": "missing"}
    inside = {("-n", a): {f"{a}/base"}, ("-n", b): {f"{b}/base"}, ("-l", "tier=gold"): {f"{a}/base"},
              ("--kind", "Namespace"): set(everything), ("--policy-name", Path(policy).stem): set(everything)}
    combinations = 0
    for (flag, value), expected in inside.items():
        narrowed = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, flag, value, "-o", "json")
        combinations += 1
        assert narrowed.exit_code in (0, 1), (flag, value, narrowed.stderr)
        shown = rows(narrowed.stdout)
        assert set(shown) == expected, (flag, value, shown)
        assert all(shown[k] == everything[k] for k in shown), (flag, value, shown, everything)
    # eval --live: the GeneratingPolicy's result per trigger, the same narrowed (a Namespace passes -n for itself)
    results = kyrec(realapi, tmp_path, "eval", "--live", "-p", policy, "-o", "json")
    by_trigger = {r["subject"]["name"]: (r["result"], r["message"]) for r in json.loads(results.stdout)["results"]}
    assert set(by_trigger) == {a, b}, results.stdout
    for flag, value, expected in (("-n", a, {a}), ("-l", "tier=gold", {a}), ("--kind", "Namespace", {a, b})):
        narrowed = kyrec(realapi, tmp_path, "eval", "--live", "-p", policy, flag, value, "-o", "json")
        combinations += 1
        shown_results = {r["subject"]["name"]: (r["result"], r["message"])
                         for r in json.loads(narrowed.stdout)["results"]}
        assert shown_results == {k: v for k, v in by_trigger.items() if k in expected}, (flag, value, narrowed.stdout)
    # apply's plan (server dry run: nothing written) acts on the rows its filters keep, and on no other
    plan = kyrec(realapi, tmp_path, "apply", "-p", policy, "--dry-run=server", "-o", "json")
    assert plan.exit_code == 0, plan.stdout + plan.stderr
    assert set(planned(plan.stdout)) == {f"{b}/base"}, plan.stdout
    for flag, value, acts in (("-n", a, set()), ("-n", b, {f"{b}/base"}), ("-l", "tier=gold", set())):
        narrowed_plan = kyrec(realapi, tmp_path, "apply", "-p", policy, "--dry-run=server", flag, value, "-o", "json")
        combinations += 1
        assert narrowed_plan.exit_code == 0, (flag, value, narrowed_plan.stdout + narrowed_plan.stderr)
        assert set(planned(narrowed_plan.stdout)) == acts, (flag, value, narrowed_plan.stdout)
        assert {k: v for k, v in planned(narrowed_plan.stdout).items()} == \
            {k: v for k, v in planned(plan.stdout).items() if k in acts}
    assert cm(realapi, b) is None          # a dry run
    assert combinations == 11


def test_a_read_narrowed_by_rights_makes_a_row_undetermined_never_another_class(
        realapi: RealServer, tmp_path: Path, grant: Any) -> None:
    policy, [a, b] = gpol(realapi, tmp_path, "rights")
    assert kyrec(realapi, tmp_path, "apply", "-p", policy, "--yes").exit_code == 0
    admin = rows(kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, "-n", a, "-o", "json").stdout)
    assert admin == {f"{a}/base": ("in-sync", None, None)}
    # allowed to read the ConfigMaps (the downstreams), not the Namespaces (their triggers): the trigger of a's
    # ConfigMap cannot be known, so it is neither in-sync nor an orphan whose trigger is gone
    grant(["configmaps"])
    narrowed = kyrec(realapi, tmp_path, "diff", "--downstreams", "-p", policy, "-n", a, "-o", "json",
                     context="restricted")
    assert narrowed.exit_code == 5, narrowed.stdout + narrowed.stderr
    assert "error: forbidden: cannot list namespaces cluster-wide" in narrowed.stderr
    shown = {f"{c['object']['namespace']}/{c['object']['name']}": c for c in json.loads(narrowed.stdout)["changes"]
             if c["domain"] == "downstream"}
    assert set(shown) == {f"{a}/base"}, shown
    change = shown[f"{a}/base"]
    assert (change["class"], change["reason"]) == ("undetermined", "read-failed"), change
    assert "Namespace" in change["message"], change


def test_live_selectors_follow_kubectl(realapi: RealServer, tmp_path: Path) -> None:
    """The live-only commands: a kind no table knows is exit 3 (as `kubectl get foo`), and a namespace or label
    selector that matches nothing a notice and exit 0 (as `kubectl get -n nope`)."""
    policy, _ = gpol(realapi, tmp_path, "selectors")
    for command in (("apply", "-p", policy, "--dry-run=server"), ("diff", "-p", policy),
                    ("eval", "--live", "-p", policy)):
        unknown = kyrec(realapi, tmp_path, *command, "--kind", "foo")
        assert unknown.exit_code == 3, (command, unknown.stdout + unknown.stderr)
        assert unknown.stderr.startswith("error: --kind foo: no such resource type"), unknown.stderr
    for command in (("apply", "-p", policy, "--dry-run=server"), ("diff", "-p", policy),
                    ("eval", "--live", "-p", policy), ("coverage", "-p", policy), ("capture",)):
        for flag, value in (("-n", realapi.unique("nope")), ("-l", "nope=x")):
            if command[0] in ("coverage", "capture") and flag == "-l":
                continue        # they take -n only
            nothing = kyrec(realapi, tmp_path, *command, flag, value, "-o", "json")
            assert nothing.exit_code == 0, (command, flag, nothing.stdout[-500:] + nothing.stderr)
            assert f"notice: no resource matched {flag} {value}" in nothing.stderr, (command, flag, nothing.stderr)
