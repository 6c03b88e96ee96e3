"""Registry hosts that fail on purpose, for the registry failure matrix and the Kyverno registry oracle."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Callable
from typing import Any

ANSWERED = ("401", "403", "404", "500")
UNREACHABLE = ("down", "timeout", "tls")


class _Answer(http.server.BaseHTTPRequestHandler):
    """A registry that answers every GET with one status (the registry said no)."""

    code = 500

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(self.code)
        self.send_header("Content-Length", "0")
        self.end_headers()


class _AnswerHead(_Answer):
    do_HEAD = _Answer.do_GET


def failing_host(mode: str, stops: list[Callable[[], Any]], *, head: bool = False) -> str:
    """A registry host (`host:port`) failing as `mode` says (ANSWERED: that status, to HEAD too with `head`;
    `down`: nothing listens; `timeout`: accepts and never answers; `tls`: 127.0.0.2, called over HTTPS since
    only localhost, 127.0.0.1 and ::1 are plain HTTP, answering in plain HTTP). What it starts, `stops` ends."""
    if mode in ANSWERED:
        handler = type("H", (_AnswerHead if head else _Answer,), {"code": int(mode)})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        stops.extend([server.shutdown, server.server_close])
        return f"127.0.0.1:{server.server_address[1]}"
    if mode == "down":
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return f"127.0.0.1:{sock.getsockname()[1]}"     # closed again: nothing listens there
    listener = socket.socket()
    listener.bind(("127.0.0.1" if mode == "timeout" else "127.0.0.2", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    # closing a socket does not wake a thread blocked in its accept() on Linux: poll, so that the thread ends
    # with the test (a thread left running makes every later forking test skip)
    listener.settimeout(0.1)
    stopped = threading.Event()

    def serve() -> None:
        while not stopped.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if mode == "tls":
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                conn.close()
            else:
                held.append(conn)
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    stops.extend([stopped.set, thread.join, listener.close, lambda: [c.close() for c in held]])
    return f"{listener.getsockname()[0]}:{listener.getsockname()[1]}"
