"""`kyrec eval` through click's CliRunner: exit codes, first error lines, output formats."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "testdata" / "examples"
POLICIES = str(EXAMPLES / "policies")
RESOURCES = str(EXAMPLES / "resources")


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_table_lists_results_failures_first_and_exits_1() -> None:
    code, out, err = run("eval", "-p", POLICIES, "-r", RESOURCES)
    assert code == 1
    lines = out.splitlines()
    # not a terminal: no width limit, one line per result, as kubectl prints on a pipe
    assert lines[0].split() == ["POLICY", "SUBJECT", "RESULT", "MESSAGE", "LOCATION"]
    assert lines[1].split()[:4] == ["limit-memory", "Pod", "shop/batch", "fail"]
    assert "  every container needs a memory limit below 2Gi  " in lines[1]
    assert lines[1].endswith("workloads.yaml:16")
    assert lines[2].split()[:4] == ["require-owner-label", "Pod", "shop/batch", "fail"]
    assert out.rstrip().endswith("pass: 4, fail: 2, warn: 0, error: 0, skip: 0")
    assert err == ""


def test_fail_on_never_and_exit_code_false() -> None:
    assert run("eval", "-p", POLICIES, "-r", RESOURCES, "--fail-on", "never")[0] == 0
    assert run("eval", "-p", POLICIES, "-r", RESOURCES, "--exit-code", "false")[0] == 0
    # only Deny policies counted: limit-memory is Deny and fails, so still 1
    assert run("eval", "-p", POLICIES, "-r", RESOURCES, "--fail-on-actions", "Deny")[0] == 1
    assert run("eval", "-p", POLICIES, "-r", RESOURCES, "--fail-on-actions", "Warn")[0] == 0


def test_json_contract() -> None:
    code, out, _ = run("eval", "-p", POLICIES, "-r", RESOURCES, "-o", "json")
    doc = json.loads(out)
    assert (doc["apiVersion"], doc["kind"]) == ("kyrec/v1", "EvalResult")
    assert set(doc) >= {"kyrecVersion", "results", "downstreams", "reports", "errors", "notices", "summary"}
    assert doc["summary"] == {"pass": 4, "fail": 2, "warn": 0, "error": 0, "skip": 0, "undetermined": 0,
                              "failedReads": 0}
    first = next(r for r in doc["results"] if r["result"] == "fail" and r["policy"] == "limit-memory")
    assert first["subject"]["uidSynthetic"] is True
    assert first["subject"]["namespace"] == "shop"
    assert first["location"] == {"file": str(Path(RESOURCES) / "workloads.yaml"), "line": 16}
    assert first["policyLocation"]["line"] == 1
    assert first["validationActions"] == ["Deny"]
    assert first["properties"] == {"process": "background scan", "cel.validationIndex": "0"}


def test_reports_output_is_one_report_per_subject_named_by_uid() -> None:
    _, out, _ = run("eval", "-p", POLICIES, "-r", RESOURCES, "-o", "reports")
    reports = list(yaml.safe_load_all(out))
    assert len(reports) == 3
    for report in reports:
        assert report["kind"] == "PolicyReport"
        assert report["metadata"]["name"] == report["scope"]["uid"]
        assert report["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "kyverno"}
        # the examples carry no uids: the stand-in is marked as such
        assert report["metadata"]["annotations"] == {"kyrec.io/uid-synthetic": "true"}
        assert report["metadata"]["ownerReferences"][0]["uid"] == report["scope"]["uid"]
        assert sum(report["summary"].values()) == len(report["results"]) == 2


def test_output_to_file_and_stdout(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    code, out, _ = run("eval", "-p", POLICIES, "-r", RESOURCES, "-o", "github", "-o", f"json={target}")
    assert code == 1
    assert json.loads(target.read_text())["kind"] == "EvalResult"
    assert out.startswith("::error file=")


def test_two_outputs_on_stdout_is_a_usage_error() -> None:
    code, _, err = run("eval", "-p", POLICIES, "-r", RESOURCES, "-o", "json", "-o", "yaml")
    assert code == 2
    assert err.startswith("error: only one -o format can go to stdout")


def test_resources_from_stdin() -> None:
    text = (EXAMPLES / "resources" / "workloads.yaml").read_text()
    code, out, _ = run("eval", "-p", POLICIES, "-r", "-", "-o", "json", stdin=text)
    assert code == 1
    assert json.loads(out)["results"][0]["location"]["file"] in ("-", "<stdin>")


def test_broken_yaml_is_exit_3_with_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: [unclosed\n")
    code, out, err = run("eval", "-p", POLICIES, "-r", str(bad))
    assert code == 3
    assert out == ""
    assert err.startswith(f"error: {bad}:")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_cel_that_does_not_compile_names_file_field_and_column(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text(
        "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata:\n  name: broken\nspec:\n"
        "  matchConstraints:\n    resourceRules:\n    - apiGroups: ['']\n      apiVersions: [v1]\n"
        "      operations: [CREATE]\n      resources: [pods]\n  validations:\n  - expression: 'true'\n"
        "  - expression: 'object.metadata.name =='\n")
    code, _, err = run("eval", "-p", str(policy), "-r", RESOURCES)
    assert code == 3
    assert err.startswith(f"error: {policy}:14: ValidatingPolicy \"broken\": spec.validations[1].expression: column ")


def test_unknown_policy_version(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("apiVersion: policies.kyverno.io/v9\nkind: ValidatingPolicy\nmetadata:\n  name: x\n")
    code, _, err = run("eval", "-p", str(policy), "-r", RESOURCES)
    assert code == 3
    assert err == (f"error: {policy}:1: ValidatingPolicy \"x\": unknown version 'policies.kyverno.io/v9' "
                   "(known: v1alpha1, v1beta1, v1)\n")


def test_missing_file_and_usage_errors(tmp_path: Path) -> None:
    code, _, err = run("eval", "-p", str(tmp_path / "nope.yaml"), "-r", RESOURCES)
    assert code == 3 and err.startswith("error: ") and "nope.yaml" in err
    assert run("eval", "-r", RESOURCES)[0] == 2
    assert run("eval", "-p", POLICIES, "-r", RESOURCES, "-o", "diff")[0] == 2   # a diff-only format


def test_filters() -> None:
    _, out, _ = run("eval", "-p", POLICIES, "-r", RESOURCES, "-o", "json", "--kind", "Deployment")
    assert {r["subject"]["kind"] for r in json.loads(out)["results"]} == {"Deployment"}
    _, out, _ = run("eval", "-p", POLICIES, "-r", RESOURCES, "-o", "json", "--policy-name", "limit-memory")
    assert {r["policy"] for r in json.loads(out)["results"]} == {"limit-memory"}
    _, out, _ = run("eval", "-p", POLICIES, "-r", RESOURCES, "-o", "json", "-l", "owner")
    assert {r["subject"]["name"] for r in json.loads(out)["results"]} == {"web"}


def test_help_and_version_do_not_load_the_engine_or_the_client() -> None:
    probe = ("import sys\nfrom kubectl_kyrec.cli.main import cli\n"
             "for args in (['--help'], ['--version'], ['version']):\n"
             "    try:\n        cli(args)\n    except SystemExit:\n        pass\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('cel_expr_python', 'kubernetes')))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
    assert "kubectl-kyrec" in out or "Usage" in out


# what an eval of ValidatingPolicies alone has no use for, imported only by a run that needs it: the
# GeneratingPolicy and mutating engines, the other kinds' models, the baseline logic, and an HTTP client (the
# registry's, for --registry only)
NOT_FOR_VALIDATING = ("kubectl_kyrec.evaluate.generating.engine", "kubectl_kyrec.evaluate.mutating.engine",
                      "kubectl_kyrec.evaluate.mutating_admission.engine", "kubectl_kyrec.load.policy.mutating",
                      "kubectl_kyrec.load.policy.classic", "kubectl_kyrec.load.policy.image_validating",
                      "kubectl_kyrec.load.policy.deleting", "kubectl_kyrec.reconcile.baseline", "http.client", "ssl")


def _imported_by_eval(*args: str) -> set[str]:
    probe = ("import sys\nfrom kubectl_kyrec.cli.main import cli\n"
             "try:\n    cli(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
             f"sys.stderr.write('IMPORTED ' + ','.join(m for m in {NOT_FOR_VALIDATING!r} if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", probe, "eval", *args, "-o", "json"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert "IMPORTED " in done.stderr, done.stderr
    return set(filter(None, done.stderr.rsplit("IMPORTED ", 1)[-1].strip().split(",")))


def test_eval_of_validating_policies_imports_no_other_kind_nor_http_client() -> None:
    assert _imported_by_eval("-p", POLICIES, "-r", RESOURCES) == set()
    # the control: a MutatingPolicy is read with its model and run by its engine in the admission chain
    imported = _imported_by_eval("-p", POLICIES, "-p", str(EXAMPLES / "admission"), "-r", RESOURCES)
    assert {"kubectl_kyrec.load.policy.mutating", "kubectl_kyrec.evaluate.mutating.engine"} <= imported


def test_static_completions_match_the_command() -> None:
    for shell in ("bash", "zsh", "fish"):
        code, out, _ = run("completion", shell)
        assert code == 0
        assert (ROOT / "completions" / f"kubectl-kyrec.{shell}").read_text() == out


def test_junit_output() -> None:
    import xml.etree.ElementTree as ET

    _, out, _ = run("eval", "-p", POLICIES, "-r", RESOURCES, "-o", "junit")
    root = ET.fromstring(out.split("\n", 1)[1])
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("6", "2", "0")
    # the schema allows no file/line attributes on a test case: the failure message starts with file:line
    failed = [(s.get("name"), c.get("name"), c.find("failure").get("message").split(": ")[0].rsplit("/", 1)[-1])
              for s in root for c in s if c.find("failure") is not None]
    assert sorted(failed) == [("limit-memory", "Pod shop/batch", "workloads.yaml:16"),
                              ("require-owner-label", "Pod shop/batch", "workloads.yaml:16")]


def test_sarif_output() -> None:
    _, out, _ = run("eval", "-p", POLICIES, "-r", RESOURCES, "-o", "sarif")
    doc = json.loads(out)
    assert doc["version"] == "2.1.0"
    run0 = doc["runs"][0]
    assert [r["id"] for r in run0["tool"]["driver"]["rules"]] == ["limit-memory", "require-owner-label"]
    findings = run0["results"]
    # require-owner-label is Audit-only: a warning, as in `-o github`
    assert len(findings) == 2 and {f["ruleId"]: f["level"] for f in findings} == {
        "limit-memory": "error", "require-owner-label": "warning"}
    loc = findings[0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"].endswith("workloads.yaml") and loc["region"]["startLine"] == 16


def test_internal_errors_are_one_line(monkeypatch: object) -> None:
    import kubectl_kyrec.render.eval_output as eval_output

    def boom(*args: object, **kwargs: object) -> str:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(eval_output, "write_table", boom)  # type: ignore[attr-defined]
    code, _, err = run("eval", "-p", POLICIES, "-r", RESOURCES)
    # not 3: a bug in kyrec must not blame the user's input; not 1: it must not pass for findings
    assert code == int(ExitCode.INTERNAL) == 70
    assert err.startswith("error: internal error: RuntimeError: kaboom") and "Traceback" not in err
    assert len(err.splitlines()) == 1 and "issue tracker" in err


def test_a_closed_pipe_is_not_a_clean_exit() -> None:
    # `kyrec eval ... | head -0` under `set -o pipefail`: the reader leaves before kyrec writes
    proc = subprocess.Popen([sys.executable, "-m", "kubectl_kyrec", "eval", "-p", POLICIES, "-r", RESOURCES,
                             "-o", "json", "--exit-code", "false"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == int(ExitCode.BROKEN_PIPE) == 141
    assert err == b""


def _console(*args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """The console command's own entry point (`main`, which leaves through quick_exit), in a new process."""
    code = f"import sys\n{prelude}\nsys.argv = ['kubectl-kyrec', *sys.argv[1:]]\n" \
           "from kubectl_kyrec.cli.console import main\nmain()\n"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)


def test_the_console_command_writes_everything_before_it_leaves(tmp_path: Path) -> None:
    # it leaves with os._exit (the run is not taken apart first): output flushed, files whole, atexit run
    junit = tmp_path / "results.xml"
    done = _console("eval", "-p", POLICIES, "-r", RESOURCES, "-o", "json", "-o", f"junit={junit}",
                    prelude="import atexit\natexit.register(lambda: sys.stderr.write('atexit ran\\n'))")
    assert done.returncode == int(ExitCode.FINDINGS)
    doc = json.loads(done.stdout)
    assert doc["summary"]["fail"] == 2 and len(doc["results"]) == sum(doc["summary"].values())
    import xml.etree.ElementTree as ET

    assert ET.parse(junit).getroot().tag == "testsuites"
    assert done.stderr.splitlines()[-1] == "atexit ran"
    usage = _console("eval", "-p", POLICIES)
    assert usage.returncode == int(ExitCode.USAGE) and usage.stderr.startswith("error: eval needs resources")


def test_jobs_must_not_be_negative() -> None:
    code, _, err = run("eval", "-p", POLICIES, "-r", RESOURCES, "--jobs", "-1")
    assert code == int(ExitCode.USAGE)
    assert "--jobs must be 0 (one per CPU) or more, not -1" in err


def test_two_processes_print_what_one_prints(tmp_path: Path) -> None:
    # 2 policies x 10,000 Pods: past the 20,000 pairs at which evaluation is split across processes
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"p{i}", "namespace": f"ns{i % 7}", "uid": f"00000000-0000-4000-8000-{i:012d}",
                          **({"labels": {"owner": "me"}} if i % 3 else {})},
             "spec": {"containers": [{"name": "c", "image": "nginx",
                                      **({"resources": {"limits": {"memory": f"{i % 4}Gi"}}} if i % 5 else {})}]}}
            for i in range(10_000)]
    state = tmp_path / "pods.json"
    state.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}, indent=4))
    outs = {}
    for jobs in ("1", "2"):
        done = _console("eval", "-p", POLICIES, "--state", str(state), "-o", "json", "--now",
                        "2026-11-29T00:00:00Z", "--jobs", jobs)
        assert done.returncode == int(ExitCode.FINDINGS), done.stderr
        outs[jobs] = done.stdout
    assert outs["1"] == outs["2"]
    summary = json.loads(outs["2"])["summary"]
    assert summary["fail"] > 5_000 and summary["pass"] > 5_000
