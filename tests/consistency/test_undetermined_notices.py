"""The notice for a state's report results kyrec cannot decide (coverage, diff: run/reports.py
`undetermined_notices`) names why they are undetermined, as their results say: a registry read offline
(needs-registry: run with --registry), request.userInfo that --values did not give. Before, it always said
they depend on request.userInfo."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from tests.consistency.test_image_kinds_registry import GPOL, NOW, pod

IMAGE = "127.0.0.1:1/app:v1"        # never contacted: offline, or answered by the context file
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
CONTEXT = {"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Context",
           "spec": {"images": [{"image": IMAGE, "digest": "sha256:abc", "registry": "127.0.0.1:1",
                                "repository": "app", "tag": "v1"}]}}
# the same generation, undetermined for want of request.userInfo instead of a registry
USER_GPOL = copy.deepcopy(GPOL)
USER_GPOL["metadata"]["name"] = "gpol-user"
USER_GPOL["spec"]["matchConditions"] = [{"name": "someone", "expression": "request.userInfo.username != ''"}]


def _kyrec(*args: str) -> tuple[str, str]:
    done = CliRunner().invoke(cli, [*args, "--now", NOW])
    assert done.exit_code in (0, 1), done.output
    return done.stdout, done.stderr


def _state_with_reports(tmp_path: Path) -> Path:
    """The Pod, and the report a cluster's Kyverno wrote for it (eval's, the image data given)."""
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all([GPOL, USER_GPOL]))
    (tmp_path / "context.yaml").write_text(yaml.safe_dump(CONTEXT))
    (tmp_path / "values.yaml").write_text(yaml.safe_dump({
        "apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Value", "metadata": {"name": "v"},
        "request": {"userInfo": {"username": "alice"}}}))
    (tmp_path / "state.yaml").write_text(yaml.safe_dump_all([NAMESPACE, pod(IMAGE)]))
    reports, _ = _kyrec("eval", "-p", str(tmp_path / "policies.yaml"), "--state", str(tmp_path / "state.yaml"),
                        "--context-file", str(tmp_path / "context.yaml"), "--values", str(tmp_path / "values.yaml"),
                        "-o", "reports")
    [report] = list(yaml.safe_load_all(reports))
    assert {r["policy"] for r in report["results"]} == {"gpol-digest", "gpol-user"}
    state = tmp_path / "with-reports.yaml"
    state.write_text(yaml.safe_dump_all([NAMESPACE, pod(IMAGE), report]))
    return state


def _undetermined_notices(stderr: str) -> dict[str, str]:
    notices = [line.removeprefix("notice: ") for line in stderr.splitlines()]
    return {n.split(":", 1)[0]: n for n in notices if "report results for" in n}


def test_the_notice_names_each_policys_own_reason(tmp_path: Path) -> None:
    state = _state_with_reports(tmp_path)
    # coverage and diff alike (both make the notice in run/reports.py)
    for command in ("coverage", "diff"):
        _, stderr = _kyrec(command, "-p", str(tmp_path / "policies.yaml"), "--state", str(state))
        _check(_undetermined_notices(stderr))


def _check(said: dict[str, str]) -> None:
    assert set(said) == {"gpol-digest", "gpol-user"}
    assert "(needs-registry); run with --registry)" in said["gpol-digest"]
    assert "request.userInfo" not in said["gpol-digest"]
    assert "depend on request.userInfo; give it with --values" in said["gpol-user"]
    assert "registry" not in said["gpol-user"]
