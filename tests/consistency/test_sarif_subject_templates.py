"""SARIF of spilled results (render/sarif.py _SpilledResults): a subject's texts are filled into templates
(its text in the properties, its locations part), its strings escaped one by one into their slots. They must
be byte for byte what the findings' writer encodes of each whole entry (`_result` and json.dumps), whatever
the strings hold: quotes, backslashes, new lines, control characters, characters beyond ASCII, text that
looks like a slot, and in a file's path as well."""

from __future__ import annotations

import json

import pytest

from kubectl_kyrec.evaluate.pipeline import AdmissionPairs
from kubectl_kyrec.model import Ref, Result, ResultPairs, Source
from kubectl_kyrec.render.result_spill import ResultSpill, SpilledFindings
from tests.consistency.test_fmttail import _sarif

ODD = ['q"uote', "back\\slash", "new\nline", "tab\tand\x01control", "é ü 日本語 \u2028 🚀", "kyrecslot1",
       "918273645546372", "a/b", ""]


def _spill() -> ResultSpill:
    spill = ResultSpill()
    pairs = ResultPairs()
    files = ("manifests/pods.yaml", 'manifests/q"uote é.yaml', "manifests/kyrecslot0.yaml", "/abs/918273645546372.json")
    n = 0
    for i, odd in enumerate(ODD):
        for field in range(5):
            values = ["apps/v1", "Deployment", "ns", "web", f"uid-{i}-{field}"]
            values[field] = odd
            ref = Ref(*values, synthetic=bool(n % 2))
            line = (0, 3, 12)[n % 3]
            location = Source(files[n % len(files)], line)
            for policy, outcome in (("p1", "fail"), ("p2", "undetermined"), ("p1", "pass")):
                pairs.append(Result(policy, "ValidatingPolicy", "", outcome, f"m {odd}", ref,
                                    validation_actions=("Audit",), location=location), False)
            n += 1
    spill.add(pairs)
    return spill


@pytest.mark.parametrize("root", [None, "manifests"])
def test_spilled_subjects_with_strings_to_escape(root: str | None) -> None:
    spilled = SpilledFindings(_spill())
    text = _sarif(spilled, root)
    assert text == _sarif(list(spilled), root)
    assert '\\"uote' in text and "back\\\\slash" in text and "new\\nline" in text and "\\u00e9" in text


def test_rules_of_spilled_results_follow_the_order_they_are_read_in() -> None:
    """The rules are made of each policy's first result as the results are read back (the spill keeps them as it
    adds them, no pass over the spill first): the admission chain's results are read ahead of those added
    before them, so a policy's rule (its default level, from the first result's validation actions) and the
    rules' order are theirs."""
    spill = ResultSpill()
    ref = Ref("v1", "Pod", "ns", "p", "u")
    later = ResultPairs()
    for policy in ("late", "both"):
        later.append(Result(policy, "ValidatingPolicy", "", "fail", "m", ref, validation_actions=("Audit",)), False)
    spill.add(later)
    ahead = AdmissionPairs()
    for policy in ("both", "first"):
        ahead.append(Result(policy, "MutatingPolicy", "", "fail", "m", ref, validation_actions=("Deny",)), False)
    spill.add(ahead)
    spilled = SpilledFindings(spill)
    text = _sarif(spilled, None)
    assert text == _sarif(list(spilled), None)
    rules = json.loads(text)["runs"][0]["tool"]["driver"]["rules"]
    assert [(r["id"], r["defaultConfiguration"]["level"]) for r in rules] == [
        ("MutatingPolicy/both", "error"), ("first", "error"), ("late", "warning"), ("ValidatingPolicy/both", "warning")]
