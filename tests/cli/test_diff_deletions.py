"""`diff` over a captured state with DeletingPolicies (testdata/deleting): what each policy's next run
deletes, what cannot be told (a LIST the capture recorded as failed), the run's filters, and Kyverno's
resourceFilters (the deleting controller skips what they name)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli

CASE = Path(__file__).resolve().parents[2] / "testdata" / "deleting"


def diff(*extra: str) -> Result:
    return CliRunner().invoke(cli, ["diff", "--now", "2026-09-01T12:00:00Z", "-p", str(CASE / "policies.yaml"),
                                    "--state", str(CASE / "state.yaml"), *extra])


def deletions(result: Result) -> list[dict[str, Any]]:
    return [c for c in json.loads(result.stdout)["changes"] if c["domain"] == "deletion"]


def rows(result: Result) -> list[tuple[str, str | None, str, str]]:
    return [(c["class"], c["reason"], c["policy"],
             f"{c['object']['kind']} {c['object']['namespace']}/{c['object']['name']}") for c in deletions(result)]


def test_what_the_next_runs_delete_and_what_cannot_be_told() -> None:
    result = diff("-o", "json")
    # the capture recorded a failed LIST (exit 5); the scheduled deletion is a finding all the same
    assert result.exit_code == 5
    assert rows(result) == [
        ("undetermined", "read-failed", "dev/stale-jobs", "Job dev/"),
        # prod/old: its namespace is not dev; dev/new: not expired; dev/kept: outside the objectSelector;
        # kube-system/old: Kyverno's default resourceFilters skip kube-system
        ("scheduled-deletion", None, "expire-scratch", "ConfigMap dev/old"),
    ]
    [scheduled] = [c for c in deletions(result) if c["class"] == "scheduled-deletion"]
    # last run 2026-09-01 03:00: the next is tomorrow's
    assert (scheduled["schedule"], scheduled["nextRun"], scheduled["due"], scheduled["propagationPolicy"]) == (
        "0 3 * * *", "2026-09-02T03:00:00Z", False, "Foreground")
    assert scheduled["enforced"] is True and scheduled["cause"]["kind"] == "policy"
    assert json.loads(result.stdout)["summary"]["deletion"] == {"scheduled-deletion": 1, "undetermined": 1}


def test_without_resource_filters_kube_system_is_deleted_too(tmp_path: Path) -> None:
    config = tmp_path / "kyverno.yaml"
    config.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kyverno, namespace: kyverno}\n"
                      "data: {resourceFilters: '[Event,*,*]'}\n")
    result = diff("-o", "json", "--kyverno-config", str(config))
    assert ("scheduled-deletion", None, "expire-scratch", "ConfigMap kube-system/old") in rows(result)


def test_the_runs_filters_narrow_the_deletions() -> None:
    # prod's ConfigMap is kept (not a dev namespace); the failed LIST of Jobs in dev lies outside -n prod
    assert rows(diff("-o", "json", "-n", "prod")) == []
    assert "2 deletion(s) outside this run's filters not shown" in diff("-n", "prod").stdout
    assert [r[3] for r in rows(diff("-o", "json", "-n", "dev"))] == ["Job dev/", "ConfigMap dev/old"]
    assert [r[3] for r in rows(diff("-o", "json", "--kind", "ConfigMap"))] == ["ConfigMap dev/old"]
    assert rows(diff("-o", "json", "--policy-name", "stale-jobs")) == [
        ("undetermined", "read-failed", "dev/stale-jobs", "Job dev/")]


def test_the_table_shows_when_and_how() -> None:
    text = diff().stdout
    assert "Scheduled deletions: 1 scheduled-deletion, 1 undetermined" in text
    line = next(line for line in text.splitlines() if line.startswith("scheduled-deletion"))
    assert line.split() == ["scheduled-deletion", "expire-scratch", "ConfigMap", "dev/old", "2026-09-02T03:00:00Z",
                            "Foreground"]


def test_ci_formats_and_the_baseline_see_scheduled_deletions(tmp_path: Path) -> None:
    state = tmp_path / "state.yaml"
    # the same state without its failed LIST of Jobs, so that the exit code is the findings' alone
    state.write_text("\n".join(line for line in (CASE / "state.yaml").read_text().splitlines()
                               if "kyrec.io/unreadable" not in line) + "\n")
    args = ["diff", "--now", "2026-09-01T12:00:00Z", "-p", str(CASE / "policies.yaml"), "--state", str(state)]
    github = CliRunner().invoke(cli, [*args, "-o", "github"])
    assert github.exit_code == 1
    assert "::error" in github.stdout and "ConfigMap dev/old::scheduled-deletion" in github.stdout
    baseline = tmp_path / "baseline.json"
    assert CliRunner().invoke(cli, [*args, "--write-baseline", str(baseline)]).exit_code == 1
    assert "deletion-scheduled-deletion" in baseline.read_text()
    assert CliRunner().invoke(cli, [*args, "--baseline", str(baseline)]).exit_code == 0


def test_eval_says_it_leaves_deleting_policies_to_diff_and_test() -> None:
    result = CliRunner().invoke(cli, ["eval", "-p", str(CASE / "policies.yaml"), "-r", str(CASE / "state.yaml")])
    assert result.exit_code == 0
    assert "notice: 2 DeletingPolicy(ies) not evaluated by eval: `diff` lists what their next scheduled runs " \
           "delete, `test` checks their rows" in result.stderr
