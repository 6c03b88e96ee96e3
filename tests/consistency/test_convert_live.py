"""`convert --verify --live` (issue 38): the cluster read as `eval --live` reads it, verified on as `--verify
--state` verifies on a capture of the same cluster: one answer whatever the source (docs/convert.md, the proof).

- On the real API server (tests/realapi; under CI=true it must run): Pods and the ConfigMap a context entry
  reads, in a namespace of their own; `convert --verify --live -n NS` and `capture -n NS` then `convert --verify
  --state` print the same lines (differences and summary) and exit alike, with a faithful conversion (0
  differences) and with a weakened one (a validation dropped, so the cluster's failing Pods show verdict
  differences: the comparison is not vacuous), and with the ConfigMap deleted (the lookup answers otherwise).
- On the double (tests/kubeapi): a refused or failing LIST (403, 500) reaches stderr as eval --live says it,
  the summary says the read was incomplete and the run exits 5, never a clean 0; a connection that is down
  exits 5 with nothing written; the run makes no write. The usage errors of the flags.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.kubeapi.server import ApiServer
from tests.realapi.fixture import RealServer, plural_path

# a rule on the Pods' own labels, and one whose context entry reads a ConfigMap of the cluster
POLICY = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: POLICY
spec:
  validationFailureAction: Audit
  background: true
  rules:
  - name: team-blue
    match:
      any:
      - resources:
          kinds: [Pod]
          namespaces: [NS]
    validate:
      message: Pods need the team label blue
      deny:
        conditions:
          any:
          - key: "{{ request.object.metadata.labels.team || '' }}"
            operator: NotEquals
            value: blue
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: POLICY-cm
spec:
  validationFailureAction: Audit
  background: true
  rules:
  - name: team-from-configmap
    match:
      any:
      - resources:
          kinds: [Pod]
          namespaces: [NS]
    context:
    - name: teams
      configMap:
        name: teams
        namespace: NS
    validate:
      message: no team label while the teams ConfigMap blocks
      deny:
        conditions:
          any:
          - key: "{{ teams.data.block || '' }}"
            operator: Equals
            value: "yes"
          - key: "{{ request.object.metadata.labels.team || '' }}"
            operator: Equals
            value: ""
"""


def _pod(name: str, namespace: str, team: str | None) -> dict[str, Any]:
    labels = {"team": team} if team else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}


def _objects(namespace: str) -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "teams", "namespace": namespace},
             "data": {"block": "no"}},
            _pod("good", namespace, "blue"), _pod("wrong", namespace, "red"), _pod("none", namespace, None)]


def _policy_file(tmp_path: Path, namespace: str, name: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY.replace("NS", namespace).replace("POLICY", name))
    return path


@pytest.fixture
def weakened(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every conversion loses its validations: the original's failures on the cluster's Pods become verdict
    differences, which both sources must list alike."""
    import kubectl_kyrec.run.convert as run_convert

    real = run_convert.convert_policy

    def weaker(doc: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        conv = real(doc, *args, **kwargs)
        conv.documents = copy.deepcopy(conv.documents)
        for d in conv.documents:
            for v in (d.get("spec") or {}).get("validations") or []:
                v["expression"] = "true"
        return conv

    monkeypatch.setattr(run_convert, "convert_policy", weaker)


def _run(args: list[str], env: dict[str, str]) -> Result:
    return CliRunner().invoke(cli, args, env=env)


def _live_and_captured(kubeconfig: Path, tmp_path: Path, policy: Path, namespace: str,
                       context: list[str]) -> tuple[Result, Result]:
    env = {"KUBECONFIG": str(kubeconfig), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    live = _run(["convert", "-p", str(policy), "--verify", "--live", "-n", namespace, *context], env)
    state = tmp_path / "state.json"
    captured = _run(["capture", "-p", str(policy), "-n", namespace, *context, "-o", str(state)], env)
    assert captured.exit_code == 0, captured.output
    offline = _run(["convert", "-p", str(policy), "--verify", "--state", str(state)], {})
    return live, offline


def _lines(result: Result) -> list[str]:
    """What convert says of the comparison: its difference lines and the summary (the lines before them say
    how each policy converted, the same text whatever the source)."""
    return [line for line in result.stdout.splitlines() if line.startswith(("convlive-", "team"))]


def _summary(result: Result) -> tuple[int, str]:
    """The summary line: the subjects counted, and what follows the count."""
    line = next(line for line in result.stdout.splitlines() if line.startswith("verified "))
    count, _, rest = line.removeprefix("verified ").partition(" subject(s): ")
    return int(count), rest


# ---- the real API server ------------------------------------------------------------------------------------


@pytest.fixture
def cluster(realapi: RealServer) -> Iterator[str]:
    namespace = realapi.unique("convlive")
    realapi.seed(*_objects(namespace))
    yield namespace
    realapi.kube.delete(plural_path("v1", "namespaces", name=namespace))


@pytest.mark.parametrize("conversion", ["faithful", "weakened"])
def test_live_and_a_capture_give_the_same_verdicts(realapi: RealServer, cluster: str, tmp_path: Path,
                                                  conversion: str, request: pytest.FixtureRequest) -> None:
    if conversion == "weakened":
        request.getfixturevalue("weakened")
    name = realapi.unique("convlive-team")
    policy = _policy_file(tmp_path, cluster, name)
    live, offline = _live_and_captured(realapi.kubeconfig, tmp_path, policy, cluster, ["--context", "admin"])
    assert live.exit_code == offline.exit_code == (0 if conversion == "faithful" else 1), (live.output,
                                                                                          offline.output)
    assert _lines(live) == _lines(offline), (live.output, offline.output)
    # the same verdict differences; the capture holds more subjects than the live read: capture also lists
    # the evidence of causes (RBAC objects, reports, Kyverno's Deployments), which no policy here matches
    (live_count, live_said), (offline_count, offline_said) = _summary(live), _summary(offline)
    assert live_said == offline_said and 0 < live_count <= offline_count, (live.output, offline.output)
    if conversion == "weakened":
        # the Pods the original fails, as the cluster holds them
        said = "\n".join(_lines(live))
        assert f"{name}: Pod/{cluster}/wrong (as given): original fail, converted pass" in said, live.output
        assert f"{name}: Pod/{cluster}/none (as given): original fail, converted pass" in said, live.output
        assert f"{name}: Pod/{cluster}/good (as given)" not in said, live.output
    else:
        assert live_said == "0 verdict difference(s)", live.output
    assert live.stderr == "", live.stderr


def test_the_restricted_context_exits_5(realapi: RealServer, cluster: str, tmp_path: Path) -> None:
    """No rights: every LIST is a 403; the run says so and exits 5, never a clean count."""
    policy = _policy_file(tmp_path, cluster, realapi.unique("convlive-team"))
    env = {"KUBECONFIG": str(realapi.kubeconfig), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    result = _run(["convert", "-p", str(policy), "--verify", "--live", "-n", cluster, "--context", "restricted"],
                  env)
    assert result.exit_code == 5, result.output
    assert f'error: forbidden: cannot list pods in namespace "{cluster}"' in result.stderr, result.stderr
    summary = next(line for line in result.stdout.splitlines() if line.startswith("verified "))
    assert "read" in summary and "failed)" in summary, summary


# ---- the double: injected faults ----------------------------------------------------------------------------


@pytest.fixture
def double(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiServer]:
    from kubectl_kyrec.cluster import client

    real_connect = client.connect

    def fast(options: Any, **kwargs: Any) -> Any:
        # the client's retries all happen, without their waits
        return real_connect(options, **{**kwargs, "sleep": lambda _: None})

    monkeypatch.setattr(client, "connect", fast)
    with ApiServer() as api:
        api.seed(*_objects("shop"))
        api.kubeconfig(tmp_path / "kubeconfig")
        yield api


def _env(tmp_path: Path) -> dict[str, str]:
    return {"KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache")}


@pytest.mark.parametrize(("status", "text"), [(403, "forbidden"), (500, "500")])
def test_a_refused_list_exits_5_and_says_the_read(double: ApiServer, tmp_path: Path, weakened: None,
                                                  status: int, text: str) -> None:
    double.inject(r"^/api/v1/namespaces/shop/pods$", times=None, status=status)
    policy = _policy_file(tmp_path, "shop", "team")
    result = _run(["convert", "-p", str(policy), "--verify", "--live", "-n", "shop"], _env(tmp_path))
    assert double.requests("GET", r"^/api/v1/namespaces/shop/pods$"), "the injected read was never made"
    assert result.exit_code == 5, result.output
    # the read's line on stderr, as eval --live says the same fault
    said = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(said) == 1 and "pods" in said[0] and text in said[0].lower(), result.stderr
    evaluated = _run(["eval", "-p", str(policy), "--live", "-n", "shop"], _env(tmp_path))
    assert evaluated.exit_code == 5, evaluated.output
    assert said == [line for line in evaluated.stderr.splitlines() if line.startswith("error: ")]
    summary = next(line for line in result.stdout.splitlines() if line.startswith("verified "))
    # the Namespace and the ConfigMap the context entry reads (and its variant) were read, once per policy: no
    # Pod, and the line says the picture is partial
    assert summary == "verified 6 subject(s): 0 verdict difference(s) (incomplete: 1 read failed)", summary
    assert double.writes() == []


def test_a_capture_that_recorded_a_failed_read_says_so_as_live_does(tmp_path: Path) -> None:
    """`--verify --state` of a capture whose LIST of Pods failed: the same partial picture as the live run
    above, so the same summary and exit 5 with the read on stderr, as eval on that capture (a clean 0 before)."""
    import json

    state = tmp_path / "state.json"
    state.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "metadata": {"annotations": {
        "kyrec.io/listed": json.dumps([{"apiVersion": "v1", "kind": "Namespace", "namespace": ""}]),
        "kyrec.io/unreadable": json.dumps([{"apiVersion": "v1", "kind": "Pod", "namespace": "shop", "verb": "list",
                                           "resource": "pods", "status": 403, "reason": "Forbidden",
                                           "message": "forbidden: cannot list pods in shop"}])}},
        "items": [_objects("shop")[0]]}))
    policy = _policy_file(tmp_path, "shop", "team")
    result = _run(["convert", "-p", str(policy), "--verify", "--state", str(state)], {})
    assert result.exit_code == 5, result.output
    summary = next(line for line in result.stdout.splitlines() if line.startswith("verified "))
    assert summary.endswith("(incomplete: 1 read failed)"), summary
    said = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    evaluated = _run(["eval", "-p", str(policy), "--state", str(state)], {})
    assert evaluated.exit_code == 5, evaluated.output
    assert said and said == [line for line in evaluated.stderr.splitlines() if line.startswith("error: ")], \
        (result.stderr, evaluated.stderr)


def test_the_same_cluster_read_whole(double: ApiServer, tmp_path: Path, weakened: None) -> None:
    """The control of the test above: nothing failing, the Pods are read and their differences listed, exit 1
    (findings), no read error, nothing written."""
    policy = _policy_file(tmp_path, "shop", "team")
    result = _run(["convert", "-p", str(policy), "--verify", "--live", "-n", "shop"], _env(tmp_path))
    assert result.exit_code == 1, result.output
    assert "team: Pod/shop/wrong (as given): original fail, converted pass" in result.stdout, result.output
    assert "incomplete" not in result.stdout and "error: " not in result.stderr, result.output
    assert double.writes() == []


CLEANUP = """\
apiVersion: kyverno.io/v2
kind: ClusterCleanupPolicy
metadata:
  name: clean-unlabelled
spec:
  schedule: "0 * * * *"
  match:
    any:
    - resources:
        kinds: [Pod]
        namespaces: [shop]
  conditions:
    any:
    - key: "{{ target.metadata.labels.team || '' }}"
      operator: Equals
      value: ""
"""


def test_cleanup_policies_alone_read_the_kinds_they_match(double: ApiServer, tmp_path: Path) -> None:
    """Cleanup policies are none of eval's: the read is told their kinds, so their subjects are the cluster's
    Pods (not a vacuous run on the Namespace alone), and a -p of cleanup policies alone is no input error."""
    policy = tmp_path / "cleanup.yaml"
    policy.write_text(CLEANUP)
    result = _run(["convert", "-p", str(policy), "--verify", "--live", "-n", "shop"], _env(tmp_path))
    assert result.exit_code == 0, result.output
    assert double.requests("GET", r"^/api/v1/namespaces/shop/pods$"), "the Pods were not read"
    pods = tmp_path / "pods.yaml"
    pods.write_text(yaml.safe_dump_all(_objects("shop")[2:]))
    offline = _run(["convert", "-p", str(policy), "--verify", "-r", str(pods)], {})
    live_count, live_said = _summary(result)
    offline_count, offline_said = _summary(offline)
    # the three Pods and their variants, and the Namespace
    assert live_said == offline_said == "0 verdict difference(s)" and live_count == offline_count + 1, (
        result.output, offline.output)


def test_the_configmap_a_context_entry_reads_is_read(double: ApiServer, tmp_path: Path, weakened: None) -> None:
    policy = _policy_file(tmp_path, "shop", "team")
    result = _run(["convert", "-p", str(policy), "--verify", "--live", "-n", "shop"], _env(tmp_path))
    assert "team-cm: Pod/shop/none (as given): original fail, converted pass" in result.stdout, result.output
    assert "team-cm: Pod/shop/good (as given)" not in result.stdout, result.output


def test_a_connection_that_is_down_exits_5_with_nothing_written(tmp_path: Path) -> None:
    with ApiServer() as api:
        api.kubeconfig(tmp_path / "kubeconfig")
    # the server is gone: its port refuses
    policy = _policy_file(tmp_path, "shop", "team")
    out = tmp_path / "converted"
    result = _run(["convert", "-p", str(policy), "-o", str(out), "--verify", "--live", "--request-timeout", "1s"],
                  _env(tmp_path))
    assert result.exit_code == 5, result.output
    assert result.stderr.startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    assert not out.exists()


@pytest.mark.parametrize(("args", "said"), [
    (["--live"], "-r/--state/--live are for --verify"),
    (["--verify", "--live", "--state", "x.json"], "--live and --state exclude each other"),
    (["--verify"], "--verify needs resources: -r PATH, --state FILE or --live"),
])
def test_the_flags(tmp_path: Path, args: list[str], said: str) -> None:
    policy = _policy_file(tmp_path, "shop", "team")
    result = _run(["convert", "-p", str(policy), *args], {})
    assert result.exit_code == 2, result.output
    assert said in result.stderr, result.stderr


def test_help_names_live_and_the_kubectl_flags() -> None:
    text = CliRunner().invoke(cli, ["convert", "--help"]).output
    for flag in ("--live", "--kubeconfig", "--context", "--namespace", "--as"):
        assert flag in text, flag
