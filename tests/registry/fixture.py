"""The OCI registry of the registry tests: one per session, built on demand (tests/registry/build.py), the
same program serve.sh runs, plus `push` to fill it (push.sh).

Fixture (registered for every test by tests/conftest.py):
- `oci_registry`: the session's Registry. Without Go this is a skip outside CI (one reason, listed again at
  the end of the run) and a failure under CI=true, as is a failed build or start.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realapi.fixture import TIMINGS, UNAVAILABLE
from tests.registry import build
from tests.shared_inputs import in_ci

START_TIMEOUT = 30


class OciRegistry:
    """A running registry process: its address and a `push` that fills it."""

    __test__ = False             # a fixture class, not tests (its name starts like one)

    def __init__(self, binary: Path, *serve_args: str) -> None:
        self.binary = binary
        self.serve_args = serve_args        # e.g. "--no-referrers": a registry without the referrers API
        self.pid = 0
        self.host = ""
        self._names = itertools.count(1)

    def start(self) -> None:
        # detached (a shell starts it in the background), as tests/realapi/fixture.py does: tests that count
        # their own child processes must not see it; --watch-pid stops it when this session is gone
        shell = subprocess.Popen(["/bin/sh", "-c", '"$@" </dev/null 2>/dev/null & echo $!', "sh",
                                  str(self.binary), "serve", "--watch-pid", str(os.getpid()),
                                  *self.serve_args],
                                 stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        assert shell.stdout is not None
        self._stdout = shell.stdout
        self.pid = int(self._stdout.readline())
        shell.wait(timeout=30)
        ready, _, _ = select.select([self._stdout], [], [], START_TIMEOUT)
        line = self._stdout.readline().decode() if ready else ""
        if not line.startswith("ready "):
            self.stop()
            raise RuntimeError(f"the test registry did not print `ready HOST:PORT` within {START_TIMEOUT}s "
                               f"(got {line!r})")
        self.host = line.split()[1]

    def stop(self) -> None:
        if self.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)

    def repo(self, prefix: str = "app") -> str:
        """A repository no other test of the session uses, on this registry."""
        return f"{self.host}/{prefix}-{next(self._names)}"

    def push(self, ref: str, *args: str | Path) -> str:
        """Push a random image to `ref` (options as push.sh's); the pushed digest."""
        done = subprocess.run([str(self.binary), "push", ref, *map(str, args)], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()[-1]


_SESSION: dict[str, str] = {}


def _skip_or_fail(message: str) -> None:
    UNAVAILABLE["OCI registry"] = message
    if in_ci():
        pytest.fail(f"CI=true and the test registry is not available: {message}", pytrace=False)
    pytest.skip(f"test registry not available: {message}")


@pytest.fixture(scope="session")
def oci_registry() -> Iterator[OciRegistry]:
    if "error" in _SESSION:                 # one attempt per session
        _skip_or_fail(_SESSION["error"])
    began = time.monotonic()
    try:
        binary = build.build()
    except build.BuildError as exc:
        _SESSION["error"] = str(exc)
        _skip_or_fail(str(exc))
    TIMINGS["registry build (0 when cached)"] = time.monotonic() - began
    registry = OciRegistry(binary)
    try:
        registry.start()
    except RuntimeError as exc:
        _SESSION["error"] = str(exc)
        _skip_or_fail(str(exc))
    try:
        yield registry
    finally:
        registry.stop()
