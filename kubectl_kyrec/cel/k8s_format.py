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
from kubectl_kyrec.cel.k8s_url import UrlError, parse_request_uri

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + "(\\." + _LABEL_FMT + ")*"
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _QNAME_FMT + ")?"

_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
              "and must start and end with an alphanumeric character")
_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
                  "or '.', and must start and end with an alphanumeric character")
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character")
_QNAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
              "alphanumeric character")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
                    "or '.', and must start and end with an alphanumeric character")

_UUID = re.compile(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})")
# strfmt accepts several RFC 3339 / ISO 8601 layouts; this covers the RFC 3339 family (approximate).
_DATETIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?"
                       r"([Zz]|[+-][0-9]{2}:?[0-9]{2})?")


def _full(pattern: str, value: str) -> bool:
    return re.fullmatch(pattern, value) is not None


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def regex_error(msg: str, pattern: str, *examples: str) -> str:
    """apimachinery's RegexError, double space before "or" included."""
    if not examples:
        return f"{msg} (regex used for validation is '{pattern}')"
    listed = "".join((" or " if i else "") + f"'{e}', " for i, e in enumerate(examples))
    return f"{msg} (e.g. {listed}regex used for validation is '{pattern}')"


def is_dns1123_label(value: str) -> list[str]:
    errs = [max_len_error(63)] if len(value) > 63 else []
    if not _full(_LABEL_FMT, value):
        if _full(_SUBDOMAIN_FMT, value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_LABEL_MSG, _LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = [max_len_error(253)] if len(value) > 253 else []
    if not _full(_SUBDOMAIN_FMT, value):
        errs.append(regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = [max_len_error(63)] if len(value) > 63 else []
    if not _full(_DNS1035_FMT, value):
        errs.append(regex_error(_DNS1035_MSG, _DNS1035_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + m for m in is_dns1123_subdomain(prefix)]
    else:
        return [("a qualified name " + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
                 + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + max_len_error(63))
    if not _full(_QNAME_FMT, name):
        errs.append("name part " + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_valid_label_value(value: str) -> list[str]:
    errs = [max_len_error(63)] if len(value) > 63 else []
    if not _full(_LABEL_VALUE_FMT, value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


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
