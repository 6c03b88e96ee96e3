"""No table cuts an identifier (issue 27): over the golden cases of eval, diff, test, coverage and kubescape
coverage, every kind (or kubectl's short name for it), namespace, name, policy, rule and file path of a
row the table lists appears whole in the table's text, on a pipe (no width limit) and fitted to 80 and 40
columns.

The identifiers are read from the same run's `-o json`, so the test needs no list of its own; a row's
location is required whole wherever the table has a LOCATION column (fitting may drop that column, never
cut it), and always on a pipe.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.render.fit import short_kind

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "testdata"
WIDTHS = [None, "80", "40"]


def _run(args: list[str], columns: str | None) -> tuple[str, dict[str, Any]]:
    """(the table, before any unified diff; the JSON document) of one command line."""
    env = {"COLUMNS": columns} if columns else {}
    table = CliRunner().invoke(cli, args, env=env, catch_exceptions=False).stdout
    lines = table.splitlines()
    end = next((i for i, line in enumerate(lines) if line.startswith("--- ")), len(lines))
    doc = json.loads(CliRunner().invoke(cli, [*args, "-o", "json"], catch_exceptions=False).stdout)
    return "\n".join(lines[:end]), doc


def _whole(token: str, text: str) -> bool:
    """`token` in `text`, not as a part of a longer word (a cut name would be found only as a part)."""
    return re.search(r"(?<![\w.\-/])" + re.escape(token) + r"(?![\w.\-/*])", text) is not None


def _ref_forms(kind: str, namespace: str, name: str) -> list[str]:
    """A ref as the tables print it: `Kind ns/name` whole, or kubectl's `ns short/name` when fitted."""
    if namespace:
        return [f"{kind} {namespace}/{name}", f"{namespace} {short_kind(kind)}/{name}"]
    return [f"{kind} {name}", f"{short_kind(kind)}/{name}"]


def _assert_ref(ref: dict[str, Any] | None, text: str, what: str) -> None:
    if ref is None:
        return
    forms = _ref_forms(ref["kind"], ref.get("namespace") or "", ref["name"])
    assert any(_whole(form, text) for form in forms), f"{what}: none of {forms} whole in\n{text}"


def _location(location: dict[str, Any] | None) -> str | None:
    if not location:
        return None
    return f"{location['file']}:{location['line']}" if location.get("line") else str(location["file"])


def _has_column(text: str, header: str) -> bool:
    return any(line.startswith("POLICY") and header in line.split() for line in text.splitlines())


def _eval_cases() -> Iterator[Any]:
    for root in (DATA / "eval", DATA / "classic"):
        for case in sorted(p for p in root.iterdir() if (p / "expected.yaml").exists()):
            expected = yaml.safe_load((case / "expected.yaml").read_text()) or {}
            if expected.get("inputs") or not (case / "resources.yaml").exists():
                continue            # a case that reads another's inputs: those are covered there
            yield pytest.param(case, id=f"{root.name}/{case.name}")


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("case", list(_eval_cases()))
def test_eval_tables_print_every_identifier_whole(case: Path, columns: str | None) -> None:
    args = ["eval", "--now", "2026-11-29T00:00:00Z", "--show-all", "-p", str(case / "policies.yaml"),
            "-r", str(case / "resources.yaml")]
    if (case / "exceptions.yaml").exists():
        args += ["-e", str(case / "exceptions.yaml")]
    text, doc = _run(args, columns)
    locations = columns is None or _has_column(text, "LOCATION")
    for r in doc["results"]:
        assert _whole(r["policy"], text), r["policy"]
        if r["rule"] and _has_column(text, "RULE"):
            assert _whole(r["rule"], text), r["rule"]
        _assert_ref(r["subject"], text, r["policy"])
        where = _location(r["location"])
        if where and locations:
            assert _whole(where, text), where
    for d in doc["downstreams"]:
        assert _whole(d["policy"], text)
        _assert_ref(d["trigger"], text, d["policy"])
        meta = d["object"].get("metadata") or {}
        _assert_ref({"kind": d["object"]["kind"], "namespace": meta.get("namespace") or "", "name": meta["name"]},
                    text, d["policy"])


def _diff_cases() -> Iterator[Any]:
    for case in sorted(p.parent for p in (DATA / "diff").glob("*/case.yaml")):
        if "corpus:" not in (case / "case.yaml").read_text():   # the corpus-built ones are the diff golden's
            yield pytest.param(case, id=case.name)


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("case", list(_diff_cases()))
def test_diff_tables_print_every_identifier_whole(case: Path, columns: str | None) -> None:
    from tests.cli.test_diff_golden import _args

    spec = yaml.safe_load((case / "case.yaml").read_text())
    text, doc = _run([*_args(case, spec), "--show-all"], columns)
    for change in doc["changes"]:
        if change["domain"] == "downstream":
            if change["policy"]:
                assert _whole(change["policy"], text), change["policy"]
            _assert_ref(change["trigger"], text, "trigger")
        else:
            _assert_ref(change["subject"], text, "subject")
        _assert_ref(change["object"], text, "object")


@pytest.mark.parametrize("columns", WIDTHS)
def test_report_and_coverage_tables_print_every_identifier_whole(columns: str | None) -> None:
    case = DATA / "coverage-cli"
    base = ["--now", "2026-11-29T00:00:00Z", "-p", str(case / "policy.yaml"), "--state", str(case / "state.json")]
    text, doc = _run(["diff", "--reports", "--show-all", *base], columns)
    for change in doc["changes"]:
        _assert_ref(change["subject"], text, "subject")
        _assert_ref(change["object"], text, "report")
    text, doc = _run(["coverage", *base, "--exclusions", str(case / "exclusions.yaml")], columns)
    for subject in doc["subjects"]:
        if subject["status"] != "current":
            _assert_ref(subject["subject"], text, subject["status"])
            _assert_ref(subject["report"], text, "report")
    for policy in doc["perPolicy"]:
        assert _whole(policy, text), policy
    for unused in doc["unusedExclusions"]:
        assert "kind=Pod name=never-matches-*" in text, unused


@pytest.mark.parametrize("columns", WIDTHS)
def test_test_tables_print_every_identifier_whole(columns: str | None) -> None:
    suites = DATA / "testrun"
    text, doc = _run(["test", str(suites)], columns)
    for row in doc["rows"]:
        assert _whole(row["policy"], text), row["policy"]
        namespace, _, name = row["resource"].rpartition("/")
        if row["kind"]:
            _assert_ref({"kind": row["kind"], "namespace": namespace, "name": name}, text, row["policy"])
        else:
            assert _whole(row["resource"], text), row["resource"]
        where = _location(row["location"])
        if where:       # the table names each row by its file:line under the suites' directory
            assert _whole(os.path.relpath(where, suites), text), where


@pytest.mark.parametrize("columns", WIDTHS)
def test_kubescape_coverage_tables_print_every_identifier_whole(columns: str | None) -> None:
    case = DATA / "kubescape" / "classes"
    text, doc = _run(["coverage", "--producer", "kubescape", "--now", "2026-10-02T15:30:00Z", "--state",
                      str(case / "state.json"), "--exclusions", str(case / "exclusions.yaml")], columns)
    listed = [s for s in doc["subjects"] if s["status"] != "current"]
    assert listed
    for subject in listed:
        _assert_ref(subject["subject"], text, subject["status"])
        assert _whole(subject["subject"]["container"], text)
        if subject["report"]:
            assert _whole(subject["report"]["name"], text), subject["report"]["name"]
