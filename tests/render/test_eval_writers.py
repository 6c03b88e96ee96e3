"""The `eval` writers: the table and the JSON document agree, the table lists what needs attention, and
nothing is built for a format that does not print it."""

from __future__ import annotations

import datetime
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
    # failedReads counts reads, not results: the table says them in its first line (none failed here)
    assert doc["summary"]["failedReads"] == 0
    assert counts == {k: v for k, v in doc["summary"].items() if (v or k != "undetermined") and k != "failedReads"}
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

    # every report's entries are made by report_result, whether a report is built whole or written as text
    monkeypatch.setattr(reports, "report_result", boom)
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
        for _ in range(1280):
            handle.tick(None)
    # numbers one way, as the tables print them: no thousands separator
    assert "evaluated 1280 objects" in terminal.getvalue() and terminal.getvalue().endswith("\r\x1b[K")
    assert "," not in terminal.getvalue()
    assert pipe.getvalue() == ""


def test_progress_says_the_total_and_the_time_left_once_it_knows_the_total() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    with Progress.on_terminal("evaluated", terminal) as handle:
        assert handle.tick is not None and handle.expect is not None
        progress = handle.tick.__self__  # type: ignore[attr-defined]
        progress.interval = progress._next = 0.0
        handle.expect(1000)
        progress.start -= 10.0           # 64 objects in about 10 s: 6/s, 936 left
        for _ in range(64):
            handle.tick(None)
    line = terminal.getvalue().split("\r")[1]
    assert line.startswith("evaluated 64 of 1000 objects (6/s, about 2m")
    assert line.endswith(" left)\x1b[K")
    # past the total (a total that undercounted), no estimate: the count alone
    late = Progress("evaluated", Terminal(), interval=0.0)
    late.expect(10)
    for _ in range(64):
        late.tick(None)
    assert "of 10" not in late.stream.getvalue() and "evaluated 64 objects" in late.stream.getvalue()


def test_the_eval_pipeline_tells_the_total_after_its_filters(tmp_path: Path) -> None:
    from kubectl_kyrec.load.run_inputs.selection import Selection
    from kubectl_kyrec.load.run_inputs.sources import FileSource
    from kubectl_kyrec.run.eval import EvalRunOptions, run_eval

    pods = "\n---\n".join(f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}, namespace: a}}" for i in range(3))
    config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: a}\n"
    (tmp_path / "r.yaml").write_text(f"{pods}\n---\n{config_map}")
    told: list[int] = []
    now = datetime.datetime(2026, 11, 29, tzinfo=datetime.UTC)
    run_eval(EvalRunOptions(now=now, selection=Selection(kinds=("Pod",))),
             FileSource(policy_paths=[str(EXAMPLES / "policies")], resource_paths=[str(tmp_path / "r.yaml")]),
             on_total=told.append)
    assert told == [3]


@pytest.mark.parametrize("cap", [None, 2])
def test_yaml_results_are_the_json_results_in_parts(cap: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    # every field of a result reaches its entry through the YAML view's shared parts: results that differ
    # in one field only (each in turn) keep their own values, in result_json's key order
    import itertools
    import random

    from kubectl_kyrec.model import Ref, Result, Source
    from kubectl_kyrec.render import eval_output
    from kubectl_kyrec.render.eval_output import _ResultsJson, _ResultsParts

    if cap is not None:         # the part caches emptied as they fill: the same entries
        monkeypatch.setattr(eval_output, "_PARTS_MAX", cap)

    rng = random.Random(5)
    refs = [Ref("v1", "Pod", "ns", f"p{i}", f"uid-{i}") for i in range(3)] + [Ref("v1", "Node", "", "n", "u-n")]
    sources = [Source("state.json", 6), Source("state.json", 40), None]
    shared_props = {"process": "background scan"}
    choices = {
        "policy": ["a", "b"], "source": ["KyvernoValidatingPolicy", "ValidatingAdmissionPolicy"],
        "rule": ["", "r1"], "result": ["pass", "fail", "error"], "message": ["", "m1", "yes"],
        "subject": refs, "scored": [True, False], "category": ["", "Pod Security"], "severity": ["", "high"],
        "properties": [shared_props, {"process": "background scan"}, {"process": "admission review"},
                       {"process": "background scan", "cel.validationIndex": "0"},
                       {"process": "background scan", "cel.validationIndex": "1"}, {},
                       {"process": "background scan", "x": ["not", "hashable"]}],
        "validation_actions": [(), ("Audit",), ("Deny", "Audit")],
        "location": sources, "policy_location": sources,
    }
    base = {k: v[0] for k, v in choices.items()}
    results = [Result(**base)]
    for field, values in choices.items():        # one field changed at a time
        results += [Result(**{**base, field: v}) for v in values[1:]]
    for _ in range(300):                         # and mixtures
        results.append(Result(**{k: rng.choice(v) for k, v in choices.items()}))
    results += list(itertools.islice(itertools.cycle(results), 50))     # the same results again
    merged = []
    for joined in _ResultsParts(results):
        whole: dict[str, object] = {}
        for part in joined:
            assert not set(part) & set(whole)
            whole.update(part)
        merged.append(whole)
    expected = [dict(entry) for entry in _ResultsJson(results)]
    assert [list(m) for m in merged] == [list(e) for e in expected]      # the key order too
    assert merged == expected
