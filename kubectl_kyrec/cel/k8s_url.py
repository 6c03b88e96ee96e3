"""Kubernetes' CEL URL library (``library.URLs()``) over golang/url.py's port of Go's ``net/url``.

``url(s)``, ``isURL(s)`` and the members ``getScheme getHost getHostname getPort getEscapedPath
getQuery``. As in Kubernetes, a string is a URL when ``url.ParseRequestURI`` accepts it (an absolute
URI or an absolute path), and its parts come from ``url.Parse``. Error texts are Go's, wrapped as
Kubernetes wraps them (``URL parse error during conversion from string: parse "...": ...``).

A URL is ``{"@type": "kubernetes.URL", "url": <Go's URL.String()>}``: Kubernetes compares URLs by that
string, and the getters read the parts back from it with ``url.Parse``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn
from kubectl_kyrec.cel.k8s_dispatch import NO_SUCH_OVERLOAD, URL, field, tagged
from kubectl_kyrec.golang.url import Url, UrlError, parse, parse_request_uri, query, split_host_port, text_of


def _to_url(text: str) -> dict[str, Any]:
    try:
        parse_request_uri(text)
        url = parse(text)
    except UrlError as exc:
        raise CelFunctionError(f"URL parse error during conversion from string: {exc}") from None
    return tagged(URL, url=text_of(url.string()))


def _is_url(text: str) -> bool:
    try:
        parse_request_uri(text)
    except UrlError:
        return False
    return True


def _parts(value: Mapping[str, Any]) -> Url:
    try:
        return parse(field(value, URL, "url"))
    except UrlError:    # Go's String() output parses back: a hand-written map (see k8s_dispatch.field)
        raise CelFunctionError(NO_SUCH_OVERLOAD) from None


LIBRARY = Library("kubernetes.urls", [
    fn("url", Overload("string_to_url", ["string"], "map", _to_url)),
    fn("isURL", Overload("is_url_string", ["string"], "bool", _is_url)),
    fn("getScheme", Overload("url_get_scheme", ["map"], "string", lambda v: text_of(_parts(v).scheme),
                             member=True)),
    fn("getHost", Overload("url_get_host", ["map"], "string", lambda v: text_of(_parts(v).host), member=True)),
    fn("getHostname", Overload("url_get_hostname", ["map"], "string",
                               lambda v: text_of(split_host_port(_parts(v).host)[0]), member=True)),
    fn("getPort", Overload("url_get_port", ["map"], "string",
                           lambda v: text_of(split_host_port(_parts(v).host)[1]), member=True)),
    fn("getEscapedPath", Overload("url_get_escaped_path", ["map"], "string",
                                  lambda v: text_of(_parts(v).escaped_path()), member=True)),
    fn("getQuery", Overload("url_get_query", ["map"], "map<string, list<string>>",
                            lambda v: query(_parts(v).raw_query), member=True)),
])
