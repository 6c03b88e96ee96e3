"""Kubernetes' CEL format library (``library.Format()``), as far as the engine allows.

Kubernetes provides ``format.<name>()`` (a Format value for each named format), ``format.named(name)``
returning ``optional<Format>``, and ``<Format>.validate(s)`` returning ``optional<list<string>>``
(``none`` when the string is valid, otherwise the error messages).

cel-expr-python cannot pass optional values across the Python boundary (a Python function declared to
return ``optional_type`` fails at run time with "Unimplemented type"), and ``decl`` has no optional type,
so ``format.named`` and ``validate`` are NOT declared: expressions using them fail to compile with
"undeclared reference". The ``format.<name>()`` constructors are declared (they return
``{"@type": "kubernetes.NamedFormat", "name": ...}``) and :func:`validate_format` holds the validators
with Kubernetes' messages, ready for the day the engine can return optionals.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
from collections.abc import Callable

from kubectl_kyrec.cel.decl import Library, Overload, fn
from kubectl_kyrec.cel.k8s_dispatch import FORMAT, tagged
from kubectl_kyrec.golang.url import UrlError, parse_request_uri
from kubectl_kyrec.k8s.validation import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
)

_UUID = re.compile(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})")
# strfmt accepts several RFC 3339 / ISO 8601 layouts; this covers the RFC 3339 family (approximate).
_DATETIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?"
                       r"([Zz]|[+-][0-9]{2}:?[0-9]{2})?")


def _mask_trailing_dash(name: str) -> str:
    # apimachinery's maskTrailingDash, which drops the character before the dash as well
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def _uri(value: str) -> list[str]:
    try:
        parse_request_uri(value)
    except UrlError as exc:
        return [str(exc)]
    return []


def _byte(value: str) -> list[str]:
    if _BASE64.fullmatch(value) is None:
        return ["invalid base64"]
    try:
        base64.b64decode(value, validate=True)
    except binascii.Error:
        return ["invalid base64"]
    return []


def _date(value: str) -> list[str]:
    if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value) is None:
        return ["invalid date"]
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        return ["invalid date"]
    return []


def _datetime(value: str) -> list[str]:
    if _DATETIME.fullmatch(value) is None:
        return ["invalid datetime"]
    try:
        datetime.datetime.fromisoformat(value.replace("z", "Z").replace("t", "T"))
    except ValueError:
        return ["invalid datetime"]
    return []


# format name -> (Kubernetes Format.Name, validator)
FORMATS: dict[str, tuple[str, Callable[[str], list[str]]]] = {
    "dns1123Label": ("DNS1123Label", is_dns1123_label),
    "dns1123Subdomain": ("DNS1123Subdomain", is_dns1123_subdomain),
    "dns1035Label": ("DNS1035Label", is_dns1035_label),
    "qualifiedName": ("QualifiedName", is_qualified_name),
    "dns1123LabelPrefix": ("DNS1123LabelPrefix", lambda s: is_dns1123_label(_mask_trailing_dash(s))),
    "dns1123SubdomainPrefix": ("DNS1123SubdomainPrefix",
                               lambda s: is_dns1123_subdomain(_mask_trailing_dash(s))),
    "dns1035LabelPrefix": ("DNS1035LabelPrefix", lambda s: is_dns1035_label(_mask_trailing_dash(s))),
    "labelValue": ("LabelValue", is_valid_label_value),
    "uri": ("URI", _uri),
    "uuid": ("uuid", lambda s: [] if _UUID.fullmatch(s) else ["does not match the UUID format"]),
    "byte": ("byte", _byte),
    "date": ("date", _date),
    "datetime": ("datetime", _datetime),
}


def validate_format(name: str, value: str) -> list[str]:
    """What ``format.<name>().validate(value)`` would hold: [] for a valid value, else the messages."""
    return FORMATS[name][1](value)


def _constructor(name: str) -> Overload:
    kube_name = FORMATS[name][0]
    return Overload(f"format.{name}", [], "map", lambda: tagged(FORMAT, name=kube_name))


LIBRARY = Library("kubernetes.format", [fn(f"format.{name}", _constructor(name)) for name in FORMATS])
