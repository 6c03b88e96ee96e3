"""Issue 36, the input side for `--state`: eval's table reads a JSON List state as it evaluates it. A first pass
reads the capture's record (wherever it stands in the List) and keeps only what the run looks up (Namespaces,
CRDs, policies); the objects are read again a worker slice at a time and released once their results are handed
on. The table, the notices, the errors and the exit code are those of the whole read (`-o table=FILE`, which
reads the state whole)."""

from __future__ import annotations

import gc
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import kubectl_kyrec.evaluate.pipeline as pipeline
import kubectl_kyrec.load.json_stream as json_stream
import kubectl_kyrec.load.run_inputs.state as state_module
from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.json_stream import NotAList, iter_json_documents_with_items, iter_list_parts
from kubectl_kyrec.load.run_inputs.sources import FileSource
from kubectl_kyrec.render import eval_output

ROOT = Path(__file__).resolve().parents[2]
T = ROOT / "testdata"
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
    namespaceSelector:
      matchLabels:
        checked: "yes"
  validations:
  - expression: "object.spec.containers.all(c, !c.image.endsWith(':latest'))"
    message: no latest
  - expression: "namespaceObject.metadata.labels.team != 'b' || object.metadata.name.endsWith('0')"
    message: team b names end in 0
"""
# a policy that looks ConfigMaps up by name: they are kept whole beside the Namespaces
LOOKUP = POLICY.replace("  - expression: \"namespaceObject", "  - expression: \"resource.List('v1', 'configmaps', "
                        "object.metadata.namespace).items.size() > 0\"\n    message: needs a ConfigMap\n"
                        "  - expression: \"namespaceObject")
# one that looks up what it cannot name in advance: every kind of the state stays whole
DYNAMIC = LOOKUP.replace("resource.List('v1', 'configmaps',", "resource.List('v1', object.metadata.name,")


def pod(i: int, namespace: str | None = None) -> dict[str, Any]:
    # named s0000...: test_streamed_inputs.py searches the heap for its own streamed-input-0000... Pods, and a
    # run's objects may outlive it in a cache
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"s{i:04d}", "namespace": namespace or f"team-{'abc'[i % 3]}", "uid": f"u-{i}"},
            "spec": {"containers": [{"name": "c", "image": "nginx:latest" if i % 4 == 0 else "nginx:1.27"}]}}


def namespace(name: str, checked: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": f"team-{name}", "labels": {"checked": checked, "team": name}}}


RECORD = {"annotations": {
    "kyrec.io/listed": json.dumps([{"apiVersion": "v1", "kind": "Pod"}, {"apiVersion": "v1", "kind": "Namespace"},
                                   {"apiVersion": "apps/v1", "kind": "Deployment"}]),
    "kyrec.io/unreadable": json.dumps([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "message": "forbidden",
                                        "status": 403, "reason": "Forbidden", "resource": "replicasets.apps"}])}}


def state_list(items: list[dict[str, Any]], record_first: bool | None = False) -> dict[str, Any]:
    """A List as `kubectl get -o json` writes it; with the capture record before or after the items (None: none)."""
    if record_first is None:
        return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
    if record_first:
        return {"apiVersion": "v1", "kind": "List", "metadata": RECORD, "items": items}
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": RECORD}


def configmap(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": namespace}}


def cluster(count: int = 60) -> list[dict[str, Any]]:
    # the Namespaces and ConfigMaps after the Pods (kubectl get pods,namespaces,configmaps): the first pass keeps
    # them for every slice
    return [*(pod(i) for i in range(count)), namespace("a", "yes"), namespace("b", "yes"), namespace("c", "no"),
            configmap("team-b")]


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    return path


def write(path: Path, value: Any, indent: int | None = 4) -> Path:
    path.write_text(json.dumps(value, indent=indent))
    return path


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many objects each state stream had given when the table got each chunk of results; one entry -1
    per stream opened."""
    given: list[int] = []
    real = state_module.StateStream.objects

    def spy(self: Any) -> Iterator[Any]:
        given.append(-1)
        for doc in real(self):
            given.append(doc.name)
            yield doc

    monkeypatch.setattr(state_module.StateStream, "objects", spy)
    return given


def table_runs(args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, str]:
    """The table on stdout (the state streamed when it can be), the same run with the state read whole (as
    before it was streamed), and the table the first run writes to a file (which reads it whole)."""
    streamed = CliRunner().invoke(cli, ["eval", *args, *NOW])
    target = tmp_path / "table.txt"
    CliRunner().invoke(cli, ["eval", *args, *NOW, "-o", f"table={target}"])
    with monkeypatch.context() as patched:
        patched.setattr(FileSource, "_peek_state", lambda self, named: None)
        whole = CliRunner().invoke(cli, ["eval", *args, *NOW])
    return streamed, whole, target.read_text() if target.exists() else ""


# -- the reader ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("piece", [1, 7, 64, 1 << 20])
@pytest.mark.parametrize("indent", [None, 1, 4])
@pytest.mark.parametrize("record_first", [True, False, None])
def test_the_list_reader_gives_the_whole_reads_items_lines_and_members(piece: int, indent: int | None,
                                                                        record_first: bool | None,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_stream, "_PIECE", piece)     # pieces end inside keys, strings, numbers and items
    value = state_list([{**pod(i), "n": 10 ** 12 + i, "f": 1.0, "t": True} for i in range(6)], record_first)
    text = "\ufeff" + json.dumps(value, indent=indent, ensure_ascii=False) + "\n"
    whole, line, item_lines = next(iter_json_documents_with_items(text, "s.json"))
    parts = list(iter_list_parts(io.BytesIO(text.encode())))
    assert [v for what, v, _ in parts if what == "item"] == whole["items"]
    assert [n for what, _, n in parts if what == "item"] == item_lines
    assert {v[0]: v[1] for what, v, _ in parts if what == "key"} == {k: v for k, v in whole.items() if k != "items"}
    assert {n for what, _, n in parts if what == "key"} == {line}


@pytest.mark.parametrize("text", [
    '[{"kind": "Pod"}]', '{"items": [{}]} {"items": []}', '{"items": [{},]}', '{"items": [{}], }', '{"items": {}}',
    '{"items": [], "items": []}', '{"items": [{"a": 1}', '{"items": [{"a": NaN}]}', '{"items": [{"a" 1}]}', "",
    '{"items": [{"a": "\xe9"}]}'.encode("latin-1").decode("latin-1"),
])
def test_the_list_reader_refuses_what_the_whole_read_must_judge(text: str) -> None:
    data = text.encode("latin-1") if "\xe9" in text else text.encode()
    with pytest.raises(NotAList):
        list(iter_list_parts(io.BytesIO(data)))


# -- what is streamed ------------------------------------------------------------------------------------------

def test_the_first_pass_keeps_the_record_and_what_is_looked_up(tmp_path: Path, policy: Path) -> None:
    state = write(tmp_path / "state.json", state_list(cluster(), record_first=False))
    whole = FileSource(policy_paths=[str(policy)], state_paths=[str(state)]).read()
    inputs = FileSource(policy_paths=[str(policy)], state_paths=[str(state)], stream_resources=True).read()
    assert inputs.state_stream is not None and inputs.resource_count == 64
    assert [d.name for d in inputs.state.objects] == ["team-a", "team-b", "team-c"]
    # the record written after the items is the whole read's
    for field in ("listed", "unreadable", "served", "has_managed_fields", "secret_salts", "evidence_unread"):
        assert getattr(inputs.state, field) == getattr(whole.state, field), field
    assert inputs.state.is_listed("apps/v1", "ReplicaSet") is False
    assert [(d.obj, d.source) for d in inputs.state_stream] == [(d.obj, d.source) for d in whole.state.objects]
    assert [str(n) for n in inputs.notices] == [str(n) for n in whole.notices]


def test_repeats_are_passed_over_with_the_whole_reads_notice(tmp_path: Path, policy: Path) -> None:
    first = write(tmp_path / "one.json", state_list(cluster(6), record_first=None))
    second = write(tmp_path / "two.json", state_list([pod(2), pod(7), namespace("a", "no")], record_first=None))
    paths = [str(first), str(second)]
    whole = FileSource(policy_paths=[str(policy)], state_paths=paths).read()
    inputs = FileSource(policy_paths=[str(policy)], state_paths=paths, stream_resources=True).read()
    assert inputs.state_stream is not None
    assert [d.name for d in inputs.state.objects] == ["team-a", "team-b", "team-c"]
    docs = list(inputs.state_stream)
    assert [(d.obj, d.source) for d in docs] == [(d.obj, d.source) for d in whole.state.objects]
    assert [str(n) for n in inputs.notices] == [str(n) for n in whole.notices]
    assert any("2 object(s) appear more than once in the state" in str(n) for n in whole.notices)


def digested_secret() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "team-a"},
            "data": {"k": "kyrec-sha256:" + "0" * 64}}


# the items by name, made in the test: a Pod made at collection would stay alive for the whole session (and
# other tests search the heap for live Pods)
ITEMS = {
    "cluster": lambda: cluster(3),
    "digested": lambda: [*cluster(3), digested_secret()],                          # the salt's check counts them
    "no-kind": lambda: [*cluster(3), {"apiVersion": "v1", "metadata": {}}],         # the whole read's error
    "none": lambda: [],                                                             # the whole read's error
}


@pytest.mark.parametrize(("policy_text", "items", "form", "streams"), [
    (POLICY, "cluster", "json", True),
    (LOOKUP, "cluster", "json", True),                                  # the ConfigMaps kept
    (DYNAMIC, "cluster", "json", False),                                # resource.List of any kind
    (POLICY.replace("validations:", "variables:\n  - name: g\n    expression: globalContext.Get('x', '')\n"
                    "  validations:"), "cluster", "json", False),
    (POLICY.replace("validationActions: [Audit]", "validationActions: [Audit]\n  paramKind: {}"), "cluster",
     "json", False),
    (POLICY, "cluster", "yaml", False),                                 # YAML states are read whole
    (POLICY, "cluster", "object", False),                               # one object, no List
    (POLICY, "digested", "json", False),
    (POLICY, "no-kind", "json", False),
    (POLICY, "none", "json", False),
])
def test_what_is_streamed(tmp_path: Path, policy_text: str, items: str, form: str, streams: bool) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(policy_text)
    state = tmp_path / "state.json"
    objects = ITEMS[items]()
    if form == "yaml":
        state.write_text(yaml.safe_dump(state_list(objects, record_first=None)))
    elif form == "object":
        write(state, objects[0])
    else:
        write(state, state_list(objects, record_first=None))
    source = FileSource(policy_paths=[str(policy)], state_paths=[str(state)], stream_resources=True)
    try:
        inputs = source.read()
    except InputError:      # the whole read's input errors (an object without a kind, no objects)
        assert not streams
        return
    assert (inputs.state_stream is not None) is streams


def test_no_stream_without_policies_named_nor_beside_manifests(tmp_path: Path, policy: Path) -> None:
    state = write(tmp_path / "state.json", state_list(cluster(3)))
    pods = tmp_path / "pods.yaml"
    pods.write_text(yaml.safe_dump(pod(1)))
    assert FileSource(policy_paths=[str(policy)], state_paths=[str(state)]).read().state_stream is None
    assert FileSource(policy_paths=[str(policy)], state_paths=[str(state)], resource_paths=[str(pods)],
                      stream_resources=True).read().state_stream is None


# -- the run ---------------------------------------------------------------------------------------------------

def alive_pods() -> set[str]:
    gc.collect()
    return {o["metadata"]["name"] for o in gc.get_objects()
            if type(o) is dict and o.get("kind") == "Pod" and isinstance(o.get("metadata"), dict)
            and str(o["metadata"].get("name", "")).startswith("s0")}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_state_is_read_as_the_table_gets_results(tmp_path: Path, policy: Path, streamed: list[Any], jobs: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "WORKER_PAIRS", 10)      # slices of 10 Pods (one policy)
    state = write(tmp_path / "state.json", state_list(cluster(), record_first=False))
    read_at_add: list[int] = []
    alive_at_last: list[int] = []
    real_add = eval_output.TableTally.add
    before = alive_pods()       # other tests' parameters

    def add(self: Any, results: Any) -> None:
        read_at_add.append(len(streamed) - 1)
        alive_at_last[:] = sorted(int(name[1:]) for name in alive_pods() - before)
        real_add(self, results)

    monkeypatch.setattr(eval_output.TableTally, "add", add)
    result = CliRunner().invoke(cli, ["eval", "-p", str(policy), "--state", str(state), "--jobs", jobs, *NOW])
    assert result.exit_code == 5, result.output         # the unreadable ReplicaSets of the record
    assert streamed.count(-1) == 1 and len(streamed) == 65
    assert read_at_add[0] < 63, read_at_add
    assert alive_at_last and min(alive_at_last) >= 30, alive_at_last


RUNS = {
    "default": [],
    "namespace": ["-n", "team-b"],
    "kind": ["--kind", "Pod"],
    "nothing-selected": ["--kind", "Deployment"],
    "show-all": ["--show-all"],
    "fail-on-warn": ["--fail-on", "warn"],
}


@pytest.mark.parametrize("record_first", [True, False, None], ids=["record-first", "record-last", "no-record"])
@pytest.mark.parametrize("flags", RUNS.values(), ids=list(RUNS))
def test_the_streamed_state_table_is_the_whole_reads(flags: list[str], record_first: bool | None, tmp_path: Path,
                                                     policy: Path, streamed: list[Any],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "WORKER_PAIRS", 10)
    items = cluster()
    items.insert(20, pod(5))                  # a repeat: passed over, with its notice
    state = write(tmp_path / "state.json", state_list(items, record_first))
    stream, whole, table = table_runs(["-p", str(policy), "--state", str(state), *flags], tmp_path, monkeypatch)
    assert streamed.count(-1) == 1, "the table on stdout reads the state as it evaluates it; the others, whole"
    assert stream.exit_code == whole.exit_code, stream.output
    assert stream.exit_code in (0, 1, 5), stream.output
    assert stream.stdout == whole.stdout == table and table.strip()
    assert stream.stderr == whole.stderr
    assert "appear more than once in the state" in stream.stderr
    if record_first is not None:
        assert "ReplicaSet" in stream.stderr and stream.exit_code == 5


def yaml_as_state(paths: list[Path], target: Path) -> Path:
    """The objects of YAML manifests as one JSON List, as `kubectl get -o json` would write them."""
    docs = [d for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*.yaml")))
            for d in yaml.safe_load_all(f.read_text()) if isinstance(d, dict)]
    return write(target, state_list(docs, record_first=None))


CASES = {
    "vpol-errors": (T / "eval/runtime-errors/policies.yaml", [T / "eval/runtime-errors/resources.yaml"], True),
    "match-rules": (T / "eval/match-rules/policies.yaml", [T / "eval/match-rules/resources.yaml"], True),
    "examples": (T / "examples/policies", [T / "examples/resources"], True),
    "classic-rules": (T / "classic/manifests/policies.yaml", [T / "classic/manifests/resources.yaml"], True),
    # generation reads every trigger after the evaluation: the state is read whole
    "generating": (T / "generating/clone-owner-references/policy.yaml",
                   [T / "generating/clone-owner-references/resources.yaml",
                    T / "generating/clone-owner-references/state.yaml"], False),
}


@pytest.mark.parametrize("flags", [[], ["--show-all"]], ids=["default", "show-all"])
@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_the_testdata_cases_as_a_state(case: tuple[Path, list[Path], bool], flags: list[str], tmp_path: Path,
                                       streamed: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    policies, manifests, streams = case
    state = yaml_as_state(manifests, tmp_path / "state.json")
    stream, whole, table = table_runs(["-p", str(policies), "--state", str(state), *flags], tmp_path, monkeypatch)
    assert (streamed.count(-1) == 1) is streams
    assert stream.exit_code == whole.exit_code, stream.output
    assert stream.exit_code in (0, 1, 3), stream.output
    assert stream.stdout == whole.stdout == table and table.strip()
    assert stream.stderr == whole.stderr


def test_a_named_lookup_keeps_its_kind_and_the_rest_streams(tmp_path: Path, streamed: list[Any],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "WORKER_PAIRS", 10)
    policy = tmp_path / "policy.yaml"
    policy.write_text(LOOKUP)
    state = write(tmp_path / "state.json", state_list(cluster()))
    inputs = FileSource(policy_paths=[str(policy)], state_paths=[str(state)], stream_resources=True).read()
    assert [d.kind for d in inputs.state.objects] == ["Namespace", "Namespace", "Namespace", "ConfigMap"]
    stream, whole, table = table_runs(["-p", str(policy), "--state", str(state)], tmp_path, monkeypatch)
    assert streamed.count(-1) == 1              # the table's run (the FileSource above read none)
    # the ConfigMap of team-b is seen from the first slice on
    needs = [line for line in stream.stdout.splitlines() if "needs a ConfigMap" in line]
    assert needs and not [line for line in needs if "team-b/" in line]
    assert stream.stdout == whole.stdout == table and stream.stderr == whole.stderr
    assert stream.exit_code == whole.exit_code == 5


def test_a_lookup_of_any_kind_reads_the_state_whole(tmp_path: Path, streamed: list[Any],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(DYNAMIC)
    state = write(tmp_path / "state.json", state_list(cluster(6)))
    stream, whole, table = table_runs(["-p", str(policy), "--state", str(state)], tmp_path, monkeypatch)
    assert streamed == []
    assert stream.stdout == whole.stdout == table and stream.exit_code == whole.exit_code


def test_a_kind_only_the_objects_resolve_reads_the_state_whole(tmp_path: Path, policy: Path, streamed: list[Any],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # --kind widgets: no table knows the kind (no CRD), the state's objects resolve it; the run reads the state
    # whole before anything is built over it, with the whole read's notices (a repeat among them)
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "team-a"}}
    state = write(tmp_path / "state.json", state_list([*cluster(6), widget, widget]))
    read = FileSource(policy_paths=[str(policy)], state_paths=[str(state)], stream_resources=True).read()
    assert read.state_stream is not None      # it would stream but for the --kind
    stream, whole, table = table_runs(["-p", str(policy), "--state", str(state), "--kind", "widgets"], tmp_path,
                                      monkeypatch)
    assert streamed == []
    assert stream.exit_code == whole.exit_code == 5, stream.output
    assert stream.stdout == whole.stdout == table
    assert stream.stderr == whole.stderr and "appear more than once in the state" in stream.stderr
