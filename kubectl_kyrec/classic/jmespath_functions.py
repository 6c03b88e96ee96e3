"""Kyverno's custom JMESPath functions (pkg/engine/jmespath/functions.go, arithmetic.go, time.go) with Go's
behaviour: RE2 regexes, go-wildcard, k8s Quantities, Go durations and time layouts, blang semver ranges.

Handlers validate their own arguments as Kyverno's do (validateArg), so they can be called directly with the
arguments go-jmespath would pass; error texts are Kyverno's (`JMESPath function 'x': argument #1 is not of
type string`).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
import hashlib
import ipaddress
import math
import random
import urllib.parse
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from kubectl_kyrec.classic import go_quantity
from kubectl_kyrec.classic.go_values import GoInt, deep_equal, is_number
from kubectl_kyrec.classic.jmespath_types import (
    ANY,
    ARRAY,
    NUMBER,
    OBJECT,
    STRING,
    Function,
    FunctionError,
)
from kubectl_kyrec.golang import time as go_time
from kubectl_kyrec.golang import wildcard
from kubectl_kyrec.golang.fmt import sprint
from kubectl_kyrec.golang.regexp import RegexSyntaxError, compile_re2
from kubectl_kyrec.golang.strconv import format_float


def _err(function: str, text: str) -> FunctionError:
    return FunctionError(f"JMESPath function '{function}': {text}")


def _type_err(function: str, index: int, expected: str) -> FunctionError:
    return _err(function, f"argument #{index} is not of type {expected}")


def _arg(function: str, args: tuple[Any, ...], index: int, kind: type) -> Any:
    """Kyverno's validateArg: reflect kind string (`string`) or float64 (`float64`)."""
    expected = "string" if kind is str else "float64"
    if index >= len(args):
        raise _err(function, f"{index + 1} argument is out of bounds ({len(args)})")
    value = args[index]
    if kind is str:
        if not isinstance(value, str):
            raise _type_err(function, index + 1, expected)
        return value
    # JSON numbers reach Kyverno as float64; a GoInt is a Go `int` handed to a handler directly
    if not is_number(value) or isinstance(value, GoInt):
        raise _type_err(function, index + 1, expected)
    return float(value)


def iface_to_string(value: Any) -> str:
    """Kyverno's ifaceToString: floats in 32-bit shortest 'f' form, bools as true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, GoInt):
        return str(int(value))
    if isinstance(value, (int, float)):
        return format_float(float(value), "f", 32)
    if isinstance(value, str):
        return value
    raise ValueError("error, undefined type cast")


# ---------------------------------------------------------------------------------------------- strings


def _go_upper(text: str) -> str:
    return "".join(c.upper() if len(c.upper()) == 1 else c for c in text)


def _go_lower(text: str) -> str:
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def _equal_fold(a: str, b: str) -> bool:
    if len(a) != len(b):
        return False
    return all(x == y or _go_lower(x) == _go_lower(y) or _go_upper(x) == _go_upper(y) for x, y in zip(a, b))


def jpf_compare(*args: Any) -> int:
    a, b = _arg("compare", args, 0, str), _arg("compare", args, 1, str)
    ab, bb = a.encode(), b.encode()
    return (ab > bb) - (ab < bb)


def jpf_equal_fold(*args: Any) -> bool:
    return _equal_fold(_arg("equal_fold", args, 0, str), _arg("equal_fold", args, 1, str))


def _go_replace(text: str, old: str, new: str, n: int) -> str:
    return text.replace(old, new, n if n >= 0 else -1)


def jpf_replace(*args: Any) -> str:
    text = _arg("replace", args, 0, str)
    old = _arg("replace", args, 1, str)
    new = _arg("replace", args, 2, str)
    n = _arg("replace", args, 3, float)
    return _go_replace(text, old, new, int(n))


def jpf_replace_all(*args: Any) -> str:
    text = _arg("replace_all", args, 0, str)
    return text.replace(_arg("replace_all", args, 1, str), _arg("replace_all", args, 2, str))


def jpf_to_upper(*args: Any) -> str:
    return _go_upper(_arg("to_upper", args, 0, str))


def jpf_to_lower(*args: Any) -> str:
    return _go_lower(_arg("to_lower", args, 0, str))


def jpf_trim(*args: Any) -> str:
    text = _arg("trim", args, 0, str)
    cutset = _arg("trim", args, 1, str)
    return text.strip(cutset) if cutset else text


def jpf_trim_prefix(*args: Any) -> str:
    text = _arg("trim_prefix", args, 0, str)
    return text.removeprefix(_arg("trim_prefix", args, 1, str))


def jpf_split(*args: Any) -> list[Any]:
    text = _arg("split", args, 0, str)
    sep = _arg("split", args, 1, str)
    if sep == "":
        return list(text)
    return list(text.split(sep))


def jpf_truncate(*args: Any) -> str:
    text = _arg("truncate", args, 0, str)
    length = _arg("truncate", args, 1, float)
    n = int(max(length, 0.0))
    return text[:n] if len(text) > n else text


# ---------------------------------------------------------------------------------------------- regex


def _compile(function: str, pattern: str) -> Any:
    try:
        return compile_re2(pattern)
    except RegexSyntaxError as exc:
        raise _err(function, str(exc)) from None


def _go_expand(template: str, match: Any) -> str:
    """Go Regexp.Expand: `$1`, `${1}`, `$name`, `${name}`, `$$`; unknown names expand to ''."""
    out: list[str] = []
    i = 0
    while i < len(template):
        c = template[i]
        if c != "$":
            out.append(c)
            i += 1
            continue
        rest = template[i + 1:]
        if rest.startswith("$"):
            out.append("$")
            i += 2
            continue
        brace = rest.startswith("{")
        j = 1 if brace else 0
        k = j
        while k < len(rest) and (rest[k].isalnum() and rest[k].isascii() or rest[k] == "_"):
            k += 1
        name = rest[j:k]
        if not name or (brace and (k >= len(rest) or rest[k] != "}")):
            out.append("$")
            i += 1
            continue
        consumed = k + (1 if brace else 0)
        i += 1 + consumed
        value: str | None = None
        if name.isdigit():
            num = int(name)
            if num <= match.re.groups:
                value = match.group(num)
        elif name in match.re.groupindex:
            value = match.group(name)
        out.append(value or "")
    return "".join(out)


def _replace_all(pattern: Any, src: str, repl: Callable[[Any], str]) -> str:
    """Go ReplaceAll: an empty match right after the previous match is not replaced."""
    out: list[str] = []
    pos = 0
    last_end = -1
    search_pos = 0
    while search_pos <= len(src):
        m = pattern.search(src, search_pos)
        if m is None:
            break
        start, end = m.span()
        if start == end and start == last_end:
            search_pos = start + 1
            continue
        out.append(src[pos:start])
        out.append(repl(m))
        pos = end
        last_end = end
        search_pos = end if end > start else end + 1
    out.append(src[pos:])
    return "".join(out)


def jp_regex_replace_all(*args: Any) -> str:
    regex = _arg("regex_replace_all", args, 0, str)
    try:
        src = iface_to_string(args[1])
    except ValueError:
        raise _type_err("regex_replace_all", 2, "String or Real") from None
    try:
        repl = iface_to_string(args[2])
    except ValueError:
        raise _type_err("regex_replace_all", 3, "String or Real") from None
    pattern = _compile("regex_replace_all", regex)
    return _replace_all(pattern, src, lambda m: _go_expand(repl, m))


def jp_regex_replace_all_literal(*args: Any) -> str:
    regex = _arg("regex_replace_all_literal", args, 0, str)
    try:
        src = iface_to_string(args[1])
    except ValueError:
        raise _type_err("regex_replace_all_literal", 2, "String or Real") from None
    try:
        repl = iface_to_string(args[2])
    except ValueError:
        raise _type_err("regex_replace_all_literal", 3, "String or Real") from None
    pattern = _compile("regex_replace_all_literal", regex)
    return _replace_all(pattern, src, lambda m: repl)


def jp_regex_match(*args: Any) -> bool:
    regex = _arg("regex_match", args, 0, str)
    try:
        src = iface_to_string(args[1])
    except ValueError:
        raise _type_err("regex_match", 2, "String or Real") from None
    try:
        pattern = compile_re2(regex)
    except RegexSyntaxError as exc:
        raise FunctionError(str(exc)) from None  # regexp.Match's error, unwrapped
    return pattern.search(src) is not None


def jp_pattern_match(*args: Any) -> bool:
    pattern = _arg("pattern_match", args, 0, str)
    try:
        src = iface_to_string(args[1])
    except ValueError:
        raise _type_err("pattern_match", 2, "String or Real") from None
    return wildcard.match(pattern, src)


def jp_label_match(*args: Any) -> bool:
    labels, match = args[0], args[1]
    if not isinstance(labels, dict):
        raise _type_err("label_match", 0, "Object")
    if not isinstance(match, dict):
        raise _type_err("label_match", 1, "Object")
    return all(k in match and deep_equal(match[k], v) for k, v in labels.items())


def jp_to_boolean(*args: Any) -> bool:
    text = _arg("to_boolean", args, 0, str)
    lowered = text.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise _err("to_boolean", f"lowercase argument must be 'true' or 'false' (provided: '{text}')")


# ---------------------------------------------------------------------------------------------- arithmetic


class _Scalar:
    def __init__(self, value: float) -> None:
        self.value = value


class _Quantity:
    def __init__(self, q: go_quantity.Quantity) -> None:
        self.q = q


class _Duration:
    def __init__(self, ns: int) -> None:
        self.ns = ns


_Operand = _Scalar | _Quantity | _Duration


def _operand(args: tuple[Any, ...], index: int, operator: str) -> _Operand:
    value = args[index] if index < len(args) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _Scalar(float(value))
    if isinstance(value, str):
        try:
            return _Quantity(go_quantity.parse(value))
        except go_quantity.QuantityError:
            pass
        try:
            return _Duration(go_time.parse_duration(value))
        except go_time.GoTimeError:
            pass
    raise _err(operator, "invalid operand")


def _operands(args: tuple[Any, ...], operator: str) -> tuple[_Operand, _Operand]:
    return _operand(args, 0, operator), _operand(args, 1, operator)


def _mismatch(operator: str) -> FunctionError:
    return _err(operator, "Types mismatch")


def _zero(operator: str) -> FunctionError:
    return _err(operator, "Zero divisor passed")


def _qstr(value: Decimal, fmt: str) -> str:
    return go_quantity.format_quantity(value, fmt)


def _scalar_quantity(value: float) -> go_quantity.Quantity:
    # Kyverno: resource.ParseQuantity(fmt.Sprintf("%v", f))
    return go_quantity.parse(sprint(value))


def _add(a: _Operand, b: _Operand, operator: str) -> Any:
    if isinstance(a, _Quantity) and isinstance(b, _Quantity):
        fmt = b.q.format if a.q.value == 0 else a.q.format
        return _qstr(a.q.value + b.q.value, fmt)
    if isinstance(a, _Duration) and isinstance(b, _Duration):
        return go_time.format_duration(a.ns + b.ns)
    if isinstance(a, _Scalar) and isinstance(b, _Scalar):
        return a.value + b.value
    raise _mismatch(operator)


def jp_add(*args: Any) -> Any:
    a, b = _operands(args, "add")
    return _add(a, b, "add")


def jp_sum(*args: Any) -> Any:
    items = args[0] if args else None
    if not isinstance(items, list):
        raise _mismatch("sum")
    if not items:
        raise _err("sum", "at least one element in the array is required")
    result = items[0]
    for item in items[1:]:
        a, b = _operands((result, item), "sum")
        result = _add(a, b, "sum")
    return result


def jp_subtract(*args: Any) -> Any:
    a, b = _operands(args, "subtract")
    if isinstance(a, _Quantity) and isinstance(b, _Quantity):
        fmt = b.q.format if a.q.value == 0 else a.q.format
        return _qstr(a.q.value - b.q.value, fmt)
    if isinstance(a, _Duration) and isinstance(b, _Duration):
        return go_time.format_duration(a.ns - b.ns)
    if isinstance(a, _Scalar) and isinstance(b, _Scalar):
        return a.value - b.value
    raise _mismatch("subtract")


def _quantity_times(q: go_quantity.Quantity, scalar: float) -> str:
    try:
        factor = _scalar_quantity(scalar)
    except go_quantity.QuantityError as exc:
        raise FunctionError(str(exc)) from None
    with decimal.localcontext(decimal.Context(prec=4000)):
        return _qstr(q.value * factor.value, q.format)


def _duration_from_seconds(seconds: float) -> int:
    ns = seconds * 1e9
    if math.isnan(ns) or math.isinf(ns) or abs(ns) >= 2**63:
        return -(2**63)  # Go's out-of-range float conversion on amd64
    return int(ns)


def jp_multiply(*args: Any) -> Any:
    a, b = _operands(args, "multiply")
    if isinstance(a, _Scalar):
        if isinstance(b, _Scalar):
            return a.value * b.value
        a, b = b, a
    assert isinstance(b, (_Scalar, _Quantity, _Duration))
    if isinstance(b, _Scalar):
        if isinstance(a, _Quantity):
            return _quantity_times(a.q, b.value)
        if isinstance(a, _Duration):
            return go_time.format_duration(_duration_from_seconds(a.ns / 1e9 * b.value))
    raise _mismatch("multiply")


def jp_divide(*args: Any) -> Any:
    a, b = _operands(args, "divide")
    if isinstance(a, _Quantity):
        if isinstance(b, _Quantity):
            divisor = float(b.q.value)
            if divisor == 0:
                raise _zero("divide")
            return float(a.q.value) / divisor
        if isinstance(b, _Scalar):
            if b.value == 0:
                raise _zero("divide")
            try:
                q = _scalar_quantity(b.value)
            except go_quantity.QuantityError as exc:
                raise FunctionError(str(exc)) from None
            scale = max(go_quantity.dec_scale(a.q.value), go_quantity.dec_scale(q.value))
            return _qstr(go_quantity.quo_round_down(a.q.value, q.value, scale), a.q.format)
    elif isinstance(a, _Duration):
        if isinstance(b, _Duration):
            if b.ns == 0:
                raise _zero("divide")
            return (a.ns / 1e9) / (b.ns / 1e9)
        if isinstance(b, _Scalar):
            if b.value == 0:
                raise _zero("divide")
            return go_time.format_duration(_duration_from_seconds((a.ns / 1e9) / b.value))
    elif isinstance(b, _Scalar):
        if b.value == 0:
            raise _zero("divide")
        return a.value / b.value
    raise _mismatch("divide")


def _go_mod(a: int, b: int) -> int:
    return int(math.fmod(a, b)) if abs(a) < 2**53 and abs(b) < 2**53 else a - b * int(a / b)


def jp_modulo(*args: Any) -> Any:
    a, b = _operands(args, "modulo")
    if isinstance(a, _Quantity) and isinstance(b, _Quantity):
        f1, f2 = float(a.q.value), float(b.q.value)
        if f1 != int(f1) or f2 != int(f2):
            raise _err("modulo", "Non-integer argument(s) passed for modulo")
        if int(f2) == 0:
            raise _zero("modulo")
        return _qstr(Decimal(_go_mod(int(f1), int(f2))), a.q.format)
    if isinstance(a, _Duration) and isinstance(b, _Duration):
        if b.ns == 0:
            raise _zero("modulo")
        return go_time.format_duration(_go_mod(a.ns, b.ns))
    if isinstance(a, _Scalar) and isinstance(b, _Scalar):
        if a.value != int(a.value) or b.value != int(b.value):
            raise _err("modulo", "Non-integer argument(s) passed for modulo")
        if int(b.value) == 0:
            raise _zero("modulo")
        return float(_go_mod(int(a.value), int(b.value)))
    raise _mismatch("modulo")


def jp_round(*args: Any) -> float:
    value = _arg("round", args, 0, float)
    length = _arg("round", args, 1, float)
    if math.isinf(length) or math.isnan(length) or length != math.trunc(length):
        raise _err("round", "Non-integer argument(s) passed for round off")
    if length < 0:
        # Kyverno formats argOutOfBoundsError without its two numbers
        raise _err("round", "%!d(MISSING) argument is out of bounds (%!d(MISSING))")
    shift = math.pow(10, int(length))
    scaled = Decimal(value * shift).quantize(Decimal(1), rounding=decimal.ROUND_HALF_UP)
    return float(scaled) / shift


# ---------------------------------------------------------------------------------------------- encoding


def _go_string(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def jp_base64_decode(*args: Any) -> str:
    text = _arg("base64_decode", args, 0, str)
    cleaned = text.replace("\r", "").replace("\n", "")
    try:
        if len(cleaned) % 4:
            raise binascii.Error
        return _go_string(base64.b64decode(cleaned, validate=True))
    except (binascii.Error, ValueError):
        bad = next((i for i, c in enumerate(cleaned)
                    if c not in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="), len(cleaned))
        if bad == len(cleaned):
            bad = (len(cleaned) // 4) * 4 if len(cleaned) % 4 else max(cleaned.find("="), 0)
        raise FunctionError(f"illegal base64 data at input byte {bad}") from None


def jp_base64_encode(*args: Any) -> str:
    return base64.b64encode(_arg("base64_encode", args, 0, str).encode()).decode("ascii")


def go_path_clean(path: str) -> str:
    """Go path.Clean / filepath.Clean on Unix."""
    if path == "":
        return "."
    rooted = path.startswith("/")
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts and parts[-1] != "..":
                parts.pop()
            elif not rooted:
                parts.append("..")
            continue
        parts.append(part)
    out = "/".join(parts)
    if rooted:
        return "/" + out
    return out or "."


def jp_path_canonicalize(*args: Any) -> str:
    return go_path_clean(_arg("path_canonicalize", args, 0, str))


def _hash(name: str, algorithm: str) -> Callable[..., str]:
    def handler(*args: Any) -> str:
        return hashlib.new(algorithm, _arg(name, args, 0, str).encode()).hexdigest()

    return handler


# ---------------------------------------------------------------------------------------------- data


def jp_semver_compare(*args: Any) -> bool:
    from kubectl_kyrec.golang.semver import SemverError, Version, parse, parse_range

    version_text = _arg("semver_compare", args, 0, str)
    range_text = _arg("semver_compare", args, 1, str)
    try:
        version = parse(version_text)
    except SemverError:
        version = Version(0, 0, 0)  # Kyverno ignores the parse error
    try:
        matches = parse_range(range_text)
    except SemverError as exc:
        raise FunctionError(str(exc)) from None
    return matches(version)


def jp_parse_json(*args: Any) -> Any:
    from kubectl_kyrec.golang.json import GoJSONError, unmarshal

    text = _arg("parse_json", args, 0, str)
    try:
        return unmarshal(text)
    except GoJSONError as exc:
        raise FunctionError(str(exc)) from None


def jp_parse_yaml(*args: Any) -> Any:
    from kubectl_kyrec.load.sigs_yaml import GoYAMLError, parse_yaml

    text = _arg("parse_yaml", args, 0, str)
    try:
        return parse_yaml(text)
    except GoYAMLError as exc:
        raise FunctionError(str(exc)) from None


def _int_number(value: float) -> int:
    if math.isinf(value) or math.isnan(value) or math.trunc(value) != value:
        raise ValueError(f"expected an integer number but got: {sprint(float(value))}")
    return int(value)


def jp_lookup(*args: Any) -> Any:
    container, key = args[0], args[1]
    if isinstance(container, dict):
        if not isinstance(key, str):
            raise _type_err("lookup", 2, "String")
        return container.get(key)
    if isinstance(container, list):
        if not is_number(key):
            raise _type_err("lookup", 2, "Number")
        try:
            index = _int_number(float(key))
        except ValueError as exc:
            raise FunctionError(f"JMESPath function 'lookup': argument #2: {exc}") from None
        if index < 0 or index > len(container) - 1:
            return None
        return container[index]
    raise _type_err("lookup", 1, "Object or Array")


def jp_items(*args: Any) -> list[dict[str, Any]]:
    container, key_name, value_name = args[0], args[1], args[2]
    if not isinstance(key_name, str):
        raise _type_err("items", 2, "String")
    if not isinstance(value_name, str):
        raise _type_err("items", 3, "String")
    if isinstance(container, dict):
        return [{key_name: k, value_name: container[k]} for k in sorted(container, key=lambda s: s.encode())]
    if isinstance(container, list):
        return [{key_name: float(i), value_name: v} for i, v in enumerate(container)]
    raise _type_err("items", 1, "Object or Array")


def jp_object_from_lists(*args: Any) -> dict[str, Any]:
    keys, values = args[0], args[1]
    if not isinstance(keys, list):
        raise _type_err("object_from_lists", 1, "Array")
    if not isinstance(values, list):
        raise _type_err("object_from_lists", 2, "Array")
    out: dict[str, Any] = {}
    for i, key in enumerate(keys):
        try:
            name = iface_to_string(key)
        except ValueError:
            raise _type_err("object_from_lists", 1, "StringArray") from None
        out[name] = values[i] if i < len(values) else None
    return out


def jp_x509_decode(*args: Any) -> Any:
    from kubectl_kyrec.classic.x509_certificate import x509_decode
    from kubectl_kyrec.golang.x509 import X509Error

    text = _arg("x509_decode", args, 0, str)
    try:
        return x509_decode(text)
    except X509Error as exc:
        raise FunctionError(str(exc)) from None


def jp_image_normalize(*args: Any) -> str:
    from kubectl_kyrec.classic.image_info import ImageError, get_image_info

    image = _arg("image_normalize", args, 0, str)
    try:
        return str(get_image_info(image))
    except ImageError as exc:
        raise _err("image_normalize", str(exc)) from None


def _go_ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _private_or_loopback(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    # Go's IP.IsLoopback and IP.IsPrivate (RFC 1918 and RFC 4193 only, unlike Python's is_private)
    if ip.is_loopback:
        return True
    if isinstance(ip, ipaddress.IPv4Address):
        return any(ip in ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
    return ip in ipaddress.ip_network("fc00::/7")


def jp_is_external_url(*args: Any) -> bool:
    text = _arg("is_external_url", args, 0, str)
    try:
        host = urllib.parse.urlsplit(text).hostname or ""
    except ValueError as exc:
        raise FunctionError(str(exc)) from None
    ip = _go_ip(host)
    if ip is not None:
        return not _private_or_loopback(ip)
    # Kyverno resolves the name with DNS; offline, only the names that always resolve locally are known
    lowered = host.lower().rstrip(".")
    if lowered == "localhost" or lowered.endswith(".localhost"):
        return False
    if host == "":
        raise FunctionError("lookup : no such host")
    return True


# ---------------------------------------------------------------------------------------------- time


def _time_arg(function: str, args: tuple[Any, ...], index: int) -> datetime.datetime:
    text = _arg(function, args, index, str)
    try:
        return go_time.parse_time(go_time.RFC3339, text)
    except go_time.GoTimeError as exc:
        raise FunctionError(str(exc)) from None


def _duration_arg(function: str, args: tuple[Any, ...], index: int) -> int:
    text = _arg(function, args, index, str)
    try:
        return go_time.parse_duration(text)
    except go_time.GoTimeError as exc:
        raise FunctionError(str(exc)) from None


def _sub(t2: datetime.datetime, t1: datetime.datetime) -> str:
    return go_time.format_duration(go_time.timedelta_ns(t2 - t1))


def _parse_layout(layout: str, text: str) -> datetime.datetime:
    try:
        return go_time.parse_time(layout or go_time.RFC3339, text)
    except go_time.GoTimeError as exc:
        raise FunctionError(str(exc)) from None


def time_functions(now: Callable[[], datetime.datetime]) -> list[Function]:
    s = [STRING]

    def time_since(*args: Any) -> str:
        layout = _arg("time_since", args, 0, str)
        ts1 = _arg("time_since", args, 1, str)
        ts2 = _arg("time_since", args, 2, str)
        t1 = _parse_layout(layout, ts1)
        t2 = _parse_layout(layout, ts2) if ts2 else now()
        return _sub(t2, t1)

    def time_now(*args: Any) -> str:
        # Kyverno formats time.Now() in the local zone, UTC in its container image
        return go_time.format_rfc3339(now().astimezone(datetime.UTC))

    def time_to_cron(*args: Any) -> str:
        t = _time_arg("time_to_cron", args, 0)
        return f"{t.minute} {t.hour} {t.day} {t.month} {t.isoweekday() % 7}"

    def time_add(*args: Any) -> str:
        t = _time_arg("time_to_cron", args, 0)
        d = _duration_arg("time_to_cron", args, 1)
        return go_time.format_rfc3339(t + go_time.to_timedelta(d))

    def time_parse(*args: Any) -> str:
        from kubectl_kyrec.golang.strconv import parse_int

        layout = _arg("time_parse", args, 0, str)
        ts = _arg("time_parse", args, 1, str)
        try:
            parse_int(layout)
        except ValueError:
            return go_time.format_rfc3339(_parse_layout(layout, ts) if layout else _parse_layout("", ts))
        try:
            epoch = parse_int(ts)
        except ValueError:
            raise FunctionError(f'strconv.ParseInt: parsing "{ts}": invalid syntax') from None
        return go_time.format_rfc3339(datetime.datetime.fromtimestamp(epoch, datetime.UTC))

    def time_utc(*args: Any) -> str:
        return go_time.format_rfc3339(_time_arg("time_utc", args, 0).astimezone(datetime.UTC))

    def time_diff(*args: Any) -> str:
        t1 = _time_arg("time_diff", args, 0)
        t2 = _time_arg("time_diff", args, 1)
        return _sub(t2, t1)

    def time_before(*args: Any) -> bool:
        return _time_arg("time_before", args, 0) < _time_arg("time_before", args, 1)

    def time_after(*args: Any) -> bool:
        return _time_arg("time_after", args, 0) > _time_arg("time_after", args, 1)

    def time_between(*args: Any) -> bool:
        t = _time_arg("time_between", args, 0)
        start = _time_arg("time_between", args, 1)
        end = _time_arg("time_between", args, 2)
        return start < t < end

    def time_truncate(*args: Any) -> str:
        t = _time_arg("time_truncate", args, 0)
        d = _duration_arg("time_truncate", args, 1)
        return go_time.format_rfc3339(go_time.truncate(t, d))

    return [
        Function("time_since", [s, s, s], time_since),
        Function("time_now", [], time_now),
        Function("time_now_utc", [], time_now),
        Function("time_to_cron", [s], time_to_cron),
        Function("time_add", [s, s], time_add),
        Function("time_parse", [s, s], time_parse),
        Function("time_utc", [s], time_utc),
        Function("time_diff", [s, s], time_diff),
        Function("time_before", [s, s], time_before),
        Function("time_after", [s, s], time_after),
        Function("time_between", [s, s, s], time_between),
        Function("time_truncate", [s, s], time_truncate),
    ]


def kyverno_functions(now: Callable[[], datetime.datetime], rng: random.Random) -> dict[str, Function]:
    """Kyverno's GetFunctions: name -> Function, registered over go-jmespath's built-ins; `now` is the
    evaluation's clock (time_now*, time_since), `rng` the random source (`random`)."""
    from kubectl_kyrec.golang.regen import PatternError, generate

    s, n, a, o, any_ = [STRING], [NUMBER], [ARRAY], [OBJECT], [ANY]
    sn = [STRING, NUMBER]

    def jp_random(*args: Any) -> str:
        pattern = args[0]
        if pattern == "":
            raise FunctionError("no pattern provided")
        try:
            return generate(pattern, rng)
        except PatternError as exc:
            raise FunctionError(str(exc)) from None

    fns = [
        Function("compare", [s, s], jpf_compare),
        Function("equal_fold", [s, s], jpf_equal_fold),
        Function("replace", [s, s, s, n], jpf_replace),
        Function("replace_all", [s, s, s], jpf_replace_all),
        Function("to_upper", [s], jpf_to_upper),
        Function("to_lower", [s], jpf_to_lower),
        Function("trim", [s, s], jpf_trim),
        Function("trim_prefix", [s, s], jpf_trim_prefix),
        Function("split", [s, s], jpf_split),
        Function("regex_replace_all", [s, sn, sn], jp_regex_replace_all),
        Function("regex_replace_all_literal", [s, sn, sn], jp_regex_replace_all_literal),
        Function("regex_match", [s, sn], jp_regex_match),
        Function("pattern_match", [s, sn], jp_pattern_match),
        Function("label_match", [o, o], jp_label_match),
        Function("to_boolean", [s], jp_to_boolean),
        Function("add", [any_, any_], jp_add),
        Function("sum", [a], jp_sum),
        Function("subtract", [any_, any_], jp_subtract),
        Function("multiply", [any_, any_], jp_multiply),
        Function("divide", [any_, any_], jp_divide),
        Function("modulo", [any_, any_], jp_modulo),
        Function("round", [n, n], jp_round),
        Function("base64_decode", [s], jp_base64_decode),
        Function("base64_encode", [s], jp_base64_encode),
        Function("path_canonicalize", [s], jp_path_canonicalize),
        Function("truncate", [s, n], jpf_truncate),
        Function("semver_compare", [s, s], jp_semver_compare),
        Function("parse_json", [s], jp_parse_json),
        Function("parse_yaml", [s], jp_parse_yaml),
        Function("lookup", [[OBJECT, ARRAY], sn], jp_lookup),
        Function("items", [[OBJECT, ARRAY], s, s], jp_items),
        Function("object_from_lists", [a, a], jp_object_from_lists),
        Function("random", [s], jp_random),
        Function("x509_decode", [s], jp_x509_decode),
        Function("image_normalize", [s], jp_image_normalize),
        Function("is_external_url", [s], jp_is_external_url),
        Function("sha256", [s], _hash("sha256", "sha256")),
        Function("sha1", [s], _hash("sha1", "sha1")),
        Function("md5", [s], _hash("md5", "md5")),
    ]
    fns.extend(time_functions(now))
    return {f.name: f for f in fns}
