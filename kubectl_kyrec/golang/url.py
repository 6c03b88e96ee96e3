"""Go's net/url, as Kubernetes' CEL URL library and its `format` library read URLs: `parse` (url.Parse),
`parse_request_uri` (url.ParseRequestURI), `Url.string()` (URL.String), `query` (URL.Query) and
`split_host_port` (URL.Hostname/Port), with Go's error texts.

The port follows current Go: bracketed hosts must be IPv6 literals (Go 1.24.8/1.25.2 and later), and
for ``http``/``https`` a host may hold only one colon (Go's default ``urlstrictcolons``), so
``https://a:b:c/`` fails with ``invalid port ":b:c" after host``. Go works on bytes; so does this
port, through UTF-8: strings here hold one character per byte (`text_of` turns them back into text).
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_kyrec.errors import EngineError
from kubectl_kyrec.golang.netip import AddrError, parse_addr
from kubectl_kyrec.golang.strconv import quote as go_quote

# Go's escaping modes
_PATH, _PATH_SEGMENT, _HOST, _ZONE, _USER_PASSWORD, _QUERY_COMPONENT, _FRAGMENT = range(1, 8)
_MAX_QUERY_PARAMS = 10000


class UrlError(ValueError, EngineError):
    """A net/url error; the message is Go's text."""


def _b(text: str) -> str:
    """A str holding the UTF-8 bytes of text, one character per byte, so Go's byte indexing carries over."""
    return text.encode("utf-8", "surrogatepass").decode("latin-1")


def text_of(data: str) -> str:
    """Back from one-character-per-byte to text (invalid UTF-8 becomes U+FFFD)."""
    return data.encode("latin-1").decode("utf-8", "replace")


def _quote(data: str) -> str:
    return go_quote(data.encode("latin-1"))


def _ishex(c: str) -> bool:
    return c in "0123456789abcdefABCDEF"


def _should_escape(c: str, mode: int) -> bool:
    if c.isascii() and c.isalnum():
        return False
    if mode in (_HOST, _ZONE) and c in "!$&'()*+,;=:[]<>\"":
        return False
    if c in "-_.~":
        return False
    if c in "$&+,/:;=?@":
        if mode == _PATH:
            return c == "?"
        if mode == _PATH_SEGMENT:
            return c in "/;,?"
        if mode == _USER_PASSWORD:
            return c in "@/?:"
        if mode == _QUERY_COMPONENT:
            return True
        if mode == _FRAGMENT:
            return False
    # sub-delims the fragment may keep; everything else is escaped
    return not (mode == _FRAGMENT and c in "!()*")


def _unescape(s: str, mode: int) -> str:
    n, has_plus, i = 0, False, 0
    while i < len(s):
        c = s[i]
        if c == "%":
            n += 1
            if i + 2 >= len(s) or not _ishex(s[i + 1]) or not _ishex(s[i + 2]):
                raise UrlError("invalid URL escape " + _quote(s[i:i + 3]))
            if mode == _HOST and int(s[i + 1], 16) < 8 and s[i:i + 3] != "%25":
                raise UrlError("invalid URL escape " + _quote(s[i:i + 3]))
            if mode == _ZONE:
                v = chr(int(s[i + 1:i + 3], 16))
                if s[i:i + 3] != "%25" and v != " " and _should_escape(v, _HOST):
                    raise UrlError("invalid URL escape " + _quote(s[i:i + 3]))
            i += 3
        elif c == "+":
            has_plus = mode == _QUERY_COMPONENT
            i += 1
        else:
            if mode in (_HOST, _ZONE) and ord(c) < 0x80 and _should_escape(c, mode):
                raise UrlError("invalid character " + _quote(c) + " in host name")
            i += 1
    if n == 0 and not has_plus:
        return s
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "%":
            out.append(chr(int(s[i + 1:i + 3], 16)))
            i += 3
            continue
        out.append(" " if c == "+" and mode == _QUERY_COMPONENT else c)
        i += 1
    return "".join(out)


def _escape(s: str, mode: int) -> str:
    out = []
    for c in s:
        if c == " " and mode == _QUERY_COMPONENT:
            out.append("+")
        elif _should_escape(c, mode):
            out.append(f"%{ord(c):02X}")
        else:
            out.append(c)
    return "".join(out)


@dataclass
class Url:
    scheme: str = ""
    opaque: str = ""
    user: tuple[str, str, bool] | None = None  # username, password, password set
    host: str = ""
    path: str = ""
    raw_path: str = ""
    omit_host: bool = False
    force_query: bool = False
    raw_query: str = ""
    fragment: str = ""
    raw_fragment: str = ""

    def set_path(self, p: str) -> None:
        self.path = _unescape(p, _PATH)
        self.raw_path = "" if _escape(self.path, _PATH) == p else p

    def set_fragment(self, f: str) -> None:
        self.fragment = _unescape(f, _FRAGMENT)
        self.raw_fragment = "" if _escape(self.fragment, _FRAGMENT) == f else f

    def escaped_path(self) -> str:
        if self.raw_path and _valid_encoded(self.raw_path, _PATH):
            try:
                if _unescape(self.raw_path, _PATH) == self.path:
                    return self.raw_path
            except UrlError:
                pass
        if self.path == "*":
            return "*"
        return _escape(self.path, _PATH)

    def escaped_fragment(self) -> str:
        if self.raw_fragment and _valid_encoded(self.raw_fragment, _FRAGMENT):
            try:
                if _unescape(self.raw_fragment, _FRAGMENT) == self.fragment:
                    return self.raw_fragment
            except UrlError:
                pass
        return _escape(self.fragment, _FRAGMENT)

    def string(self) -> str:
        buf = self.scheme + ":" if self.scheme else ""
        if self.opaque:
            buf += self.opaque
        else:
            if (self.scheme or self.host or self.user) and not (self.omit_host and not self.host
                                                               and not self.user):
                if self.host or self.path or self.user:
                    buf += "//"
                if self.user:
                    username, password, password_set = self.user
                    buf += _escape(username, _USER_PASSWORD)
                    if password_set:
                        buf += ":" + _escape(password, _USER_PASSWORD)
                    buf += "@"
                if self.host:
                    buf += _escape(self.host, _HOST)
            path = self.escaped_path()
            if path and path[0] != "/" and self.host:
                buf += "/"
            if not buf and ":" in path.split("/", 1)[0]:
                buf += "./"
            buf += path
        if self.force_query or self.raw_query:
            buf += "?" + self.raw_query
        if self.fragment:
            buf += "#" + self.escaped_fragment()
        return buf


def _valid_encoded(s: str, mode: int) -> bool:
    for c in s:
        if c in "!$&'()*+,;=:@[]%":
            continue
        if _should_escape(c, mode):
            return False
    return True


def _valid_optional_port(port: str) -> bool:
    return port == "" or (port[0] == ":" and all("0" <= c <= "9" for c in port[1:]))


def _get_scheme(raw: str) -> tuple[str, str]:
    for i, c in enumerate(raw):
        if c.isascii() and c.isalpha():
            continue
        if (c.isascii() and c.isdigit()) or c in "+-.":
            if i == 0:
                return "", raw
            continue
        if c == ":":
            if i == 0:
                raise UrlError("missing protocol scheme")
            return raw[:i], raw[i + 1:]
        return "", raw
    return "", raw


def _parse_host(scheme: str, host: str) -> str:
    open_bracket = host.rfind("[")
    if open_bracket > 0:
        raise UrlError("invalid IP-literal")
    if open_bracket == 0:
        close = host.rfind("]")
        if close < 0:
            raise UrlError("missing ']' in host")
        colon_port = host[close + 1:]
        if not _valid_optional_port(colon_port):
            raise UrlError(f"invalid port {_quote(colon_port)} after host")
        colon_port = _unescape(colon_port, _HOST)
        hostname = host[1:close]
        zone = hostname.find("%25")
        if zone >= 0:
            unescaped = _unescape(hostname[:zone], _HOST) + _unescape(hostname[zone:], _ZONE)
        else:
            unescaped = _unescape(hostname, _HOST)
        # Only an IPv6 address may stand in brackets (IPv4-mapped ones included).
        try:
            addr = parse_addr(text_of(unescaped))
        except AddrError as exc:
            raise UrlError(f"invalid host: {exc}") from None
        if addr.is4:
            raise UrlError("invalid IP-literal")
        return "[" + unescaped + "]" + colon_port
    first = host.find(":")
    if first != -1:
        last = host.rfind(":")
        # Go keeps the first colon for http(s) (strict colons) and the last one for other schemes.
        i = first if scheme in ("http", "https") else last
        colon_port = host[i:]
        if not _valid_optional_port(colon_port):
            raise UrlError(f"invalid port {_quote(colon_port)} after host")
    return _unescape(host, _HOST)


_USERINFO_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                            "-._:~!$&'()*+,;=%@")


def _parse_authority(scheme: str, authority: str) -> tuple[tuple[str, str, bool] | None, str]:
    at = authority.rfind("@")
    host = _parse_host(scheme, authority if at < 0 else authority[at + 1:])
    if at < 0:
        return None, host
    userinfo = authority[:at]
    if not all(c in _USERINFO_CHARS for c in userinfo):
        raise UrlError("net/url: invalid userinfo")
    if ":" not in userinfo:
        return (_unescape(userinfo, _USER_PASSWORD), "", False), host
    username, password = userinfo.split(":", 1)
    return (_unescape(username, _USER_PASSWORD), _unescape(password, _USER_PASSWORD), True), host


def _parse(raw: str, via_request: bool) -> Url:
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in raw):
        raise UrlError("net/url: invalid control character in URL")
    if raw == "" and via_request:
        raise UrlError("empty url")
    url = Url()
    if raw == "*":
        url.path = "*"
        return url
    scheme, rest = _get_scheme(raw)
    url.scheme = scheme.lower()
    if rest.endswith("?") and rest.count("?") == 1:
        url.force_query, rest = True, rest[:-1]
    elif "?" in rest:
        rest, url.raw_query = rest.split("?", 1)
    if not rest.startswith("/"):
        if url.scheme:
            url.opaque = rest  # rootless paths are opaque, per RFC 3986
            return url
        if via_request:
            raise UrlError("invalid URI for request")
        if ":" in rest.split("/", 1)[0]:
            raise UrlError("first path segment in URL cannot contain colon")
    if (url.scheme or (not via_request and not rest.startswith("///"))) and rest.startswith("//"):
        authority, rest = rest[2:], ""
        slash = authority.find("/")
        if slash >= 0:
            authority, rest = authority[:slash], authority[slash:]
        url.user, url.host = _parse_authority(url.scheme, authority)
    elif url.scheme and rest.startswith("/"):
        url.omit_host = True
    url.set_path(rest)
    return url


def _parse_error(url: str, exc: UrlError) -> UrlError:
    return UrlError(f"parse {_quote(url)}: {exc}")


def parse_request_uri(text: str) -> Url:
    """Go's ``url.ParseRequestURI``."""
    raw = _b(text)
    try:
        return _parse(raw, True)
    except UrlError as exc:
        raise _parse_error(raw, exc) from None


def parse(text: str) -> Url:
    """Go's ``url.Parse`` (the fragment is split off first)."""
    raw = _b(text)
    before, _, fragment = raw.partition("#")
    try:
        url = _parse(before, False)
    except UrlError as exc:
        raise _parse_error(before, exc) from None
    if fragment:
        try:
            url.set_fragment(fragment)
        except UrlError as exc:
            raise _parse_error(raw, exc) from None
    return url


def split_host_port(host: str) -> tuple[str, str]:
    port = ""
    colon = host.rfind(":")
    if colon != -1 and _valid_optional_port(host[colon:]):
        host, port = host[:colon], host[colon + 1:]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port


def query(raw_query: str) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    if raw_query.count("&") + 1 > _MAX_QUERY_PARAMS:
        return values  # Go refuses the whole query; URL.Query() drops the error
    for pair in raw_query.split("&") if raw_query else ():
        if ";" in pair or not pair:
            continue
        key, _, value = pair.partition("=")
        try:
            key, value = _unescape(key, _QUERY_COMPONENT), _unescape(value, _QUERY_COMPONENT)
        except UrlError:
            continue
        values.setdefault(text_of(key), []).append(text_of(value))
    return values
