"""Issue 36, the serial tail of `eval --state`'s table: the spilled runs are merged a block at a time by
C-level sorts (render/eval_output.py `_merged`), not row by row. The rows come out in the order of one
stable sort of them all: ties in the sort key (one subject, one policy, several rules) keep the order they
came in, across runs and across the records a run is read back in; and the table is the whole run's."""

from __future__ import annotations

import random
from itertools import chain
from pathlib import Path
from typing import Any

import pytest

from kubectl_kyrec.render import eval_output
from tests.consistency.test_results_stream_table import streamed_table_is_the_files

ROOT = Path(__file__).resolve().parents[2]
T = ROOT / "testdata"
NOW = ["--now", "2026-01-02T03:04:05Z"]


def _runs(seed: int) -> tuple[list[list[list[tuple[Any, ...]]]], list[tuple[Any, ...]]]:
    """Sorted runs cut in records (some empty, some all one key), and every row in the order they came."""
    rnd = random.Random(seed)
    runs, came = [], []
    for _ in range(rnd.randint(0, 6)):
        # few distinct keys: many ties, within a record and across records and runs
        key = eval_output._key_prefix
        rows = [(key(rnd.randint(0, 2), rnd.choice("ab"), "Pod", rnd.choice("xy")) + rnd.choice("mn"), len(came) + n)
                for n in range(rnd.randint(0, 40))]
        came += rows
        rows.sort(key=eval_output._SPILLED_KEY)
        size = rnd.randint(1, 5)
        records = [rows[at:at + size] for at in range(0, len(rows), size)]
        if rnd.random() < 0.3:
            records.insert(rnd.randint(0, len(records)), [])
        runs.append(records)
    return runs, came


@pytest.mark.parametrize("seed", range(300))
def test_merged_runs_are_one_stable_sort_of_every_row(seed: int) -> None:
    runs, came = _runs(seed)
    merged = list(chain.from_iterable(eval_output._merged([iter(records) for records in runs])))
    # the rows' last field is the order they came in: a tie broken any other way shows
    assert merged == sorted(came, key=eval_output._SPILLED_KEY)


def test_a_run_whose_records_are_all_one_key_is_read_on_until_it_passes_it() -> None:
    # the first run's first two records are all the smallest key: the rows of that key in the second run
    # come after all of them, and the third record's row after those
    prefix = eval_output._key_prefix(1, "p", "Pod", "ns")
    first = [[(prefix + "a", 0)] * 2, [(prefix + "a", 1)] * 2, [(prefix + "b", 2)]]
    second = [[(prefix + "a", 3), (prefix + "c", 4)]]
    merged = list(chain.from_iterable(eval_output._merged([iter(first), iter(second)])))
    assert [row[1] for row in merged] == [0, 0, 1, 1, 3, 2, 4]


# fields where a string order could differ from a tuple's: one the start of another, NULs and the bytes
# just above NUL, the separators' own, characters beyond Latin-1
FIELDS = ["", "a", "ab", "a\0", "a\0b", "a\1", "a\0\1", "a\0\0", "\0", "\1", "b", "é", "日本", "a-b", "a.b"]


@pytest.mark.parametrize("seed", range(20))
def test_the_sort_key_string_orders_as_the_tuple_of_its_fields(seed: int) -> None:
    rnd = random.Random(seed)
    fields = [(rnd.choice([0, 1, 2, 3, 5, 9]), *(rnd.choice(FIELDS) for _ in range(4))) for _ in range(400)]
    by_string = sorted(fields, key=lambda f: eval_output._key_prefix(*f[:4]) + f[4])
    assert by_string == sorted(fields)


CASES = {
    # several rules of one ClusterPolicy fail on one subject: ties in the sort key
    "classic-rules": ["-p", str(T / "classic/manifests/policies.yaml"),
                      "-r", str(T / "classic/manifests/resources.yaml")],
    "vpol-errors": ["-p", str(T / "eval/runtime-errors/policies.yaml"),
                    "-r", str(T / "eval/runtime-errors/resources.yaml")],
    "examples": ["-p", str(T / "examples/policies"), "-r", str(T / "examples/resources")],
}
FLAGS = {"default": [], "show-all": ["--show-all"], "kind-pod": ["--kind", "Pod"],
         "fail-on-warn": ["--fail-on", "warn"]}


@pytest.mark.parametrize("record", [1, 2, 1000])
@pytest.mark.parametrize("spill", [1, 3])
@pytest.mark.parametrize("flags", FLAGS.values(), ids=list(FLAGS))
@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
@pytest.mark.parametrize("output", ["table", "wide"])
def test_runs_read_back_in_records_merge_to_the_whole_runs_table(output: str, case: list[str], flags: list[str],
                                                                 spill: int, record: int, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # many runs (SPILL_ROWS rows each), each read back a record of `record` rows at a time
    monkeypatch.setattr(eval_output, "SPILL_ROWS", spill)
    monkeypatch.setattr(eval_output, "_SPILL_RECORD", record)
    streamed_table_is_the_files(["eval", *case, *flags, *NOW], tmp_path, output)


@pytest.mark.parametrize("output", ["table", "wide"])
def test_labelled_policies_merged_from_many_runs(output: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a ClusterPolicy and a ValidatingPolicy of one name: the second relabelled, its rows merged from runs of 1
    from tests.ci.test_same_name import CEL, CLASSIC, POD

    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "classic.yaml").write_text(CLASSIC)
    (tmp_path / "policies" / "cel.yaml").write_text(CEL)
    (tmp_path / "pod.yaml").write_text(POD)
    monkeypatch.setattr(eval_output, "SPILL_ROWS", 1)
    monkeypatch.setattr(eval_output, "_SPILL_RECORD", 1)
    case = ["eval", "-p", str(tmp_path / "policies"), "-r", str(tmp_path / "pod.yaml"), *NOW]
    streamed = streamed_table_is_the_files(case, tmp_path, output)
    assert streamed.exit_code == 1, streamed.stderr
    assert any(line.startswith("ValidatingPolicy/require-team ") for line in streamed.stdout.splitlines())
