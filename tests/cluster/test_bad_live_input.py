"""Bad input on the live path (the bad-input audit): apply refuses a mistyped --kind, --policy-name or an
empty --field-manager before it writes anything, and a broken kubeconfig is one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster.test_live_cli import POLICY, cluster, kyrec  # noqa: F401  (cluster is a fixture)
from tests.kubeapi.server import ApiServer


@pytest.mark.parametrize(("args", "error"), [
    (["--kind", "nosuchkind"], "error: --kind nosuchkind: no such resource type"),
    (["--policy-name", "no-such-policy"], "error: --policy-name no-such-policy: no such policy among those given"),
    (["--field-manager", ""], "error: --field-manager: must not be empty"),
], ids=["kind", "policy-name", "field-manager"])
def test_apply_refuses_a_filter_that_names_nothing_and_writes_nothing(cluster: ApiServer,  # noqa: F811
                                                                       tmp_path: Path, args: list[str],
                                                                       error: str) -> None:
    result = kyrec(cluster, tmp_path, "apply", "-p", POLICY, "--yes", *args)
    assert result.exit_code in (2, 3), result.stderr
    assert result.stderr.splitlines()[-1].startswith(error)
    assert cluster.writes() == []


def test_apply_resolves_a_kind_as_kubectl_names_it(cluster: ApiServer, tmp_path: Path) -> None:  # noqa: F811
    # the policy's triggers are Namespaces: `namespaces` is the plural kubectl takes, so the plan is the full one
    result = kyrec(cluster, tmp_path, "apply", "-p", POLICY, "--yes", "--kind", "namespaces")
    assert result.exit_code == 0, result.stderr
    assert len(cluster.writes()) == 2


@pytest.mark.parametrize(("content", "error"), [
    ("a: [\n", "kc:2: cannot read kubeconfig: bad YAML: expected the node content"),
    (b"\xff\xfe\x00", "kc: cannot read kubeconfig: not valid UTF-8"),
    ("apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: x, user: u}}]\n"
     "clusters: [{name: x, cluster: {}}]\nusers: [{name: u, user: {}}]\n",
     'context "c": cluster "x" has no server in the kubeconfig'),
], ids=["yaml", "encoding", "no-server"])
def test_a_broken_kubeconfig_is_one_line_and_exit_5(tmp_path: Path, content: str | bytes, error: str) -> None:
    from click.testing import CliRunner

    from kubectl_kyrec.cli.main import cli

    kc = tmp_path / "kc"
    if isinstance(content, bytes):
        kc.write_bytes(content)
    else:
        kc.write_text(content)
    result = CliRunner().invoke(cli, ["diff", "-p", POLICY, "--kubeconfig", str(kc)],
                                env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert result.exit_code == 5
    assert result.stderr.splitlines() == [result.stderr.splitlines()[-1]]
    assert result.stderr.splitlines()[-1].startswith(f"error: {tmp_path}/{error}" if error.startswith("kc")
                                                     else f"error: {error}")
