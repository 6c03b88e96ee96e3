"""Kubernetes' CEL IP and CIDR libraries (``library.IP()``, ``library.CIDR()``) over Go's ``net/netip``.

``ip(s)``, ``isIP(s)``, ``ip.isCanonical(s)``, ``<IP>.family() isUnspecified() isLoopback()
isLinkLocalMulticast() isLinkLocalUnicast() isGlobalUnicast()``, ``string(ip)``; ``cidr(s)``,
``isCIDR(s)``, ``<CIDR>.containsIP(ip|string) containsCIDR(cidr|string) ip() masked() prefixLength()``,
``string(cidr)``. Parsing is golang/netip.py's port of ``netip.ParseAddr``/``ParsePrefix`` with their error texts;
Kubernetes then rejects zones and IPv4-mapped IPv6 addresses.

Values: ``{"@type": "net.IP", "ip": <canonical text>}`` and ``{"@type": "net.CIDR", "cidr":
<canonical address>/<bits>}`` (the address is kept unmasked, as ``netip.Prefix`` keeps it), so
``==`` matches Go's comparison of ``netip.Addr``/``netip.Prefix`` values.
``type(x) == net.IP`` is not available: the engine has no such type, these are maps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_kyrec.cel.decl import CelFunctionError, Library, Overload, fn
from kubectl_kyrec.cel.k8s_dispatch import CIDR, IP, NO_SUCH_OVERLOAD, SharedMember, field, tagged
from kubectl_kyrec.golang.netip import Addr, AddrError, Prefix, addr_text, parse_addr, parse_prefix
from kubectl_kyrec.golang.strconv import quote as go_quote


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
    try:
        return parse_addr(field(value, IP, "ip"))
    except AddrError:       # a hand-written map (see k8s_dispatch.field)
        raise CelFunctionError(NO_SUCH_OVERLOAD) from None


def _prefix_of(value: Mapping[str, Any]) -> Prefix:
    try:
        return parse_prefix(field(value, CIDR, "cidr"))
    except AddrError:
        raise CelFunctionError(NO_SUCH_OVERLOAD) from None


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
    SharedMember("string", IP, ("map",), "string", lambda v: field(v, IP, "ip"), member=False),
    SharedMember("string", CIDR, ("map",), "string", lambda v: field(v, CIDR, "cidr"), member=False),
)
