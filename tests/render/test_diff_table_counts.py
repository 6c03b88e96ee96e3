"""`kyrec diff`'s table and its JSON document agree: the counts at the head of each table are the JSON
`summary`, the rows listed are the JSON `changes` that need attention (in-sync downstreams and current
reports counted, not listed), and `--show-all` lists those too without changing a count."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.reconcile.downstreams import DownstreamClass
from kubectl_kyrec.reconcile.reports import ReportClass

DATA = Path(__file__).resolve().parents[2] / "testdata"
CASES = DATA / "diff"
NOW = ["--now", "2026-11-29T00:00:00Z"]
QUIET = {str(DownstreamClass.IN_SYNC), str(ReportClass.CURRENT)}


def _state(d: Path) -> str:
    return str(d / ("state.json" if (d / "state.json").exists() else "state.yaml"))


def _runs() -> dict[str, list[str]]:
    runs = {d.name: ["-p", str(d / "policy.yaml"), "--state", _state(d)]
            for d in sorted(CASES.iterdir()) if (d / "policy.yaml").exists()}
    # both domains in one run, every report class but duplicate among them
    runs["downstreams-and-reports"] = ["-p", str(DATA / "coverage-cli" / "policy.yaml"),
                                       "-p", str(CASES / "secret-drift-masked" / "policy.yaml"),
                                       "--state", str(DATA / "coverage-cli" / "state.json"),
                                       "--state", str(CASES / "secret-drift-masked" / "state.yaml")]
    return runs


RUNS = _runs()


def _run(args: list[str], *extra: str) -> str:
    result = CliRunner().invoke(cli, ["diff", *NOW, *args, *extra])
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def _tables(out: str) -> dict[str, tuple[dict[str, int], Counter[str]]]:
    """Each table of the text output by domain: (the counts at its head, the rows listed per class)."""
    tables: dict[str, tuple[dict[str, int], Counter[str]]] = {}
    lines = out.split("\n--- ")[0].splitlines()     # the unified diffs follow the tables
    i = 0
    while i < len(lines):
        line = lines[i]
        domain = ("downstream" if line.startswith("Downstreams:") else
                  "report" if line.startswith("Reports (") else None)
        if domain is None:
            i += 1
            continue
        head = [line]
        i += 1
        while i < len(lines) and lines[i].startswith("  "):     # counts wrapped to the width
            head.append(lines[i])
            i += 1
        counts = {klass: int(n) for n, klass in re.findall(r"(\d+) ([a-z-]+)", " ".join(head))}
        classes = {str(c) for c in (DownstreamClass if domain == "downstream" else ReportClass)}
        rows: Counter[str] = Counter()
        while i < len(lines) and not lines[i].startswith(("Downstreams:", "Reports (")):
            word = lines[i].split(" ", 1)[0].rstrip("*")
            if word in classes:
                rows[word] += 1
            i += 1
        tables[domain] = counts, rows
    return tables


@pytest.mark.parametrize("name", sorted(RUNS))
def test_table_counts_are_the_json_summary(name: str) -> None:
    args = RUNS[name]
    doc = json.loads(_run(args, "-o", "json"))
    listed = {domain: Counter(c["class"] for c in doc["changes"] if c["domain"] == domain)
              for domain in ("downstream", "report")}
    default, shown = _tables(_run(args)), _tables(_run(args, "--show-all"))
    assert default, "no table"
    assert default.keys() == shown.keys()
    for domain, (counts, rows) in default.items():
        # a report table leaves out `0 undetermined` (it arises only from an unread kind)
        assert counts == {k: v for k, v in doc["summary"][domain].items()
                          if v or not (domain == "report" and k == "undetermined")}
        # the summary counts what the document lists
        assert {k: v for k, v in counts.items() if v} == dict(listed[domain])
        assert rows == Counter({k: v for k, v in listed[domain].items() if k not in QUIET})
        all_counts, all_rows = shown[domain]
        assert all_counts == counts
        assert all_rows == listed[domain]


def test_the_runs_cover_the_quiet_classes() -> None:
    # the cases above would prove nothing about hiding rows if none held an in-sync or current object
    docs = [json.loads(_run(RUNS[name], "-o", "json")) for name in ("trigger-gone", "downstreams-and-reports")]
    seen = {(c["domain"], c["class"]) for doc in docs for c in doc["changes"]}
    assert {("downstream", "in-sync"), ("report", "current")} <= seen
