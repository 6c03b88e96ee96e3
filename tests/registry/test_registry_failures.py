"""Registry failures kyrec maps, each against a small loopback HTTP server that answers as a failing registry
would (the test registry cannot be made to): 401/403, a token challenge, a TLS failure, and that without
`--registry` nothing is contacted at all."""

from __future__ import annotations

import base64
import http.server
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubectl_kyrec.load.registry import Registry, RegistryError, docker_credentials, parse_image
from tests.registry.keys import make_key
from tests.registry.test_ivpol_registry import evaluate, policy

ALICE = base64.b64encode(b"alice:s3cret").decode()
MANIFEST = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "config": {}, "layers": []}).encode()


class _Handler(http.server.BaseHTTPRequestHandler):
    mode = "403"
    seen: list[str] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.seen.append(f"{self.path} {self.headers.get('Authorization', '')}")
        host = self.headers.get("Host", "")
        if self.mode == "basic" and self.headers.get("Authorization") == f"Basic {ALICE}":
            body = MANIFEST
        elif self.mode == "basic":
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="test"')
            self.end_headers()
            return
        elif self.mode == "token" and self.path.startswith("/token"):
            body = json.dumps({"token": "t0k"}).encode()
        elif self.mode == "token" and self.headers.get("Authorization") == "Bearer t0k":
            body = MANIFEST
        elif self.mode == "token":
            self.send_response(401)
            self.send_header("WWW-Authenticate", f'Bearer realm="http://{host}/token",service="test"')
            self.end_headers()
            return
        else:
            self.send_response(int(self.mode))
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def fake() -> Iterator[tuple[str, type[_Handler]]]:
    handler = type("Handler", (_Handler,), {"seen": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("status", ["401", "403"])
def test_a_refusal_is_kyvernos_fetch_error_not_a_fail(fake: tuple[str, type[_Handler]], tmp_path: Path,
                                                       status: str) -> None:
    host, handler = fake
    handler.mode = status
    result, message = evaluate(policy(make_key(tmp_path)), f"{host}/app:v1", Registry())
    # kk policy.go: AddImages' error as the fetch gave it (no `failed to get imagedata`: that is the CEL
    # functions' wording)
    assert result == "error" and f"{status} " in message and message.startswith("failed to evaluate policy: GET ")


def test_an_anonymous_token_challenge_is_answered(fake: tuple[str, type[_Handler]]) -> None:
    host, handler = fake
    handler.mode = "token"
    manifest, digest = Registry().manifest(parse_image(f"{host}/app:v1"))
    assert manifest["schemaVersion"] == 2 and digest.startswith("sha256:")
    assert any(s.startswith("/token?") and "scope=repository%3Aapp%3Apull" in s for s in handler.seen)
    assert handler.seen[-1].endswith("Bearer t0k")


def test_tls_failure_is_an_error_in_bounded_time(tmp_path: Path) -> None:
    # 127.0.0.2 is loopback but not on the plain-HTTP list (localhost, 127.0.0.1, ::1): kyrec calls it over
    # HTTPS, and a server there that speaks plain HTTP fails the handshake
    server = socket.socket()
    server.bind(("127.0.0.2", 0))
    server.listen(5)

    def answer() -> None:
        conn, _ = server.accept()
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        conn.close()
    threading.Thread(target=answer, daemon=True).start()
    try:
        image = f"127.0.0.2:{server.getsockname()[1]}/app:v1"
        with pytest.raises(RegistryError) as failed:
            Registry(timeout=5).manifest(parse_image(image))
        assert failed.value.unreachable and "SSL" in str(failed.value).upper()
    finally:
        server.close()


def test_without_the_switch_no_registry_is_contacted(tmp_path: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.settimeout(0.5)
    try:
        port = listener.getsockname()[1]
        result, message = evaluate(policy(make_key(tmp_path)), f"127.0.0.1:{port}/app:v1", None)
        assert result == "undetermined" and message.startswith("needs-registry: ")
        with pytest.raises(TimeoutError):
            listener.accept()           # nobody connected
    finally:
        listener.close()


def test_credentials_from_a_docker_config(fake: tuple[str, type[_Handler]], tmp_path: Path) -> None:
    host, handler = fake
    handler.mode = "basic"
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"auths": {f"https://{host}": {"username": "alice", "password": "s3cret"}}}))
    credentials = docker_credentials(config.read_text(), str(config))
    assert credentials.auths == {host: ALICE}
    assert Registry(credentials=credentials).manifest(parse_image(f"{host}/app:v1"))[0]["schemaVersion"] == 2
    with pytest.raises(RegistryError) as refused:
        Registry().manifest(parse_image(f"{host}/app:v1"))
    assert refused.value.status == 401
    # the CLI flag: a file that is no docker config is an input error (exit 3) naming it
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    done = subprocess.run([sys.executable, "-m", "kubectl_kyrec", "eval", "-p", str(tmp_path), "-r", str(tmp_path),
                           "--registry", "--registry-config", str(bad)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and f"{bad}: no `auths` object" in done.stderr


def _helper(bin_dir: Path, name: str, script: str) -> None:
    """A credential helper program `docker-credential-<name>` that runs `script` (Python) on `get`."""
    path = bin_dir / f"docker-credential-{name}"
    path.write_text(f"#!{sys.executable}\nimport sys, json\nserver = sys.stdin.read()\n{script}\n")
    path.chmod(0o755)


@pytest.mark.parametrize("key", ["credHelpers", "credsStore"])
def test_credentials_from_a_credential_helper(fake: tuple[str, type[_Handler]], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    # docker/cli GetCredentialsStore: the host's credHelpers entry, else credsStore, ask the program; the
    # file's own `auths` entry for the host is not used then
    host, handler = fake
    handler.mode = "basic"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    _helper(bin_dir, "kyrectest", f"assert server == {host!r}, server\n"
                                  "print(json.dumps({'ServerURL': server, 'Username': 'alice', 'Secret': 's3cret'}))")
    helpers = {host: "kyrectest"} if key == "credHelpers" else "kyrectest"
    config = {key: helpers, "auths": {host: {"username": "mallory", "password": "x"}}}
    credentials = docker_credentials(json.dumps(config), "config.json")
    assert Registry(credentials=credentials).manifest(parse_image(f"{host}/app:v1"))[0]["schemaVersion"] == 2
    assert handler.seen[-1].endswith(f"Basic {ALICE}")


def test_a_credential_helper_without_credentials_is_anonymous_and_a_broken_one_is_no_fail(
        fake: tuple[str, type[_Handler]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    host, handler = fake
    handler.mode = "basic"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    _helper(bin_dir, "empty", "print('credentials not found in native keychain'); sys.exit(1)")
    _helper(bin_dir, "broken", "print('the keyring is locked'); sys.exit(3)")
    empty = docker_credentials(json.dumps({"credHelpers": {host: "empty"}}), "config.json")
    with pytest.raises(RegistryError) as refused:
        Registry(credentials=empty).manifest(parse_image(f"{host}/app:v1"))
    assert refused.value.status == 401 and not refused.value.unreachable       # anonymous, then refused
    for helper in ("broken", "missing"):
        creds = docker_credentials(json.dumps({"credHelpers": {host: helper}}), "config.json")
        with pytest.raises(RegistryError) as failed:
            Registry(credentials=creds).manifest(parse_image(f"{host}/app:v1"))
        assert failed.value.unreachable and str(failed.value).startswith("error getting credentials - ")
        assert ("the keyring is locked" if helper == "broken" else "docker-credential-missing") in str(failed.value)
    # through an ImageValidatingPolicy: an error result naming the helper's failure, never a fail
    broken = docker_credentials(json.dumps({"credHelpers": {host: "broken"}}), "config.json")
    result, message = evaluate(policy(make_key(tmp_path)), f"{host}/app:v1", Registry(credentials=broken))
    assert result == "error" and "the keyring is locked" in message
