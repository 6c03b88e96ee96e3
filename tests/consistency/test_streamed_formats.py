"""Issue 36, the input side for every output format: `-o wide|json|yaml|reports|junit|sarif|github` read `-r`
YAML and a JSON List `--state` as the run evaluates them, as the table on stdout does
(tests/consistency/test_streamed_inputs.py, test_streamed_state.py). What an output needs of an input object
once its results are handed on is in those results, but for the documents' `admission` entries (each with the
object as stored), which are spilled beside the results as each slice is admitted (render/result_spill.py).
Here: the early slices' objects are gone from the heap by the last results, for each format and both inputs,
and each format's bytes, stderr and exit code are those of the run that reads and keeps everything.
(tests/consistency/test_results_stream_documents.py asserts the same on the testdata cases.)"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import kubectl_kyrec.cli.eval_cmd as eval_cmd
import kubectl_kyrec.evaluate.pipeline as pipeline
from kubectl_kyrec.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
NOW = ["--now", "2026-01-02T03:04:05Z"]
PREFIX = "streamed-format-"     # no other test's objects have it: the heap is searched by name
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
  - expression: "object.metadata.?labels.?owner.orValue('') == 'platform'"
    message: owned by the platform
"""
# the manifests are admitted: a third of them get a label, so the `admission` entries differ from the manifests
MUTATING = ROOT / "testdata/examples/admission/default-owner.yaml"


def pod(i: int) -> dict[str, Any]:
    labels = {"owner": "team"} if i % 3 == 1 else {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{PREFIX}{i:04d}", "namespace": f"team-{i % 4}", "uid": f"u-{i}",
                         **({"labels": labels} if labels else {})},
            "spec": {"containers": [{"name": "c", "image": "nginx:latest" if i % 5 == 0 else "nginx:1.27"}]}}


def inputs(kind: str, where: Path) -> list[str]:
    """60 Pods as one YAML manifest (`-r`, admitted with the MutatingPolicy) or as a JSON List (`--state`)."""
    policy = where / "policy.yaml"
    policy.write_text(POLICY)
    pods = [pod(i) for i in range(60)]
    if kind == "manifests":
        import yaml

        path = where / "pods.yaml"
        path.write_text(yaml.safe_dump_all(pods, sort_keys=False))
        return ["-p", str(policy), "-p", str(MUTATING), "-r", str(path)]
    path = where / "state.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}, indent=2))
    return ["-p", str(policy), "--state", str(path)]


FORMATS = {"wide": ["-o", "wide"], "json": ["-o", "json"], "yaml": ["-o", "yaml"], "reports": ["-o", "reports"],
           "junit": ["-o", "junit"], "sarif": ["-o", "sarif", "--sarif-root", str(ROOT)], "github": ["-o", "github"],
           # the table on stdout, the documents in files (`{dir}`: each run's own directory), each read apart
           "table+yaml+json": ["-o", "table", "-o", "yaml={dir}/out.yaml", "-o", "json={dir}/out.json"],
           "json+reports": ["-o", "json", "-o", "reports={dir}/reports.yaml"]}


def alive_pods() -> set[str]:
    """The names of the Pod objects alive in this process (a dict cannot be referred to weakly: the heap is
    searched)."""
    gc.collect()
    return {o["metadata"]["name"] for o in gc.get_objects()
            if type(o) is dict and o.get("kind") == "Pod" and isinstance(o.get("metadata"), dict)
            and str(o["metadata"].get("name", "")).startswith(PREFIX)}


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
@pytest.mark.parametrize("kind", ["manifests", "state"])
def test_every_format_reads_its_inputs_as_it_gets_results(kind: str, fmt: list[str], jobs: str, tmp_path: Path,
                                                          streamed_inputs: list[bool],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # slices of 5 Pods (two validations, and the mutation's own result for the manifests): 12 slices. When the
    # first results are handed on, the last Pods are not read yet; when the last are, none of the first slices'
    # objects is alive (the loader's, the subject's, admission's stored copy in the `admission` entries)
    monkeypatch.setattr(pipeline, "WORKER_PAIRS", 10)
    args = inputs(kind, tmp_path)
    alive_at: list[list[int]] = []
    real = eval_cmd._handed_to

    def handed_to(*outputs: Any) -> Any:
        hand = real(*outputs)
        assert hand is not None, "every output here takes the results as they are decided"

        def spy(pairs: Any) -> None:
            alive_at.append(sorted(int(name[len(PREFIX):]) for name in alive_pods()))
            hand(pairs)

        return spy

    monkeypatch.setattr(eval_cmd, "_handed_to", handed_to)
    result = CliRunner().invoke(cli, ["eval", *args, *(f.format(dir=tmp_path) for f in fmt), "--jobs", jobs, *NOW])
    assert result.exit_code == 1, result.output
    assert streamed_inputs == [True]
    assert len(alive_at) >= 6, alive_at
    assert alive_at[0] and max(alive_at[0]) < 50, alive_at[0]
    assert alive_at[-1] and min(alive_at[-1]) >= 30, alive_at[-1]


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
@pytest.mark.parametrize("kind", ["manifests", "state"])
def test_every_format_writes_what_the_whole_read_writes(kind: str, fmt: list[str], tmp_path: Path, kept: list[Any],
                                                        streamed_inputs: list[bool],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "WORKER_PAIRS", 10)
    args = inputs(kind, tmp_path)
    dirs = tmp_path / "streamed", tmp_path / "whole"
    for d in dirs:
        d.mkdir()
    streamed = CliRunner().invoke(cli, ["eval", *args, *(f.format(dir=dirs[0]) for f in fmt), *NOW])
    with monkeypatch.context() as patched:
        # the run keeps every result and reads its inputs whole, as before the streams
        patched.setattr(eval_cmd, "_streams", lambda *_: False)
        whole = CliRunner().invoke(cli, ["eval", *args, *(f.format(dir=dirs[1]) for f in fmt), *NOW])
    assert streamed_inputs == [True, False]
    assert streamed.exit_code == whole.exit_code == 1, streamed.output
    assert streamed.stdout == whole.stdout and streamed.stdout.strip()
    assert streamed.stderr == whole.stderr
    files = sorted(p.name for p in dirs[0].iterdir())
    assert files == sorted(p.name for p in dirs[1].iterdir())
    for name in files:
        assert (dirs[0] / name).read_bytes() == (dirs[1] / name).read_bytes()
    first, second = kept
    documents = any(f.startswith(("json", "yaml")) for f in fmt[1::2])
    # the manifests' admissions went to the spill as they were decided, objects and all
    assert first.admissions_handed is (kind == "manifests" and documents)
    assert first.results == [] and second.results and not second.admissions_handed
    if kind == "manifests" and fmt == ["-o", "json"]:
        admission = json.loads(streamed.stdout)["admission"]
        assert len(admission) == 60
        assert [a["object"]["metadata"].get("labels") for a in admission[:3]] == [
            {"owner": "platform"}, {"owner": "team"}, {"owner": "platform"}]
        assert [a["mutations"] != [] for a in admission[:3]] == [True, False, True]


def test_the_admission_chains_results_are_read_back_first_as_a_whole_run_orders_them() -> None:
    # a stream hands each slice's mutation results before the slice's validation results; a whole run hands
    # every subject's first: the spill reads them back in the whole run's order (and counts them all)
    from kubectl_kyrec.evaluate.pipeline import AdmissionPairs
    from kubectl_kyrec.model import Ref, Result, ResultPairs
    from kubectl_kyrec.render.result_spill import ResultSpill

    spill = ResultSpill()
    handed = []
    for n in range(3):
        ref = Ref("v1", "Pod", "ns", f"p{n}", f"u{n}")
        mutation, validation = AdmissionPairs(), ResultPairs()
        mutation.append(Result("default-owner", "KyvernoMutatingPolicy", "", "pass", "", ref), False)
        validation.append(Result("no-latest", "KyvernoValidatingPolicy", "", "fail", "no latest", ref), True)
        handed += [mutation, validation]
    for pairs in handed:
        spill.add(pairs)
    read = [(r.policy, r.subject.name) for r in spill.results()]
    assert read == [*(("default-owner", f"p{n}") for n in range(3)), *(("no-latest", f"p{n}") for n in range(3))]
    assert spill.count == 6 and spill.counts["pass"] == 3 and spill.reported_subjects == 3
    # read twice (a document's results, then its reports), the same
    assert [(r.policy, r.subject.name) for r in spill.results()] == read
    spill.close()
