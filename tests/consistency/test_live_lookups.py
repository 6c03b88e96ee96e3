"""What context lookups read on a live cluster: one answer whatever the source (cluster/live.py's read plan,
run/providers.py state_lookups; docs/architecture.md, reading a live cluster).

On the double (tests/kubeapi): a ClusterPolicy whose `configMap` context entry reads a ConfigMap of another
namespace than `-n`'s, and a ValidatingPolicy reading the same ConfigMap with `resource.Get`: `eval --live`,
`eval --state` on a capture of the cluster, and `eval --state` on the objects given as files all give the same
verdicts, as the ConfigMap's data says (either way). A lookup of a kind the read did not list is `undetermined`
(kind-not-captured) saying so, live and on the capture alike (a plain-file state keeps Kyverno CLI's "not
found"); a refused LIST of the ConfigMaps is `undetermined` (read-failed) and a failed read (exit 5). A
`resource.Get/List` whose namespace is a literal reads the ConfigMaps of that namespace alone, so a user whose
Role lists ConfigMaps only there runs the policies (a cluster-wide LIST would be refused: exit 5); a lookup in a
namespace not read is "not read", never "not found".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.kubeapi.server import ApiServer

CLASSIC = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: team-cm
spec:
  validationFailureAction: Audit
  background: true
  rules:
  - name: team-allowed
    match:
      any:
      - resources:
          kinds: [Pod]
          namespaces: [shop]
    context:
    - name: teams
      configMap:
        name: teams
        namespace: platform
    validate:
      message: the team must be the one the platform allows
      deny:
        conditions:
          any:
          - key: "{{ request.object.metadata.labels.team || '' }}"
            operator: NotEquals
            value: "{{ teams.data.allowed }}"
"""

VPOL = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: team-vpol
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [pods]
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: shop
  validations:
  - expression: >-
      LOOKUP.data.allowed ==
      (has(object.metadata.labels) && "team" in object.metadata.labels ? object.metadata.labels["team"] : "")
    message: the team must be the one the platform allows
"""

LITERAL = 'resource.Get("v1", "configmaps", "platform", "teams")'
# the same read, its resource made by an expression: no read plan can see it ahead
HIDDEN = 'resource.Get("v1", "config" + "maps", "platform", "teams")'


def _objects(allowed: str) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "labels": {"kubernetes.io/metadata.name": n}}}
        for n in ("shop", "platform")]
    objs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "teams", "namespace": "platform"},
                 "data": {"allowed": allowed}})
    for team in ("blue", "red"):
        objs.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": team, "namespace": "shop", "labels": {"team": team}},
                     "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}})
    return objs


def _run(args: list[str], env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, args, env=env or {})


def _verdicts(result: Result) -> dict[tuple[str, str], tuple[str, str]]:
    """(policy, Pod) -> (result, message) of eval -o json's results on the Pods."""
    doc = json.loads(result.stdout)
    return {(r["policy"], r["subject"]["name"]): (r["result"], r["message"]) for r in doc["results"]
            if r["subject"]["kind"] == "Pod"}


@pytest.fixture
def fast_client(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubectl_kyrec.cluster import client

    real_connect = client.connect

    def fast(options: Any, **kwargs: Any) -> Any:
        # the client's retries all happen, without their waits
        return real_connect(options, **{**kwargs, "sleep": lambda _: None})

    monkeypatch.setattr(client, "connect", fast)


def _double(tmp_path: Path, allowed: str) -> Iterator[tuple[ApiServer, dict[str, str]]]:
    with ApiServer() as api:
        api.seed(*_objects(allowed))
        api.kubeconfig(tmp_path / "kubeconfig")
        yield api, {"KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache")}


def _policies(tmp_path: Path, lookup: str = LITERAL, classic: str = CLASSIC) -> Path:
    path = tmp_path / "policies.yaml"
    path.write_text(classic + "---\n" + VPOL.replace("LOOKUP", lookup))
    return path


@pytest.mark.parametrize("allowed", ["blue", "red"])
def test_live_a_capture_and_the_configmap_given_agree(tmp_path: Path, fast_client: None, allowed: str) -> None:
    policies = _policies(tmp_path)
    state = tmp_path / "state.json"
    for api, env in _double(tmp_path, allowed):
        live = _run(["eval", "-p", str(policies), "--live", "-n", "shop", "-o", "json"], env)
        captured = _run(["capture", "-p", str(policies), "-n", "shop", "-o", str(state)], env)
        assert captured.exit_code == 0, captured.output
        # the ConfigMaps were read in the namespace both lookups name (not -n's), and there only
        assert api.requests("GET", r"^/api/v1/namespaces/platform/configmaps$"), "the ConfigMaps were not read"
        assert not api.requests("GET", r"^/api/v1/configmaps$"), "the ConfigMaps were read cluster-wide"
    files = tmp_path / "given.yaml"
    files.write_text(yaml.safe_dump_all(_objects(allowed)))
    on_capture = _run(["eval", "-p", str(policies), "--state", str(state), "-n", "shop", "-o", "json"])
    given = _run(["eval", "-p", str(policies), "--state", str(files), "-n", "shop", "-o", "json"])
    assert live.exit_code == on_capture.exit_code == given.exit_code == 1, (live.output, on_capture.output,
                                                                            given.output)
    verdicts = _verdicts(live)
    assert verdicts == _verdicts(on_capture) == _verdicts(given), (live.output, on_capture.output, given.output)
    # as the data says, not as its absence would: the allowed team passes, the other fails, for both kinds
    other = "red" if allowed == "blue" else "blue"
    for policy in ("team-cm", "team-vpol"):
        assert verdicts[(policy, allowed)][0] == "pass" and verdicts[(policy, other)][0] == "fail", verdicts


API_CALL = CLASSIC.replace("""      configMap:
        name: teams
        namespace: platform
""", """      apiCall:
        urlPath: "/api/v1/namespaces/platform/{{ to_lower('ConfigMaps') }}/teams"
        jmesPath: "@"
""")


def test_a_lookup_of_a_kind_not_read_is_undetermined_live_and_on_the_capture(tmp_path: Path,
                                                                             fast_client: None) -> None:
    """The kind is made by an expression or a variable: not read ahead, so not "not found" (which would pass
    `== null`), but `undetermined` (kind-not-captured) saying the ConfigMaps were not read, for the classic
    rule and the ValidatingPolicy alike (the engines decide it: evaluate/admission_chain.py unread_reason)."""
    policies = _policies(tmp_path, f"dyn({HIDDEN} == null ? {{'data': {{'allowed': ''}}}} : {HIDDEN})", API_CALL)
    state = tmp_path / "state.json"
    for _, env in _double(tmp_path, "blue"):
        live = _run(["eval", "-p", str(policies), "--live", "-n", "shop", "-o", "json"], env)
        assert _run(["capture", "-p", str(policies), "-n", "shop", "-o", str(state)], env).exit_code == 0
    on_capture = _run(["eval", "-p", str(policies), "--state", str(state), "-n", "shop", "-o", "json"])
    for result, origin in ((live, "the cluster"), (on_capture, "the captured cluster")):
        verdicts = _verdicts(result)
        assert {v[0] for v in verdicts.values()} == {"undetermined"} and len(verdicts) == 4, result.output
        for (_, _), (_, message) in verdicts.items():
            assert message.startswith("kind-not-captured: "), message
            assert f"ConfigMaps in namespace platform were not read from {origin}" in message, message
        # counted as eval counts every undetermined result, never a failure for the exit code
        assert json.loads(result.stdout)["summary"]["undetermined"] == 4, result.output
        assert result.exit_code == 0, result.output
    # a state of plain files answers as Kyverno's CLI does: what it does not hold is not found
    files = tmp_path / "given.yaml"
    files.write_text(yaml.safe_dump_all([o for o in _objects("blue") if o["kind"] != "ConfigMap"]))
    plain = _verdicts(_run(["eval", "-p", str(policies), "--state", str(files), "-n", "shop", "-o", "json"]))
    assert plain[("team-cm", "blue")][0] == "error" and 'configmaps "teams" not found' in \
        plain[("team-cm", "blue")][1], plain
    # null, as the given files hold no ConfigMap: no team is allowed
    assert plain[("team-vpol", "blue")][0] == plain[("team-vpol", "red")][0] == "fail", plain


def test_a_refused_list_of_the_configmaps_is_undetermined_and_a_failed_read(tmp_path: Path,
                                                                           fast_client: None) -> None:
    policies = _policies(tmp_path)
    for api, env in _double(tmp_path, "blue"):
        api.inject(r"^/api/v1/namespaces/platform/configmaps$", times=None, status=403)
        live = _run(["eval", "-p", str(policies), "--live", "-n", "shop", "-o", "json"], env)
        assert api.requests("GET", r"^/api/v1/namespaces/platform/configmaps$"), "the injected read was never made"
    assert live.exit_code == 5, live.output
    said = [line for line in live.stderr.splitlines() if line.startswith("error: ")]
    assert len(said) == 1 and "configmaps" in said[0] and "forbidden" in said[0].lower(), live.stderr
    verdicts = _verdicts(live)
    assert {v[0] for v in verdicts.values()} == {"undetermined"} and len(verdicts) == 4, live.output
    assert all(message.startswith("read-failed: ") for _, message in verdicts.values()), verdicts


# docs/rbac.yaml's reader without ConfigMaps cluster-wide, and a Role listing them in `platform` alone
TEAM_RBAC = (Path(__file__).resolve().parents[2] / "docs" / "rbac.yaml").read_text().replace(
    'resources: ["pods", "replicationcontrollers", "configmaps", "limitranges", "resourcequotas"]',
    'resources: ["pods", "replicationcontrollers", "limitranges", "resourcequotas"]', 1) + """---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: platform-configmaps, namespace: platform}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [list]}
""" + "".join(f"""---
apiVersion: rbac.authorization.k8s.io/v1
kind: {binding}
metadata: {{name: team-{role}{", namespace: " + namespace if namespace else ""}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: {kind}, name: {role}}}
subjects: [{{kind: User, name: team}}]
""" for binding, kind, role, namespace in (("ClusterRoleBinding", "ClusterRole", "kyrec-read", ""),
                                         ("RoleBinding", "Role", "kyrec-read-kyverno-config", "kyverno"),
                                         ("RoleBinding", "Role", "platform-configmaps", "platform")))

# the kind made by an expression (not read ahead), its namespace a literal: answered where the ConfigMaps were
# read for the literal lookups, "not read" elsewhere
OUTSIDE = """\
---
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: NAME
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [pods]
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: shop
  validations:
  - expression: >-
      resource.Get("v1", "config" + "maps", "NAMESPACE", "teams") == null ||
      resource.Get("v1", "config" + "maps", "NAMESPACE", "teams").data.allowed == object.metadata.labels["team"]
    message: the team must be the one the platform allows
"""


@pytest.mark.parametrize("allowed", ["blue", "red"])
def test_a_role_listing_configmaps_in_the_lookup_s_namespace_alone_suffices(tmp_path: Path, fast_client: None,
                                                                           allowed: str) -> None:
    policies = _policies(tmp_path)
    with policies.open("a") as out:
        out.write(OUTSIDE.replace("NAMESPACE", "platform").replace("NAME", "inside"))
        out.write(OUTSIDE.replace("NAMESPACE", "other").replace("NAME", "outside"))
    state = tmp_path / "state.json"
    for api, env in _double(tmp_path, allowed):
        api.load_rbac(TEAM_RBAC)
        api.add_user("team", "t")
        api.kubeconfig(tmp_path / "kubeconfig", user="team", token="t")
        live = _run(["eval", "-p", str(policies), "--live", "-n", "shop", "-o", "json"], env)
        captured = _run(["capture", "-p", str(policies), "-n", "shop", "-o", str(state)], env)
        assert captured.exit_code == 0, captured.output
        assert not api.requests("GET", r"^/api/v1/configmaps$"), "a cluster-wide LIST of ConfigMaps was made"
        assert [r.status for r in api.requests("GET", r"^/api/v1/namespaces/platform/configmaps$")] == [200, 200]
    on_capture = _run(["eval", "-p", str(policies), "--state", str(state), "-n", "shop", "-o", "json"])
    assert live.exit_code == on_capture.exit_code == 1, (live.output, on_capture.output)
    other = "red" if allowed == "blue" else "blue"
    for result, origin in ((live, "the cluster"), (on_capture, "the captured cluster")):
        verdicts = _verdicts(result)
        # as the data says, for the literal lookups and the expression's lookup in the namespace they read
        for policy in ("team-cm", "team-vpol", "inside"):
            assert verdicts[(policy, allowed)][0] == "pass" and verdicts[(policy, other)][0] == "fail", \
                (policy, verdicts[(policy, allowed)], verdicts[(policy, other)])
        # a namespace not read: not "not found" (which would pass `== null`) but undetermined saying so
        for pod in (allowed, other):
            verdict, message = verdicts[("outside", pod)]
            assert verdict == "undetermined" and message.startswith("kind-not-captured: ") and \
                f"ConfigMaps in namespace other were not read from {origin}" in message, message
    assert {k: v for k, v in _verdicts(live).items() if k[0] != "outside"} == \
        {k: v for k, v in _verdicts(on_capture).items() if k[0] != "outside"}
