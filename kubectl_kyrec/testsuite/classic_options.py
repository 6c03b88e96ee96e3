"""What a Kyverno CLI test suite gives classic policies (kk: cmd/cli/kubectl-kyverno/store, variables, test.go).

- Values: `globalValues` and `policies[].resources[].values` become variables of every matching resource's
  context; `policies[].rules[].values` / `foreachValues` are added when the rule's context loads.
- Context loaders: without clusterResources the CLI has no cluster, so configMap and apiCall entries are
  absent; with them its fake client answers (here: a provider over the clusterResources). The CLI runs
  without registry access: imageRegistry entries are absent too.
- `apiCallResponses` answer apiCall entries first; `globalContextEntries` answer globalReference entries
  (both parsed in testsuite/mocks.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_kyrec.classic.context_loader import ContextSources
from kubectl_kyrec.evaluate.classic.engine import ClassicOptions
from kubectl_kyrec.testsuite.suite import LoadedSuite


def suite_options(loaded: LoadedSuite, kinds: Any) -> ClassicOptions:
    raw = loaded.values.raw or {}
    resource_values: dict[tuple[str, str], dict[str, Any]] = {}
    rule_values: dict[tuple[str, str], Mapping[str, Any]] = {}
    foreach_values: dict[tuple[str, str], Mapping[str, Any]] = {}
    global_values = raw.get("globalValues")
    if isinstance(global_values, Mapping):
        resource_values[("", "")] = dict(global_values)
    for policy in raw.get("policies") or []:
        if not isinstance(policy, Mapping):
            continue
        name = str(policy.get("name") or "")
        for res in policy.get("resources") or []:
            if isinstance(res, Mapping) and isinstance(res.get("values"), Mapping):
                resource_values[(name, str(res.get("name") or ""))] = dict(res["values"])
        for rule in policy.get("rules") or []:
            if not isinstance(rule, Mapping):
                continue
            key = (name, str(rule.get("name") or ""))
            if isinstance(rule.get("values"), Mapping):
                rule_values[key] = rule["values"]
            if isinstance(rule.get("foreachValues"), Mapping):
                foreach_values[key] = rule["foreachValues"]
    cluster = None
    if loaded.suite.cluster_resources:
        from kubectl_kyrec.cel.context import ObjectsProvider

        resource_of, kind_of = kinds.resource_of, kinds.kind_of
        objects = [d.obj for d in [*loaded.cluster_objects, *loaded.resources]]
        cluster = ObjectsProvider(objects, resource_of, None, kind_of=kind_of)
    sources = ContextSources(cluster=cluster, registry=False, api_mocks=loaded.mocks.http,
                             global_entries=loaded.mocks.global_entries,
                             rule_values=rule_values, foreach_values=foreach_values)
    return ClassicOptions(roles=loaded.roles, cluster_roles=loaded.cluster_roles, resource_values=resource_values,
                          sources=sources, cli=True)

