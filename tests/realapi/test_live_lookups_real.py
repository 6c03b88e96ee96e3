"""Lookups on the real kube-apiserver: one answer whatever the source (cluster/live.py's read plan,
run/providers.py state_lookups; tests/consistency/test_live_lookups.py is the double's leg).

A ClusterPolicy's `configMap` context entry and ValidatingPolicies' `resource.Get` read the ConfigMap of another
namespace than `-n`'s: `eval --live`, `eval --state` on a capture and `eval --state` on the objects given as files
give the same verdicts, as the ConfigMap's data says. The lookups name their namespace as a literal, so only that
namespace's ConfigMaps are read: a user whose Role lists ConfigMaps there alone (impersonated with `--as`, the
real RBAC authorizer deciding) runs the policies; a lookup in a namespace not read is `undetermined`
(kind-not-captured) saying so, never "not found".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.consistency.test_live_lookups import CLASSIC, LITERAL, OUTSIDE, VPOL
from tests.realapi.fixture import RealServer

ROOT = Path(__file__).resolve().parents[2]


def _kyrec(server: RealServer, tmp_path: Path, *args: str) -> Result:
    env = {"KUBECONFIG": str(server.kubeconfig), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return CliRunner().invoke(cli, [*args], env=env)


def _verdicts(result: Result) -> dict[tuple[str, str], tuple[str, str]]:
    doc = json.loads(result.stdout)
    return {(r["policy"], r["subject"]["name"]): (r["result"], r["message"]) for r in doc["results"]
            if r["subject"]["kind"] == "Pod"}


class Scenario:
    """Namespaces of the test's own (shop: the Pods; platform: the ConfigMap; other: read by no literal
    lookup), the ConfigMap allowing `allowed`, Pods blue and red, and the policies under names of its own."""

    def __init__(self, server: RealServer, tmp_path: Path, allowed: str) -> None:
        self.shop, self.platform, self.other = (server.unique(n) for n in ("shop", "platform", "other"))
        self.objects: list[dict[str, Any]] = [
            {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": n, "labels": {"kubernetes.io/metadata.name": n}}}
            for n in (self.shop, self.platform, self.other)]
        self.objects.append({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "teams", "namespace": self.platform}, "data": {"allowed": allowed}})
        for team in ("blue", "red"):
            self.objects.append({"apiVersion": "v1", "kind": "Pod",
                                 "metadata": {"name": team, "namespace": self.shop, "labels": {"team": team}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}})
        server.seed(*self.objects[:3])
        server.seed(*self.objects[3:])
        text = CLASSIC + "---\n" + VPOL.replace("LOOKUP", LITERAL) + \
            OUTSIDE.replace("NAMESPACE", "platform").replace("NAME", "inside") + \
            OUTSIDE.replace("NAMESPACE", "other").replace("NAME", "outside")
        self.prefix = server.unique("lookup")
        for word in ("team-cm", "team-vpol", "inside", "outside"):
            text = text.replace(f"name: {word}\n", f"name: {self.prefix}-{word}\n")
        text = text.replace("platform", self.platform).replace("shop", self.shop).replace('"other"', f'"{self.other}"')
        self.policies = tmp_path / "policies.yaml"
        self.policies.write_text(text)
        self.files = tmp_path / "given.yaml"
        self.files.write_text(yaml.safe_dump_all(self.objects))

    def verdicts(self, result: Result) -> dict[tuple[str, str], tuple[str, str]]:
        """(policy without its prefix, Pod) -> (result, message)."""
        return {(p.removeprefix(f"{self.prefix}-"), n): v for (p, n), v in _verdicts(result).items()}


def test_live_a_capture_and_the_objects_given_agree_on_the_real_server(realapi: RealServer, tmp_path: Path) -> None:
    for allowed in ("blue", "red"):
        s = Scenario(realapi, tmp_path, allowed)
        state = tmp_path / f"state-{allowed}.json"
        args = ["-p", str(s.policies), "-n", s.shop, "-o", "json"]
        live = _kyrec(realapi, tmp_path, "eval", "--live", *args)
        captured = _kyrec(realapi, tmp_path, "capture", "-p", str(s.policies), "-n", s.shop, "-o", str(state))
        assert captured.exit_code == 0, captured.output
        on_capture = _kyrec(realapi, tmp_path, "eval", "--state", str(state), *args)
        given = _kyrec(realapi, tmp_path, "eval", "--state", str(s.files), *args)
        assert live.exit_code == on_capture.exit_code == given.exit_code == 1, (live.output, on_capture.output,
                                                                                given.output)
        verdicts = s.verdicts(live)
        # the same verdicts and messages (a lookup not read says where it was not read from)
        assert verdicts == {k: (r, m.replace("the captured cluster", "the cluster"))
                            for k, (r, m) in s.verdicts(on_capture).items()}, (live.output, on_capture.output)
        # the capture recorded where it listed the ConfigMaps: its namespace `other` was not read there
        assert {k: v for k, v in verdicts.items() if k[0] != "outside"} == \
            {k: v for k, v in s.verdicts(given).items() if k[0] != "outside"}, (live.output, given.output)
        other = "red" if allowed == "blue" else "blue"
        for policy in ("team-cm", "team-vpol", "inside"):
            assert verdicts[(policy, allowed)][0] == "pass" and verdicts[(policy, other)][0] == "fail", verdicts
        # no ConfigMap there as files: Kyverno CLI's "not found" (null); live and captured: not read, so
        # undetermined with the reason first (Kyverno reads them: its answer is not known)
        assert {verdicts[("outside", p)][0] for p in ("blue", "red")} == {"undetermined"}, verdicts
        assert all(verdicts[("outside", p)][1].startswith("kind-not-captured: ") for p in ("blue", "red")), verdicts
        assert {s.verdicts(given)[("outside", p)][0] for p in ("blue", "red")} == {"pass"}, given.output


def _rbac(server: RealServer, user: str, platform: str) -> None:
    """docs/rbac.yaml's reader without ConfigMaps anywhere, its Role for Kyverno's namespace, and a Role listing
    ConfigMaps in `platform` alone, bound to `user` (names of the test's own: the server is shared)."""
    docs = {d["metadata"]["name"]: d for d in yaml.safe_load_all((ROOT / "docs" / "rbac.yaml").read_text()) if d}
    reader, kyverno = docs["kyrec-read"], docs["kyrec-read-kyverno-config"]
    reader["metadata"]["name"], kyverno["metadata"]["name"] = f"{user}-read", f"{user}-kyverno"
    for rule in reader["rules"]:
        rule["resources"] = [r for r in rule["resources"] if r != "configmaps"]
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": f"{user}-configmaps", "namespace": platform},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]}

    def binding(kind: str, name: str, namespace: str = "") -> dict[str, Any]:
        meta = {"name": name, **({"namespace": namespace} if namespace else {})}
        return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": f"{kind}Binding", "metadata": meta,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
                "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]}

    server.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kyverno"}})
    server.seed(reader, kyverno, role, binding("ClusterRole", reader["metadata"]["name"]),
                binding("Role", kyverno["metadata"]["name"], "kyverno"),
                binding("Role", role["metadata"]["name"], platform))


def test_a_role_listing_configmaps_in_the_lookup_s_namespace_alone_suffices_on_the_real_server(
        realapi: RealServer, tmp_path: Path) -> None:
    s = Scenario(realapi, tmp_path, "blue")
    user = realapi.unique("team")
    _rbac(realapi, user, s.platform)
    state = tmp_path / "state.json"
    args = ["-p", str(s.policies), "-n", s.shop, "--as", user]
    # the role is what the real authorizer says: a cluster-wide LIST of ConfigMaps is refused to this user
    refused = _kyrec(realapi, tmp_path, "capture", "--kind", "configmaps", "-A", "--as", user, "-o",
                     str(tmp_path / "refused.json"))
    assert refused.exit_code == 5 and "configmaps" in refused.stderr, refused.output
    live = _kyrec(realapi, tmp_path, "eval", "--live", *args, "-o", "json")
    captured = _kyrec(realapi, tmp_path, "capture", *args, "-o", str(state))
    assert captured.exit_code == 0, captured.output
    on_capture = _kyrec(realapi, tmp_path, "eval", "--state", str(state), "-p", str(s.policies), "-n", s.shop,
                        "-o", "json")
    assert live.exit_code == on_capture.exit_code == 1, (live.output, on_capture.output)
    for result, origin in ((live, "the cluster"), (on_capture, "the captured cluster")):
        verdicts = s.verdicts(result)
        for policy in ("team-cm", "team-vpol", "inside"):
            assert verdicts[(policy, "blue")][0] == "pass" and verdicts[(policy, "red")][0] == "fail", verdicts
        for pod in ("blue", "red"):
            verdict, message = verdicts[("outside", pod)]
            assert verdict == "undetermined" and message.startswith("kind-not-captured: ") and \
                f"ConfigMaps in namespace {s.other} were not read from {origin}" in message, message
