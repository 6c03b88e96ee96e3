"""Secrets in captures (issue 22, item 8): `capture` writes every Secret value as a salted digest, and an
offline `diff --state` on the capture still finds a changed Secret downstream and keeps an unchanged one in
sync, as the live diff does. `--include-secret-values` writes them in clear, with a warning. Round trips
through the API server double, the CLI run as a user runs it."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.load.run_inputs.secret_digests import PREFIX, SALT_ANNOTATION
from tests.kubeapi.server import ApiServer

TOKEN = "s3cr3t-token-value"
CHANGED = "changed-token-value"
HELM = "helm-release-payload-of-app"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
APPLIED_TEXT = json.dumps({"apiVersion": "v1", "kind": "Secret", "data": {"token": base64.b64encode(
    b"applied-by-hand").decode()}})
CLEAR = (TOKEN, CHANGED, HELM, "applied-by-hand", APPLIED_TEXT)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


POLICY = f"""\
apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: team-token
  creationTimestamp: "2026-01-01T00:00:00Z"
spec:
  evaluation:
    synchronize:
      enabled: true
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [namespaces]
  matchConditions:
  - name: teams-only
    expression: object.metadata.name.startsWith("team-")
  generate:
  - expression: >-
      generator.Apply(object.metadata.name, [{{"apiVersion": dyn("v1"), "kind": dyn("Secret"),
      "metadata": dyn({{"name": "token"}}), "type": dyn("Opaque"), "data": dyn({{"token": "{b64(TOKEN)}"}})}}])
"""


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[ApiServer]:
    with ApiServer() as api:
        for name in ("default", "team-a", "team-b", "team-c"):
            api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        # an unrelated Secret a capture lists all the same (Helm keeps its releases in Secrets)
        api.seed({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                  "metadata": {"name": "sh.helm.release.v1.app.v1", "namespace": "team-b"},
                  "data": {"release": b64(HELM)}})
        api.kubeconfig(tmp_path / "kubeconfig")
        (tmp_path / "policy.yaml").write_text(POLICY)
        yield api


def kyrec(tmp_path: Path, *args: str) -> Result:
    env = {"KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return CliRunner().invoke(cli, list(args), env=env)


def changes(result: Result) -> dict[str, str]:
    doc = json.loads(result.stdout)
    return {c["object"]["namespace"]: c["class"] + (f"/{c['reason']}" if c["reason"] else "")
            for c in doc["changes"] if c["domain"] == "downstream"}


def drift(cluster: ApiServer, tmp_path: Path) -> None:
    """Kyverno's downstreams written, then team-a's value changed and team-c given kubectl's last-applied
    annotation (a field another manager owns: foreign-fields drift, live)."""
    assert kyrec(tmp_path, "apply", "-p", str(tmp_path / "policy.yaml"), "--yes").exit_code == 0
    cluster.store.mutate("v1", "Secret", "team-a", "token", lambda o: o["data"].update(token=b64(CHANGED)))
    cluster.store.mutate("v1", "Secret", "team-c", "token", lambda o: o["metadata"].setdefault(
        "annotations", {}).update({LAST_APPLIED: APPLIED_TEXT}), manager="kubectl-client-side-apply")


def leaked(text: str) -> list[str]:
    return [v for value in CLEAR for v in (value, b64(value)) if v in text]


def test_a_capture_holds_digests_and_an_offline_diff_finds_what_the_live_one_finds(cluster: ApiServer,
                                                                                   tmp_path: Path) -> None:
    drift(cluster, tmp_path)
    policy = str(tmp_path / "policy.yaml")
    live = kyrec(tmp_path, "diff", "-p", policy, "-o", "json")
    assert changes(live) == {"team-a": "drifted/changed-fields", "team-b": "in-sync",
                             "team-c": "drifted/foreign-fields"}
    state = tmp_path / "state.json"
    capture = kyrec(tmp_path, "capture", "-p", policy, "-o", str(state))
    assert capture.exit_code == 0, capture.stderr
    # no warning: only the summary line of a capture written to a file
    assert capture.stderr.splitlines() == [capture.stderr.strip()] and capture.stderr.startswith("kyrec capture: ")
    text = state.read_text()
    assert leaked(text) == []
    doc = json.loads(text)
    secrets = {(i["metadata"]["namespace"], i["metadata"]["name"]): i for i in doc["items"] if i["kind"] == "Secret"}
    assert len(secrets) == 4
    assert all(v.startswith(PREFIX) for s in secrets.values() for v in s["data"].values())
    # the last-applied annotation is kept, as a digest: the field kubectl's manager owns is still there
    assert secrets[("team-c", "token")]["metadata"]["annotations"][LAST_APPLIED].startswith(PREFIX)
    assert len(doc["metadata"]["annotations"][SALT_ANNOTATION]) == 32
    offline = kyrec(tmp_path, "diff", "-p", policy, "--state", str(state), "-o", "json")
    assert offline.exit_code == 1, offline.stderr
    assert changes(offline) == changes(live)
    # what the diff shows of the drift says a value changed without showing it
    team_a = next(c for c in json.loads(offline.stdout)["changes"] if c["object"]["namespace"] == "team-a")
    assert team_a["fields"] == ["/data/token"] and "*** (before)" in team_a["diff"]
    for fmt in ("json", "yaml", "wide", "table"):
        out = kyrec(tmp_path, "diff", "-p", policy, "--state", str(state), "-o", fmt).stdout
        assert leaked(out) == [] and PREFIX not in out, fmt


def test_a_second_capture_has_another_salt_and_other_digests(cluster: ApiServer, tmp_path: Path) -> None:
    drift(cluster, tmp_path)
    docs = []
    for name in ("one.json", "two.json"):
        result = kyrec(tmp_path, "capture", "-p", str(tmp_path / "policy.yaml"), "-o", str(tmp_path / name))
        assert result.exit_code == 0
        docs.append(json.loads((tmp_path / name).read_text()))
    values = [{i["metadata"]["namespace"]: i["data"] for i in d["items"] if i["kind"] == "Secret"} for d in docs]
    assert values[0]["team-b"] != values[1]["team-b"]
    assert docs[0]["metadata"]["annotations"][SALT_ANNOTATION] != docs[1]["metadata"]["annotations"][SALT_ANNOTATION]
    # both given to one run (overlapping captures: the first copy of each object counts): digests of either
    # capture compare, each with its own salt
    offline = kyrec(tmp_path, "diff", "-p", str(tmp_path / "policy.yaml"), "--state", str(tmp_path / "two.json"),
                    "--state", str(tmp_path / "one.json"), "-o", "json")
    assert changes(offline)["team-b"] == "in-sync" and changes(offline)["team-a"] == "drifted/changed-fields"


def test_include_secret_values_writes_them_in_clear_with_a_warning(cluster: ApiServer, tmp_path: Path) -> None:
    drift(cluster, tmp_path)
    state = tmp_path / "state.json"
    result = kyrec(tmp_path, "capture", "-p", str(tmp_path / "policy.yaml"), "--include-secret-values", "-o",
                   str(state))
    assert result.exit_code == 0
    assert result.stderr.startswith("warning: --include-secret-values: the capture holds the values of 4 Secret(s) "
                                    "in clear")
    text = state.read_text()
    assert b64(TOKEN) in text and b64(HELM) in text and PREFIX not in text
    assert SALT_ANNOTATION not in json.loads(text)["metadata"]["annotations"]
    offline = kyrec(tmp_path, "diff", "-p", str(tmp_path / "policy.yaml"), "--state", str(state), "-o", "json")
    assert changes(offline) == {"team-a": "drifted/changed-fields", "team-b": "in-sync",
                                "team-c": "drifted/foreign-fields"}


READS_SECRETS = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: token-length}
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [secrets]}
  validations:
  - expression: "!has(object.data) || !('token' in object.data) || size(base64.decode(object.data.token)) > 8"
"""


def notices(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if "salted digests" in line]


def test_policies_that_may_read_secret_values_are_named_when_the_state_holds_digests(cluster: ApiServer,
                                                                                    tmp_path: Path) -> None:
    drift(cluster, tmp_path)
    state = tmp_path / "state.json"
    assert kyrec(tmp_path, "capture", "-p", str(tmp_path / "policy.yaml"), "-o", str(state)).exit_code == 0
    (tmp_path / "reads.yaml").write_text(READS_SECRETS)
    for command in ("eval", "coverage", "diff"):
        said = notices(kyrec(tmp_path, command, "-p", str(tmp_path / "reads.yaml"), "--state", str(state)))
        assert len(said) == 1, command
        assert said[0] == ("notice: the state holds 4 Secret(s) whose values are salted digests (kubectl kyrec "
                           "capture's default), and token-length may read Secrets: they see kyrec-sha256:... "
                           "strings where the values were, so their results on Secret values are not the "
                           "cluster's. Capture with --include-secret-values for such policies")
    # a policy that only writes Secrets is compared digest to digest: nothing to say
    assert notices(kyrec(tmp_path, "diff", "-p", str(tmp_path / "policy.yaml"), "--state", str(state))) == []
    clear = tmp_path / "clear.json"
    assert kyrec(tmp_path, "capture", "-p", str(tmp_path / "policy.yaml"), "--include-secret-values", "-o",
                 str(clear)).exit_code == 0
    assert notices(kyrec(tmp_path, "eval", "-p", str(tmp_path / "reads.yaml"), "--state", str(clear))) == []
