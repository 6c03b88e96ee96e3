"""Issue 36, `-o json` and `-o yaml` of spilled results written straight from the spill's columns
(render/result_entries.py): the same bytes as the documents' encoders write of each whole entry
(eval_output.result_json), with no Result made on the way. The CLI's own comparisons (streamed against held,
every format) are tests/consistency/test_streamed_formats.py and test_results_stream_documents.py."""

from __future__ import annotations

import datetime
import itertools
import random
from typing import Any

import pytest

from kubectl_kyrec.evaluate import pipeline
from kubectl_kyrec.evaluate.pipeline import AdmissionPairs
from kubectl_kyrec.model import Ref, Result, ResultPairs, Source
from kubectl_kyrec.render import envelope, yaml_emit
from kubectl_kyrec.render.eval_output import _spilled_items, result_json
from kubectl_kyrec.render.result_spill import ResultSpill


def tricky_results() -> list[Result]:
    """Results that differ from one another in each field in turn, and in mixtures: texts the encoders
    escape or quote, several lines (YAML's literal blocks), no location, a stand-in uid, empty properties."""
    rng = random.Random(36)
    refs = [Ref("v1", "Pod", "ns", f"p{i}", f"uid-{i}") for i in range(4)] + \
        [Ref("v1", "Node", "", "n", "u-n"), Ref("apps/v1", "Deployment", "ns", "d: 1", "syn", True)]
    sources = [Source("state.json", 6), Source("dir/ä b.yaml", 40, "<kustomize k>"), None]
    choices: dict[str, list[Any]] = {
        "policy": ["a", "ns/b", "yes"], "source": ["KyvernoValidatingPolicy", "ClusterPolicy"],
        "rule": ["", "r1", "on"], "result": ["pass", "fail", "error", "undetermined"],
        "message": ["", "m1", "yes", "quote \" back\\slash", "two\nlines\n", "tab\tbell\x07", "ünïcode ✓ \u2028",
                    " leading space", "key: value # not a comment", "ends with space "],
        "subject": refs, "scored": [True, False], "category": ["", "Pod Security", "Best Practices, Other"],
        "severity": ["", "high"],
        "properties": [{"process": "background scan"}, {}, {"process": "admission review", "n": "0"},
                       {"x": "multi\nline"}],
        "validation_actions": [(), ("Audit",), ("Deny", "Audit")],
        "location": sources, "policy_location": sources,
    }
    base = {k: v[0] for k, v in choices.items()}
    results = [Result(**base)]
    for name, values in choices.items():        # one field changed at a time
        results += [Result(**{**base, name: v}) for v in values[1:]]
    for _ in range(400):                        # and mixtures
        results.append(Result(**{k: rng.choice(v) for k, v in choices.items()}))
    return results + list(itertools.islice(itertools.cycle(results), 60))      # the same results again


def spilled(results: list[Result], record: int = 37) -> ResultSpill:
    """`results` spilled in records of `record`, the first two records as the admission chain's."""
    spill = ResultSpill()
    for n, start in enumerate(range(0, len(results), record)):
        chunk = results[start:start + record]
        pairs = (AdmissionPairs if n < 2 else ResultPairs)(chunk, bytearray(i % 2 for i in range(len(chunk))))
        spill.add(pairs)
    spill.add(ResultPairs())        # an empty chunk writes no record
    return spill


def whole_json(entries: list[dict[str, Any]]) -> str:
    out: list[str] = []
    envelope.write_json_array(iter(entries), out.append, "  ")
    return "".join(out)


@pytest.mark.parametrize("encoder", ["orjson", "standard library"])
def test_the_json_entries_are_the_encoders_text_of_each_whole_entry(encoder: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    if encoder != "orjson":
        monkeypatch.setattr(envelope, "orjson", None)
    results = tricky_results()
    spill = spilled(results)
    expected = whole_json([result_json(r) for r in results])
    written: list[str] = []
    assert envelope.write_json_array(_spilled_items(spill), written.append, "  ") == len(results)
    assert "".join(written) == expected
    assert len(written) > 10        # a record at a time, never the whole array as one text
    spill.close()


def test_the_yaml_entries_are_the_emitters_text_of_each_whole_entry() -> None:
    results = tricky_results()
    spill = spilled(results)
    written: list[str] = []
    assert yaml_emit.write_sequence("results", _spilled_items(spill), written.append) == len(results)
    assert "".join(written) == yaml_emit.to_yaml({"results": [result_json(r) for r in results]})
    spill.close()


def test_no_results_are_an_empty_array_and_sequence() -> None:
    spill = spilled([])
    out: list[str] = []
    envelope.write_json_array(_spilled_items(spill), out.append, "  ")
    yaml_emit.write_sequence("results", _spilled_items(spill), out.append)
    assert "".join(out) == "[]results: []\n"
    spill.close()


def test_the_part_caches_emptied_as_they_fill_give_the_same_text(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubectl_kyrec.render import result_entries

    results = tricky_results()
    spill = spilled(results, record=200)
    expected = "".join(result_entries.json_entries(spill.columns(), "  "))
    monkeypatch.setattr(result_entries, "_PARTS_MAX", 3)
    assert "".join(result_entries.json_entries(spill.columns(), "  ")) == expected
    texts = result_entries._Texts(str, str, str)
    for record in spill.columns():
        texts.record(record)
        assert len(texts.heads) <= len(set(zip(*record.columns[:3]))) + 3
    spill.close()


def test_writing_the_spilled_documents_makes_no_result(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubectl_kyrec.render.result_spill import spilled_report_items

    # each result was decoded into a Result, then a mapping, then encoded: a third of the worker's
    # evaluation in the reading process (bench/RESULTS.md, jsonrows)
    results = tricky_results()
    spill = spilled(results)

    def no_results(*args: object) -> None:
        raise AssertionError("a Result was made to write the document")

    monkeypatch.setattr(pipeline, "_decode_pairs", no_results)
    out: list[str] = []
    envelope.write_json_array(_spilled_items(spill), out.append, "  ")
    yaml_emit.write_sequence("results", _spilled_items(spill), out.append)
    assert out
    # the reports too (of a spill whose subjects' results come one after another)
    pairs, _ = report_results(0)
    reports = ResultSpill()
    reports.add(ResultPairs([r for r, _ in pairs], bytearray(ok for _, ok in pairs)))
    assert not reports.scattered
    assert len(list(spilled_report_items(reports, [], NOW, "wgpolicyk8s.io/v1alpha2"))) == reports.reported_subjects
    reports.close()
    spill.close()


NOW = datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc)


def report_results(seed: int) -> tuple[list[tuple[Result, bool]], list[tuple[Result, bool]]]:
    """A run's pairs, each subject's one after another (some subjects in two records), and `later` pairs (a
    GeneratingPolicy's) for some of those subjects and for subjects of their own: classic rules (one entry
    each) and CEL policies (one entry per policy: the last one wins), properties that cannot be hashed."""
    rng = random.Random(seed)
    pairs: list[tuple[Result, bool]] = []
    for n in range(40):
        ref = Ref("v1", "Pod" if n % 7 else "Namespace", "" if n % 7 == 0 else f"ns-{n % 3}", f"p{n}", f"uid-{n}",
                  n % 11 == 0)
        for _ in range(rng.randrange(0, 9)):
            source = rng.choice(["KyvernoValidatingPolicy", "kyverno", "ValidatingAdmissionPolicy"])
            props = rng.choice([{"process": "background scan"}, {}, {"process": "admission review"},
                                {"process": "background scan", "cel.validationIndex": "1"}])
            result = Result(rng.choice(["b", "a", "c/d"]), source, rng.choice(["", "r1", "r2"]),
                            rng.choice(["pass", "fail", "warn", "error", "skip"]), rng.choice(["ok", "no", ""]), ref,
                            rng.choice([True, False]), rng.choice(["", "cat"]), rng.choice(["", "low"]), props)
            pairs.append((result, rng.random() < 0.8))
    later = [(Result("gen", "KyvernoGeneratingPolicy", "", "pass", "generated", ref), ok)
             for ref, ok in ((Ref("v1", "Pod", "ns-1", "p3", "uid-3"), True),
                             (Ref("v1", "Pod", "ns-0", "x", "uid-x"), True),
                             (Ref("v1", "Pod", "ns-1", "p5", "uid-5"), False))]
    return pairs, later


@pytest.mark.parametrize("seed", range(6))
def test_the_spilled_reports_are_the_expected_reports(seed: int) -> None:
    from kubectl_kyrec.expect.reports import ExpectedReports
    from kubectl_kyrec.render.result_spill import spilled_report_items

    pairs, later = report_results(seed)
    spill = ResultSpill()
    for start in range(0, len(pairs), 13):      # records that cut some subjects' results in two
        chunk = pairs[start:start + 13]
        spill.add(ResultPairs([r for r, _ in chunk], bytearray(ok for _, ok in chunk)))
    assert not spill.scattered
    for api in ("wgpolicyk8s.io/v1alpha2", "openreports.io/v1alpha1"):
        expected = list(ExpectedReports(ResultPairs([r for r, _ in pairs] + [r for r, _ in later],
                                                    bytearray(ok for _, ok in pairs + later)), NOW, api))
        assert list(spilled_report_items(spill, later, NOW, api)) == expected
    spill.close()


@pytest.mark.parametrize("encoder", ["orjson", "standard library"])
def test_the_spilled_reports_json_is_the_encoders_text_of_each_whole_report(encoder: str,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # each shared entry encoded once (render/report_text.py), the caches emptied as they fill
    from kubectl_kyrec.render import report_text
    from kubectl_kyrec.render.result_spill import spilled_report_items

    if encoder != "orjson":
        monkeypatch.setattr(envelope, "orjson", None)
    monkeypatch.setattr(report_text, "_TEXTS_MAX", 5)
    monkeypatch.setattr(report_text, "_PIECE", 7)
    pairs, later = report_results(1)
    spill = ResultSpill()
    for start in range(0, len(pairs), 13):
        chunk = pairs[start:start + 13]
        spill.add(ResultPairs([r for r, _ in chunk], bytearray(ok for _, ok in chunk)))
    items = spilled_report_items(spill, later, NOW, "wgpolicyk8s.io/v1alpha2")
    written: list[str] = []
    assert envelope.write_json_array(items, written.append, "  ") == items.count > 20
    assert "".join(written) == whole_json(list(items))
    assert len(written) > 5
    spill.close()
