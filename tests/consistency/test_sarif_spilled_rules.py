"""SARIF of spilled results (render/sarif.py `_spilled_rules_and_summary`): its rules are made without a pass
over the spill, of the first result of each (source, policy, status) the spill kept as it added them."""

from __future__ import annotations

import json

from kubectl_kyrec.evaluate.pipeline import AdmissionPairs
from kubectl_kyrec.model import Ref, Result, ResultPairs
from kubectl_kyrec.render.result_spill import ResultSpill, SpilledFindings
from tests.consistency.test_fmttail import _sarif


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


def test_rules_of_results_of_no_policy_by_status_in_later_chunks() -> None:
    """Results of no policy have a rule per status (`kyrec/eval/<status>`): a chunk that brings no new (source,
    policy) but a status not met before still brings its rule."""
    spill = ResultSpill()
    ref = Ref("v1", "Pod", "ns", "p", "u")
    for outcome in ("fail", "error", "warn"):
        pairs = ResultPairs()
        for policy in ("", "p"):
            pairs.append(Result(policy, "ValidatingPolicy", "", outcome, "m", ref, validation_actions=("Deny",)), False)
        spill.add(pairs)
    spilled = SpilledFindings(spill)
    text = _sarif(spilled, None)
    assert text == _sarif(list(spilled), None)
    assert [r["id"] for r in json.loads(text)["runs"][0]["tool"]["driver"]["rules"]] == [
        "p", "kyrec/eval/fail", "kyrec/eval/error", "kyrec/eval/warn"]
