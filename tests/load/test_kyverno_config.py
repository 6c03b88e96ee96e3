"""Kyverno's resourceFilters: parsing, wildcard matching, the chart defaults, the ConfigMap."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.run_inputs.kyverno_config import (
    DEFAULT_RESOURCE_FILTERS,
    ResourceFilter,
    default_kyverno_config,
    filtered,
    find_kyverno_configmap,
    kyverno_config_for,
    kyverno_config_from_configmap,
    load_kyverno_config,
    matching_filter,
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


class _Walked(tuple):  # type: ignore[type-arg]
    """A filter list that counts how often it is walked through."""

    walks = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        _Walked.walks += 1
        return super().__iter__()


def _first_match_by_scan(kind: str, namespace: str, name: str, filters: tuple[ResourceFilter, ...],
                         api_version: str | None) -> ResourceFilter | None:
    """matching_filter's rule written out as a plain scan, to hold the indexed answers to."""
    from kubectl_kyrec.golang.wildcard import match
    from kubectl_kyrec.model import group_version

    group, version = group_version(api_version) if api_version else (("", "v1") if kind == "Namespace" else
                                                                     (None, None))
    for f in filters:
        if not ((f.group == "*" if group is None else match(f.group, group))
                and (f.version == "*" if version is None else match(f.version, version))
                and match(f.kind, kind) and match(f.subresource, "")):
            continue
        if match(f.namespace, namespace) and match(f.name, name):
            return f
        if kind == "Namespace" and group == "" and version == "v1" and match(f.namespace, name):
            return f
    return None


def test_matching_filter_walks_the_entries_once_per_kind_with_the_same_first_match() -> None:
    # apply's planning asks about every downstream: 3,000 ConfigMaps walked ~100 default entries each (2.5 s
    # of its CPU under a profiler); the entries of one kind are now picked once
    filters = _Walked(parse_resource_filters(DEFAULT_RESOURCE_FILTERS + "[ConfigMap,team-*,skip-?][Pod,*,x]"))
    questions = [(kind, api_version, namespace, name)
                 for kind, api_version in (("ConfigMap", "v1"), ("Namespace", "v1"), ("Namespace", None),
                                           ("Pod", None), ("Deployment", "apps/v1"), ("Event", "events.k8s.io/v1"))
                 for namespace in ("", "kyverno", "kube-system", "team-a", "default")
                 for name in ("x", "skip-1", "kube-system", "kyverno", "web")]
    plain = tuple(filters)
    _Walked.walks = 0
    for _ in range(20):
        for kind, api_version, namespace, name in questions:
            got = matching_filter(kind, namespace, name, filters, api_version=api_version)
            assert got == _first_match_by_scan(kind, namespace, name, plain, api_version), \
                (kind, api_version, namespace, name)
    assert _Walked.walks <= 6            # one walk per kind asked about, not one per question
    assert matching_filter("ConfigMap", "team-a", "skip-1", filters, api_version="v1") is not None
    assert matching_filter("ConfigMap", "team-a", "skip-12", filters, api_version="v1") is None
