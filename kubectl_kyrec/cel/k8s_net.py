"""Kubernetes' CEL IP and CIDR libraries (``library.IP()``, ``library.CIDR()``) over Go's ``net/netip``.

``ip(s)``, ``isIP(s)``, ``ip.isCanonical(s)``, ``<IP>.family() isUnspecified() isLoopback()
isLinkLocalMulticast() isLinkLocalUnicast() isGlobalUnicast()``, ``string(ip)``; ``cidr(s)``,
``isCIDR(s)``, ``<CIDR>.containsIP(ip|string) containsCIDR(cidr|string) ip() masked() prefixLength()``,
``string(cidr)``. Parsing is a port of ``netip.ParseAddr``/``ParsePrefix`` with their error texts;
Kubernetes then rejects zones and IPv4-mapped IPv6 addresses.

Values: ``{"@type": "net.IP", "ip": <canonical text>}`` and ``{"@type": "net.CIDR", "cidr":
<canonical address>/<bits>}`` (the address is kept unmasked, as ``netip.Prefix`` keeps it), so
``==`` matches Go's comparison of ``netip.Addr``/``netip.Prefix`` values.
``type(x) == net.IP`` is not available: the engine has no such type, these are maps.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn
from kubectl_kyrec.cel.k8s_dispatch import CIDR, IP, NO_SUCH_OVERLOAD, SharedMember, expect, tagged
from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.golang.strconv import quote as go_quote

_V4_IN_V6 = 0xFFFF << 32


class AddrError(ValueError, EngineError):
    """A netip parse failure; the message is Go's error text."""


@dataclass(frozen=True)
class Addr:
    """A netip.Addr: 32 or 128 bits; IPv4 addresses keep their 32-bit value."""

    bits: int
    value: int
    zone: str = ""

    @property
    def is4(self) -> bool:
        return self.bits == 32

    @property
    def is4in6(self) -> bool:
        return self.bits == 128 and self.value >> 32 == 0xFFFF

    def v6_value(self) -> int:
        """The 128-bit form (IPv4 addresses as IPv4-mapped), as netip stores them."""
        return self.value | _V4_IN_V6 if self.is4 else self.value


def _addr_error(text: str, msg: str, at: str = "") -> AddrError:
    suffix = f" (at {go_quote(at)})" if at else ""
    return AddrError(f"ParseAddr({go_quote(text)}): {msg}{suffix}")


def _parse_ipv4_fields(whole: str, part: str) -> int:
    value, pos, digits, fields = 0, 0, 0, [0, 0, 0, 0]
    for i, ch in enumerate(part):
        if "0" <= ch <= "9":
            if digits == 1 and value == 0:
                raise _addr_error(whole, "IPv4 field has octet with leading zero")
            value = value * 10 + ord(ch) - 48
            digits += 1
            if value > 255:
                raise _addr_error(whole, "IPv4 field has value >255")
        elif ch == ".":
            if i == 0 or i == len(part) - 1 or part[i - 1] == ".":
                raise _addr_error(whole, "IPv4 field must have at least one digit", part[i:])
            if pos == 3:
                raise _addr_error(whole, "IPv4 address too long")
            fields[pos] = value
            pos, value, digits = pos + 1, 0, 0
        else:
            raise _addr_error(whole, "unexpected character", part[i:])
    if pos < 3:
        raise _addr_error(whole, "IPv4 address too short")
    fields[3] = value
    return fields[0] << 24 | fields[1] << 16 | fields[2] << 8 | fields[3]


def _parse_ipv6(text: str) -> Addr:
    s, zone = text, ""
    if "%" in s:
        s, zone = s.split("%", 1)
        if not zone:
            raise _addr_error(text, "zone must be a non-empty string")
    groups = bytearray(16)
    ellipsis = -1
    if s.startswith("::"):
        ellipsis, s = 0, s[2:]
        if not s:
            return Addr(128, 0, zone)
    i = 0
    while i < 16:
        off, acc = 0, 0
        while off < len(s):
            c = s[off]
            if c in "0123456789abcdefABCDEF":
                acc = (acc << 4) + int(c, 16)
            else:
                break
            if off > 3:
                raise _addr_error(text, "each group must have 4 or less digits", s)
            off += 1
        if off == 0:
            raise _addr_error(text, "each colon-separated field must have at least one digit", s)
        if off < len(s) and s[off] == ".":
            if ellipsis < 0 and i != 12:
                raise _addr_error(
                    text, "embedded IPv4 address must replace the final 2 fields of the address", s)
            if i + 4 > 16:
                raise _addr_error(
                    text, "too many hex fields to fit an embedded IPv4 at the end of the address", s)
            v4 = _parse_ipv4_fields(text, s)
            groups[i:i + 4] = v4.to_bytes(4, "big")
            s, i = "", i + 4
            break
        groups[i], groups[i + 1] = acc >> 8, acc & 0xFF
        i += 2
        s = s[off:]
        if not s:
            break
        if s[0] != ":":
            raise _addr_error(text, "unexpected character, want colon", s)
        if len(s) == 1:
            raise _addr_error(text, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                raise _addr_error(text, "multiple :: in address", s)
            ellipsis, s = i, s[1:]
            if not s:
                break
    if s:
        raise _addr_error(text, "trailing garbage after address", s)
    if i < 16:
        if ellipsis < 0:
            raise _addr_error(text, "address string too short")
        n = 16 - i
        groups[ellipsis + n:16] = groups[ellipsis:i]
        groups[ellipsis:ellipsis + n] = bytes(n)
    elif ellipsis >= 0:
        raise _addr_error(text, "the :: must expand to at least one field of zeros")
    return Addr(128, int.from_bytes(groups, "big"), zone)


def parse_addr(text: str) -> Addr:
    """netip.ParseAddr."""
    for ch in text:
        if ch == ".":
            return Addr(32, _parse_ipv4_fields(text, text))
        if ch == ":":
            return _parse_ipv6(text)
        if ch == "%":
            raise _addr_error(text, "missing IPv6 address")
    raise _addr_error(text, "unable to parse IP")


def addr_text(addr: Addr) -> str:
    """netip.Addr.String (RFC 5952 for IPv6: lower case, longest zero run of 2+ groups as ::)."""
    if addr.is4:
        return ".".join(str(addr.value >> shift & 0xFF) for shift in (24, 16, 8, 0))
    if addr.is4in6:
        text = "::ffff:" + addr_text(Addr(32, addr.value & 0xFFFFFFFF))
    else:
        words = [addr.value >> (112 - 16 * k) & 0xFFFF for k in range(8)]
        best_start, best_len = -1, 1
        k = 0
        while k < 8:
            j = k
            while j < 8 and words[j] == 0:
                j += 1
            if j - k > best_len:
                best_start, best_len = k, j - k
            k = j + 1 if j == k else j
        if best_start < 0:
            text = ":".join(f"{w:x}" for w in words)
        else:
            head = ":".join(f"{w:x}" for w in words[:best_start])
            tail = ":".join(f"{w:x}" for w in words[best_start + best_len:])
            text = head + "::" + tail
    return text + ("%" + addr.zone if addr.zone else "")


def parse_ip(text: str) -> Addr:
    """Kubernetes' parseIPAddr: netip.ParseAddr minus zones and IPv4-mapped IPv6."""
    try:
        addr = parse_addr(text)
    except AddrError as exc:
        raise AddrError(
            f"IP Address {go_quote(text)} parse error during conversion from string: {exc}") from None
    if addr.zone:
        raise AddrError(f"IP address {go_quote(text)} with zone value is not allowed")
    if addr.is4in6:
        raise AddrError(f"IPv4-mapped IPv6 address {go_quote(text)} is not allowed")
    return addr


@dataclass(frozen=True)
class Prefix:
    addr: Addr
    bits: int

    def masked(self) -> Prefix:
        host_bits = self.addr.bits - self.bits
        return Prefix(Addr(self.addr.bits, self.addr.value >> host_bits << host_bits), self.bits)

    def contains(self, addr: Addr) -> bool:
        # netip.Prefix.Contains: never across families, and an IPv4-mapped address is IPv6.
        if addr.zone or addr.bits != self.addr.bits:
            return False
        shift = self.addr.bits - self.bits
        return addr.value >> shift == self.addr.value >> shift


def parse_prefix(text: str) -> Prefix:
    """netip.ParsePrefix."""
    def error(msg: str) -> AddrError:
        return AddrError(f"netip.ParsePrefix({go_quote(text)}): {msg}")

    slash = text.rfind("/")
    if slash < 0:
        raise error("no '/'")
    try:
        addr = parse_addr(text[:slash])
    except AddrError as exc:
        raise error(str(exc)) from None
    if addr.zone:
        raise error("IPv6 zones cannot be present in a prefix")
    bits_text = text[slash + 1:]
    if len(bits_text) > 1 and not "1" <= bits_text[0] <= "9":
        raise error(f"bad bits after slash: {go_quote(bits_text)}")
    if not _is_go_atoi(bits_text):
        raise error(f"bad bits after slash: {go_quote(bits_text)}")
    bits = int(bits_text)
    if not 0 <= bits <= addr.bits:
        raise error("prefix length out of range")
    return Prefix(addr, bits)


def _is_go_atoi(text: str) -> bool:
    # strconv.Atoi: optional sign, ASCII digits, within int64
    body = text[1:] if text[:1] in ("+", "-") else text
    return bool(body) and all("0" <= c <= "9" for c in body) and -(2**63) <= int(text) < 2**63


def parse_cidr(text: str) -> Prefix:
    """Kubernetes' parseCIDR; the text is the one ``cidr()`` wraps once more."""
    prefix_error = "network address parse error during conversion from string"
    try:
        prefix = parse_prefix(text)
    except AddrError as exc:
        raise AddrError(f"{prefix_error}: {exc}") from None
    if prefix.addr.is4in6:
        raise AddrError(f"IPv4-mapped IPv6 address {go_quote(text)} is not allowed")
    return prefix


def ip_value(addr: Addr) -> dict[str, Any]:
    return tagged(IP, ip=addr_text(addr))


def cidr_value(prefix: Prefix) -> dict[str, Any]:
    return tagged(CIDR, cidr=f"{addr_text(prefix.addr)}/{prefix.bits}")


def _addr_of(value: Mapping[str, Any]) -> Addr:
    return parse_addr(expect(value, IP)["ip"])


def _prefix_of(value: Mapping[str, Any]) -> Prefix:
    return parse_prefix(expect(value, CIDR)["cidr"])


def _to_ip(text: str) -> dict[str, Any]:
    try:
        return ip_value(parse_ip(text))
    except AddrError as exc:
        raise CelFunctionError(str(exc)) from None


def _is_ip(text: str) -> bool:
    try:
        parse_ip(text)
    except AddrError:
        return False
    return True


def _is_canonical(text: str) -> bool:
    try:
        return addr_text(parse_ip(text)) == text
    except AddrError as exc:
        raise CelFunctionError(str(exc)) from None


def _family(value: Mapping[str, Any]) -> int:
    return 4 if _addr_of(value).is4 else 6


def _is_unspecified(value: Mapping[str, Any]) -> bool:
    return _addr_of(value).value == 0


def _is_loopback(value: Mapping[str, Any]) -> bool:
    addr = _addr_of(value)
    return addr.value >> 24 == 127 if addr.is4 else addr.value == 1


def _is_multicast(addr: Addr) -> bool:
    return addr.value >> 28 == 0xE if addr.is4 else addr.value >> 120 == 0xFF


def _is_link_local_multicast(value: Mapping[str, Any]) -> bool:
    addr = _addr_of(value)
    return addr.value >> 8 == 0xE00000 if addr.is4 else (addr.value >> 112) & 0xFF0F == 0xFF02


def _link_local_unicast(addr: Addr) -> bool:
    return addr.value >> 16 == 0xA9FE if addr.is4 else (addr.value >> 112) & 0xFFC0 == 0xFE80


def _is_link_local_unicast(value: Mapping[str, Any]) -> bool:
    return _link_local_unicast(_addr_of(value))


def _is_global_unicast(value: Mapping[str, Any]) -> bool:
    addr = _addr_of(value)
    if addr.is4 and addr.value in (0, 0xFFFFFFFF):
        return False
    loopback = addr.value >> 24 == 127 if addr.is4 else addr.value == 1
    return not (addr.value == 0 or loopback or _is_multicast(addr) or _link_local_unicast(addr))


def _to_cidr(text: str) -> dict[str, Any]:
    try:
        return cidr_value(parse_cidr(text))
    except AddrError as exc:
        raise CelFunctionError(f"network address parse error during conversion from string: {exc}") from None


def _is_cidr(text: str) -> bool:
    try:
        parse_cidr(text)
    except AddrError:
        return False
    return True


def _contains_ip(value: Mapping[str, Any], other: Any) -> bool:
    prefix = _prefix_of(value)
    if isinstance(other, str):
        # Kubernetes converts the string with ip() and, when that fails, reports the mismatch of the
        # resulting error value with the IP parameter: "no such overload", not the parse error.
        try:
            other = ip_value(parse_ip(other))
        except AddrError:
            raise CelFunctionError(NO_SUCH_OVERLOAD) from None
    return prefix.contains(_addr_of(other))


def _contains_cidr(value: Mapping[str, Any], other: Any) -> bool:
    # Both sides masked to the outer length: kubernetes/kubernetes#130450 (1.33) fixed the older
    # comparison that left the inner address unmasked and so rejected most real subnets.
    prefix = _prefix_of(value)
    inner = _prefix_of(_to_cidr(other) if isinstance(other, str) else other)
    if inner.addr.bits != prefix.addr.bits or prefix.bits > inner.bits:
        return False
    return Prefix(inner.addr, prefix.bits).masked() == prefix.masked()


def _cidr_ip(value: Mapping[str, Any]) -> dict[str, Any]:
    return ip_value(_prefix_of(value).addr)


def _masked(value: Mapping[str, Any]) -> dict[str, Any]:
    return cidr_value(_prefix_of(value).masked())


def _prefix_length(value: Mapping[str, Any]) -> int:
    return _prefix_of(value).bits


LIBRARY = Library("kubernetes.net", [
    fn("ip", Overload("string_to_ip", ["string"], "map", _to_ip),
       Overload("cidr_ip", ["map"], "map", _cidr_ip, member=True)),
    fn("isIP", Overload("is_ip", ["string"], "bool", _is_ip)),
    fn("ip.isCanonical", Overload("ip_is_canonical", ["string"], "bool", _is_canonical)),
    fn("family", Overload("ip_family", ["map"], "int", _family, member=True)),
    fn("isUnspecified", Overload("ip_is_unspecified", ["map"], "bool", _is_unspecified, member=True)),
    fn("isLoopback", Overload("ip_is_loopback", ["map"], "bool", _is_loopback, member=True)),
    fn("isLinkLocalMulticast", Overload("ip_is_link_local_multicast", ["map"], "bool",
                                        _is_link_local_multicast, member=True)),
    fn("isLinkLocalUnicast", Overload("ip_is_link_local_unicast", ["map"], "bool", _is_link_local_unicast,
                                      member=True)),
    fn("isGlobalUnicast", Overload("ip_is_global_unicast", ["map"], "bool", _is_global_unicast, member=True)),
    fn("cidr", Overload("string_to_cidr", ["string"], "map", _to_cidr)),
    fn("isCIDR", Overload("is_cidr", ["string"], "bool", _is_cidr)),
    fn("containsIP",
       Overload("cidr_contains_ip_string", ["map", "string"], "bool", _contains_ip, member=True),
       Overload("cidr_contains_ip_ip", ["map", "map"], "bool", _contains_ip, member=True)),
    fn("containsCIDR",
       Overload("cidr_contains_cidr_string", ["map", "string"], "bool", _contains_cidr, member=True),
       Overload("cidr_contains_cidr", ["map", "map"], "bool", _contains_cidr, member=True)),
    fn("masked", Overload("cidr_masked", ["map"], "map", _masked, member=True)),
    fn("prefixLength", Overload("cidr_prefix_length", ["map"], "int", _prefix_length, member=True)),
])

SHARED = (
    SharedMember("string", IP, ("map",), "string", lambda v: expect(v, IP)["ip"], member=False),
    SharedMember("string", CIDR, ("map",), "string", lambda v: expect(v, CIDR)["cidr"], member=False),
)
