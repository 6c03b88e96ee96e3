"""Label and field selectors as the API server parses them from a query string (k8s.io/apimachinery labels,
fields): `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, comma-joined."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from tests.kubeapi.status import ApiError, bad_request

Requirement = Callable[[Mapping[str, str]], bool]

_SET = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_CMP = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_.-]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*$")


def _split(selector: str) -> list[str]:
    # commas inside `in (a,b)` do not separate requirements
    parts, depth, cur = [], 0, ""
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p for p in parts if p.strip()]


def parse_label_selector(selector: str) -> Requirement:
    reqs: list[Requirement] = []
    for part in _split(selector):
        if m := _SET.match(part):
            key, op, values = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",") if v.strip()}
            if op == "in":
                reqs.append(lambda labels, k=key, vs=values: k in labels and labels[k] in vs)
            else:
                reqs.append(lambda labels, k=key, vs=values: k not in labels or labels[k] not in vs)
        elif m := _CMP.match(part):
            key, op, value = m.group(1), m.group(2), m.group(3)
            if op == "!=":
                reqs.append(lambda labels, k=key, v=value: labels.get(k) != v)
            else:
                reqs.append(lambda labels, k=key, v=value: k in labels and labels[k] == v)
        elif m := _EXISTS.match(part):
            neg, key = m.group(1) == "!", m.group(2)
            reqs.append((lambda labels, k=key: k not in labels) if neg else (lambda labels, k=key: k in labels))
        else:
            raise _invalid("labelSelector", selector)
    return lambda labels: all(r(labels) for r in reqs)


_FIELDS = {"metadata.name": ("metadata", "name"), "metadata.namespace": ("metadata", "namespace")}


def parse_field_selector(selector: str) -> Callable[[Mapping[str, Any]], bool]:
    reqs: list[Callable[[Mapping[str, Any]], bool]] = []
    for part in _split(selector):
        m = _CMP.match(part)
        if not m or m.group(1) not in _FIELDS:
            raise _invalid("fieldSelector", selector, field_label=m.group(1) if m else None)
        path, op, value = _FIELDS[m.group(1)], m.group(2), m.group(3)

        def get(obj: Mapping[str, Any], path: tuple[str, str] = path) -> str:
            return str((obj.get(path[0]) or {}).get(path[1]) or "")

        if op == "!=":
            reqs.append(lambda obj, g=get, v=value: g(obj) != v)
        else:
            reqs.append(lambda obj, g=get, v=value: g(obj) == v)
    return lambda obj: all(r(obj) for r in reqs)


def _invalid(param: str, selector: str, field_label: str | None = None) -> ApiError:
    if field_label:
        return bad_request(f'field label not supported: {field_label}')
    return bad_request(f"unable to parse requirement: invalid {param}: {selector!r}")
