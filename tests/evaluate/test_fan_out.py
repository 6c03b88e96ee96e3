"""Evaluation split across forked processes (evaluate/fan_out.py): the same answers, in the same order, as
one process gives; a worker's failure is an error, never a silently shorter answer."""

from __future__ import annotations

import copy
import datetime
import os
import sys
from pathlib import Path
from typing import Any, BinaryIO

import pytest

import kubectl_kyrec.evaluate.pipeline as pipeline
import kubectl_kyrec.evaluate.validating.engine as validating_engine
from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.fan_out import SliceCounts, WorkerError, can_fork, fan_out, slices
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import UNDETERMINED, Document

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc)

@pytest.fixture
def forkable() -> None:
    # decided when the test runs: a thread some earlier test left running makes forking unsafe, and
    # fan_out then (rightly) stays in one process
    if not can_fork():
        import threading
        why = "no fork here: not Linux, or other threads run in this process: " + \
            ", ".join(t.name for t in threading.enumerate())
        # on Linux under CI a thread some earlier test leaked is that test's bug: it must not skip these silently
        if sys.platform.startswith("linux") and os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)


needs_fork = pytest.mark.usefixtures("forkable")


@pytest.mark.parametrize(("count", "parts"), [(0, 2), (1, 2), (2, 2), (7, 3), (10_000, 2), (10_000, 8), (5, 8)])
def test_slices_cover_every_item_once_in_order(count: int, parts: int) -> None:
    got = slices(count, parts)
    assert [i for r in got for i in r] == list(range(count))
    assert len(got) == max(1, min(parts, count))
    if len(got) > 1:
        # this process takes the first and a little more than the others (it does not encode)
        assert all(len(got[0]) >= len(r) for r in got[1:])
        assert max(len(r) for r in got[1:]) - min(len(r) for r in got[1:]) <= 1


def _squares_with_pids(items: Any) -> list[tuple[int, int]]:
    return [(i * i, os.getpid()) for i in items]


def _encode(answer: list[tuple[int, int]]) -> bytes:
    return repr(answer).encode()


def _decode(file: BinaryIO) -> list[tuple[int, int]]:
    import ast

    return list(ast.literal_eval(file.read().decode()))


@needs_fork
def test_workers_answer_in_slice_order_from_other_processes() -> None:
    answers = fan_out(list(range(101)), _squares_with_pids, jobs=3, encode=_encode, decode=_decode)
    assert len(answers) == 3
    assert [v for part in answers for v, _ in part] == [i * i for i in range(101)]
    pids = [{pid for _, pid in part} for part in answers]
    assert pids[0] == {os.getpid()}
    assert len(pids[1]) == 1 and len(pids[2]) == 1
    assert len(pids[0] | pids[1] | pids[2]) == 3          # three processes did the work


def _squares_alive(items: Any) -> list[tuple[int, int, int]]:
    # with how many evaluation workers were alive beside this one (this process's children count
    # themselves: a worker's siblings are the parent's other children)
    parent = os.getppid()
    with open(f"/proc/{parent}/task/{parent}/children") as fh:
        alive = len(fh.read().split())
    return [(i * i, os.getpid(), alive) for i in items]


def _encode3(answer: list[tuple[int, int, int]]) -> bytes:
    return repr(answer).encode()


@needs_fork
def test_slice_max_bounds_each_worker_and_keeps_jobs_processes_at_a_time() -> None:
    # issue 36: what a worker never frees grows with its slice; with slice_max the slices are many, each
    # worker ends after its own, the next starts as an answer is read: `jobs` of them at a time at most
    if not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"):
        pytest.skip("no /proc/PID/task/TID/children here")
    got: list[list[tuple[int, int, int]]] = []
    answers = fan_out(list(range(100)), _squares_alive, jobs=2, encode=_encode3, decode=_decode, here=False,
                      slice_max=9, consume=got.append)
    assert answers == []
    assert len(got) == 12 and all(len(part) <= 9 for part in got)
    assert [v for part in got for v, _, _ in part] == [i * i for i in range(100)]
    pids = [{pid for _, pid, _ in part} for part in got]
    assert all(len(p) == 1 for p in pids) and len(set().union(*pids)) == 12
    assert os.getpid() not in set().union(*pids)
    assert max(alive for part in got for _, _, alive in part) <= 2


def test_one_job_runs_in_this_process() -> None:
    answers = fan_out(list(range(5)), _squares_with_pids, jobs=1, encode=_encode, decode=_decode)
    assert answers == [[(i * i, os.getpid()) for i in range(5)]]


def _fails_outside_the_parent(parent: int) -> Any:
    def work(items: Any) -> list[tuple[int, int]]:
        if os.getpid() != parent:
            raise ValueError("cannot evaluate item 7")
        return _squares_with_pids(items)
    return work


@needs_fork
def test_a_worker_exception_is_an_error_naming_it() -> None:
    with pytest.raises(WorkerError, match="ValueError: cannot evaluate item 7"):
        fan_out(list(range(10)), _fails_outside_the_parent(os.getpid()), jobs=2, encode=_encode, decode=_decode)


@needs_fork
def test_a_worker_that_dies_is_an_error() -> None:
    parent = os.getpid()

    def work(items: Any) -> list[tuple[int, int]]:
        if os.getpid() != parent:
            os._exit(9)
        return _squares_with_pids(items)

    with pytest.raises(WorkerError, match="ended without an answer .exit code 9"):
        fan_out(list(range(10)), work, jobs=2, encode=_encode, decode=_decode)


@needs_fork
def test_this_process_hears_how_far_the_workers_are_while_it_works() -> None:
    # each worker says it is halfway, then waits until this process has heard it (a file it creates),
    # bounded: the assertion is on what was heard, not on how long anything took
    import tempfile
    import time

    parent = os.getpid()
    counts = SliceCounts()
    heard: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        flag = Path(tmp) / "heard"

        def work(items: Any) -> list[tuple[int, int]]:
            if os.getpid() != parent:
                counts.advance(len(items) // 2)
                deadline = time.monotonic() + 30
                while not flag.exists() and time.monotonic() < deadline:
                    time.sleep(0.01)
                return _squares_with_pids(items)
            deadline = time.monotonic() + 30
            while len(heard) < 2 * 10 and time.monotonic() < deadline:      # two workers, 10 of 20 each
                heard.extend(counts.news())
                time.sleep(0.01)
            flag.touch()
            return _squares_with_pids(items)

        answers = fan_out(list(range(63)), work, jobs=3, encode=_encode, decode=_decode, counts=counts)
    parts = counts.parts
    assert parts == slices(63, 3) and [len(p) for p in parts[1:]] == [20, 20]
    # the first half of each worker's slice, told while this process was working, each index once
    assert sorted(heard) == [*range(parts[1].start, parts[1].start + 10), *range(parts[2].start, parts[2].start + 10)]
    # then the rest, once the workers have answered
    assert sorted(counts.news(final=True)) == [*range(parts[1].start + 10, parts[1].stop),
                                               *range(parts[2].start + 10, parts[2].stop)]
    assert list(counts.news(final=True)) == []
    assert [v for part in answers for v, _ in part] == [i * i for i in range(63)]


@needs_fork
def test_no_worker_to_be_had_leaves_nothing_to_tell(monkeypatch: pytest.MonkeyPatch) -> None:
    # every item evaluated here after all: the progress line has already counted each, none is told again
    import kubectl_kyrec.evaluate.fan_out as fan_out_module

    def no_worker(*args: Any, **kwargs: Any) -> Any:
        raise OSError("no temporary file")

    monkeypatch.setattr(fan_out_module, "FileWorker", no_worker)
    counts = SliceCounts()
    answers = fan_out(list(range(30)), _squares_with_pids, jobs=3, encode=_encode, decode=_decode, counts=counts)
    assert answers == [[(i * i, os.getpid()) for i in range(30)]]
    assert list(counts.news()) == [] and list(counts.news(final=True)) == []


def test_slice_counts_tell_nothing_for_a_run_in_one_process() -> None:
    counts = SliceCounts()
    fan_out(list(range(5)), _squares_with_pids, jobs=1, encode=_encode, decode=_decode, counts=counts)
    counts.advance(3)
    assert list(counts.news()) == [] and list(counts.news(final=True)) == []


# ---- the pipeline: two processes give what one gives ---------------------------------------------------------

_VERIFY_IMAGES = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: verify-signed}
spec:
  background: true
  validationFailureAction: Enforce    # an Audit policy patching digests (the default) is refused
  rules:
    - name: check-signature
      match: {any: [{resources: {kinds: [Pod]}}]}
      verifyImages:
        - imageReferences: ["*"]
          attestors: [{entries: [{keys: {publicKeys: "-----BEGIN PUBLIC KEY-----"}}]}]
"""


@pytest.fixture
def sliced(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many slices each evaluation of the pipeline was split into, one entry per run."""
    counts: list[int] = []

    def counting_fan_out(*args: Any, **kwargs: Any) -> Any:
        consume = kwargs["consume"]         # the pipeline takes each slice's answer as it is read
        given: list[int] = []

        def counted(answer: Any) -> None:
            given.append(1)
            consume(answer)

        answers = fan_out(*args, **{**kwargs, "consume": counted})
        counts.append(len(given))
        return answers

    monkeypatch.setattr(pipeline, "fan_out", counting_fan_out)
    return counts


def _many(resources: list[Document], copies: int) -> list[Document]:
    """`copies` renamed copies of each resource, each with a uid of its own."""
    out = []
    for n in range(copies):
        for i, doc in enumerate(resources):
            obj = copy.deepcopy(doc.obj)
            meta = obj.setdefault("metadata", {})
            meta["name"] = f"{meta.get('name', 'x')}-{n}"
            meta["uid"] = f"00000000-0000-4000-8000-{n * 100 + i:012d}"
            out.append(Document(obj, doc.source))
    return out


def _evaluate(policies: Any, resources: list[Document], jobs: int) -> Any:
    return run_eval(policies, resources, resources, kinds=KindTable(),
                    libraries=library_factory(LibraryContext(now=NOW, provider=EmptyProvider())),
                    options=EvalOptions(now=NOW, jobs=jobs))


@needs_fork
def test_the_pipeline_gives_the_same_results_and_notices_in_two_processes(tmp_path: Path, sliced: list[int],
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "verify.yaml").write_text(_VERIFY_IMAGES)
    policy_paths = [ROOT / "testdata/examples/policies", ROOT / "testdata/eval/runtime-errors/policies.yaml",
                    ROOT / "testdata/classic/validate/policies.yaml", tmp_path / "verify.yaml"]
    policies = classify(load_documents([str(p) for p in policy_paths])).raise_errors()
    resources = _many(load_documents([str(ROOT / "testdata/examples/resources"),
                                      str(ROOT / "testdata/eval/runtime-errors/resources.yaml"),
                                      str(ROOT / "testdata/classic/validate/resources.yaml")]), 40)
    monkeypatch.setattr(pipeline, "PARALLEL_PAIRS", 1)
    alone = _evaluate(policies, resources, jobs=1)
    split = _evaluate(policies, resources, jobs=2)
    assert sliced == [1, 2]
    assert len(alone.results) > 400
    assert {r.result for r in alone.results} >= {"pass", "fail", "error"}
    assert split.results == alone.results
    assert [ok for _, ok in split.pairs] == [ok for _, ok in alone.pairs]
    assert split.subjects == alone.subjects
    assert [str(n) for n in split.notices] == [str(n) for n in alone.notices]
    # the verifyImages rule and its autogen rule need a registry: undetermined in both processes, never reported
    verified = [(r.rule, r.result, ok) for r, ok in split.pairs if r.policy == "verify-signed"]
    assert {rule for rule, _, _ in verified} == {"check-signature", "autogen-check-signature"}
    assert all(result == UNDETERMINED and not ok for _, result, ok in verified)
    # the results name the subjects' own refs and locations, as one process's do
    refs = {id(s.ref) for s in split.subjects}
    assert all(id(r.subject) in refs for r in split.results)


@needs_fork
def test_every_subject_is_ticked_once_in_two_processes(sliced: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    # the progress line's ticks: each subject once, whichever process evaluated it (the workers' through
    # SliceCounts, while they work or when they answer)
    policies = classify(load_documents([str(ROOT / "testdata/examples/policies")])).raise_errors()
    resources = _many(load_documents([str(ROOT / "testdata/examples/resources")]), 60)
    monkeypatch.setattr(pipeline, "PARALLEL_PAIRS", 1)
    ticked: list[int] = []
    out = run_eval(policies, resources, resources, kinds=KindTable(),
                   libraries=library_factory(LibraryContext(now=NOW, provider=EmptyProvider())),
                   options=EvalOptions(now=NOW, jobs=2), on_subject=lambda s: ticked.append(id(s)))
    assert sliced == [2]
    assert len(out.subjects) > 150
    assert sorted(ticked) == sorted(id(s) for s in out.subjects)


@needs_fork
def test_small_runs_stay_in_one_process(sliced: list[int]) -> None:
    policies = classify(load_documents([str(ROOT / "testdata/examples/policies")])).raise_errors()
    resources = load_documents([str(ROOT / "testdata/examples/resources")])
    _evaluate(policies, resources, jobs=8)
    assert sliced == [1]


@needs_fork
def test_a_failure_here_ends_the_workers_instead_of_waiting_for_them() -> None:
    import time

    parent = os.getpid()

    def work(items: Any) -> list[tuple[int, int]]:
        if os.getpid() != parent:
            time.sleep(60)          # a worker with a long way to go
            return []
        raise KeyboardInterrupt     # as Ctrl-C sent to this process alone

    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        fan_out(list(range(10)), work, jobs=3, encode=_encode, decode=_decode)
    assert time.monotonic() - start < 30        # the workers were ended, not waited out
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)              # and reaped: no child of this process is left


@needs_fork
def test_workers_alone_work_every_slice_and_this_process_hears_them_while_waiting() -> None:
    # `here=False`: this process only waits (what the pipeline asks for, so that memory the CEL engine never
    # frees dies with the workers); it is told how far they are while it waits, not only at the end
    import tempfile
    import time

    parent = os.getpid()
    counts = SliceCounts()
    heard: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        flag = Path(tmp) / "heard"

        def work(items: Any) -> list[tuple[int, int]]:
            counts.advance(len(items) // 2)
            deadline = time.monotonic() + 30
            while not flag.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            return _squares_with_pids(items)

        def waiting() -> None:
            heard.extend(counts.news())
            if len(heard) == 2 * 5:         # two workers, 5 of 10 each
                flag.touch()

        answers = fan_out(list(range(20)), work, jobs=2, encode=_encode, decode=_decode, counts=counts,
                          here=False, waiting=waiting)
    assert [v for part in answers for v, _ in part] == [i * i for i in range(20)]
    pids = [{pid for _, pid in part} for part in answers]
    assert len(pids) == 2 and all(len(p) == 1 for p in pids) and len(pids[0] | pids[1]) == 2
    assert parent not in pids[0] | pids[1]
    assert sorted(heard) == [*range(0, 5), *range(10, 15)]
    assert sorted(counts.news(final=True)) == [*range(5, 10), *range(15, 20)]


@needs_fork
def test_the_pipeline_evaluates_nothing_in_this_process_with_workers(tmp_path: Path, sliced: list[int],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # cel-expr-python never frees the values it hands to Python-implemented CEL functions (image(),
    # resource.Get...): evaluated in workers only, that memory never grows this process
    policies = classify(load_documents([str(ROOT / "testdata/examples/policies")])).raise_errors()
    resources = _many(load_documents([str(ROOT / "testdata/examples/resources")]), 30)
    monkeypatch.setattr(pipeline, "PARALLEL_PAIRS", 1)
    log = tmp_path / "pids"
    # what eval's loop calls for each (subject, variant) (pipeline.evaluate_policies)
    evaluate = validating_engine.evaluate_variant

    def logged(*args: Any, **kwargs: Any) -> Any:
        with log.open("a") as fh:
            fh.write(f"{os.getpid()}\n")
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(validating_engine, "evaluate_variant", logged)
    alone = _evaluate(policies, resources, jobs=1)
    log.unlink()
    split = _evaluate(policies, resources, jobs=2)
    assert sliced == [1, 2]
    assert split.results == alone.results
    pids = set(log.read_text().split())
    assert len(pids) == 2 and str(os.getpid()) not in pids


@needs_fork
def test_a_workers_answer_read_in_records_shares_what_the_worker_shared(sliced: list[int],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # a worker's results come back in records of pipeline._CHUNK (this process never holds the whole
    # answer): here of 5, so that every policy's results span many records, and still one properties
    # mapping and one message object per distinct value, as evaluating here would share them
    policies = classify(load_documents([str(ROOT / "testdata/examples/policies")])).raise_errors()
    resources = _many(load_documents([str(ROOT / "testdata/examples/resources")]), 30)
    monkeypatch.setattr(pipeline, "PARALLEL_PAIRS", 1)
    monkeypatch.setattr(pipeline, "_CHUNK", 5)
    alone = _evaluate(policies, resources, jobs=1)
    split = _evaluate(policies, resources, jobs=2)
    assert sliced == [1, 2]
    assert len(split.results) > 20 * 5
    assert split.results == alone.results
    assert [ok for _, ok in split.pairs] == [ok for _, ok in alone.pairs]
    for policy in {r.policy for r in split.results}:
        mine = [r for r in split.results if r.policy == policy]
        assert len({id(r.properties) for r in mine}) == len({tuple(r.properties.items()) for r in mine})
        assert len({id(r.message) for r in mine}) == len({r.message for r in mine})
    refs = {id(s.ref) for s in split.subjects}
    assert all(id(r.subject) in refs for r in split.results)


@needs_fork
@pytest.mark.parametrize("jobs", [1, 2])
def test_the_pipeline_hands_its_results_on_a_chunk_at_a_time_and_keeps_none(
        jobs: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 36's results stream: a consumer gets the results in order, a chunk of whole subjects at a time,
    # as each slice (or a worker's record) is read; the outcome keeps none of them
    policies = classify(load_documents([str(ROOT / "testdata/examples/policies")])).raise_errors()
    resources = _many(load_documents([str(ROOT / "testdata/examples/resources")]), 60)
    monkeypatch.setattr(pipeline, "PARALLEL_PAIRS", 1)
    whole = _evaluate(policies, resources, jobs=jobs)
    monkeypatch.setattr(pipeline, "_CHUNK", 50)
    chunks: list[Any] = []
    out = run_eval(policies, resources, resources, kinds=KindTable(),
                   libraries=library_factory(LibraryContext(now=NOW, provider=EmptyProvider())),
                   options=EvalOptions(now=NOW, jobs=jobs), on_results=chunks.append)
    assert out.results == [] and len(out.pairs) == 0
    assert len(chunks) > len(whole.results) // 100
    assert [r for chunk in chunks for r in chunk.results] == whole.results
    assert [ok for chunk in chunks for _, ok in chunk] == [ok for _, ok in whole.pairs]
    # a chunk ends with a subject: no subject's results are split between two chunks
    ends = [(chunk.results[0].subject, chunk.results[-1].subject) for chunk in chunks]
    assert all(last is not first for (_, last), (first, _) in zip(ends, ends[1:]))
