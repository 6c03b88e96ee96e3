"""apimachinery's validation of names and labels (k8s.io/apimachinery/pkg/util/validation): every problem,
in its order and words. The API server checks an object's metadata with them (ValidateObjectMeta: its name,
label keys and values, annotation keys), Kubernetes' CEL format library exposes them (cel/k8s_format.py)."""

from __future__ import annotations

import re

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
