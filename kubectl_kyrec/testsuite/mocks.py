"""A test's `apiCallResponses` and `globalContextEntries`: the offline stand-ins Kyverno's CLI gives both
classic context entries and the CEL libraries (kk: cmd/cli/kubectl-kyverno/apis/v1alpha1/test.go
ValidateAPICallResponses / ValidateGlobalContextEntries, store/gctx_load.go, store/gctx_resolve.go,
commands/test/test.go buildHTTPMockIndex).

Checked as the CLI checks them before a run (a bad entry makes the whole test an error, with the CLI's
text), `resourceFiles` read relative to the test, and each entry's data resolved once: `data`, else the
resources as a list, then `fieldPath`, then the named `projections` (JMESPath).
"""

from __future__ import annotations

import json
import posixpath
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.errors import EngineError, InputError
from kubectl_kyrec.golang.strconv import quote as _q  # Go's %q
from kubectl_kyrec.model import Document, Source


@dataclass(frozen=True)
class TestMocks:
    """`http`: "METHOD:url" (or the bare url when the entry names no method) -> (status code, body);
    `global_entries`: entry name -> its resolved data."""

    __test__ = False   # not a pytest class, whatever its name

    http: Mapping[str, tuple[int, Any]] = field(default_factory=dict)
    global_entries: Mapping[str, Any] = field(default_factory=dict)


def parse_mocks(test: Mapping[str, Any], source: Source, resolve: Callable[[str], str],
                load: Callable[[list[str]], list[Document]]) -> TestMocks:
    """The test's mocks, checked and resolved. InputError with Kyverno's text at the test's source."""

    def fail(message: str) -> InputError:
        return InputError(message, source)

    http: dict[str, tuple[int, Any]] = {}
    for i, entry in enumerate(_listed(test.get("apiCallResponses"))):
        key, url, status, body = _api_call_response(i, entry, fail)
        if key in http:
            raise fail(f"apiCallResponses: duplicate entry for {_q(url)} (key {_q(key)}) — each method+url "
                       "combination must be unique")
        http[key] = (status, body)
    entries = _listed(test.get("globalContextEntries"))
    seen: set[str] = set()
    for entry in entries:
        _check_global_entry(entry, seen, fail)
    resolved: dict[str, Any] = {}
    for entry in entries:
        name = str(entry.get("name"))
        if entry.get("resourceFiles") is not None:
            resources: list[Any] = []
            for path in entry["resourceFiles"]:
                try:
                    resources.extend(d.obj for d in load([resolve(str(path).strip())]) if d.obj)
                except InputError as exc:
                    raise fail(f"error: failed to load globalContextEntries resource files: globalContextEntries "
                               f"{_q(name)} resourceFiles {_q(str(path))}: {exc.message}") from None
            entry = {**entry, "resources": resources}
        resolved[name] = _resolve(entry, fail)
    return TestMocks(http, resolved)


def _listed(value: Any) -> list[Mapping[str, Any]]:
    return [e for e in value or [] if isinstance(e, Mapping)] if isinstance(value, list) else []


def _api_call_response(i: int, e: Mapping[str, Any],
                       fail: Callable[[str], InputError]) -> tuple[str, str, int, Any]:
    url = str(e.get("url") or "").strip()
    url_path = str(e.get("urlPath") or "").strip()
    if not url and not url_path:
        raise fail(f"apiCallResponses[{i}]: either url or urlPath is required")
    if url and url_path:
        raise fail(f"apiCallResponses[{i}]: url and urlPath are mutually exclusive")
    if url:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https"):
            raise fail(f"apiCallResponses[{i}]: url {_q(url)} must be an absolute https/http URL")
        if not parsed.hostname:
            raise fail(f"apiCallResponses[{i}]: url {_q(url)} has scheme but no host")
    if url_path and not url_path.startswith("/"):
        raise fail(f"apiCallResponses[{i}]: urlPath {_q(url_path)} must be an absolute path starting with '/'")
    method = str(e.get("method") or "").strip().upper()
    if method not in ("", "GET", "POST"):
        raise fail(f"apiCallResponses[{i}]: method must be GET or POST")
    label = url or url_path
    raw_response = e.get("response")
    response: Mapping[str, Any] = raw_response if isinstance(raw_response, Mapping) else {}
    body = response.get("body")
    if body is None:
        raise fail(f"apiCallResponses[{i}] {_q(label)}: response.body is required")
    if not isinstance(body, Mapping):
        raise fail(f"apiCallResponses[{i}] {_q(label)}: response.body must be a JSON object")
    status = response.get("statusCode") or 0
    if not isinstance(status, int) or isinstance(status, bool):
        raise fail(f"apiCallResponses[{i}] {_q(label)}: statusCode must be an integer")
    if status and not 100 <= status <= 599:
        raise fail(f"apiCallResponses[{i}] {_q(label)}: statusCode {status} must be between 100 and 599")
    return (f"{method}:{label}" if method else label), label, status or 200, body


def _check_global_entry(e: Mapping[str, Any], seen: set[str], fail: Callable[[str], InputError]) -> None:
    name = str(e.get("name") or "").strip()
    if not name:
        raise fail("globalContextEntries: name is required")
    if name in seen:
        raise fail(f"globalContextEntries: duplicate name {_q(name)}")
    seen.add(name)
    raw_name = str(e.get("name"))
    for p in _listed(e.get("projections")):
        if not str(p.get("name") or "").strip():
            raise fail(f"globalContextEntries entry {_q(raw_name)}: projection name is required")
        if not str(p.get("path") or "").strip():
            raise fail(f"globalContextEntries entry {_q(raw_name)} projection {_q(str(p.get('name')))}: path is "
                       "required")
    sources = [k for k in ("data", "resources", "resourceFiles") if e.get(k) is not None]
    if len(sources) > 1:
        raise fail(f"globalContextEntries entry {_q(raw_name)}: data, resources, and resourceFiles are mutually "
                   "exclusive")
    if not sources:
        raise fail(f"globalContextEntries entry {_q(raw_name)}: one of data, resources, or resourceFiles is "
                   "required")
    if e.get("data") is not None and not isinstance(e["data"], Mapping):
        raise fail(f"globalContextEntries entry {_q(raw_name)}: data must be a JSON object")
    for j, r in enumerate(_sequence(e.get("resources"))):
        if not isinstance(r, Mapping):
            raise fail(f"globalContextEntries entry {_q(raw_name)} resources[{j}]: must be a JSON object "
                       "(Kubernetes resource manifest)")
    for j, f in enumerate(_sequence(e.get("resourceFiles"))):
        path = str(f or "").strip()
        if not path:
            raise fail(f"globalContextEntries entry {_q(raw_name)} resourceFiles[{j}]: file path must not be empty")
        if path.startswith("/"):
            raise fail(f"globalContextEntries entry {_q(raw_name)} resourceFiles[{j}]: file path must not be "
                       "absolute")
        clean = posixpath.normpath(path)
        if clean == ".." or clean.startswith("../"):
            raise fail(f"globalContextEntries entry {_q(raw_name)} resourceFiles[{j}]: file path must not escape "
                       "the test directory")


def _sequence(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else []


def _resolve(e: Mapping[str, Any], fail: Callable[[str], InputError]) -> Any:
    """kk: resolveGlobalContextMockData: the root, `fieldPath` applied, then the projections by name."""
    import datetime

    from kubectl_kyrec.classic.jmespath_eval import Engine

    # resolved while the suite loads, before the evaluation's clock is handed down: a time function here
    # reads the wall clock, as it always has (the suite loader is no pure stage)
    search = Engine(now=lambda: datetime.datetime.now(datetime.UTC)).search
    name = str(e.get("name"))
    root: Any = list(e["resources"]) if e.get("resources") is not None else e.get("data")
    if root is None:
        return None
    root = json.loads(json.dumps(root))   # what the CLI decodes from the entry's JSON
    if e.get("fieldPath"):
        try:
            root = search(str(e["fieldPath"]), root)
        except EngineError as exc:
            raise fail(f"globalContextEntries {_q(name)} fieldPath: {exc}") from None
    projections = _listed(e.get("projections"))
    if not projections:
        return root
    out: dict[str, Any] = {}
    for p in projections:
        try:
            out[str(p["name"])] = search(str(p["path"]), root)
        except EngineError as exc:
            raise fail(f"globalContextEntries {_q(name)} projection {_q(str(p['name']))} path "
                       f"{_q(str(p['path']))}: {exc}") from None
    return out
