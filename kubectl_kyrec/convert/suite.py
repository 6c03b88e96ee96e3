"""A Kyverno test suite (`kyverno-test.yaml`) for ClusterPolicies -> the same suite for their conversions
(docs/convert.md#test-suites): the policy files are the written ones, each results row names the converted
policy that holds its rule (`<policy>-<rule>` where the rules were split) with the kind's `is<Kind>` flag and
no `rule`, and every other file the suite names is the original's, reached from the new suite's directory.

What the conversion cannot carry refuses the suite by field (Unconvertible): classic PolicyExceptions
(`exceptions`; a CEL policy takes `policies.kyverno.io` exceptions), per-policy values (`policies:` in the
values, keyed by the classic rule names), fields for payloads, mocks and contexts the classic suites of the
corpus do not use, and rows whose policy or rule the conversion does not hold."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.convert.cel_text import Unconvertible

# the flag a row of each converted kind carries (cli.kyverno.io/v1alpha1 TestResult)
_FLAGS = {"ValidatingPolicy": "isValidatingPolicy", "MutatingPolicy": "isMutatingPolicy",
          "GeneratingPolicy": "isGeneratingPolicy", "ImageValidatingPolicy": "isImageValidatingPolicy"}
# top-level fields naming files (one, or a list), rewritten to reach the original files
_FILE_LISTS = ("resources", "targetResources", "clusterResources")
_FILE_ONE = ("variables", "userinfo")
_ROW_FILES = ("generatedResource", "patchedResources", "cloneSourceResource")
_ROW_FILE_LISTS = ("generatedResources",)
_REFUSED = {"exceptions": "classic PolicyExceptions do not apply to the converted kinds",
            "paramResources": "not converted", "jsonPayload": "not converted", "jsonPayloads": "not converted",
            "httpPayloads": "not converted", "envoyPayloads": "not converted", "context": "not converted",
            "apiCallResponses": "not converted", "globalContextEntries": "not converted"}


@dataclass(frozen=True)
class Converted:
    """One classic policy of a suite's policy file, as converted."""
    target: str                                  # the file it was written to
    name: str                                    # the classic policy's name
    rule_policies: Mapping[str, tuple[str, str]]  # rule -> (converted policy name, kind)
    rule_skips: Mapping[str, str]                # rule -> what a `skip` row becomes ("" : cannot say)


def convert_suite(suite: dict[str, Any], old_dir: str, new_dir: str, converted: Mapping[str, list[Converted]],
                  read_values: Callable[[str], Any]) -> tuple[dict[str, Any], list[str]]:
    """`converted`: each original policy file (normalized absolute path) -> its policies, present only when
    every classic policy in it was converted; `read_values(path)` loads a values file. Returns the suite and
    the differences to name in its header (rows that say less than the original's)."""
    def moved(relative: str) -> str:
        return os.path.relpath(os.path.normpath(os.path.join(old_dir, relative)), new_dir)

    for key, why in _REFUSED.items():
        if suite.get(key):
            raise Unconvertible(key, why)
    out = dict(suite)
    policies = []
    held: dict[str, Converted] = {}
    for i, relative in enumerate(suite.get("policies") or []):
        found = converted.get(os.path.normpath(os.path.join(old_dir, str(relative))))
        if found is None:
            raise Unconvertible(f"policies[{i}]", f"{relative}: not every policy in it was converted")
        for conv in found:
            policies.append(os.path.relpath(conv.target, new_dir))
            held[conv.name] = conv
    out["policies"] = policies
    for key in _FILE_LISTS:
        if suite.get(key):
            out[key] = [moved(str(p)) for p in suite[key]]
    for key in _FILE_ONE:
        if suite.get(key):
            out[key] = moved(str(suite[key]))
    values = suite.get("values")
    if values is None and suite.get("variables"):
        values = read_values(os.path.join(old_dir, str(suite["variables"])))
    if isinstance(values, Mapping) and values.get("policies"):
        raise Unconvertible("values.policies" if suite.get("values") is not None else "variables",
                            "values given per classic policy and rule; not converted")
    rows = [_row(row, f"results[{i}]", held, moved) for i, row in enumerate(suite.get("results") or [])]
    out["results"], differences = _combine(rows, held)
    return out, differences


def _row(row: Mapping[str, Any], at: str, held: Mapping[str, Converted],
         moved: Callable[[str], str]) -> tuple[dict[str, Any], str, str]:
    """The row for the converted policy, with the classic rule and what its `skip` becomes."""
    policy = str(row.get("policy", ""))
    conv = held.get(policy)
    if conv is None:
        raise Unconvertible(f"{at}.policy", f"{policy!r} is not a converted policy of the suite")
    rule = str(row.get("rule") or "")
    for prefix in ("autogen-cronjob-", "autogen-"):
        # the CEL kinds' autogen answers under the policy's own name
        if rule.startswith(prefix) and rule[len(prefix):] in conv.rule_policies:
            rule = rule[len(prefix):]
            break
    if rule:
        if rule not in conv.rule_policies:
            raise Unconvertible(f"{at}.rule", f"{policy!r} has no rule {rule!r}")
        name, kind = conv.rule_policies[rule]
    else:
        targets = set(conv.rule_policies.values())
        if len(targets) != 1:
            raise Unconvertible(at, f"a row without a rule for {policy!r}, which became several policies")
        name, kind = next(iter(targets))
        rule = next(iter(conv.rule_policies))
    out = {k: v for k, v in row.items() if k not in ("rule", "policy") and not str(k).startswith("is")}
    out = {"policy": name, _FLAGS[kind]: True, **out}
    for key in _ROW_FILES:
        if row.get(key):
            out[key] = moved(str(row[key]))
    for key in _ROW_FILE_LISTS:
        if row.get(key):
            out[key] = [moved(str(p)) for p in row[key]]
    if out.get("result") == "skip":
        out["result"] = conv.rule_skips.get(rule, "")
        if not out["result"]:
            raise Unconvertible(f"{at}.result", f"skip: rule {rule!r} has preconditions and conditional anchors "
                                                "or foreach; which one skipped decides whether the conversion "
                                                "answers skip or pass")
    return out, policy, rule


def _combine(rows: list[tuple[dict[str, Any], str, str]],
             held: Mapping[str, Converted]) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows of rules that became one ValidatingPolicy, per resource: the policy fails where any of its rules'
    rows expects a failure; it passes (or skips) only where every rule it holds has a row saying so. A
    resource for which the suite says nothing about some of the policy's rules gets no row (a difference)."""
    out: list[dict[str, Any]] = []
    differences: list[str] = []
    merged: dict[tuple[str, str, str], dict[str, Any]] = {}
    expected: dict[tuple[str, str, str], dict[str, str]] = {}
    for row, policy, rule in rows:
        name = row["policy"]
        members = {r for r, (n, _) in held[policy].rule_policies.items() if n == name}
        if not row.get("isValidatingPolicy") or len(members) == 1:
            out.append(row)
            continue
        for resource in row.get("resources") or []:
            key = (name, str(row.get("kind", "")), str(resource))
            if key not in merged:
                merged[key] = {**{k: v for k, v in row.items() if k != "resources"}, "resources": [resource]}
                out.append(merged[key])
            expected.setdefault(key, {})[rule] = str(row["result"])
    for key, by_rule in expected.items():
        name = key[0]
        owner = next(p for p in held.values() if name in {n for n, _ in p.rule_policies.values()})
        members = {r for r, (n, _) in owner.rule_policies.items() if n == name}
        results = set(by_rule.values())
        if "fail" in results:
            merged[key]["result"] = "fail"
        elif members <= set(by_rule):
            merged[key]["result"] = "pass" if "pass" in results else results.pop()
        else:
            out.remove(merged[key])
            differences.append(f"{key[1]} {key[2]}: no row for {name} (the suite says nothing about rules "
                               f"{sorted(members - set(by_rule))} of it for this resource)")
    return out, differences
