"""Matrix leg (d) of issue 33: a read that failed reaches every output of every command, and the run exits 5.

The invariant (docs/output.md, "Reads that failed"): when a LIST a run needs fails, whatever the fault
(403, 404, 500 after the retries, a timeout on every try), every output of every command that reads a
cluster says the picture is incomplete and names the read, so that no format looks like a clean run:

- the table (and `-o wide`, and `apply`'s plan): its first line starts `INCOMPLETE: 1 read failed (list
  namespaces: <status>)`;
- `-o json` / `-o yaml`: an `errors` entry with `read` (verb, resource, namespace) and `status` (code, reason),
  and `failedReads: 1` in the summary (coverage: `counts`; explain has no summary);
- `-o sarif`: valid against the SARIF 2.1.0 schema, `invocations[0].executionSuccessful` false, a
  `toolExecutionNotifications` entry naming the read;
- `-o junit`: valid against the JUnit schema, an `<error type="read-failed">` test case naming the read;
- `-o github`: an `::error` annotation naming the read, and `**Incomplete**` in the step summary;
- `capture`: the file's `kyrec.io/unreadable` record with the read's status;
- exit code 5, and the `error: ...` line on stderr.

The faults are injected into the double (tests/kubeapi) on the LIST of Namespaces, which every command
makes; the real API server's `restricted` context (no rights: every LIST is a 403) is the real leg, and runs
under CI=true (the `realapi` fixture fails there rather than skip; outside CI it skips saying why).

Combinations: 28 (command, format) pairs (eval --live, diff and coverage x table, wide, json, yaml, sarif,
junit, github = 21; explain --live x table, json, yaml = 3; capture x its JSON List = 1; apply
--dry-run=client x table, json, yaml = 3) x 4 faults = 112 on the double; the same 28 pairs once more with
nothing failing (the control); 24 pairs of eval, diff, coverage and explain offline on a capture that recorded
the failure; 12 (command, format) pairs on the real server.

Left out: `test` reads no cluster (its document has no `failedReads`); `-o diff` and eval's `-o reports`
(unified diffs and PolicyReports for other tools to read, with no place for a line about the run: stderr
and exit 5 say it); evidence-only reads (UpdateRequests, Deployments, RBAC objects, SubjectAccessReviews,
the owned-downstream search), which decide no verdict and stay notices; a failed discovery, which ends the
run with one line and exit 5 before any output.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.ci.findings_support import junit_errors, sarif_errors
from tests.kubeapi.server import ApiServer

ROOT = Path(__file__).resolve().parents[2]
POLICIES = str(ROOT / "testdata" / "examples" / "policies")

# fault -> (what the double is told to do, the status text the table says, the JSON status code)
FAULTS: dict[str, tuple[dict[str, Any], str, int | None]] = {
    "403": ({"status": 403}, "403 Forbidden", 403),
    "404": ({"status": 404}, "404 Not Found", 404),
    "500": ({"status": 500}, "500 Internal Server Error", 500),
    "timeout": ({"delay": 0.5}, "timeout", None),
}

# every command that reads a cluster, with the arguments that make it read one, and its output formats
COMMANDS: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "eval": (["eval", "--live", "-p", POLICIES], ("table", "wide", "json", "yaml", "sarif", "junit", "github")),
    "diff": (["diff", "-p", POLICIES], ("table", "wide", "json", "yaml", "sarif", "junit", "github")),
    "coverage": (["coverage", "-p", POLICIES], ("table", "wide", "json", "yaml", "sarif", "junit", "github")),
    "explain": (["explain", "--live", "-p", POLICIES], ("table", "json", "yaml")),
    "capture": (["capture", "-p", POLICIES], ("json",)),
    "apply": (["apply", "-p", POLICIES, "--dry-run=client"], ("table", "json", "yaml")),
}
PAIRS = [(command, fmt) for command, (_, formats) in COMMANDS.items() for fmt in formats]
SUMMARY_KEY = {"eval": "summary", "diff": "summary", "apply": "summary", "coverage": "counts"}


def _seed(api: ApiServer) -> None:
    api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    api.seed({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop",
                                                              "labels": {"owner": "team"}},
              "spec": {"containers": [{"name": "c", "image": "nginx",
                                       "resources": {"limits": {"memory": "1Gi"}}}]}})


@pytest.fixture()
def double(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiServer]:
    from kubectl_kyrec.cluster import client

    real_connect = client.connect

    def fast(options: Any, **kwargs: Any) -> Any:
        # the client's retries all happen, without their waits (a timeout is retried five times)
        return real_connect(options, **{**kwargs, "sleep": lambda _: None})

    monkeypatch.setattr(client, "connect", fast)
    with ApiServer() as api:
        _seed(api)
        api.kubeconfig(tmp_path / "kubeconfig")
        yield api


def _run(args: list[str], fmt: str, env: dict[str, str]) -> Result:
    output = [] if fmt == "json" and args[0] == "capture" else ["-o", fmt]
    return CliRunner().invoke(cli, [*args, *output], env=env)


def check_channel(result: Result, command: str, fmt: str, *, resource: str, status_text: str,
                  code: int | None, count: int | None, summary_file: Path | None) -> None:
    """The failure is present in this output as docs/output.md says, and the run exits 5. `count`: how many
    reads failed (None: at least one); the read named `resource` is among them."""
    assert result.exit_code == 5, (command, fmt, result.exit_code, result.stderr[-2000:])
    assert "error: " in result.stderr, (command, fmt)
    out = result.stdout
    said = f"list {resource}: {status_text}"
    # the table names the first three reads and GitHub shows ten annotations: with many reads failing, the
    # one named `resource` may be among those left out, but their status is said
    shown = said if count is not None and count <= 3 else f": {status_text}"
    if fmt in ("table", "wide"):
        first = out.splitlines()[0] if out else ""
        assert first.startswith("INCOMPLETE: "), (command, fmt, out[:500])
        assert shown in first and first.endswith("the results below cover only what was read"), (command, first)
        if count is not None:
            assert first.startswith(f"INCOMPLETE: {count} read{'s' if count != 1 else ''} failed ("), first
        return
    if command == "capture":
        record = json.loads(json.loads(out)["metadata"]["annotations"]["kyrec.io/unreadable"])
        entry = next(e for e in record if e["resource"] == resource)
        assert (entry["verb"], entry["status"]) == ("list", code), entry
        assert entry["message"], entry
        return
    if fmt in ("json", "yaml"):
        doc = json.loads(out) if fmt == "json" else yaml.safe_load(out)
        reads = [e for e in doc["errors"] if "read" in e]
        assert reads, (command, fmt, doc["errors"])
        if count is not None:
            assert len(reads) == count, reads
        entry = next(e for e in reads if e["read"]["resource"] == resource)
        assert entry["read"]["verb"] == "list" and entry["status"]["code"] == code, entry
        assert entry["status"]["reason"] and entry["message"] and entry["location"] is None, entry
        if command in SUMMARY_KEY:
            assert doc[SUMMARY_KEY[command]]["failedReads"] == len(reads), doc[SUMMARY_KEY[command]]
        return
    if fmt == "sarif":
        doc = json.loads(out)
        assert sarif_errors(doc) == []
        [invocation] = doc["runs"][0]["invocations"]
        assert invocation["executionSuccessful"] is False, invocation
        notes = invocation["toolExecutionNotifications"]
        if count is not None:
            assert len(notes) == count
        assert any(n["message"]["text"].startswith(said) and n["level"] == "error" for n in notes), notes
        return
    if fmt == "junit":
        assert junit_errors(out) == []
        cases = ET.fromstring(out).iter("testcase")
        errors = [c for c in cases if c.get("classname") == "kyrec: failed reads"]
        if count is not None:
            assert len(errors) == count
        assert any((e := c.find("error")) is not None and e.get("type") == "read-failed"
                   and said in (e.get("message") or "") for c in errors), out[:2000]
        return
    if fmt == "github":
        annotations = [line for line in out.splitlines() if line.startswith("::error title=kyrec%3A read failed")]
        assert any(shown.replace(":", "%3A") in line for line in annotations), out[:2000]
        if count is not None:
            assert len(annotations) == min(count, 10)
        assert summary_file is not None and "**Incomplete**" in summary_file.read_text(), command
        return
    raise AssertionError(f"no check for -o {fmt}")


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize(("command", "fmt"), PAIRS)
def test_a_failed_read_reaches_every_output(double: ApiServer, tmp_path: Path, fault: str, command: str,
                                            fmt: str) -> None:
    inject, status_text, code = FAULTS[fault]
    double.inject(r"^/api/v1/namespaces$", times=None, **inject)
    summary = tmp_path / "step-summary.md"
    env = {"KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "GITHUB_STEP_SUMMARY": str(summary)}
    args = COMMANDS[command][0] + (["--request-timeout", "100ms"] if fault == "timeout" else [])
    result = _run(args, fmt, env)
    assert double.requests("GET", r"^/api/v1/namespaces$"), "the injected read was never made"
    check_channel(result, command, fmt, resource="namespaces", status_text=status_text, code=code, count=1,
                  summary_file=summary)


def test_a_complete_read_says_none_of_it(double: ApiServer, tmp_path: Path) -> None:
    """The same runs with nothing failing: no INCOMPLETE line, `executionSuccessful` true, no read errors, so
    that the checks above are about the failure and not about the outputs' usual text."""
    env = {"KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for command, fmt in PAIRS:
        result = _run(COMMANDS[command][0], fmt, env)
        assert result.exit_code in (0, 1), (command, fmt, result.stderr)
        assert "INCOMPLETE" not in result.stdout
        if fmt == "sarif":
            assert json.loads(result.stdout)["runs"][0]["invocations"] == [{"executionSuccessful": True}]
        if fmt == "json" and command != "capture":
            doc = json.loads(result.stdout)
            assert [e for e in doc["errors"] if "read" in e] == []
            if command in SUMMARY_KEY:
                assert doc[SUMMARY_KEY[command]]["failedReads"] == 0


def test_a_captures_recorded_failure_reaches_every_output_of_an_offline_run(double: ApiServer,
                                                                          tmp_path: Path) -> None:
    """A capture made while the LIST of Namespaces failed: eval, diff, coverage and explain on the file say the
    read failed (recorded), in every format, and exit 5, as the live runs did."""
    double.inject(r"^/api/v1/namespaces$", times=None, status=403)
    env = {"KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    state = tmp_path / "state.json"
    assert CliRunner().invoke(cli, ["capture", "-p", POLICIES, "-o", str(state)], env=env).exit_code == 5
    summary = tmp_path / "step-summary.md"
    offline = {"eval": ["eval", "--state", str(state), "-p", POLICIES],
               "diff": ["diff", "--state", str(state), "-p", POLICIES],
               "coverage": ["coverage", "--state", str(state), "-p", POLICIES],
               "explain": ["explain", "--state", str(state), "-p", POLICIES]}
    for command, args in offline.items():
        for fmt in COMMANDS[command][1]:
            result = CliRunner().invoke(cli, [*args, "-o", fmt], env={"GITHUB_STEP_SUMMARY": str(summary)})
            check_channel(result, command, fmt, resource="namespaces", status_text="403 Forbidden", code=403,
                          count=1, summary_file=summary)
            if fmt == "json":
                [entry] = [e for e in json.loads(result.stdout)["errors"] if "read" in e]
                assert entry["read"]["recorded"] is True
                assert entry["message"].startswith("the state records a read that failed when it was captured: ")


# ---- the real leg: the real API server's `restricted` context, allowed nothing ------------------------------

REAL_PAIRS = [("eval", "table"), ("eval", "json"), ("diff", "table"), ("diff", "json"), ("diff", "yaml"),
              ("diff", "sarif"), ("diff", "junit"), ("diff", "github"), ("coverage", "table"),
              ("explain", "table"), ("capture", "json"), ("apply", "table")]


@pytest.mark.parametrize(("command", "fmt"), REAL_PAIRS)
def test_the_restricted_context_of_the_real_server(realapi: Any, tmp_path: Path, command: str, fmt: str) -> None:
    """Issue 33, item 1 as reported: with no rights every LIST is refused, and no output may look clean."""
    summary = tmp_path / "step-summary.md"
    env = {"KUBECONFIG": str(realapi.kubeconfig), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "GITHUB_STEP_SUMMARY": str(summary)}
    result = _run([*COMMANDS[command][0], "--context", "restricted"], fmt, env)
    check_channel(result, command, fmt, resource="namespaces", status_text="403 Forbidden", code=403,
                  count=None, summary_file=summary)


# ---- what a failed read is called ---------------------------------------------------------------------------

GPOL = ROOT / "tests" / "cluster" / "data" / "gpol-configmap.yaml"
NOW = ["--now", "2026-06-01T00:00:00Z"]


def _capture_without_configmaps(tmp_path: Path) -> Path:
    """A capture whose LIST of ConfigMaps failed (403), holding a Namespace that GPOL generates one for."""
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "metadata": {"annotations": {
        "kyrec.io/listed": json.dumps([{"apiVersion": "v1", "kind": "Namespace", "namespace": ""}]),
        "kyrec.io/unreadable": json.dumps([{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "", "verb": "list",
                                           "resource": "configmaps", "status": 403, "reason": "Forbidden",
                                           "message": "forbidden: cannot list configmaps cluster-wide"}])}},
        "items": [{"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "team-a", "uid": "ns-1", "creationTimestamp": "2026-02-01T00:00:00Z"}}]}))
    return state


def test_a_read_failed_row_is_not_explained_as_kyvernos_choice(tmp_path: Path) -> None:
    """Issue 33, item 8: an undetermined row was `undetermined*` with the footnote `* not enforced: Kyverno
    would not act on it`. Undetermined means kyrec cannot tell; the table says that, -o wide's ENFORCED too."""
    state = _capture_without_configmaps(tmp_path)
    table = CliRunner().invoke(cli, ["diff", "-p", str(GPOL), "--state", str(state), *NOW])
    assert table.exit_code == 5, table.stderr
    assert "undetermined*" not in table.stdout and "not enforced" not in table.stdout, table.stdout
    assert "undetermined: kyrec cannot tell (the reason says why); not counted, and apply never acts on it" \
        in table.stdout.splitlines()
    wide = CliRunner().invoke(cli, ["diff", "-p", str(GPOL), "--state", str(state), *NOW, "-o", "wide"])
    [row] = [line for line in wide.stdout.splitlines() if line.startswith("undetermined ")]
    assert re.split(r"\s{2,}", row)[5] == "unknown", row           # ENFORCED: neither yes nor no
    # the same for an undetermined row that no read explains (the policy needs request data)
    case = ROOT / "testdata" / "diff" / "needs-request"
    needs = CliRunner().invoke(cli, ["diff", "-p", str(case / "policy.yaml"), "--state", str(case / "state.yaml"),
                                     *NOW])
    assert "undetermined  needs-request" in needs.stdout and "not enforced" not in needs.stdout, needs.stdout


def test_a_missing_downstream_whose_list_failed_is_read_failed(double: ApiServer, tmp_path: Path) -> None:
    """The downstream's own kind could not be listed: `read-failed` (a LIST that failed), not
    `kind-not-captured` with advice to capture the kind, live and from a capture alike."""
    double.seed(yaml.safe_load(GPOL.read_text()), {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": "team-a"}})
    double.inject(r"^/api/v1/configmaps$", status=403, times=None)
    env = {"KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    live = CliRunner().invoke(cli, ["diff", "--downstreams", "-o", "json"], env=env)
    offline = CliRunner().invoke(cli, ["diff", "-p", str(GPOL), "--state", str(_capture_without_configmaps(tmp_path)),
                                       *NOW, "-o", "json"])
    for result in (live, offline):
        assert result.exit_code == 5, result.stderr
        [change] = [c for c in json.loads(result.stdout)["changes"] if c["object"]["name"] == "base"]
        assert (change["class"], change["reason"]) == ("undetermined", "read-failed"), change
        assert "the LIST of ConfigMap objects in team-a failed" in change["message"]
        assert "Capture them with" not in result.stderr, result.stderr


def test_reports_that_could_not_be_read_are_not_said_to_be_absent(double: ApiServer, tmp_path: Path) -> None:
    """`notice: the state holds no policy reports` was printed when the reports' LIST was refused: the
    notice now says they could not be read."""
    double.inject(r"policyreports$", status=403, times=None)
    env = {"KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    result = CliRunner().invoke(cli, ["diff", "-p", POLICIES], env=env)
    assert result.exit_code == 5, result.stderr
    assert "holds no policy reports" not in result.stderr, result.stderr
    assert "notice: the policy reports could not be read (ClusterPolicyReport, PolicyReport): report checks " \
           "skipped" in result.stderr


def test_a_capture_recorded_before_reads_had_a_status_still_names_the_read() -> None:
    """testdata/deleting/state.yaml records its failed LIST with a message only (as captures did before the
    record carried the read's status): the run still names the read, with no status code."""
    case = ROOT / "testdata" / "deleting"
    result = CliRunner().invoke(cli, ["diff", "--now", "2026-09-01T12:00:00Z", "-p", str(case / "policies.yaml"),
                                      "--state", str(case / "state.yaml"), "-o", "json"])
    assert result.exit_code == 5, result.stderr
    [entry] = [e for e in json.loads(result.stdout)["errors"] if "read" in e]
    assert entry["read"] == {"verb": "list", "apiVersion": "batch/v1", "kind": "Job", "resource": "jobs.batch",
                             "namespace": "dev", "recorded": True}
    assert entry["status"] == {"code": None, "reason": ""}
    table = CliRunner().invoke(cli, ["diff", "--now", "2026-09-01T12:00:00Z", "-p", str(case / "policies.yaml"),
                                     "--state", str(case / "state.yaml")])
    assert table.stdout.startswith("INCOMPLETE: 1 read failed (list jobs.batch in dev: status unknown); ")
