"""An input that holds nothing checks nothing, and says so (issue 22, item 7): zero resources from a given
`-r`, or a given `--state` with no object and no record of what was listed, is an input error (exit 3, one
line naming the input), never a green run. A capture of an empty cluster is no such case: its record says
which kinds were listed and found empty."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
POLICIES = str(ROOT / "testdata" / "examples" / "policies")
RESOURCES = str(ROOT / "testdata" / "examples" / "resources")
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "uid": "ns-1"}}


def run(tmp_path: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = CliRunner().invoke(cli, list(args), input=stdin)
    finally:
        os.chdir(cwd)
    return result.exit_code, result.stdout, result.stderr


def one_error(code: int, out: str, err: str) -> str:
    """The one error line of a run that ended as an input error, checked to be the only thing it said."""
    assert code == 3, err
    assert "Traceback" not in err and "No policy matched" not in out
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.mark.parametrize(("content", "what"), [
    ("", "empty file"),
    ("# rendered nothing\n---\n---\n", "only comments and separators"),
    ('{"apiVersion": "v1", "kind": "List", "items": []}', "an empty List"),
])
def test_eval_of_an_empty_manifest_file_is_exit_3(tmp_path: Path, content: str, what: str) -> None:
    (tmp_path / "render.yaml").write_text(content)
    line = one_error(*run(tmp_path, "eval", "-p", POLICIES, "-r", "render.yaml"))
    assert line == "error: no resources in render.yaml (0 documents): nothing would be checked", what


def test_eval_of_an_empty_directory_is_exit_3(tmp_path: Path) -> None:
    (tmp_path / "manifests").mkdir()
    line = one_error(*run(tmp_path, "eval", "-p", POLICIES, "-r", "manifests/"))
    assert line == "error: no resources in manifests/ (0 documents): nothing would be checked"


def test_eval_of_empty_stdin_is_exit_3(tmp_path: Path) -> None:
    # `kustomize build overlay | kubectl kyrec eval -p policies -r -` with a render that failed
    line = one_error(*run(tmp_path, "eval", "-p", POLICIES, "-r", "-", stdin=""))
    assert line == "error: no resources in standard input (0 documents): nothing would be checked"


def test_one_empty_path_among_several_is_named(tmp_path: Path) -> None:
    # the other path's resources are checked, but the render the user named is missing
    (tmp_path / "overlay.yaml").write_text("")
    line = one_error(*run(tmp_path, "eval", "-p", POLICIES, "-r", RESOURCES, "-r", "overlay.yaml"))
    assert line == "error: no resources in overlay.yaml (0 documents): nothing would be checked"


def test_manifests_that_are_all_policies_are_exit_3(tmp_path: Path) -> None:
    # -r may carry policies beside the manifests (a directory of everything); with no manifest at all, the
    # policies are read and nothing is checked against them
    line = one_error(*run(tmp_path, "eval", "-p", POLICIES, "-r", POLICIES))
    assert line == f"error: no resources in {POLICIES} (2 documents, all policies): nothing would be checked"


def test_manifests_with_policies_beside_resources_still_run(tmp_path: Path) -> None:
    code, _, err = run(tmp_path, "eval", "-p", POLICIES, "-r", POLICIES, "-r", RESOURCES)
    assert code == 1, err       # the example Pod fails two policies


@pytest.mark.parametrize("command", ["diff", "coverage"])
def test_diff_and_coverage_of_empty_manifests_are_exit_3(tmp_path: Path, command: str) -> None:
    (tmp_path / "state.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [NAMESPACE]}))
    (tmp_path / "render.yaml").write_text("")
    line = one_error(*run(tmp_path, command, "-p", POLICIES, "-r", "render.yaml", "--state", "state.json"))
    assert line == "error: no resources in render.yaml (0 documents): nothing would be checked"


@pytest.mark.parametrize("command", ["eval", "diff", "coverage"])
def test_a_state_with_nothing_and_no_record_is_exit_3(tmp_path: Path, command: str) -> None:
    # what `kubectl get ... > state.json` leaves when kubectl fails
    (tmp_path / "state.json").write_text("")
    line = one_error(*run(tmp_path, command, "-p", POLICIES, "--state", "state.json"))
    assert line == ("error: no objects in state.json and no record of what was listed (kubectl kyrec capture "
                    "writes one): nothing would be checked")


@pytest.mark.parametrize("command", ["eval", "diff", "coverage"])
@pytest.mark.parametrize("indent", [None, 4])
def test_kubectl_s_empty_list_is_refused_and_the_refusal_names_capture_kind(tmp_path: Path, command: str,
                                                                          indent: int | None) -> None:
    """Issue 33 item 5: `kubectl get limitranges -A -o json` on a cluster with none writes this List; it names no
    kind, so it cannot say that LimitRanges were listed. Refused, pointing at the command that can."""
    (tmp_path / "state.json").write_text(json.dumps(
        {"apiVersion": "v1", "items": [], "kind": "List", "metadata": {"resourceVersion": ""}}, indent=indent))
    line = one_error(*run(tmp_path, command, "-p", POLICIES, "--state", "state.json"))
    assert line == ("error: state.json is an empty List, which names no kind (kubectl get writes one for a kind with "
                    "no objects): nothing would be checked. Capture the kinds with kubectl kyrec capture --kind "
                    "KIND... -o FILE, which records each kind it lists, even when empty")


def test_eval_with_manifests_and_an_empty_state_is_exit_3(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text("")
    line = one_error(*run(tmp_path, "eval", "-p", POLICIES, "-r", RESOURCES, "--state", "state.json"))
    assert line.startswith("error: no objects in state.json and no record of what was listed")


def test_an_empty_state_file_among_several_is_named(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [NAMESPACE]}))
    (tmp_path / "b.json").write_text("")
    line = one_error(*run(tmp_path, "diff", "-p", POLICIES, "--state", "a.json", "--state", "b.json"))
    assert line.startswith("error: no objects in b.json and no record")


def empty_cluster_capture() -> dict[str, object]:
    """What `kubectl kyrec capture` writes for a cluster with none of the kinds it listed."""
    listed = [{"apiVersion": v, "kind": k, "namespace": ""} for v, k in
              (("v1", "Namespace"), ("v1", "Pod"), ("wgpolicyk8s.io/v1alpha2", "PolicyReport"),
               ("wgpolicyk8s.io/v1alpha2", "ClusterPolicyReport"))]
    return {"apiVersion": "v1", "kind": "List", "items": [],
            "metadata": {"annotations": {"kyrec.io/listed": json.dumps(listed), "kyrec.io/unreadable": "[]"}}}


@pytest.mark.parametrize("command", ["eval", "diff", "coverage"])
def test_a_capture_of_an_empty_cluster_is_an_answer_not_an_error(tmp_path: Path, command: str) -> None:
    (tmp_path / "state.json").write_text(json.dumps(empty_cluster_capture()))
    code, _, err = run(tmp_path, command, "-p", POLICIES, "--state", "state.json")
    assert code == 0, err
    assert "error" not in err
