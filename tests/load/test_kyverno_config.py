"""Kyverno's resourceFilters: parsing, wildcard matching, the chart defaults, the ConfigMap."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.run_inputs.kyverno_config import (
    ResourceFilter,
    default_kyverno_config,
    filtered,
    find_kyverno_configmap,
    kyverno_config_for,
    kyverno_config_from_configmap,
    load_kyverno_config,
    parse_kind_selector,
    parse_resource_filters,
    wildcard_match,
)

DEFAULTS = default_kyverno_config().resource_filters


@pytest.mark.parametrize(("kind", "namespace", "name", "api_version", "want"), [
    ("Pod", "kube-system", "coredns-abc", "v1", True),
    ("ReplicaSet", "shop", "web-5d8f", "apps/v1", True),
    ("Event", "shop", "x.17a", "v1", True),
    ("Event", "shop", "x.17a", "events.k8s.io/v1", True),
    ("Namespace", "", "kube-system", "v1", True),          # the namespace filter covers the Namespace itself
    ("Node", "", "worker-1", "v1", True),
    ("Pod", "kyverno", "kyverno-admission-controller-7d9-abc", "v1", True),
    ("Secret", "kyverno", "kyverno-svc.kyverno.svc.kyverno-tls-pair", "v1", True),
    ("Pod", "shop", "web-5d8f-xyz", "v1", False),
    ("Deployment", "shop", "web", "apps/v1", False),
    ("Namespace", "", "shop", "v1", False),
    ("ClusterRole", "", "admin", "rbac.authorization.k8s.io/v1", False),
])
def test_chart_default_filters(kind: str, namespace: str, name: str, api_version: str, want: bool) -> None:
    assert filtered(kind, namespace, name, DEFAULTS, api_version=api_version) is want


def test_subresources_under_defaults() -> None:
    assert filtered("Pod", "kube-system", "p", DEFAULTS, subresource="exec")          # [*/*,kube-system,*]
    assert filtered("Pod", "shop", "p", DEFAULTS, subresource="binding")               # [Pod/binding,*,*]
    assert not filtered("Pod", "shop", "p", DEFAULTS, subresource="exec")


def test_bare_star_kind_does_not_cover_subresources() -> None:
    filters = parse_resource_filters("[*,kube-system,*]")
    assert filtered("Pod", "kube-system", "p", filters)
    assert not filtered("Pod", "kube-system", "p", filters, subresource="exec")


def test_background_scans_skip_filters_by_default() -> None:
    config = default_kyverno_config()
    assert config.background_scan_filters() == ()
    assert config.background_scan_filters(skip_resource_filters=False) == DEFAULTS


@pytest.mark.parametrize(("selector", "want"), [
    ("Pod", ("*", "*", "Pod", "")),
    ("*", ("*", "*", "*", "")),
    ("*/*", ("*", "*", "*", "*")),
    ("Pod/binding", ("*", "*", "Pod", "binding")),
    ("*/scale", ("*", "*", "*", "scale")),
    ("v1/Pod", ("*", "v1", "Pod", "")),
    ("v1beta1/Pod/status", ("*", "v1beta1", "Pod", "status")),
    ("apps/v1/Deployment", ("apps", "v1", "Deployment", "")),
    ("apps/v1/Deployment/scale", ("apps", "v1", "Deployment", "scale")),
    ("Pod.status", ("*", "*", "Pod", "status")),
    ("a/b/c/d/e", ("", "", "", "")),
])
def test_kind_selectors(selector: str, want: tuple[str, str, str, str]) -> None:
    assert parse_kind_selector(selector) == want


def test_group_version_filters_need_the_api_version() -> None:
    filters = parse_resource_filters("[apps/v1/Deployment,*,*]")
    assert filtered("Deployment", "shop", "web", filters, api_version="apps/v1")
    assert not filtered("Deployment", "shop", "web", filters, api_version="extensions/v1beta1")
    assert not filtered("Deployment", "shop", "web", filters)   # unknown group: only '*' matches


def test_parsing_quirks_match_kyverno() -> None:
    # text outside brackets is ignored, nothing is trimmed, short groups leave "" (matches only "")
    filters = parse_resource_filters("junk [Pod, shop,*]\n[Secret,shop] [ConfigMap] [a,b,c,d]")
    assert [(f.kind, f.namespace, f.name) for f in filters] == [
        ("Pod", " shop", "*"), ("Secret", "shop", ""), ("ConfigMap", "", ""), ("ConfigMap", "", "")]
    assert not filtered("Pod", "shop", "web", filters)
    assert not filtered("Secret", "shop", "web", filters)
    # a group of four parts first in the list re-appends Go's zero filter, which matches nothing
    [zero] = parse_resource_filters("[a,b,c,d]")
    assert zero == ResourceFilter("", "", "", "", "", "", "")
    assert not filtered("Pod", "", "", [zero])


@pytest.mark.parametrize(("pattern", "text", "want"), [
    ("*", "anything", True), ("", "", True), ("", "x", False), ("s3:*", "s3:List", True),
    ("my-bucket/In*/Ka*/Ban", "my-bucket/India/Karnataka/Area1/Ban", True),
    ("my-bucket/In*/Ka*/Ban", "my-bucket/India/Karnataka/Bangalore", False),
    ("my-bucket?/abc*", "my-bucket1/abc", True), ("my-?-bucket/abc*", "my--bucket/abc", False),
    ("my-bucket/abc?", "my-bucket/abc", False), ("my-bucket/mnop*?", "my-bucket/mnop", False),
    ("my-bucket/mnop*?and", "my-bucket/mnopqand", True), ("a.b", "axb", False), ("a[b]", "a[b]", True),
])
def test_wildcards_follow_kyverno(pattern: str, text: str, want: bool) -> None:
    assert wildcard_match(pattern, text) is want


def _configmap(filters: str | None = None, namespace: str = "kyverno") -> dict[str, object]:
    data = {} if filters is None else {"resourceFilters": filters}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kyverno", "namespace": namespace},
            "data": data}


def test_configmap_in_the_state_wins_over_defaults() -> None:
    objects = [_configmap("[Pod,*,*]", namespace="other"), _configmap("[Secret,*,*]")]
    assert find_kyverno_configmap(objects) is objects[1]
    config = kyverno_config_for(objects)
    assert config.filtered("Secret", "a", "b") and not config.filtered("Pod", "kube-system", "p")
    assert kyverno_config_for([]).from_defaults
    assert kyverno_config_for(objects, configmap=_configmap("[Pod,*,*]")).filtered("Pod", "a", "b")


def test_configmap_without_filters_filters_nothing() -> None:
    config = kyverno_config_from_configmap(_configmap())
    assert config.resource_filters == () and not config.filtered("Pod", "kube-system", "p")


def test_load_from_file(tmp_path: Path) -> None:
    path = tmp_path / "kyverno.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kyverno, namespace: kyverno}\n"
                    "data:\n  resourceFilters: '[Event,*,*] [*/*,kube-system,*]'\n")
    config = load_kyverno_config(str(path))
    assert config.filtered("Pod", "kube-system", "p") and config.source is not None
    path.write_text("apiVersion: v1\nkind: Secret\n")
    with pytest.raises(InputError, match="expected one ConfigMap, found 0"):
        load_kyverno_config(str(path))
    path.write_text("a: [\n")
    with pytest.raises(InputError) as info:
        load_kyverno_config(str(path))
    assert str(info.value).startswith(f"{path}:2: bad YAML")
