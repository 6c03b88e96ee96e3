"""Issue 36's results stream for the table: a run whose only output is the table on stdout hands its results
to the table as they are decided and keeps none of them; the bytes and the exit code are those of the table
made from every result (`-o table=FILE`, which still reads the whole run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import kubectl_kyrec.cli.eval_cmd  # noqa: F401 - the command module whose run_eval the spy wraps
from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.render import eval_output

ROOT = Path(__file__).resolve().parents[2]
T = ROOT / "testdata"
NOW = ["--now", "2026-01-02T03:04:05Z"]

CASES = {
    "vpol-errors": ["-p", str(T / "eval/runtime-errors/policies.yaml"),
                    "-r", str(T / "eval/runtime-errors/resources.yaml")],
    "match-rules": ["-p", str(T / "eval/match-rules/policies.yaml"), "-r", str(T / "eval/match-rules/resources.yaml")],
    "examples": ["-p", str(T / "examples/policies"), "-r", str(T / "examples/resources")],
    "classic-rules": ["-p", str(T / "classic/manifests/policies.yaml"),
                      "-r", str(T / "classic/manifests/resources.yaml")],
    "mutating-chain": ["-p", str(T / "mutating/chain/policy.yaml"), "-r", str(T / "mutating/chain/resource.yaml")],
    "generating": ["-p", str(T / "generating/clone-owner-references/policy.yaml"),
                   "-r", str(T / "generating/clone-owner-references/resources.yaml"),
                   "--state", str(T / "generating/clone-owner-references/state.yaml")],
    "old": ["-p", str(T / "admission/old/policy.yaml"), "-r", str(T / "admission/old/after"),
            "--old", str(T / "admission/old/before")],
}
FLAGS = {"default": [], "show-all": ["--show-all"], "fail-on-warn": ["--fail-on", "warn"]}


@pytest.mark.parametrize("spill", [None, 1], ids=["held", "spilled-one-by-one"])
@pytest.mark.parametrize("flags", FLAGS.values(), ids=list(FLAGS))
@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_the_streamed_table_is_the_whole_runs_table(case: list[str], flags: list[str], spill: int | None,
                                                    tmp_path: Path, kept: list[Any],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # on a pipe the listed rows are kept as text and, SPILL_ROWS at a time, sorted into a temporary file,
    # then merged back as the table is written: 1 makes every row a run
    spilled: list[int] = []
    if spill is not None:
        monkeypatch.setattr(eval_output, "SPILL_ROWS", spill)
        real = eval_output.TableTally._spill_rows

        def counted(self: eval_output.TableTally) -> None:
            spilled.append(len(self._rows))
            real(self)

        monkeypatch.setattr(eval_output.TableTally, "_spill_rows", counted)
    streamed = streamed_table_is_the_files(["eval", *case, *flags, *NOW], tmp_path)
    # every listed row went to the file as a run of its own, merged back in order (as a large run's runs)
    if spill is not None and "No result fails, errs or warns." not in streamed.stdout:
        assert spilled and set(spilled) == {1}
    # the streamed run kept no result (but a GeneratingPolicy's for the reports, from its downstream outcomes);
    # the one written to a file kept every one
    first, second = kept
    from kubectl_kyrec.expect.report_scope import generating_pairs

    assert first.results == [] and list(first.report_pairs) == generating_pairs(first.generated)
    assert second.results


@pytest.mark.parametrize("spill", [None, 1], ids=["runs-of-50000", "spilled-one-by-one"])
@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_the_streamed_wide_table_is_the_whole_runs(case: list[str], spill: int | None, tmp_path: Path,
                                                   kept: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # -o wide lists every result and is never fitted: its rows are spilled wherever it goes (`-o wide=FILE`
    # still reads the whole run)
    if spill is not None:
        monkeypatch.setattr(eval_output, "SPILL_ROWS", spill)
    streamed = CliRunner().invoke(cli, ["eval", *case, *NOW, "-o", "wide"])
    target = tmp_path / "wide.txt"
    whole = CliRunner().invoke(cli, ["eval", *case, *NOW, "-o", f"wide={target}"])
    assert streamed.exit_code == whole.exit_code, streamed.stderr
    assert streamed.exit_code in (0, 1, 3), streamed.stderr
    assert streamed.stdout == target.read_text()
    assert "ACTIONS" in streamed.stdout or "No policy matched" in streamed.stdout
    first, second = kept
    assert first.results == [] and second.results


def test_a_failing_result_handed_on_still_fails_the_run(kept: list[Any]) -> None:
    # the exit code is counted on the way: none of the results is there to count afterwards
    case = CASES["vpol-errors"]
    result = CliRunner().invoke(cli, ["eval", *case, *NOW])
    assert result.exit_code == 1, result.stderr
    assert kept[0].results == []
    assert "fail" in result.stdout


def test_rows_spilled_in_runs_merge_in_the_order_of_one_stable_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    # equal sort keys (one policy, one subject, several rules) keep the order they came in, across runs
    from kubectl_kyrec.model import Ref, Result

    monkeypatch.setattr(eval_output, "SPILL_ROWS", 4)
    pod = Ref("v1", "Pod", "ns", "web", "u1")
    results = [Result(f"p{i % 3}", "kyverno", f"rule-{i}", ("fail", "error", "warn")[i % 2], f"m{i}", pod)
               for i in range(23)]
    tally = eval_output.TableTally(spill=True)
    for start in range(0, len(results), 5):
        tally.add(results[start:start + 5])
    merged = [row[3] for row in tally.spilled_rows()]
    tally.close()
    assert merged == [r.rule for r in sorted(results, key=eval_output._sort_key)]
    assert tally.listed == 23 and tally.count == 23


@pytest.mark.parametrize("extra", [["-o", "json", "--write-baseline", "b.json"], ["-o", "wide=x.txt"],
                                   ["-o", "table", "-o", "wide=x.txt"]],
                         ids=["json+write-baseline", "wide-file", "table+wide"])
def test_other_outputs_read_the_whole_run(extra: list[str], kept: list[Any], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    CliRunner().invoke(cli, ["eval", *CASES["examples"], *NOW, *extra])
    assert kept[0].results


@pytest.mark.parametrize("output", ["table", "wide"])
def test_spilled_rows_of_two_policies_of_one_name_keep_their_labels(output: str, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # a ClusterPolicy and a ValidatingPolicy of one name: the spilled table relabels the second
    # (`ValidatingPolicy/NAME`) by its own path; without such a pair the cells are picked by C-level calls
    from tests.ci.test_same_name import CEL, CLASSIC, POD

    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "classic.yaml").write_text(CLASSIC)
    (tmp_path / "policies" / "cel.yaml").write_text(CEL)
    (tmp_path / "pod.yaml").write_text(POD)
    case = ["eval", "-p", str(tmp_path / "policies"), "-r", str(tmp_path / "pod.yaml"), *NOW]
    monkeypatch.setattr(eval_output, "SPILL_ROWS", 1)
    streamed = CliRunner().invoke(cli, [*case, *(("-o", "wide") if output == "wide" else ())])
    target = tmp_path / "table.txt"
    whole = CliRunner().invoke(cli, [*case, "-o", f"{output}={target}"])
    assert streamed.exit_code == whole.exit_code == 1, streamed.stderr
    assert streamed.stdout == target.read_text()
    rows = streamed.stdout.splitlines()
    assert any(line.startswith("require-team ") for line in rows)
    assert any(line.startswith("ValidatingPolicy/require-team ") for line in rows)


def test_rows_without_lines_under_them_are_the_lines_one_at_a_time() -> None:
    # write_rows makes the lines of rows with nothing under them by C-level calls, a block at a time: the same
    # text as the rows with lines under them (empty ones) gives, trailing spaces stripped, the last column unpadded
    import io

    from kubectl_kyrec.render.text_table import write_rows

    rows = [("a", "bb", ""), ("ccc", "", "x y  "), ("", "d", "e")] * 3
    fast, slow = io.StringIO(), io.StringIO()
    write_rows(fast, ("H1", "H2", "H3"), rows, chunk=2)
    write_rows(slow, ("H1", "H2", "H3"), rows, chunk=2, below=[""] * len(rows))
    assert fast.getvalue() == slow.getvalue()
    assert fast.getvalue().splitlines()[:3] == ["H1   H2  H3", "a    bb", "ccc      x y"]


def streamed_table_is_the_files(args: list[str], tmp_path: Path, output: str = "table") -> Any:
    """`args` with the table (or -o wide) on stdout, streamed, and written to a file: the same text and exit."""
    streamed = CliRunner().invoke(cli, [*args, *(["-o", "wide"] if output == "wide" else [])])
    target = tmp_path / f"{output}.txt"
    whole = CliRunner().invoke(cli, [*args, "-o", f"{output}={target}"])
    assert streamed.exit_code == whole.exit_code, streamed.stderr
    assert streamed.exit_code in (0, 1, 3), streamed.stderr
    assert streamed.stdout == target.read_text()
    assert streamed.stdout.strip()
    return streamed
