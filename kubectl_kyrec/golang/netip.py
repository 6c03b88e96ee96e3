"""Go's net/netip: ParseAddr and ParsePrefix with their error texts, Addr.String (RFC 5952), and the
Addr and Prefix values, as Kubernetes' CEL IP/CIDR libraries and Go's net/url read them."""

from __future__ import annotations

from dataclasses import dataclass

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
