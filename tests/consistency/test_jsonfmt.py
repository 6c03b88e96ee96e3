"""Issue 36, the expected reports of spilled results written as text (render/report_text.py): each report its
head's text and its shared entries' texts, each entry encoded once. The same bytes as the writers make of the
reports as mappings (ExpectedReports of the same results, the path of a run that holds its results), in the
three places reports are written: `-o json`'s and `-o yaml`'s `reports`, and `-o reports`' stream; and
`-o reports`' notes read from the spill's columns, only the undetermined results made whole."""

from __future__ import annotations

import datetime
import random
from typing import Any

import pytest

from kubectl_kyrec.evaluate import pipeline
from kubectl_kyrec.expect.reports import ExpectedReports
from kubectl_kyrec.model import Ref, Result, ResultPairs, Source
from kubectl_kyrec.render import envelope, report_text, yaml_emit
from kubectl_kyrec.render.eval_output import _write_report_stream
from kubectl_kyrec.render.items import Items
from kubectl_kyrec.render.result_spill import ResultSpill, spilled_report_items

NOW = datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc)
APIS = ("wgpolicyk8s.io/v1alpha2", "openreports.io/v1alpha1")


def many_subjects(seed: int) -> tuple[list[tuple[Result, bool]], list[tuple[Result, bool]]]:
    """Subjects one after another: namespaced and cluster-scoped, stand-in uids, names and namespaces the YAML
    writer quotes (or writes as literal blocks), several policies and rules each with every status (errors and
    skips too), outcomes shared between subjects and outcomes of their own; `later` pairs (a GeneratingPolicy's)
    for some of them and for subjects of their own."""
    rng = random.Random(seed)
    names = ["p", "yes", "a: b", "two\nlines", "ünï", "#x", "0123", ""]
    pairs: list[tuple[Result, bool]] = []
    refs = []
    for n in range(120):
        namespace = "" if n % 5 == 0 else rng.choice(["ns", "on", "n s", f"ns-{n % 4}", "multi\nline"])
        ref = Ref(rng.choice(["v1", "apps/v1"]), rng.choice(["Pod", "Namespace", "Deployment"]), namespace,
                  rng.choice(names) + str(n), rng.choice([f"uid-{n}", f"{n}", f"on\n{n}"]),
                  n % 9 == 0)
        refs.append(ref)
        for _ in range(rng.randrange(1, 12)):
            source = rng.choice(["KyvernoValidatingPolicy", "kyverno", "ValidatingAdmissionPolicy"])
            message = rng.choice(["ok", "no", "", f"only {n}", "x\ny"])
            props = rng.choice([{"process": "background scan"}, {}, {"process": "admission review"},
                                {"process": "background scan", "cel.validationIndex": "1"}])
            result = Result(rng.choice(["b", "a", "c/d", "yes"]), source, rng.choice(["", "r1", "r2"]),
                            rng.choice(["pass", "fail", "warn", "error", "skip", "undetermined"]), message, ref,
                            rng.choice([True, False]), rng.choice(["", "cat"]), rng.choice(["", "low"]), props,
                            location=rng.choice([None, Source("state.json", n), Source("a: b\nc.yaml", 3),
                                                 Source("yes", 0), Source("ä #b", 7, "<kustomize k>")]))
            pairs.append((result, rng.random() < 0.85))
    later = [(Result("gen", "KyvernoGeneratingPolicy", "", "pass", "generated", ref), ok)
             for ref, ok in ((refs[3], True), (Ref("v1", "Pod", "ns-0", "x", "uid-x"), True),
                             (Ref("v1", "Namespace", "", "y\nz", "uid-y", True), True), (refs[5], False))]
    return pairs, later


def spill_of(pairs: list[tuple[Result, bool]], record: int) -> ResultSpill:
    spill = ResultSpill()
    for start in range(0, len(pairs), record):      # records that cut some subjects' results in two
        chunk = pairs[start:start + record]
        spill.add(ResultPairs([r for r, _ in chunk], bytearray(ok for _, ok in chunk)))
    assert not spill.scattered
    return spill


def held(pairs: list[tuple[Result, bool]], later: list[tuple[Result, bool]], api: str) -> Items:
    """The reports as a run that holds its results gives them (run/eval.py report_items): mappings only."""
    reports = ExpectedReports(ResultPairs([r for r, _ in pairs + later], bytearray(ok for _, ok in pairs + later)),
                              NOW, api)
    return Items(len(reports), lambda start, stop: (reports[i] for i in range(start, stop)), shared=True)


def texts(items: Items) -> dict[str, str]:
    """The three texts of the reports: in a JSON document, in a YAML document, as a YAML stream."""
    json_out: list[str] = []
    envelope.write_json_array(items, json_out.append, "  ")
    yaml_out: list[str] = []
    yaml_emit.write_sequence("reports", items, yaml_out.append)
    stream: list[str] = []
    _write_report_stream(items, stream.append)
    return {"json": "".join(json_out), "yaml": "".join(yaml_out), "reports": "".join(stream)}


@pytest.mark.parametrize("encoder", ["orjson", "standard library"])
@pytest.mark.parametrize("seed", range(4))
def test_the_spilled_reports_text_is_the_writers_text_of_the_held_reports(
        seed: int, encoder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if encoder != "orjson":
        monkeypatch.setattr(envelope, "orjson", None)
    pairs, later = many_subjects(seed)
    spill = spill_of(pairs, 17)
    for api in APIS:
        items = spilled_report_items(spill, later, NOW, api)
        assert items.json is not None and items.yaml is not None and items.documents is not None
        expected = texts(held(pairs, later, api))
        assert texts(items) == expected
        assert expected["reports"].count("---\n") == items.count - 1 > 100
    spill.close()


def test_the_caches_emptied_as_they_fill_give_the_same_text(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs, later = many_subjects(7)
    spill = spill_of(pairs, 50)
    api = APIS[0]
    expected = texts(held(pairs, later, api))
    monkeypatch.setattr(report_text, "_TEXTS_MAX", 3)
    monkeypatch.setattr(report_text, "_PIECE", 2)
    assert texts(spilled_report_items(spill, later, NOW, api)) == expected
    spill.close()


def test_a_head_is_its_shapes_template_filled() -> None:
    # one template per (namespaced, stand-in uid): the same head as written whole, whatever the subject's
    # strings make of its scalars
    pairs, later = many_subjects(3)
    shapes = {(bool(r.subject.namespace), r.subject.synthetic) for r, _ in pairs}
    assert len(shapes) == 4
    spill = spill_of(pairs, 1000)
    documents = list(spilled_report_items(spill, later, NOW, APIS[1]).documents())      # type: ignore[misc]
    reports = list(held(pairs, later, APIS[1]))
    assert documents == [yaml_emit.to_yaml(report) for report in reports]
    spill.close()


def test_the_notes_read_only_the_undetermined_results(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs, _ = many_subjects(1)
    spill = spill_of(pairs, 29)
    expected = [r for r, _ in pairs if r.result == "undetermined"]
    assert 0 < len(expected) < len(pairs)
    assert list(spill.results()) == [r for r, _ in pairs]

    def no_results(*args: object) -> Any:
        raise AssertionError("every result of a record was made")

    monkeypatch.setattr(pipeline, "_decode_pairs", no_results)
    assert list(spill.results("undetermined")) == expected
    spill.close()


def test_the_yaml_results_subjects_and_locations_are_the_emitters_text() -> None:
    # each subject's and location's part by its template (render/result_entries.py), their strings quoted or
    # written as literal blocks as the emitter writes them in the whole entry
    from kubectl_kyrec.render.eval_output import _spilled_items, result_json

    pairs, _ = many_subjects(5)
    results = [r for r, _ in pairs]
    assert any("\n" in r.subject.name for r in results) and any(r.subject.synthetic for r in results)
    assert any(r.location is not None and "\n" in r.location.file for r in results)
    spill = spill_of(pairs, 23)
    written: list[str] = []
    assert yaml_emit.write_sequence("results", _spilled_items(spill), written.append) == len(results)
    assert "".join(written) == yaml_emit.to_yaml({"results": [result_json(r) for r in results]})
    spill.close()
