"""`eval --old` and `--old-ref`: a change's manifests evaluated as the requests it makes (UPDATE with the
stored oldObject, DELETE of what went, CREATE of what is new), and the flags' usage errors."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "testdata" / "admission" / "old"
POLICY = str(CASE / "policy.yaml")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _outcomes(doc: dict) -> dict[tuple[str, str], str]:
    return {(r["policy"], r["subject"]["name"]): r["result"] for r in doc["results"]}


def test_old_manifests_make_updates_deletes_and_creates() -> None:
    code, out, err = run("eval", "-p", POLICY, "-r", str(CASE / "after"), "--old", str(CASE / "before"),
                         "-o", "json")
    assert code == ExitCode.FINDINGS
    doc = json.loads(out)
    assert _outcomes(doc) == {
        ("team-label-is-fixed", "web"): "fail",         # UPDATE: the label changed
        ("team-label-is-fixed", "worker"): "pass",      # UPDATE: the image changed, the label did not
        ("team-label-is-fixed", "new-api"): "pass",     # CREATE
        ("protected-stays", "settings"): "fail",        # DELETE of a protected ConfigMap
    }
    assert {a["subject"]["name"]: a["operation"] for a in doc["admission"]} == {
        "web": "UPDATE", "worker": "UPDATE", "new-api": "CREATE", "settings": "DELETE"}
    deleted = next(a for a in doc["admission"] if a["operation"] == "DELETE")
    assert deleted["object"] is None and deleted["location"]["file"].endswith("before/app.yaml")
    assert "requests the change makes: 1 CREATE, 2 UPDATE, 1 DELETE" in err
    # a deleted object has no report; the others' reports are the background scan's
    reported = {r["scope"]["name"] for r in doc["reports"]}
    assert reported == {"web", "worker", "new-api"}


def test_without_old_every_manifest_is_a_create() -> None:
    code, out, _ = run("eval", "-p", POLICY, "-r", str(CASE / "after"), "-o", "json")
    assert code == ExitCode.CLEAN
    assert set(_outcomes(json.loads(out)).values()) == {"pass"}


def test_old_ref_reads_the_same_paths_at_a_git_ref(tmp_path: Path) -> None:
    git = shutil.which("git")
    if git is None:
        pytest.fail("git is needed to test --old-ref")
    repo = tmp_path / "repo"
    (repo / "deploy").mkdir(parents=True)
    shutil.copy(CASE / "before" / "app.yaml", repo / "deploy" / "app.yaml")

    def sh(*args: str) -> None:
        subprocess.run([git, *args], cwd=repo, check=True, capture_output=True,
                       env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                            "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})

    sh("init", "-q")
    sh("add", ".")
    sh("commit", "-qm", "before")
    shutil.copy(CASE / "after" / "app.yaml", repo / "deploy" / "app.yaml")
    code, out, err = run("eval", "-p", POLICY, "-r", str(repo / "deploy"), "--old-ref", "HEAD", "-o", "json")
    assert code == ExitCode.FINDINGS, err
    doc = json.loads(out)
    assert _outcomes(doc)[("team-label-is-fixed", "web")] == "fail"
    assert _outcomes(doc)[("protected-stays", "settings")] == "fail"
    deleted = next(a for a in doc["admission"] if a["operation"] == "DELETE")
    assert deleted["location"] == {"file": "HEAD:deploy/app.yaml", "line": 27}
    code, _, err = run("eval", "-p", POLICY, "-r", str(repo / "deploy"), "--old-ref", "no-such-ref")
    assert code == ExitCode.INPUT and err.startswith("error: --old-ref: git ls-tree in ")
    assert "Traceback" not in err


@pytest.mark.parametrize(("extra", "says"), [
    (["--old", str(CASE / "before"), "--old-ref", "HEAD"], "exclude each other"),
    (["--no-mutate", "--write-mutated", "out"], "--write-mutated writes admitted manifests"),
])
def test_admission_flags_usage_errors(extra: list[str], says: str) -> None:
    code, _, err = run("eval", "-p", POLICY, "-r", str(CASE / "after"), *extra)
    assert code == ExitCode.USAGE and says in err


def test_old_needs_manifests() -> None:
    code, _, err = run("eval", "-p", POLICY, "--state", str(CASE / "after"), "--old", str(CASE / "before"))
    assert code == ExitCode.USAGE and "give them with -r or -k" in err
