"""Consistency matrix, leg (a): the narrowing flags narrow what is shown, never a verdict (issue 33).

`--reports`, `--downstreams`, `--policy-name`, `-n`, `--kind` and `-l` choose the rows a command shows and
`apply` acts on; they never change what is evaluated to decide a row (reconcile/selection.py). For each
input below, each command that takes a flag, and each value of it the input gives (every namespace, kind and
policy its un-narrowed run names, label selectors from its objects' labels), the narrowed run is compared
with the un-narrowed one:

1. every row it shows is a row of the un-narrowed run, with the same verdict: class, reason and cause
   (`diff`), status, reason and cause (`coverage`), result and message (`eval`, `explain`; an expected
   report's results one by one, as `eval --policy-name` lists only the selected policies' results);
2. it shows every row of the un-narrowed run that is inside the filter, as this module states the rule:
   - `-n NS`: a downstream or deletion by its object's namespace, a report or coverage row by its subject's
     (the report's own, its subject gone), an eval or explain row by its subject's, a Namespace passing for
     itself where it is a trigger;
   - `--kind K`: a downstream by its trigger's kind, any other row by its subject's;
   - `-l SEL`: the same object's labels as the input holds them (a row without one: its own object's);
   - `--policy-name P`: a row naming its policy; a report row, which names none, is checked by (1) only;
   - `--reports`, `--downstreams`: the rows of that domain (deletions are the downstream domain's).

Inputs: the bundled example (its state alone, its policies over its state, its policies over its
manifests), the coverage example (testdata/coverage-cli), and every golden case of testdata/diff (those on
Kyverno's conformance corpus when ../shared has it). testdata/reports holds expected reports rather than
policies, so no command can run on it; `test` takes none of these flags; `apply` is live only: its plan,
`diff`, `eval --live` and a read narrowed by the user's rights are checked on the real API server in
test_narrowing_flags_live.py.

Beside the matrix: a kind no table knows is exit 3 in every command that takes `--kind` (as `kubectl get
foo`), and a namespace or label selector that matches nothing is a notice on stderr and exit 0 in every
command (as `kubectl get -n nope` says `No resources found in nope namespace.`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.load.documents import load_documents
from tests.shared_inputs import cases, shared

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "testdata" / "examples"
DIFF_CASES = ROOT / "testdata" / "diff"
CORPUS = shared("corpus/kyverno-conformance")
NOW = ["--now", "2026-09-01T12:00:00Z"]

# the flags each command takes (`coverage` only -n; `test` none)
FLAGS: dict[str, tuple[str, ...]] = {
    "diff": ("--reports", "--downstreams", "--policy-name", "-n", "--kind", "-l"),
    "eval": ("--policy-name", "-n", "--kind", "-l"),
    "explain": ("--policy-name", "-n", "--kind", "-l"),
    "coverage": ("-n",),
}
LABEL_SELECTORS_PER_INPUT = 3       # label selectors tried per input (its objects' first distinct labels)

Row = tuple[Any, ...]


@dataclass(frozen=True)
class Input:
    name: str
    args: tuple[str, ...]               # the input flags: -p, -r, --state, --values, ...
    paths: tuple[str, ...]              # the files the objects come from (for their labels)
    commands: tuple[str, ...]
    diff_args: tuple[str, ...] = ()     # flags of `diff` only (--all-policies)


@dataclass
class Shown:
    """One run's rows: key -> verdict, and key -> what the filters look at."""

    code: int
    rows: dict[Row, Any] = field(default_factory=dict)
    scope: dict[Row, RowScope] = field(default_factory=dict)


@dataclass(frozen=True)
class RowScope:
    domain: str                         # downstream | deletion | report | result | coverage | explain
    policy: str | None                  # the row's policy, None when it names none
    namespace: str                      # the namespace -n looks at
    kind: str                           # the kind --kind looks at
    anchor: Mapping[str, Any] | None    # the object -l looks at (its ref)
    namespace_object: str = ""          # a Namespace trigger's own name (-n passes it for itself)


def _ref(ref: Mapping[str, Any] | None) -> str:
    return json.dumps(ref, sort_keys=True) if ref else ""


def _example_inputs() -> list[Input]:
    state, policies, resources = (str(EXAMPLES / "cluster.yaml"), str(EXAMPLES / "policies"),
                                  str(EXAMPLES / "resources"))
    coverage_state, coverage_policy = (str(ROOT / "testdata/coverage-cli/state.json"),
                                       str(ROOT / "testdata/coverage-cli/policy.yaml"))
    return [
        Input("example-state", ("--state", state), (state,), ("diff", "eval", "explain", "coverage")),
        Input("example-policies-over-state", ("-p", policies, "--state", state), (state,),
              ("diff", "eval", "explain", "coverage")),
        Input("example-manifests", ("-p", policies, "-r", resources), (resources,), ("eval", "explain")),
        Input("coverage-cli", ("-p", coverage_policy, "--state", coverage_state), (coverage_state,),
              ("diff", "eval", "coverage")),
    ]


def _golden(case: Path) -> Input:
    spec = yaml.safe_load((case / "case.yaml").read_text())
    args: list[str] = []
    paths: list[str] = []
    for flag, key in (("-p", "policies"), ("-r", "resources"), ("--state", "state"), ("-e", "exceptions")):
        for name in spec.get(key) or []:
            path = str(CORPUS / name[len("corpus:"):] if name.startswith("corpus:") else case / name)
            args += [flag, path]
            if key in ("resources", "state"):
                paths.append(path)
    if spec.get("values"):
        args += ["--values", str(case / spec["values"])]
    return Input(f"diff/{case.name}", tuple(args), tuple(paths), ("diff", "eval"),
                 tuple(str(a) for a in spec.get("args") or []))


def _golden_params() -> list[Any]:
    all_cases = sorted(p.parent for p in DIFF_CASES.glob("*/case.yaml"))
    local = [c for c in all_cases if "corpus:" not in (c / "case.yaml").read_text()]
    on_corpus = [c for c in all_cases if c not in local]
    params = [pytest.param((_golden(c), cmd), id=f"diff/{c.name}-{cmd}") for c in local for cmd in ("diff", "eval")]
    params += cases(CORPUS, "narrowing-flag matrix over the diff golden cases built on the conformance corpus",
                    lambda: [(_golden(c), cmd) for c in on_corpus for cmd in ("diff", "eval")],
                    ids=lambda p: f"{p[0].name}-{p[1]}")
    return params


def run(command: str, given: Input, *extra: str) -> tuple[int, Any, str]:
    own = given.diff_args if command == "diff" else ()
    result = CliRunner().invoke(cli, [command, *given.args, *own, *NOW, "-o", "json", *extra])
    try:
        document = json.loads(result.stdout)
    except json.JSONDecodeError:
        document = None
    return result.exit_code, document, result.stderr


def described(report: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if report is None:
        return {}
    if report.get("scope"):
        return dict(report["scope"])
    owners = (report.get("metadata") or {}).get("ownerReferences") or [{}]
    return dict(owners[0])


def shown(command: str, document: Mapping[str, Any], code: int,
          objects: Mapping[tuple[str, str, str], Mapping[str, Any]]) -> Shown:
    """`objects`: the input's objects by kind, namespace and name."""
    out = Shown(code)
    key: Row
    if command == "diff":
        for c in document["changes"]:
            key = (c["domain"], c["policy"], _ref(c["trigger"]), _ref(c["subject"]), _ref(c["object"]))
            out.rows[key] = (c["class"], c["reason"], c["cause"])
            obj, trigger, subject = c["object"], c["trigger"], c["subject"]
            if c["domain"] == "downstream":
                anchor = trigger or obj
                out.scope[key] = RowScope("downstream", c["policy"], obj["namespace"], anchor["kind"], anchor)
            elif c["domain"] == "deletion":
                out.scope[key] = RowScope("deletion", c["policy"], obj["namespace"], obj["kind"], obj,
                                          obj["name"] if obj["kind"] == "Namespace" else "")
            else:
                # a report whose subject is gone: what it says it is about (its scope, else its first owner)
                about = subject or described(objects.get((obj["kind"], obj["namespace"], obj["name"])))
                out.scope[key] = RowScope("report", None, (subject or obj)["namespace"], about.get("kind", ""),
                                          subject or obj)
    elif command == "eval":
        for r in document["results"]:
            s = r["subject"]
            key = ("result", r["policy"], r["source"], r["rule"], _ref(s))
            out.rows[key] = (r["result"], r["message"])
            out.scope[key] = RowScope("result", r["policy"], s["namespace"], s["kind"], s,
                                      s["name"] if s["kind"] == "Namespace" else "")
        for d in document["downstreams"]:
            t, meta = d["trigger"], d["object"].get("metadata") or {}
            key = ("generated", d["policy"], _ref(t), d["object"].get("kind"), meta.get("namespace"), meta.get("name"))
            out.rows[key] = json.dumps(d["object"], sort_keys=True)
            out.scope[key] = RowScope("result", d["policy"], t["namespace"], t["kind"], t,
                                      t["name"] if t["kind"] == "Namespace" else "")
        for report in document["reports"]:
            s, meta = report.get("scope") or {}, report["metadata"]
            for r in report.get("results") or []:
                key = ("report-result", report["kind"], meta.get("namespace"), meta["name"], r.get("source"),
                       r.get("policy"), r.get("rule"))
                out.rows[key] = (r.get("result"), r.get("message"))
                out.scope[key] = RowScope("result", r.get("policy"), s.get("namespace") or "", s.get("kind") or "",
                                          s, s.get("name", "") if s.get("kind") == "Namespace" else "")
    elif command == "coverage":
        for s in document["subjects"]:
            key = ("coverage", _ref(s["subject"]))
            out.rows[key] = (s["status"], s["reason"], s["cause"], _ref(s["report"]))
            out.scope[key] = RowScope("coverage", None, s["subject"]["namespace"], s["subject"]["kind"], s["subject"])
        for orphan in document["orphans"]:
            key = ("orphan", _ref(orphan))
            out.rows[key] = "orphan"
            out.scope[key] = RowScope("coverage", None, orphan["namespace"], "", orphan)
    elif command == "explain":
        for e in document["explanations"]:
            s = e["subject"]
            key = ("explain", e["policy"], e["policyKind"], _ref(s))
            out.rows[key] = json.dumps(e.get("results"), sort_keys=True)
            out.scope[key] = RowScope("explain", e["policy"], s["namespace"], s["kind"], s,
                                      s["name"] if s["kind"] == "Namespace" else "")
    return out


class Labels:
    """The labels of the input's objects, as the filters see them: by uid, else by kind/namespace/name."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.by_uid: dict[str, Mapping[str, str]] = {}
        self.by_name: dict[tuple[str, str, str], Mapping[str, str]] = {}
        self.objects: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        self.pairs: list[str] = []
        for doc in load_documents(list(paths)) if paths else []:
            meta = doc.obj.get("metadata") or {}
            labels = meta.get("labels") or {}
            if meta.get("uid"):
                self.by_uid[str(meta["uid"])] = labels
            self.by_name[(doc.kind, doc.namespace, doc.name)] = labels
            self.objects[(doc.kind, doc.namespace, doc.name)] = doc.obj
            if _is_kyverno_bookkeeping(doc.obj):
                continue
            for k, v in labels.items():
                if f"{k}={v}" not in self.pairs and not k.startswith("kubernetes.io/"):
                    self.pairs.append(f"{k}={v}")

    def of(self, ref: Mapping[str, Any] | None) -> Mapping[str, str]:
        if not ref:
            return {}
        if ref.get("uid") and ref["uid"] in self.by_uid:
            return self.by_uid[ref["uid"]]
        return self.by_name.get((ref.get("kind", ""), ref.get("namespace", ""), ref.get("name", "")), {})


def is_report(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") in ("PolicyReport", "ClusterPolicyReport", "Report", "ClusterReport")


def _is_kyverno_bookkeeping(obj: Mapping[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels.get("app.kubernetes.io/managed-by") == "kyverno"


def inside(flag: str, value: str, scope: RowScope, labels: Labels) -> bool | None:
    """Whether a row is inside `flag value` by the rule this module states; None: not decided here."""
    if flag == "--reports":
        return scope.domain == "report"
    if flag == "--downstreams":
        return scope.domain in ("downstream", "deletion")
    if flag == "--policy-name":
        return None if scope.policy is None else scope.policy == value
    if flag == "-n":
        return scope.namespace == value or (scope.namespace_object == value and scope.kind == "Namespace")
    if flag == "--kind":
        return scope.kind == value
    if flag == "-l":
        key, _, wanted = value.partition("=")
        return labels.of(scope.anchor).get(key) == wanted
    raise AssertionError(flag)


def values_of(flag: str, full: Shown, labels: Labels) -> list[str]:
    """The values of `flag` the un-narrowed run gives: what its rows name."""
    if flag in ("--reports", "--downstreams"):
        return [""]
    if flag == "--policy-name":
        return sorted({s.policy for s in full.scope.values() if s.policy})
    if flag == "-n":
        return sorted({s.namespace for s in full.scope.values() if s.namespace})
    if flag == "--kind":
        return sorted({s.kind for s in full.scope.values() if s.kind})
    return labels.pairs[:LABEL_SELECTORS_PER_INPUT]


def compare(command: str, given: Input) -> tuple[int, list[str]]:
    """(combinations run, what broke the invariants)."""
    code, document, stderr = run(command, given)
    assert document is not None, f"{given.name} {command}: no JSON (exit {code}): {stderr}"
    labels = Labels(given.paths)
    full = shown(command, document, code, labels.objects)
    runs, problems = 0, list[str]()
    combinations: list[tuple[list[str], str, str, Shown]] = []
    for flag in FLAGS[command]:
        combinations.extend(([], flag, value, full) for value in values_of(flag, full, labels))
    if command == "diff" and not any(is_report(obj) for obj in labels.objects.values()):
        # a state without reports: the default diff leaves the report domain out (saying so, when the policies
        # validate), and --reports runs it; its rows are the un-narrowed report domain the other flags narrow
        # with --reports
        code, reports_doc, stderr = run(command, given, "--reports")
        runs += 1
        assert reports_doc is not None, f"{given.name} diff --reports: no JSON (exit {code}): {stderr}"
        reports = shown(command, reports_doc, code, labels.objects)
        problems.extend(f"{given.name}: diff --reports: shows a row of another domain: {key}"
                        for key, scope in reports.scope.items() if scope.domain != "report")
        combinations = [c for c in combinations if c[1] != "--reports"]
        for flag in FLAGS[command]:
            if flag not in ("--reports", "--downstreams"):
                combinations.extend((["--reports"], flag, value, reports)
                                    for value in values_of(flag, reports, labels))
    for before, flag, value, base in combinations:
        extra = [*before, flag, value] if value else [*before, flag]
        code2, narrowed_doc, err = run(command, given, *extra)
        runs += 1
        where = f"{given.name}: {command} {' '.join(extra)}"
        if narrowed_doc is None:
            if flag == "--policy-name" and all(base.rows[k][1] == "policy-gone" for k, s in base.scope.items()
                                               if s.policy == value) and "no such policy among those given" in err:
                continue        # a policy-gone row names a policy the run was not given: nothing to select
            problems.append(f"{where}: no JSON (exit {code2}): {err.strip()[:300]}")
            continue
        narrowed = shown(command, narrowed_doc, code2, labels.objects)
        for key, verdict in narrowed.rows.items():
            if key not in base.rows:
                problems.append(f"{where}: shows a row the un-narrowed run does not: {key}")
            elif base.rows[key] != verdict:
                problems.append(f"{where}: {key}: {base.rows[key]} un-narrowed, {verdict} narrowed")
            elif inside(flag, value, narrowed.scope[key], labels) is False:
                problems.append(f"{where}: shows a row outside the filter: {key}")
        for key, scope in base.scope.items():
            if key not in narrowed.rows and inside(flag, value, scope, labels):
                problems.append(f"{where}: leaves out a row inside the filter: {key} {base.rows[key]}")
    return runs, problems


@pytest.mark.parametrize("given", _example_inputs(), ids=lambda i: i.name)
def test_narrowing_flags_keep_the_verdicts_of_the_examples(given: Input) -> None:
    for command in given.commands:
        runs, problems = compare(command, given)
        assert runs, (given.name, command)
        assert not problems, "\n".join(problems)


@pytest.mark.parametrize("case", _golden_params())
def test_narrowing_flags_keep_the_verdicts_of_the_diff_goldens(case: tuple[Input, str]) -> None:
    given, command = case
    _, problems = compare(command, given)
    assert not problems, "\n".join(problems)


# ---- item 2 of the issue, as found ----------------------------------------------------------------------------

def test_reports_alone_gives_the_report_verdicts_of_the_default_diff() -> None:
    """`diff --reports` on the bundled state said `1 current, 1 missing, 4 stale`: the three Namespaces'
    reports became `stale result-of-absent-policy`, their classic generate rule never evaluated."""
    state = str(EXAMPLES / "cluster.yaml")
    both = CliRunner().invoke(cli, ["diff", "--state", state, *NOW])
    alone = CliRunner().invoke(cli, ["diff", "--state", state, "--reports", *NOW])
    line = "Reports (wgpolicyk8s.io/v1alpha2): 4 current, 1 missing, 1 stale, 0 orphan, 0 duplicate, 0 misnamed"
    assert line in both.stdout.splitlines()
    assert line in alone.stdout.splitlines(), alone.stdout
    assert "result-of-absent-policy" not in alone.stdout


def test_coverage_counts_the_namespaces_a_classic_generate_rule_reports_on() -> None:
    """coverage left the Namespaces out of scope: a classic generate rule's results make them subjects."""
    result = CliRunner().invoke(cli, ["coverage", "--state", str(EXAMPLES / "cluster.yaml"), *NOW, "-o", "json"])
    counts = json.loads(result.stdout)["counts"]
    assert (counts["inScope"], counts["current"], counts["missing"], counts["stale"]) == (6, 4, 1, 1), counts
    subjects = {(s["subject"]["kind"], s["subject"]["name"]): s["status"]
                for s in json.loads(result.stdout)["subjects"]}
    assert {k: v for k, v in subjects.items() if k[0] == "Namespace"} == {
        ("Namespace", "shop"): "current", ("Namespace", "team-a"): "current", ("Namespace", "team-b"): "current"}


def test_policy_name_keeps_the_other_policies_results_in_the_report_it_would_write() -> None:
    """--policy-name evaluated the selected policy only: every report also holding another policy's results
    became stale, and the report `apply` would write for it held the selected policy's results alone."""
    state = str(EXAMPLES / "cluster.yaml")
    result = CliRunner().invoke(cli, ["diff", "--state", state, "--reports", "--policy-name", "limit-memory",
                                      *NOW, "-o", "json"])
    rows = {c["subject"]["name"]: (c["class"], c["reason"]) for c in json.loads(result.stdout)["changes"]}
    assert rows == {"web": ("current", None), "batch": ("stale", "outcome-changed"), "worker": ("missing", None)}


# ---- selectors as kubectl has them ----------------------------------------------------------------------------

STATE = ("--state", str(EXAMPLES / "cluster.yaml"))
# every command that takes --kind, -n or -l, offline (apply and capture read a cluster: tests/realapi)
SELECTING = {"eval": ("--kind", "-n", "-l"), "diff": ("--kind", "-n", "-l"), "explain": ("--kind", "-n", "-l"),
             "coverage": ("-n",)}


@pytest.mark.parametrize("command", [c for c, flags in SELECTING.items() if "--kind" in flags])
def test_an_unknown_kind_is_exit_3_in_every_command(command: str) -> None:
    result = CliRunner().invoke(cli, [command, *STATE, *NOW, "--kind", "foo"])
    assert result.exit_code == 3, (command, result.output)
    assert result.stderr.startswith("error: --kind foo: no such resource type"), result.stderr


@pytest.mark.parametrize(("command", "flag", "value"), [
    (c, f, v) for c, flags in SELECTING.items() for f in flags if f != "--kind"
    for v in (["nope"] if f == "-n" else ["nope=x", "owner in (nobody)"])])
def test_a_selector_that_matches_nothing_is_a_notice_and_exit_0(command: str, flag: str, value: str) -> None:
    result = CliRunner().invoke(cli, [command, *STATE, *NOW, flag, value])
    assert result.exit_code == 0, (command, flag, result.output)
    assert f"notice: no resource matched {flag} {value} (of " in result.stderr, (command, result.stderr)

