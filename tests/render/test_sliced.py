"""Long sequences written by two processes (render/sliced.py): the text is what one process writes."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
import yaml

import kubectl_kyrec.render.sliced as sliced
from kubectl_kyrec.evaluate.fan_out import can_fork
from kubectl_kyrec.render.envelope import write_json_document, write_yaml_document
from kubectl_kyrec.render.sliced import Sliced, write_in_halves


@pytest.fixture(autouse=True)
def _forkable() -> None:
    # decided when each test runs: a thread an earlier test left running makes forking unsafe
    if not can_fork():
        pytest.skip("no fork here: not Linux, or other threads run in this process")

# shared nested values (as a subject's ref is under each of its results), non-ASCII text that a 7-byte copy
# buffer cuts inside a character, multi-line strings
SHARED = {"kind": "Pod", "name": "é-ü-日本"}
ITEMS = [{"n": i, "subject": SHARED, "message": "line\nnext" if i % 7 == 0 else f"naïve {i}", "tags": ["a", "ß"]}
         for i in range(101)]


@pytest.fixture(autouse=True)
def _small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sliced, "PARALLEL_ITEMS", 10)
    monkeypatch.setattr(sliced, "_COPY", 7)


def _parts(jobs: int) -> list[tuple[str, Any]]:
    return [("results", Sliced(len(ITEMS), lambda a, b: iter(ITEMS[a:b]), jobs=jobs, shared=True)),
            ("empty", Sliced(0, lambda a, b: iter(()), jobs=jobs)),
            ("summary", {"count": len(ITEMS)})]


@pytest.mark.parametrize("writer", [write_json_document, write_yaml_document], ids=["json", "yaml"])
def test_two_processes_write_the_text_one_writes(writer: Any) -> None:
    alone: list[str] = []
    split: list[str] = []
    writer("Test", _parts(1), alone.append)
    writer("Test", _parts(2), split.append)
    assert "".join(split) == "".join(alone)
    doc = json.loads("".join(split)) if writer is write_json_document else yaml.safe_load("".join(split))
    assert doc["results"] == ITEMS and doc["empty"] == []


def test_a_sequence_below_the_threshold_stays_in_this_process() -> None:
    assert Sliced(9, lambda a, b: [], jobs=2).split() is False
    assert Sliced(10, lambda a, b: [], jobs=2).split() is True
    assert Sliced(10_000, lambda a, b: [], jobs=1).split() is False


def _lines(items: Any, write: Any) -> int:
    count = 0
    for item in items:
        if item == 77 and (os.getpid() != PARENT[0] or FAIL_HERE[0]):
            raise RuntimeError("cannot render item 77")
        write(f"{item}\n")
        count += 1
    return count


PARENT = [0]
FAIL_HERE = [False]


def test_what_the_worker_could_not_write_is_written_here() -> None:
    # a worker that fails (a full temporary directory, say) costs time, not text
    PARENT[0], FAIL_HERE[0] = os.getpid(), False
    out: list[str] = []
    assert write_in_halves(Sliced(100, lambda a, b: range(a, b), jobs=2), _lines, out.append, "--\n") == 100
    assert "".join(out) == "".join(f"{i}\n" for i in range(50)) + "--\n" + "".join(f"{i}\n" for i in range(50, 100))


def test_an_item_that_cannot_be_written_is_an_error_not_a_shorter_text() -> None:
    PARENT[0], FAIL_HERE[0] = os.getpid(), True
    with pytest.raises(RuntimeError, match="cannot render item 77"):
        write_in_halves(Sliced(100, lambda a, b: range(a, b), jobs=2), _lines, [].append, "")


def test_junit_and_sarif_in_two_processes_are_the_text_of_one() -> None:
    import io

    from kubectl_kyrec.render import junit, sarif
    from tests.ci.findings_support import finding

    outcomes = ["fail", "pass", "error", "warn", "skip", "undetermined"]
    findings = [finding(f"app-{i}", outcome=outcomes[i % 6], policy=f"policy-{i % 4}", line=i,
                        message=f"naïve <{i}> & \"quoted\"", baselined=i % 11 == 0) for i in range(97)]
    for module, kwargs in ((junit, {"name": "kyrec eval"}), (sarif, {"baseline_used": True})):
        texts = []
        for jobs in (1, 2):
            out = io.StringIO()
            module.write(findings, out, jobs=jobs, chunk=5, **kwargs)      # type: ignore[attr-defined]
            texts.append(out.getvalue())
        assert texts[0] == texts[1]
        assert texts[0].count("app-96") >= 1


@pytest.mark.parametrize("target", ["file", "bytes"])
def test_the_workers_text_is_copied_as_bytes_into_a_utf8_stream(target: str, tmp_path: Any) -> None:
    # a file: os.sendfile; a stream without a descriptor: its buffer is written; both after what was written
    import io

    alone: list[str] = []
    write_yaml_document("Test", _parts(1), alone.append)
    if target == "file":
        path = tmp_path / "out.yaml"
        with path.open("w", encoding="utf-8", newline="") as stream:
            stream.write("# before\n")
            write_yaml_document("Test", _parts(2), stream.write)
            stream.write("# after\n")
        got = path.read_text(encoding="utf-8")
    else:
        raw = io.BytesIO()
        stream = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        stream.write("# before\n")
        write_yaml_document("Test", _parts(2), stream.write)
        stream.write("# after\n")
        stream.flush()
        got = raw.getvalue().decode("utf-8")
    assert got == "# before\n" + "".join(alone) + "# after\n"


def test_a_failure_here_ends_the_output_worker() -> None:
    import time

    parent = os.getpid()

    def write_items(items: Any, write: Any) -> int:
        if os.getpid() != parent:
            time.sleep(60)
        raise ValueError("disk full")

    start = time.monotonic()
    with pytest.raises(ValueError, match="disk full"):
        write_in_halves(Sliced(100, lambda a, b: range(a, b), jobs=2), write_items, [].append, "")
    assert time.monotonic() - start < 30
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)
