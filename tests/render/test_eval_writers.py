"""The `eval` writers: the table and the JSON document agree, the table lists what needs attention, and
nothing is built for a format that does not print it."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.render.progress import Progress

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "testdata" / "examples"
ARGS = ["eval", "-p", str(EXAMPLES / "policies"), "-r", str(EXAMPLES / "resources"), "--now",
        "2026-11-29T00:00:00Z"]


def run(*extra: str) -> str:
    result = CliRunner().invoke(cli, [*ARGS, *extra])
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def table_summary(out: str) -> dict[str, int]:
    last = out.rstrip().splitlines()[-1]
    return {k: int(v) for k, v in re.findall(r"(\w+): (\d+)", last)}


def test_table_and_json_summary_counts_agree() -> None:
    doc = json.loads(run("-o", "json"))
    counts = table_summary(run())
    assert sum(counts.values()) == len(doc["results"]) > 0
    assert counts == {k: v for k, v in doc["summary"].items() if v or k != "undetermined"}
    # the per-policy table adds up to the same counts
    lines = run().splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["POLICY", "PASS"])
    per_policy = [line.split() for line in lines[start + 1:] if line.strip() and not line.startswith("(")][:-1]
    header = [h.lower() for h in lines[start].split()[1:]]
    totals = {k: sum(int(row[1 + i]) for row in per_policy) for i, k in enumerate(header)}
    assert totals == {k: doc["summary"][k] for k in header}


def test_default_table_lists_attention_rows_and_show_all_lists_every_row() -> None:
    doc = json.loads(run("-o", "json"))
    def rows(text: str) -> list[str]:
        # a message too long for its column is on an indented line of its own under its row
        return [line for line in text.split("\n\n")[0].splitlines()[1:] if not line.startswith(" ")]

    results = [line.split() for line in rows(run())]
    assert {row[3] for row in results} <= {"fail", "error", "warn", "undetermined"}
    assert len(results) == sum(r["result"] in ("fail", "error", "warn") for r in doc["results"])
    every = rows(run("--show-all"))
    wide = run("-o", "wide").split("\n\n")[0].splitlines()[1:]
    assert len(every) == len(wide) == len(doc["results"])


def test_json_and_yaml_are_the_same_document() -> None:
    assert json.loads(run("-o", "json")) == yaml.safe_load(run("-o", "yaml"))


def test_reports_are_built_only_for_the_formats_that_print_them(monkeypatch: pytest.MonkeyPatch) -> None:
    import kubectl_kyrec.expect.reports as reports

    def boom(*args: object, **kwargs: object) -> object:
        raise AssertionError("expected reports built for a format that does not print them")

    monkeypatch.setattr(reports, "build_report", boom)
    for fmt in ("table", "wide", "junit", "sarif", "github"):
        run("-o", fmt)
    with pytest.raises(AssertionError):
        run("-o", "reports")


def test_progress_only_on_a_terminal() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    pipe, terminal = io.StringIO(), Terminal()
    with Progress.on_terminal("evaluated", pipe) as handle:
        assert handle.tick is None
    with Progress.on_terminal("evaluated", terminal) as handle:
        assert handle.tick is not None
        progress = handle.tick.__self__  # type: ignore[attr-defined]
        progress.interval = progress._next = 0.0
        for _ in range(128):
            handle.tick(None)
    assert "evaluated 128 objects" in terminal.getvalue() and terminal.getvalue().endswith("\r\x1b[K")
    assert pipe.getvalue() == ""
