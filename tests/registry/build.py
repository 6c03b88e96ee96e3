"""Build the OCI registry program of the registry tests (main.go: `serve` and `push`) once and keep it in the
user's cache, as tests/realapi/build.py does for the API server.

    python3 tests/registry/build.py        # prints the binary's path (building it if needed)

The binary lives in `$XDG_CACHE_HOME/kubectl-kyrec/registry/registry-<hash>`, the hash taken over go.mod, go.sum
and main.go, so a changed source or pin builds anew and an unchanged one starts at once. Go's own caches
(GOMODCACHE, GOCACHE) keep the downloads and compiled packages between builds.

Standard library only: serve.sh and push.sh run this with any python3, before the project is installed.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# One rule for finding Go ($KYREC_GO, PATH, /usr/local/go) and one error type for both Go programs of the tests:
# tests/realapi/build.py's, loaded by path since this file runs as a script outside the package too.
_spec = importlib.util.spec_from_file_location("kyrec_realapi_build", HERE.parent / "realapi" / "build.py")
assert _spec is not None and _spec.loader is not None
_realapi = sys.modules.get("kyrec_realapi_build") or importlib.util.module_from_spec(_spec)
if "kyrec_realapi_build" not in sys.modules:
    sys.modules["kyrec_realapi_build"] = _realapi
    _spec.loader.exec_module(_realapi)
BuildError = _realapi.BuildError
go_binary = _realapi.go_binary

# go-containerregistry, sigstore/sigstore, go-tuf v0.7, notation-go and oras-go (no cosign module): a cold build
# takes about three minutes.
BUILD_TIMEOUT = 20 * 60
STALE_SECONDS = 7 * 24 * 3600


def source_hash() -> str:
    digest = hashlib.sha256()
    for path in [HERE / "go.mod", HERE / "go.sum", *sorted(HERE.glob("*.go"))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cached_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kubectl-kyrec" / "registry" / f"registry-{source_hash()}"


def build(log: object = None) -> Path:
    """The binary, built into the cache when absent. Raises BuildError when it cannot be had."""
    out = cached_path()
    if out.is_file():
        return out
    stream = log if log is not None else sys.stderr
    go = go_binary()
    if go is None:
        where = (f"KYREC_GO={os.environ['KYREC_GO']} is not an executable" if "KYREC_GO" in os.environ else
                 "`go` is not on PATH and /usr/local/go/bin/go does not exist")
        raise BuildError(f"no Go toolchain: {where} (the test registry is built from tests/registry/go.mod)")
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)       # one build at a time; whoever waited finds it built
        if out.is_file():
            return out
        env = {**os.environ, "CGO_ENABLED": "0"}
        env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -mod=readonly").strip()   # never rewrite go.mod/go.sum
        partial = out.with_name(out.name + f".partial-{os.getpid()}")
        print(f"registry: building the test registry into {out}", file=stream, flush=True)  # type: ignore[call-overload]
        started = time.monotonic()
        try:
            done = subprocess.run([go, "build", "-trimpath", "-ldflags", "-s -w", "-o", str(partial), "."],
                                  cwd=HERE, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
        except subprocess.TimeoutExpired as exc:
            raise BuildError(f"go build of the test registry did not finish within {BUILD_TIMEOUT // 60} "
                             "minutes") from exc
        if done.returncode != 0:
            partial.unlink(missing_ok=True)
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-30:])
            raise BuildError(f"go build of the test registry failed (exit {done.returncode}):\n{tail}")
        partial.replace(out)
        # binaries of other sources are pruned only once a week old: worktrees of the project share this cache
        # with their own sources, and a binary deleted under a running session fails its tests
        for old in out.parent.glob("registry-*"):
            if old != out and ".partial-" not in old.name and old.stat().st_mtime < time.time() - STALE_SECONDS:
                old.unlink(missing_ok=True)
        print(f"registry: built in {time.monotonic() - started:.0f}s", file=stream, flush=True)  # type: ignore[call-overload]
    return out


def main() -> int:
    try:
        print(build())
    except BuildError as exc:
        print(f"registry: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
