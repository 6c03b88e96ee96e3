"""`capture -o` follows the `-o FORMAT=FILE` rule of every other command (issue 27): `-o json=FILE` writes
FILE (it wrote a file named `json=FILE`), `-o json` stdout, `-o FILE` the file as documented; any other
format is a usage error before the cluster is read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cluster.test_live_cli import POLICY, cluster, kyrec  # noqa: F401  (cluster is a fixture)
from tests.kubeapi.server import ApiServer


def _is_capture(text: str) -> bool:
    doc = json.loads(text)
    return doc["kind"] == "List" and isinstance(doc["items"], list)


def test_json_equals_file_writes_the_file(cluster: ApiServer, tmp_path: Path,  # noqa: F811
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = kyrec(cluster, tmp_path, "capture", "-p", POLICY, "-o", "json=cap6.json")
    assert result.exit_code == 0, result.stderr
    assert _is_capture((tmp_path / "cap6.json").read_text())
    assert not (tmp_path / "json=cap6.json").exists() and result.stdout == ""


def test_json_alone_is_stdout_and_a_bare_path_is_a_file(cluster: ApiServer, tmp_path: Path,  # noqa: F811
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)         # a wrong answer writes a file named `json` here, not in the checkout
    result = kyrec(cluster, tmp_path, "capture", "-p", POLICY, "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert _is_capture(result.stdout)
    target = tmp_path / "state.json"
    result = kyrec(cluster, tmp_path, "capture", "-p", POLICY, "-o", str(target))
    assert result.exit_code == 0 and _is_capture(target.read_text())


@pytest.mark.parametrize("value", ["yaml=state.yaml", "yaml", "table", "json="])
def test_another_format_is_refused_before_the_cluster_is_read(cluster: ApiServer, tmp_path: Path,  # noqa: F811
                                                               value: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = kyrec(cluster, tmp_path, "capture", "-p", POLICY, "-o", value)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith(f"error: -o {value}: ")
    assert cluster.requests() == [] and sorted(p.name for p in tmp_path.iterdir()) == ["kubeconfig"]


def test_a_capture_is_streamed_to_its_file_not_built_whole_in_memory(tmp_path: Path) -> None:
    """bench/live_scale.py measured capture's peak at 9x its file (1,687 MiB for a 180 MB capture of 53,000
    objects): `json.dumps(indent=...)` is the pure-Python encoder, which joins a list of millions of small
    strings into one text, then the text is encoded whole. Written as it is encoded, the extra memory of
    writing stays far below the file's size; the bytes are the same `json.dumps(indent=1)` text."""
    import tracemalloc

    from kubectl_kyrec.cli.capture_cmd import _write
    from kubectl_kyrec.run.capture_state import CaptureResult

    items = [{"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": f"cm-{i}", "namespace": f"ns-{i % 7}", "labels": {"app": f"a{i}"}},
              "data": {"key": f"value-{i}", "other": "x" * (i % 50)}} for i in range(20_000)]
    result = CaptureResult({"apiVersion": "v1", "kind": "List", "items": items})
    target = tmp_path / "state.json"
    tracemalloc.start()
    try:
        _write(result, str(target))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    size = target.stat().st_size
    assert target.read_text() == json.dumps(result.document, indent=1) + "\n"
    assert size > 3_000_000
    assert peak < size / 2, f"writing a {size:,}-byte capture traced a {peak:,}-byte peak"
