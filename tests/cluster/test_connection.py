"""kubectl's connection flags and kubeconfig resolution, without a server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from kubectl_kyrec.cluster.connection import ConnectionOptions, parse_request_timeout, resolve
from kubectl_kyrec.errors import ClusterError, ExitCode, UsageError


@pytest.mark.parametrize(("text", "seconds"), [("0", None), ("", None), (None, None), ("5", 5.0), ("5s", 5.0),
                                               ("2m", 120.0), ("1m30s", 90.0), ("500ms", 0.5), ("1h", 3600.0)])
def test_request_timeout_durations(text: str | None, seconds: float | None) -> None:
    assert parse_request_timeout(text) == seconds


def test_request_timeout_rejects_garbage() -> None:
    with pytest.raises(UsageError, match="--request-timeout: invalid duration 'soon'"):
        parse_request_timeout("soon")


def _config(path: Path, current: str | None, contexts: dict[str, tuple[str, str]],
            clusters: dict[str, str]) -> str:
    doc: dict[str, object] = {
        "apiVersion": "v1", "kind": "Config",
        "contexts": [{"name": n, "context": {"cluster": c, "user": u}} for n, (c, u) in contexts.items()],
        "clusters": [{"name": n, "cluster": {"server": s}} for n, s in clusters.items()],
        "users": [{"name": u, "user": {"token": "t"}} for _, u in contexts.values()],
    }
    if current:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_several_kubeconfig_files_merge_as_kubectl_merges(tmp_path: Path) -> None:
    first = _config(tmp_path / "a", "one", {"one": ("c1", "u1")}, {"c1": "https://one"})
    second = _config(tmp_path / "b", "two", {"two": ("c2", "u2"), "one": ("cX", "uX")}, {"c2": "https://two"})
    joined = os.pathsep.join([first, str(tmp_path / "missing"), second])
    # the first file to set current-context wins, and the first definition of a name wins
    resolved = resolve(ConnectionOptions(), environ={"KUBECONFIG": joined})
    assert (resolved.context, resolved.user, resolved.server) == ("one", "u1", "https://one")
    assert resolved.paths == (first, second)
    other = resolve(ConnectionOptions(context="two"), environ={"KUBECONFIG": joined})
    assert (other.user, other.server) == ("u2", "https://two")


def test_flag_beats_environment(tmp_path: Path) -> None:
    env_file = _config(tmp_path / "env", "env", {"env": ("c", "u")}, {"c": "https://env"})
    flag_file = _config(tmp_path / "flag", "flag", {"flag": ("c", "u")}, {"c": "https://flag"})
    resolved = resolve(ConnectionOptions(kubeconfig=flag_file), environ={"KUBECONFIG": env_file})
    assert resolved.server == "https://flag"


def test_no_kubeconfig_says_how_to_run_offline(tmp_path: Path) -> None:
    with pytest.raises(ClusterError) as err:
        resolve(ConnectionOptions(), environ={"KUBECONFIG": str(tmp_path / "nothing-here")})
    assert err.value.exit_code == ExitCode.CLUSTER
    assert str(err.value).startswith(f"no kubeconfig found (looked at {tmp_path / 'nothing-here'})")
    assert "--state FILE" in str(err.value)


def test_unknown_context_and_no_current_context(tmp_path: Path) -> None:
    path = _config(tmp_path / "k", None, {"one": ("c", "u")}, {"c": "https://x"})
    with pytest.raises(ClusterError, match="no current context is set; pass --context NAME"):
        resolve(ConnectionOptions(kubeconfig=path))
    # a --context that names no context is a usage error (2); a current-context naming none is the
    # kubeconfig's fault, a cluster error (5)
    with pytest.raises(UsageError, match="--context nope: no such context in the kubeconfig"):
        resolve(ConnectionOptions(kubeconfig=path, context="nope"))
    broken = _config(tmp_path / "b", "gone", {"one": ("c", "u")}, {"c": "https://x"})
    with pytest.raises(ClusterError, match='context "gone" is not in the kubeconfig'):
        resolve(ConnectionOptions(kubeconfig=broken))
