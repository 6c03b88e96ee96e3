"""Issue 36, the input side: eval's table reads -r as it evaluates it. The loader is consumed a worker slice at a
time (the first results reach the table before the file is read to its end), each slice's documents are
released once its results are handed on, and the table, the notices and the errors are those of the whole read
(tests/consistency/test_results_stream_table.py compares the table bytes on the testdata cases)."""

from __future__ import annotations

import gc
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import kubectl_kyrec.evaluate.pipeline as pipeline
import kubectl_kyrec.load.documents as documents
from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.load.run_inputs.sources import FileSource, _streamable
from kubectl_kyrec.load.yaml_peek import plain_stream_kinds
from kubectl_kyrec.model import Document
from kubectl_kyrec.render import eval_output

NOW = ["--now", "2026-01-02T03:04:05Z"]
POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: no-latest
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  validations:
  - expression: "object.spec.containers.all(c, !c.image.endsWith(':latest'))"
    message: no latest
"""


PREFIX = "streamed-input-"


def pod(i: int) -> str:
    image = "nginx:latest" if i % 3 == 0 else "nginx:1.27"
    # a prefix no other test's objects have: the heap is searched by name (alive_pods), and objects of earlier
    # in-process runs may still be alive in the same pytest process
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {PREFIX}{i:04d}\n  namespace: team-{i % 4}\n"
            f"spec:\n  containers:\n  - name: c\n    image: {image}\n")


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    pods = tmp_path / "pods.yaml"
    pods.write_text("---\n".join(pod(i) for i in range(60)))
    return policy, pods


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of each -r document as the loader yields it."""
    seen: list[str] = []
    real = documents.iter_manifests

    def spy(*args: Any, **kwargs: Any) -> Iterator[Document]:
        for doc in real(*args, **kwargs):
            seen.append(doc.name)
            yield doc

    monkeypatch.setattr(documents, "iter_manifests", spy)
    # slices of 10 Pods (one policy): the 60 Pods make 6 slices
    monkeypatch.setattr(pipeline, "WORKER_PAIRS", 10)
    return seen


def alive_pods() -> set[str]:
    """The names of the Pod objects alive in this process (a dict, a str or a Document cannot be referred to
    weakly: the heap is searched instead)."""
    gc.collect()
    return {o["metadata"]["name"] for o in gc.get_objects()
            if type(o) is dict and o.get("kind") == "Pod" and isinstance(o.get("metadata"), dict)
            and str(o["metadata"].get("name", "")).startswith(PREFIX)}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_loader_is_read_as_the_table_gets_results(files: tuple[Path, Path], watched: list[Any], jobs: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # the first results reach the table before the file is read to its end, and by the last slice's results
    # no object of the first slices is alive (the loader's, the subject's, admission's copy)
    loaded_at_add: list[int] = []
    alive_at_last: list[int] = []
    real_add = eval_output.TableTally.add

    def add(self: Any, results: Any) -> None:
        loaded_at_add.append(len(watched))
        alive_at_last[:] = sorted(int(name[len(PREFIX):]) for name in alive_pods())
        real_add(self, results)

    monkeypatch.setattr(eval_output.TableTally, "add", add)
    policy, pods = files
    result = CliRunner().invoke(cli, ["eval", "-p", str(policy), "-r", str(pods), "--jobs", jobs, *NOW])
    assert result.exit_code == 1, result.output
    assert "fail: 20" in result.output
    assert len(watched) == 60
    assert loaded_at_add[0] < 60, loaded_at_add
    # at most the slices in flight (a worker's, the one being read) are alive when the last results come
    assert alive_at_last and min(alive_at_last) >= 30, alive_at_last


def test_streamed_and_whole_reads_give_the_same_documents_and_notices(tmp_path: Path) -> None:
    # repeats (the first one counts) and kyrec's own output below an -r directory (passed over), in the notice
    # order of the whole read
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "a.yaml").write_text("---\n".join([pod(1), pod(2), pod(1)]))
    (manifests / "b.yaml").write_text("---\n".join([pod(2), pod(3)]))
    (manifests / "out.yaml").write_text("apiVersion: kyrec/v1\nkind: EvalResult\nresults: []\n")
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY + "---\n" + POLICY)      # a policy repeat: its notice comes first
    whole = FileSource(policy_paths=[str(policy)], resource_paths=[str(manifests)]).read()
    streamed = FileSource(policy_paths=[str(policy)], resource_paths=[str(manifests)], stream_resources=True).read()
    assert streamed.resource_stream is not None and not streamed.resources
    docs = list(streamed.resource_stream)
    assert [(d.obj, d.source) for d in docs] == [(d.obj, d.source) for d in whole.resources]
    assert [str(n) for n in streamed.notices] == [str(n) for n in whole.notices]
    assert len(whole.notices) == 4


@pytest.mark.parametrize(("text", "streams"), [
    (pod(1) + "---\n" + pod(2), True),
    ("# a header\n---\n" + pod(1) + "...\n---\n# only a comment\n", True),
    (pod(1) + "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-1\n", False),
    (pod(1) + "---\n" + POLICY, False),
    (pod(1) + "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: x\n",
     False),
    ("apiVersion: v1\nkind: List\nitems: []\n", False),
    ('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}', False),      # JSON: read whole
    ("apiVersion: v1\nkind: &k Pod\nmetadata: {name: p}\n", False),                # an anchor
    ("", False),                                                                    # nothing: the error
])
def test_what_is_streamed(tmp_path: Path, text: str, streams: bool) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(text)
    assert (_streamable([str(path)], []) is not None) is streams


def test_the_peek_reads_documents_across_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    import kubectl_kyrec.load.yaml_peek as yaml_peek

    text = ("\ufeff" + "---\n".join(pod(i) for i in range(5))).encode()
    monkeypatch.setattr(yaml_peek, "_PIECE", 7)         # a piece ends inside lines and documents
    assert plain_stream_kinds(io.BytesIO(text)) == {("v1", "Pod"): 5}
    assert plain_stream_kinds(io.BytesIO(b"\xff\xfe" + text)) is None


def test_a_bad_document_mid_stream_is_an_input_error_at_its_line(files: tuple[Path, Path],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "WORKER_PAIRS", 10)
    policy, pods = files
    text = pods.read_text().split("---\n")
    text[45] = text[45].replace("spec:\n", "spec:\n  spec: 1\n  spec: 2\n")     # a duplicate key
    pods.write_text("---\n".join(text))
    line = "---\n".join(text[:45]).count("\n") + 2 + 7       # the document's first line, then its 8th
    result = CliRunner().invoke(cli, ["eval", "-p", str(policy), "-r", str(pods), "--jobs", "1", *NOW])
    assert result.exit_code == 3, result.output
    assert result.output == f'error: {pods}:{line}: duplicate key "spec" (first at line {line - 1})\n'

    assert "Traceback" not in result.output


def test_a_streamed_run_tells_the_progress_line_what_the_files_hold(files: tuple[Path, Path]) -> None:
    # the pipeline knows how many subjects a stream held only at its end: the peek's count is the total
    import datetime

    from kubectl_kyrec.run.eval import EvalRunOptions, run_eval

    policy, pods = files
    totals: list[int] = []
    ticks: list[Any] = []
    source = FileSource(policy_paths=[str(policy)], resource_paths=[str(pods)], stream_resources=True)
    options = EvalRunOptions(now=datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc))
    run = run_eval(options, source, on_subject=ticks.append, on_total=totals.append, on_results=lambda r: None)
    assert totals == [60]
    assert len(ticks) == 60
    assert run.exit_code == 1


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_fan_out_stream_reads_its_parts_as_workers_free_up(jobs: int) -> None:
    # answers come back in order, each from its own part; when a part's answer is consumed, no more than `jobs`
    # parts are in flight beside it and the one read next (which starts as soon as a worker is free)
    from kubectl_kyrec.evaluate.fan_out import can_fork, fan_out_stream

    taken: list[int] = []
    consumed: list[tuple[int, int, int]] = []

    def parts() -> Iterator[list[int]]:
        for n in range(7):
            taken.append(n)
            yield [n, n * 10]

    def consume(part: list[int], answer: int) -> None:
        consumed.append((part[0], answer, len(taken)))

    fan_out_stream(parts(), lambda part: sum(part) + 1, jobs=jobs, encode=lambda a: str(a).encode(),
                   decode=lambda part, file: int(file.read()), consume=consume)
    assert [(n, a) for n, a, _ in consumed] == [(n, n * 11 + 1) for n in range(7)]
    in_flight = jobs if jobs > 1 and can_fork() else 0
    assert all(seen <= n + 2 + in_flight for n, _, seen in consumed), consumed
