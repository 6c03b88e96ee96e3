"""Issue 33, item 10 (and 7): each command's help, errors, summary lines and outputs say what that command
does, the same way in every command and format. Each test here failed before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.load.policy.policies import classify, evaluated_policy_kinds, policy_apis
from kubectl_kyrec.model import Document, Source

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "testdata" / "examples"
POLICIES = str(EXAMPLES / "policies")
RESOURCES = str(EXAMPLES / "resources")
STATE = str(EXAMPLES / "cluster.yaml")


def _words(text: str) -> str:
    return " ".join(text.split())


# ---- a) the top-level help names every policy kind kyrec evaluates ------------------------------------------

def test_the_kind_table_is_what_classify_reads() -> None:
    # every (apiVersion, kind) of the table is read as a policy, exception or binding, never passed over
    for api, kinds in policy_apis().items():
        for kind in kinds:
            doc = Document({"apiVersion": api, "kind": kind, "metadata": {"name": "x"}}, Source("f.yaml", 1))
            read = classify([doc])
            assert not read.others, (api, kind)
            assert not any("unknown version" in e.message for e in read.errors), (api, kind)
    # a version the table leaves out is refused by the parser: the table is no wider than the parsers
    doc = Document({"apiVersion": "policies.kyverno.io/v1alpha1", "kind": "NamespacedValidatingPolicy",
                    "metadata": {"name": "x"}}, Source("f.yaml", 1))
    assert any("unknown version" in e.message for e in classify([doc]).errors)
    assert len(evaluated_policy_kinds()) == 14 and "ClusterPolicy" in evaluated_policy_kinds()


def test_top_level_help_lists_every_evaluated_policy_kind() -> None:
    text = _words(CliRunner().invoke(cli, ["--help"]).stdout)
    missing = [k for k in evaluated_policy_kinds() if f" {k}," not in text.replace("(", " ")]
    assert not missing, missing


# ---- b) version lists every API version and kind kyrec reads -------------------------------------------------

def test_version_lists_every_api_version_and_kind_read() -> None:
    from kubectl_kyrec.reconcile.causes import UPDATE_REQUEST_APIS

    doc = json.loads(CliRunner().invoke(cli, ["version", "-o", "json"]).stdout)
    for api, kinds in policy_apis().items():
        assert api in doc["kyvernoAPIs"] and set(kinds) <= set(doc["kinds"][api]), api
    assert {"kyverno.io/v1", "kyverno.io/v2", "kyverno.io/v2beta1"} <= set(doc["kyvernoAPIs"])
    assert doc["kinds"]["kyverno.io/v1"] == ["ClusterPolicy", "Policy"]
    assert all("UpdateRequest" in doc["kinds"][api] for api in UPDATE_REQUEST_APIS)
    text = _words(CliRunner().invoke(cli, ["version"], env={"COLUMNS": "80"}).stdout)
    for api, kinds in doc["kinds"].items():
        assert f"{api}: {', '.join(kinds)}" in text, api


# ---- c) each command's help and errors name only what it accepts ---------------------------------------------

LIVE_ONLY = ("apply", "capture")


def _closed_port_kubeconfig(tmp_path: Path) -> str:
    import socket

    with socket.socket() as s:          # a port nothing listens on: the connection is refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = tmp_path / "kubeconfig"
    path.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:{port}"}}}}]
users: [{{name: u, user: {{token: x}}}}]
contexts: [{{name: ctx, context: {{cluster: c, user: u}}}}]
current-context: ctx
""")
    return str(path)


@pytest.mark.parametrize("command", LIVE_ONLY)
def test_live_only_commands_help_names_no_state(command: str) -> None:
    text = CliRunner().invoke(cli, [command, "--help"]).stdout
    assert "--state" not in text.replace("kubectl kyrec diff -p policies/ --state", ""), text


@pytest.mark.parametrize("command", ["apply", "capture", "diff", "coverage"])
def test_connection_refused_suggests_state_only_where_it_is_accepted(command: str, tmp_path: Path) -> None:
    args = [command, "--kubeconfig", _closed_port_kubeconfig(tmp_path)]
    if command == "apply":
        args.append("--dry-run=server")
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 5, result.output
    assert "connection refused; check the network" in result.stderr
    assert ("--state" in result.stderr) is (command not in LIVE_ONLY), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["apply", "capture", "diff"])
def test_a_missing_kubeconfig_suggests_state_only_where_it_is_accepted(command: str, tmp_path: Path) -> None:
    args = [command, "--kubeconfig", str(tmp_path / "absent")] + (["--dry-run=server"] if command == "apply" else [])
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 5 and "no kubeconfig found" in result.stderr
    assert ("--state" in result.stderr) is (command not in LIVE_ONLY), result.stderr


# ---- d) a capture to a file and --write-baseline say what they wrote, where ----------------------------------

def test_capture_to_a_file_prints_the_summary_line(tmp_path: Path) -> None:
    from tests.cluster.test_live_cli import POLICY, kyrec
    from tests.kubeapi.server import ApiServer

    with ApiServer() as api:
        for name in ("default", "team-a"):
            api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        api.kubeconfig(tmp_path / "kubeconfig")
        target = tmp_path / "state.json"
        result = kyrec(api, tmp_path, "capture", "-p", POLICY, "-o", f"json={target}")
        assert result.exit_code == 0, result.stderr
        doc = json.loads(target.read_text())
        listed = len(json.loads(doc["metadata"]["annotations"]["kyrec.io/listed"]))
        # docs/commands.md's line: what was found, in the command's own words, and where it went
        assert result.stderr.splitlines()[-1] == (
            f"kyrec capture: {len(doc['items'])} objects, {listed} kinds listed; wrote {target}")
        # to stdout, the List alone and no summary (stdout says it all)
        to_stdout = kyrec(api, tmp_path, "capture", "-p", POLICY)
        assert "kyrec capture:" not in to_stdout.stderr and json.loads(to_stdout.stdout)["kind"] == "List"


def test_write_baseline_says_where_the_baseline_went(tmp_path: Path) -> None:
    baseline = tmp_path / "kyrec-baseline.json"
    first = CliRunner().invoke(cli, ["eval", "-p", POLICIES, "-r", RESOURCES, "--write-baseline", str(baseline)])
    assert first.exit_code == 1 and baseline.exists()
    assert f"baseline: wrote 2 eval entries to {baseline}" in first.stderr.splitlines()
    second = CliRunner().invoke(cli, ["diff", "--state", STATE, "--write-baseline", str(baseline), "-o",
                                      f"json={tmp_path / 'diff.json'}"])
    entries = json.loads(baseline.read_text())["entries"]
    own = sum(e["command"] == "diff" for e in entries)
    assert f"baseline: wrote {own} diff entries to {baseline} (2 of other commands kept)" in \
        second.stderr.splitlines()


# ---- e) test with no suites: a notice and 0, or 3 with --require-tests ----------------------------------------

def test_no_suites_is_a_notice_in_every_output_and_require_tests_refuses(tmp_path: Path) -> None:
    plain = CliRunner().invoke(cli, ["test", str(tmp_path), "-o", "json"])
    assert plain.exit_code == 0
    notice = f"no kyverno-test.yaml found below {tmp_path}"
    # the document says so too: a script reading it must not take `0 passed, 0 failed` for a clean run
    assert json.loads(plain.stdout)["notices"] == [notice]
    assert plain.stderr.splitlines() == [f"notice: {notice}"]
    # 3, not 1 (errors.py): the paths hold nothing to check, an input error as an empty -r is; 1 says rows
    # were checked and failed. One line, starting with the path, as every input error does.
    required = CliRunner().invoke(cli, ["test", str(tmp_path), "--require-tests"])
    assert required.exit_code == 3
    assert required.stderr.splitlines() == [
        f"error: {tmp_path}: no kyverno-test.yaml found (--require-tests: nothing would be checked)"]


# ---- f) kyrec's own outputs inside an -r directory are no resources -------------------------------------------

def test_outputs_written_into_an_r_directory_are_passed_over_on_the_next_run(tmp_path: Path) -> None:
    import shutil

    manifests = tmp_path / "manifests"
    shutil.copytree(RESOURCES, manifests)
    outputs = ["-o", f"json={manifests / 'out.json'}", "-o", f"yaml={manifests / 'out.yaml'}",
               "-o", f"sarif={manifests / 'kyrec.sarif.json'}", "--write-baseline", str(manifests / 'base.json')]
    first = CliRunner().invoke(cli, ["eval", "-p", POLICIES, "-r", str(manifests), *outputs])
    assert first.exit_code == 1, first.stderr
    before = json.loads((manifests / "out.json").read_text())
    # the same command again: the outputs are neither read as resources nor refused as inputs
    again = CliRunner().invoke(cli, ["eval", "-p", POLICIES, "-r", str(manifests), *outputs])
    assert again.exit_code == 1, again.stderr
    after = json.loads((manifests / "out.json").read_text())
    assert after["results"] == before["results"] and after["summary"] == before["summary"]
    notice = next(n for n in after["notices"] if "kyrec's own output" in n)
    for name, what in (("out.json", "kyrec/v1 EvalResult"), ("out.yaml", "kyrec/v1 EvalResult"),
                       ("kyrec.sarif.json", "SARIF log"), ("base.json", "kyrec/v1 Baseline")):
        assert f"{manifests / name} ({what})" in notice, name
    assert f"notice: {notice}" in again.stderr.splitlines()
    # a manifest of the user's below the directory is still refused as an output target
    refused = CliRunner().invoke(cli, ["eval", "-p", POLICIES, "-r", str(manifests), "-o",
                                       f"json={manifests / 'workloads.yaml'}"])
    assert refused.exit_code == 2


def test_an_output_named_as_a_resource_file_is_an_input_error(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    CliRunner().invoke(cli, ["eval", "-p", POLICIES, "-r", RESOURCES, "-o", f"json={out}"])
    result = CliRunner().invoke(cli, ["eval", "-p", POLICIES, "-r", str(out)])
    assert result.exit_code == 3
    assert result.stderr.splitlines() == [
        f"error: {out}:1: this is kyrec's own output (kyrec/v1 EvalResult), not a manifest: give -r the manifests"]


# ---- g) --base-policy: failing results keep failing; --only-changes counts the change alone ------------------

def _policies(tmp_path: Path, name: str, limit: str) -> str:
    """The example policies with limit-memory's limit set to `limit` (batch asks for 4Gi)."""
    folder = tmp_path / name
    folder.mkdir()
    for policy in (EXAMPLES / "policies").iterdir():
        (folder / policy.name).write_text(policy.read_text().replace("quantity('2Gi')", f"quantity('{limit}')"))
    return str(folder)


def _eval_change(head: str, base: str, *more: str) -> tuple[int, dict, str]:
    result = CliRunner().invoke(cli, ["eval", "-p", head, "--base-policy", base, "-r", RESOURCES, *more])
    as_json = "-o" in more
    flags = [m for m in more if m not in ("-o", "json")]
    table = CliRunner().invoke(cli, ["eval", "-p", head, "--base-policy", base, "-r", RESOURCES, *flags])
    assert table.exit_code == result.exit_code         # the table and the document agree
    return result.exit_code, json.loads(result.stdout)["impact"] if as_json else {}, table.stdout


def test_failing_results_keep_failing_a_base_policy_run(tmp_path: Path) -> None:
    same = _policies(tmp_path, "same", "2Gi")
    # no change, two failing results (batch): exit 1 as without --base-policy, and the table says why
    code, impact, table = _eval_change(POLICIES, same, "-o", "json")
    assert code == 1 and impact["exitOn"] == "results-and-changes" and impact["introduced"] is False
    assert table.rstrip().splitlines()[-1] == (
        "Exit code: failing results (--fail-on) and the policy change's failures count; the change introduces "
        "none.")
    # --only-changes: the change alone, which introduces nothing
    code, impact, table = _eval_change(POLICIES, same, "--only-changes", "-o", "json")
    assert code == 0 and impact["exitOn"] == "changes"
    assert table.rstrip().splitlines()[-1] == (
        "Exit code: only the policy change's failures count (--only-changes); the change introduces none.")
    # --fail-on keeps its meaning: fail results do not count under --fail-on error
    assert _eval_change(POLICIES, same, "--fail-on", "error")[0] == 0


def test_only_changes_fails_on_what_the_change_introduces_only(tmp_path: Path) -> None:
    lax = _policies(tmp_path, "lax", "8Gi")        # before: batch's 4Gi passes limit-memory
    strict = _policies(tmp_path, "strict", "1Mi")  # after: every Pod fails it
    # tightening 8Gi -> 2Gi makes batch pass-to-fail: introduced, so exit 1 either way
    code, impact, _ = _eval_change(POLICIES, lax, "--only-changes", "-o", "json")
    assert code == 1 and impact["introduced"] is True
    assert [(r["change"], r["subject"]["name"]) for r in impact["results"]] == [("pass-to-fail", "batch")]
    # loosening 1Mi -> 2Gi fixes two Pods (fail-to-pass): the change fails nothing; batch still fails
    code, impact, _ = _eval_change(POLICIES, strict, "--only-changes", "-o", "json")
    assert code == 0 and impact["introduced"] is False and impact["summary"]["result"]["fail-to-pass"] == 2
    assert _eval_change(POLICIES, strict)[0] == 1


def test_only_changes_needs_a_base_policy() -> None:
    result = CliRunner().invoke(cli, ["eval", "-p", POLICIES, "-r", RESOURCES, "--only-changes"])
    assert result.exit_code == 2 and "--only-changes" in result.stderr and "--base-policy" in result.stderr


# ---- h) a narrow terminal keeps eval's LOCATION, under the row ------------------------------------------------

@pytest.mark.parametrize("columns", ["80", "60"])
def test_eval_at_80_columns_keeps_each_location_under_its_row(columns: str) -> None:
    args = ["eval", "-p", POLICIES, "-r", "testdata/examples/resources"]
    result = CliRunner().invoke(cli, args, env={"COLUMNS": columns})
    doc = json.loads(CliRunner().invoke(cli, [*args, "-o", "json"]).stdout)
    lines = result.stdout.splitlines()
    table = lines[:lines.index("")]
    assert "LOCATION" not in lines[0] and all(len(line) <= int(columns) for line in table)
    failing = [r for r in doc["results"] if r["result"] == "fail"]
    assert failing
    for r in failing:
        row = next(i for i, line in enumerate(lines) if line.startswith(r["policy"] + " "))
        block = [line.strip() for line in lines[row + 1:row + 4]]
        # the message under the row, then the file:line whole on a line of its own
        where = f"{r['location']['file']}:{r['location']['line']}"
        assert where == "testdata/examples/resources/workloads.yaml:16" and where in block, block


def test_a_location_column_moves_under_its_row_where_another_is_dropped() -> None:
    from kubectl_kyrec.render.fit import TEXT, Column, fit_table

    row = ["policy", "fail", "a message long enough to move", "a/rather/long/path/to/the/manifests.yaml:16"]
    for under in (False, True):
        columns = (Column("POLICY"), Column("RESULT"), Column("MESSAGE", TEXT),
                   Column("LOCATION", drop=1, under=under))
        fitted = fit_table(columns, [row], 20)
        assert fitted.headers == ["POLICY", "RESULT"]
        assert fitted.below is not None
        assert (f"    {row[3]}" in fitted.below[0].splitlines()) is under


# ---- 7) -k: every output locates a finding at a file of the repository, at its document's line ---------------

APP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  a: b
---
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
    - name: c
      image: nginx
"""
EXTRA = """\
# a Pod only the prod overlay adds
apiVersion: v1
kind: Pod
metadata:
  name: extra
spec:
  containers:
    - name: c
      image: nginx
"""


def _kustomize_repo(root: Path, own_origins: bool = False) -> Path:
    (root / "base").mkdir(parents=True)
    (root / "base" / "kustomization.yaml").write_text(
        "resources: [app.yaml]\nconfigMapGenerator:\n- name: other\n  literals: [x=y]\n- name: gen\n"
        "  literals: [a=b]\n")
    (root / "base" / "app.yaml").write_text(APP)
    (root / "overlays" / "prod").mkdir(parents=True)
    (root / "overlays" / "prod" / "kustomization.yaml").write_text(
        "namespace: prod\nnamePrefix: p-\nresources: [../../base, extra.yaml]\n"
        + ("buildMetadata: [originAnnotations]\n" if own_origins else ""))
    (root / "overlays" / "prod" / "extra.yaml").write_text(EXTRA)
    return root


@pytest.fixture
def kubectl_on_path(kubectl_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubectl").symlink_to(kubectl_path)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")      # kubectl kustomize, not a kustomize elsewhere


EXPECTED = {"p-web": ("base/app.yaml", 8), "p-extra": ("overlays/prod/extra.yaml", 2)}


@pytest.mark.parametrize("own_origins", [False, True], ids=["kyrec-asks", "kustomization-asks"])
def test_kustomize_findings_are_located_alike_in_every_format(kubectl_on_path: None, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 own_origins: bool) -> None:
    monkeypatch.chdir(_kustomize_repo(tmp_path / "repo", own_origins))
    args = ["eval", "-p", POLICIES, "-k", "overlays/prod"]
    doc = json.loads(CliRunner().invoke(cli, [*args, "-o", "json"]).stdout)
    located = {(r["subject"]["name"], r["policy"]): (r["location"]["file"], r["location"]["line"])
               for r in doc["results"] if r["result"] == "fail"}
    assert located and {where for where in located.values()} == set(EXPECTED.values())
    assert all(located[(name, policy)] == EXPECTED[name] for name, policy in located)
    # -o github: file= and line= of a real file, the same as the JSON's
    github = CliRunner().invoke(cli, [*args, "-o", "github"]).stdout.splitlines()
    annotated = [line for line in github if line.startswith(("::error", "::warning"))]
    assert len(annotated) == len(located) and not any("kustomize" in line for line in github)
    for line in annotated:
        file = line.split("file=", 1)[1].split(",", 1)[0]
        number = int(line.split("line=", 1)[1].split(",", 1)[0])
        assert (file, number) in EXPECTED.values(), line
        assert Path(file).is_file()
    # SARIF: the same file and line
    sarif = json.loads(CliRunner().invoke(cli, [*args, "-o", "sarif", "--sarif-root", "."]).stdout)
    places = {(loc["physicalLocation"]["artifactLocation"]["uri"], loc["physicalLocation"]["region"]["startLine"])
              for r in sarif["runs"][0]["results"] for loc in r["locations"]}
    assert places == set(EXPECTED.values())
    # the table's LOCATION
    table = CliRunner().invoke(cli, args).stdout
    for file, line in EXPECTED.values():
        assert f"{file}:{line}" in table


def test_kustomize_generated_objects_and_overlay_names(kubectl_on_path: None, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from kubectl_kyrec.load import kustomize
    from kubectl_kyrec.load.documents import documents_from_text

    monkeypatch.chdir(_kustomize_repo(tmp_path / "repo"))
    docs = kustomize.locate("overlays/prod", documents_from_text(kustomize.render("overlays/prod"),
                                                                 kustomize.stream_name("overlays/prod")))
    where = {(d.kind, d.name.rsplit("-", 1)[0] if d.name.startswith("p-gen") else d.name):
             (d.source.file, d.source.line, d.source.via) for d in docs}
    via = "<kustomize overlays/prod>"
    assert where[("ConfigMap", "p-settings")] == ("base/app.yaml", 1, via)
    # a generated ConfigMap: the generator's entry in the base's kustomization
    assert where[("ConfigMap", "p-gen")] == ("base/kustomization.yaml", 5, via)
    assert where[("Pod", "p-extra")] == ("overlays/prod/extra.yaml", 2, via)
    # --write-mutated still writes one file per overlay render (the location's `via`)
    out = tmp_path / "mutated"
    result = CliRunner().invoke(cli, ["eval", "-p", POLICIES, "-k", "overlays/prod", "--write-mutated", str(out)])
    assert result.exit_code == 1, result.stderr
    assert [p.name for p in out.iterdir()] == ["kustomize-overlays-prod.yaml"]


def test_a_location_read_through_a_render_keeps_its_stream_across_worker_processes() -> None:
    # results evaluated in --jobs workers come back as tuples: the overlay (`via`) rides with file and line
    import io

    from kubectl_kyrec.evaluate.pipeline import _decode_slice, _encode_slice, _Shared, _SliceAnswer
    from kubectl_kyrec.model import Ref, Result, ResultPairs

    where = Source("base/app.yaml", 8, "<kustomize overlays/prod>")
    result = Result("p", "KyvernoValidatingPolicy", "r", "fail", "m", Ref("v1", "Pod", "prod", "web", "u1"),
                    location=where)
    answer = _SliceAnswer(1)
    answer.chunks = iter([ResultPairs([result], bytearray(b"\x01"))])
    [pairs] = list(_decode_slice(_Shared(), io.BytesIO(b"".join(_encode_slice(answer)))).chunks)
    assert pairs[0][0].location == where
