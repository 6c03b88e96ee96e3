"""A Kyverno CLI test suite's classic generate rules, run as the suite's rows read them: the cluster the
CLI's fake client holds (the test's objects and the clone sources) and Kyverno's rows (testsuite.rows)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_kyrec.evaluate.classic.generate_objects import ClassicGenerateRule, generate_rules
from kubectl_kyrec.evaluate.classic.generate_triggers import run_classic_generate
from kubectl_kyrec.evaluate.generating.engine import GenerateOptions
from kubectl_kyrec.evaluate.generating.outcomes import TriggerStatus
from kubectl_kyrec.evaluate.subjects import KindLookup
from kubectl_kyrec.model import Document


def _is_clone_rule(unit: ClassicGenerateRule) -> bool:
    """test.go: a rule whose top-level `clone` has a field or whose cloneList names kinds (foreach not looked at)."""
    g = unit.generation
    clone, clone_list = g.get("clone"), g.get("cloneList")
    return bool((isinstance(clone, Mapping) and any(v not in (None, "") for v in clone.values()))
                or (isinstance(clone_list, Mapping) and clone_list.get("kinds")))


def suite_clone_sources(loaded: Any) -> list[Document]:
    """The cloneSourceResources the Kyverno CLI reads (kk: commands/test/test.go, processor/generate.go): for
    each clone / cloneList rule, the file of the *first* results entry naming its policy (`name` or
    `ns/name`) and rule; a later entry's file is not read, and a first entry without one gives nothing
    (the CLI then reads the test directory as the file and fails)."""
    out: list[Document] = []
    for policy in loaded.policies.classic:
        for unit in generate_rules(policy):
            if not _is_clone_rule(unit):
                continue
            for entry in loaded.suite.results:
                namespace, _, name = entry.policy.rpartition("/")
                if name != unit.meta.name or namespace != unit.policy_namespace or entry.rule != unit.rule_name:
                    continue
                out.extend(d for d in loaded.clone_sources.get(entry.index, []) if d not in out)
                break
    return out


def suite_generated(loaded: Any, operation: str, kinds: KindLookup, now: Any, classic_options: Any) -> list[Any]:
    """A test suite's classic generate rules as its rows read them (testsuite.rows.Generated).

    The generator reads a cluster holding the test's objects and the clone sources the CLI would read
    (suite_clone_sources). The CLI's fake cluster holds only the trigger and those sources, and one failing
    rule drops every generated resource of the policy for that trigger; kyrec reads the objects as a
    cluster holds them and fails only the rule (docs/compatibility.md)."""
    from kubectl_kyrec.testsuite.row_types import Generated

    state = [*loaded.values.namespaces, *loaded.cluster_objects, *suite_clone_sources(loaded)]
    out = run_classic_generate(loaded.policies.classic, loaded.resources, state, kinds=kinds,
                               options=GenerateOptions(now=now, operation=operation, user_info=loaded.user_info,
                                                       user_info_known=True,
                                                       namespace_labels=loaded.values.namespace_labels),
                               exceptions=loaded.policies.classic_exceptions, sources=classic_options.sources,
                               resource_values=classic_options.resource_values)
    rows = []
    for o in out.outcomes:
        unit = o.policy
        assert isinstance(unit, ClassicGenerateRule)
        result = o.result.result if o.result is not None else "error"
        message = o.result.message if o.result is not None else o.message
        rows.append(Generated(unit.meta.name, o.trigger.ref, result, message or o.message, tuple(o.objects),
                              o.status is TriggerStatus.SKIPPED, unit.rule_name))
    return rows
