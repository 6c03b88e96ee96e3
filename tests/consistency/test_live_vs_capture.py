"""Consistency matrix, leg (b) of issue 33: a live run and an offline run of a capture of the same cluster give
the same answer. On the real API server (tests/realapi; under CI=true it must run, elsewhere it skips visibly
without Go), for each scenario:

1. `kubectl kyrec diff`, `coverage` and `eval --live` against the cluster (`-o json`);
2. `kubectl kyrec capture` (same context, same policies) to a file;
3. the same three commands with `--state` of that file;

and the findings of 1 and 3 must be equal: every downstream and report change (its identity, class, reason,
cause and fields), every coverage subject (status, reason, cause), every eval result (policy, subject, result,
message), and the summaries and exit codes. The one difference allowed is who answered a question of Kyverno's
permissions: live the cluster (`(SubjectAccessReview)`, no evidence objects), offline the state's RBAC objects
(`(the state's RBAC objects)`, the bindings as evidence); the verbs, resource, scope and grant must agree.

Scenarios (the invariant holds in each; 3 scenarios x 3 commands = 9 live/offline pairs, 18 runs, 3 captures):
- `no-kyverno`: a cluster without Kyverno's Deployments, ConfigMap or UpdateRequests (issue 33 item 4: the
  bootstrap binding of system:basic-user to system:authenticated made the offline run blame Kyverno's
  permissions where the live run said `unknown`);
- `kyverno`: Kyverno's background and reports controller Deployments, RBAC that grants the background
  controller ConfigMaps but `create` and the reports controller nothing, Kyverno's ConfigMap with a
  resourceFilters entry that skips one trigger, and a Failed UpdateRequest for another: each missing
  downstream and report has a cause of its own kind (update-request, resource-filter, rbac);
- `restricted`: the `kyverno` cluster read by the `restricted` user with docs/rbac.yaml's kyrec-read only: no
  SubjectAccessReviews, no UpdateRequests (evidence reads refused), the RBAC objects readable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.realapi.fixture import RealServer, plural_path
from tests.realapi.test_real_only import DATA, ROOT

NOW = "2026-12-01T00:00:00Z"
RBAC = "rbac.authorization.k8s.io/v1"
LABELS = {"app.kubernetes.io/instance": "kyverno", "app.kubernetes.io/part-of": "kyverno"}
BACKGROUND_SA, REPORTS_SA = "kyverno-background-controller", "kyverno-reports-controller"
SCENARIOS = ("no-kyverno", "kyverno", "restricted")

VALIDATING = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: NAME
  creationTimestamp: "2026-01-01T00:00:00Z"
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [configmaps]
  matchConditions:
  - name: ours
    expression: object.metadata.namespace.startsWith("PREFIX-")
  validations:
  - expression: has(object.metadata.labels) && 'team' in object.metadata.labels
    message: every ConfigMap needs a team label
"""


class Scenario:
    def __init__(self, server: RealServer, tmp_path: Path, name: str) -> None:
        self.server, self.name = server, name
        self.context = "restricted" if name == "restricted" else "admin"
        pre = server.unique(f"lvc-{name}")
        self.namespaces = [f"{pre}-{x}" for x in ("a", "b", "c")]
        gpol_name, vpol_name = server.unique("lvc-gen"), server.unique("lvc-val")
        self.gpol = gpol_name
        gen = (DATA / "gpol-configmap.yaml").read_text().replace("name: base-config", f"name: {gpol_name}")
        gen = gen.replace('startsWith("team-")', f'startsWith("{pre}-")')
        (tmp_path / "gpol.yaml").write_text(gen)
        (tmp_path / "vpol.yaml").write_text(VALIDATING.replace("NAME", vpol_name).replace("PREFIX", pre))
        self.policies = ["-p", str(tmp_path / "gpol.yaml"), "-p", str(tmp_path / "vpol.yaml")]
        server.seed(*({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in self.namespaces))
        # subjects of the ValidatingPolicy: one passes, one fails, in each namespace
        server.seed(*({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": name, "namespace": ns, **({"labels": {"team": "x"}} if name == "good" else {})}}
            for ns in self.namespaces for name in ("good", "bad")))


def _deployment(component: str, account: str, args: list[str]) -> dict[str, Any]:
    labels = {**LABELS, "app.kubernetes.io/component": component}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": f"kyverno-{component}", "namespace": "kyverno", "labels": labels},
            "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
                "serviceAccountName": account,
                "containers": [{"name": "controller", "args": args,
                                "image": f"reg.kyverno.io/kyverno/{component}:v1.17.2"}]}}}}


@pytest.fixture(params=SCENARIOS)
def scenario(request: pytest.FixtureRequest, realapi: RealServer, tmp_path: Path) -> Iterator[Scenario]:
    name = request.param
    made = Scenario(realapi, tmp_path, name)
    cleanup: list[str] = []
    if name != "no-kyverno":
        a, b, _ = made.namespaces
        role_bg, role_reports = realapi.unique("lvc-kyverno-bg"), realapi.unique("lvc-kyverno-reports")
        realapi.seed(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kyverno"}},
            *({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": "kyverno"}}
              for sa in (BACKGROUND_SA, REPORTS_SA)),
            _deployment("background-controller", BACKGROUND_SA, ["--v=2"]),
            _deployment("reports-controller", REPORTS_SA, ["--backgroundScan=true", "--policyReports=true"]),
            # the background controller may do everything Kyverno checks for ConfigMaps but create; the reports
            # controller is granted nothing (a chart without its view binding)
            {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": role_bg},
             "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                        "verbs": ["get", "list", "watch", "update", "delete"]}]},
            {"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": role_bg},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_bg},
             "subjects": [{"kind": "ServiceAccount", "name": BACKGROUND_SA, "namespace": "kyverno"}]},
            {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": role_reports}, "rules": []},
            # Kyverno's ConfigMap: admission skips namespace b (resourceFilters), so its downstream never came
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kyverno", "namespace": "kyverno"},
             # ([Namespace,*,b] would skip every Namespace: Kyverno also matches a Namespace's own name against
             # an entry's namespace field, and `*` matches them all)
             "data": {"resourceFilters": f"[Event,*,*][Namespace,{b},{b}]"}},
            # a Failed UpdateRequest for namespace a
            {"apiVersion": "kyverno.io/v2", "kind": "UpdateRequest",
             "metadata": {"name": realapi.unique("lvc-ur"), "namespace": "kyverno"},
             "spec": {"policy": made.gpol, "requestType": "generate", "rule": "", "deleteDownstream": False,
                      "context": {}, "resource": {"apiVersion": "v1", "kind": "Namespace", "name": a}},
             "status": {"state": "Failed", "retryCount": 3, "message": "configmaps is forbidden"}})
        cleanup += [plural_path(RBAC, "clusterroles", "", role_bg),
                    plural_path(RBAC, "clusterrolebindings", "", role_bg),
                    plural_path(RBAC, "clusterroles", "", role_reports),
                    plural_path("v1", "configmaps", "kyverno", "kyverno"),
                    plural_path("apps/v1", "deployments", "kyverno", "kyverno-background-controller"),
                    plural_path("apps/v1", "deployments", "kyverno", "kyverno-reports-controller")]
        urs = realapi.kube.get(plural_path("kyverno.io/v2", "updaterequests", "kyverno"))["items"]
        cleanup += [plural_path("kyverno.io/v2", "updaterequests", "kyverno", u["metadata"]["name"])
                    for u in urs if u["spec"]["policy"] == made.gpol]
    if name == "restricted":
        realapi.seed(*[d for d in yaml.safe_load_all((ROOT / "docs" / "rbac.yaml").read_text())
                       if d and d["metadata"]["name"] == "kyrec-read"])
        binding = realapi.unique("lvc-restricted-read")
        realapi.seed({"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": binding},
                      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kyrec-read"},
                      "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                    "name": "restricted-users"}]})
        cleanup.append(plural_path(RBAC, "clusterrolebindings", "", binding))
    yield made
    for path in cleanup:
        realapi.kube.delete(path)


# ---- the comparison ---------------------------------------------------------------------------------------------

_WHO = re.compile(r" \((SubjectAccessReview|the state's RBAC objects)\); grant: ")
_PLACES = frozenset({"location", "policyLocation"})      # where an object was read: a cluster or a file:line


def _normal(value: Any) -> Any:
    """The findings as compared: without where each object was read, and with who answered a permission
    question left out (the cluster live, the state's RBAC objects offline)."""
    if isinstance(value, dict):
        if value.get("kind") == "rbac" and isinstance(value.get("message"), str):
            return {"kind": "rbac", "message": _WHO.sub(" (WHO); grant: ", value["message"])}
        return {k: _normal(v) for k, v in value.items() if k not in _PLACES}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


# the commands of the matrix (diff's two domains separately: whether a plain `diff` checks reports depends on
# whether the cluster holds any, which other tests of the session change), and the keys of their JSON compared
COMMANDS = {"diff --downstreams": ["diff", "--now", NOW, "--downstreams"],
            "diff --reports": ["diff", "--now", NOW, "--reports"],
            "coverage": ["coverage", "--now", NOW], "eval": ["eval", "--now", NOW]}
_FINDINGS = {"diff --downstreams": ("changes", "summary"), "diff --reports": ("changes", "summary"),
             "coverage": ("subjects", "counts", "totals", "perPolicy", "orphans"),
             "eval": ("results", "downstreams", "reports", "summary")}


def _findings(command: str, result: Result) -> dict[str, Any]:
    assert result.exit_code in (0, 1, 5), result.output
    doc = json.loads(result.stdout)
    return {"exit": result.exit_code, **{key: _normal(doc.get(key)) for key in _FINDINGS[command]}}


def _ours(changes: list[dict[str, Any]], namespaces: list[str]) -> list[dict[str, Any]]:
    def ns(change: dict[str, Any]) -> str:
        ref = change.get("object") or change.get("subject") or {}
        return str(ref.get("namespace") or "")
    return [c for c in changes if ns(c) in namespaces]


def test_live_and_captured_give_the_same_findings(realapi: RealServer, scenario: Scenario, tmp_path: Path) -> None:
    env = {"KUBECONFIG": str(realapi.kubeconfig), "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def kyrec(*args: str) -> Result:
        return CliRunner().invoke(cli, [*args, "--context", scenario.context], env=env)

    state = tmp_path / "capture.json"
    captured = kyrec("capture", *scenario.policies, "-o", str(state))
    assert captured.exit_code in (0, 5), captured.output
    compared: dict[str, dict[str, Any]] = {}
    for command in COMMANDS:
        args = COMMANDS[command]
        live = _findings(command, kyrec(*args, *(["--live"] if args[0] == "eval" else []), *scenario.policies,
                                        "-o", "json"))
        offline = _findings(command, CliRunner().invoke(cli, [*args, "--state", str(state), *scenario.policies,
                                                              "-o", "json"]))
        assert offline == live, (scenario.name, command)
        compared[command] = live

    # the scenario shows what it is meant to: findings in its own namespaces, with the causes it seeded
    a, b, c = scenario.namespaces
    downstream = {ch["object"]["namespace"]: ch for ch in _ours(compared["diff --downstreams"]["changes"],
                                                                 scenario.namespaces)}
    assert {ns: ch["class"] for ns, ch in downstream.items()} == dict.fromkeys(scenario.namespaces, "missing")
    causes = {ns: ch["cause"] for ns, ch in downstream.items()}
    reports = _ours(compared["diff --reports"]["changes"], scenario.namespaces)
    assert len(reports) == 6 and {r["class"] for r in reports} == {"missing"}, reports
    gaps = [s for s in compared["coverage"]["subjects"] if s["subject"]["namespace"] in scenario.namespaces]
    assert len(gaps) == 6 and {s["status"] for s in gaps} == {"missing"}, gaps
    # coverage names each gap's cause as diff names its report's
    by_subject = {(r["subject"]["namespace"], r["subject"]["name"]): r["cause"] for r in reports}
    assert {(g["subject"]["namespace"], g["subject"]["name"]): g["cause"] for g in gaps} == by_subject
    results = sorted((r["subject"]["namespace"], r["subject"]["name"], r["result"])
                     for r in compared["eval"]["results"] if r["subject"]["namespace"] in scenario.namespaces)
    assert results == sorted((ns, name, "pass" if name == "good" else "fail")
                             for ns in scenario.namespaces for name in ("good", "bad"))
    if scenario.name == "no-kyverno":
        # item 4: no Deployment of Kyverno's names an account, so its permissions are no cause, live or offline
        assert {cause["kind"] for cause in causes.values()} == {"unknown"}, causes
        return
    assert causes[b] == {"kind": "resource-filter", "message": f"Kyverno's admission webhook skips Namespace {b}: "
                                                               f"resourceFilters entry [Namespace,{b},{b}]",
                         "evidence": []}
    assert causes[c]["kind"] == "rbac", causes
    assert f"may not create configmaps in namespace {c} (WHO)" in causes[c]["message"], causes
    assert {r["cause"]["kind"] for r in reports} == {"rbac"}, [(r["subject"], r["cause"]) for r in reports]
    if scenario.name == "kyverno":
        assert causes[a]["kind"] == "update-request" and "Failed after 3 retries" in causes[a]["message"]
    else:
        # the restricted reader may not list UpdateRequests: the Failed one is not seen, live or offline, and the
        # next cause found is the same (Kyverno's permissions, decided from the RBAC objects both read); the
        # capture recorded the refused read, which an offline run names where it leaves a cause unknown
        assert causes[a]["kind"] == "rbac", causes[a]
        annotations = json.loads(state.read_text())["metadata"]["annotations"]
        unread = json.loads(annotations["kyrec.io/evidence-unread"])
        assert [(e["kind"], e["namespace"]) for e in unread] == [("UpdateRequest", "kyverno")], unread
        assert "forbidden" in unread[0]["message"]
