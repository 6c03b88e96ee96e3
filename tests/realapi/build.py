"""Build the real-server binaries of tests/realapi once and keep them in the user's cache.

    python3 tests/realapi/build.py [server|kubectl]     # prints the binary's path (building it if needed)

`server` is the realapi program (kube-apiserver + embedded etcd, see main.go); `kubectl` a kubectl built from
the same pinned module, for machines without one on PATH. A binary lives in
`$XDG_CACHE_HOME/kubectl-kyrec/realapi/<kubernetes version>/<name>-<hash>`, the hash taken over go.mod,
go.sum and the Go sources it is built from, so a changed source or pin builds anew and an unchanged one
starts at once. Go's own module and build caches (GOMODCACHE, GOCACHE) hold the downloads and compiled
packages, so a rebuild after a small change takes a minute, not the cold build's many.

Standard library only: serve.sh runs this with any python3, before the project is installed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

HERE = Path(__file__).resolve().parent
TARGETS = {"server": ".", "kubectl": "./kubectl"}
# A cold build downloads some 300 modules and compiles kube-apiserver on what may be 2 cores: 10-25 minutes.
# The bound only stops a hung toolchain from hanging CI for ever.
BUILD_TIMEOUT = 60 * 60


class BuildError(RuntimeError):
    """Go is missing or the build failed; the message says which and how."""


def kubernetes_version() -> str:
    """The pinned k8s.io/kubernetes release, read from go.mod (the one place it is written)."""
    found = re.search(r"^\s*k8s\.io/kubernetes\s+(v\S+)", (HERE / "go.mod").read_text(), re.MULTILINE)
    if not found:
        raise BuildError(f"{HERE / 'go.mod'} does not require k8s.io/kubernetes")
    return found.group(1)


def go_binary() -> str | None:
    """$KYREC_GO when set (a path; one that is not an executable means "no Go"), else `go` on PATH, else the
    standard install location (CI images put Go there without touching PATH)."""
    chosen = os.environ.get("KYREC_GO")
    if chosen is not None:
        return chosen if os.path.isfile(chosen) and os.access(chosen, os.X_OK) else None
    found = shutil.which("go")
    if found:
        return found
    default = Path("/usr/local/go/bin/go")
    return str(default) if default.is_file() and os.access(default, os.X_OK) else None


def go_build_info(exe: Path) -> dict[str, str]:
    """`commit` and `modified` of a Go binary, from its build info (`go version -m`: vcs.revision and
    vcs.modified); empty when there is no Go or the binary was built without version-control stamping."""
    go = go_binary()
    if go is None:
        return {}
    out = subprocess.run([go, "version", "-m", str(exe)], capture_output=True, text=True, check=False,
                         timeout=60).stdout
    info: dict[str, str] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "build":
            key, _, value = parts[1].partition("=")
            if key in ("vcs.revision", "vcs.modified"):
                info["commit" if key == "vcs.revision" else "modified"] = value
    return info


def ldflags() -> str:
    """Stamp the release into the binaries as Kubernetes' own build does (hack/lib/version.sh): /version and
    `kubectl version` then say v1.36.3, not v0.0.0-master, so clients see the server they would in a cluster."""
    version = kubernetes_version()
    major, minor = version.lstrip("v").split(".")[:2]
    flags = ["-s", "-w"]              # no symbol tables: a smaller binary in the cache, same behaviour
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {package}.gitVersion={version}", f"-X {package}.gitMajor={major}",
                  f"-X {package}.gitMinor={minor}", f"-X {package}.gitTreeState=clean"]
    return " ".join(flags)


def source_hash(target: str) -> str:
    package = HERE / TARGETS[target]
    digest = hashlib.sha256()
    digest.update(ldflags().encode() + b"\0")
    for path in [HERE / "go.mod", HERE / "go.sum", *sorted(package.glob("*.go"))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kubectl-kyrec" / "realapi" / kubernetes_version()


def cached_path(target: str) -> Path:
    return cache_dir() / f"{target}-{source_hash(target)}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One build at a time per cache (serve.sh and a test run may start together); the other waits."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build(target: str = "server", log: TextIO | None = None) -> Path:
    """The binary for `target`, built into the cache when absent. Raises BuildError when it cannot be had."""
    out = cached_path(target)
    if out.is_file():
        return out
    log = log or sys.stderr
    go = go_binary()
    if go is None:
        where = (f"KYREC_GO={os.environ['KYREC_GO']} is not an executable" if "KYREC_GO" in os.environ else
                 "`go` is not on PATH and /usr/local/go/bin/go does not exist")
        raise BuildError(f"no Go toolchain: {where} (the real API server is built from k8s.io/kubernetes "
                         f"{kubernetes_version()})")
    with _locked(out.parent / ".lock"):
        if out.is_file():                      # built by whoever held the lock
            return out
        env = {**os.environ, "CGO_ENABLED": "0"}
        # The module graph is pinned by go.mod/go.sum; a build must never rewrite them.
        env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -mod=readonly").strip()
        partial = out.with_name(out.name + f".partial-{os.getpid()}")
        print(f"realapi: building {target} from k8s.io/kubernetes {kubernetes_version()} into {out} "
              "(the first build downloads the modules and takes many minutes)", file=log, flush=True)
        started = time.monotonic()
        try:
            done = subprocess.run([go, "build", "-trimpath", "-ldflags", ldflags(), "-o", str(partial),
                                   TARGETS[target]], cwd=HERE, env=env,
                                  capture_output=True, text=True, timeout=BUILD_TIMEOUT)
        except subprocess.TimeoutExpired as exc:
            raise BuildError(f"go build of {target} did not finish within {BUILD_TIMEOUT // 60} minutes") from exc
        if done.returncode != 0:
            partial.unlink(missing_ok=True)
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-30:])
            raise BuildError(f"go build of {target} failed (exit {done.returncode}):\n{tail}")
        partial.replace(out)                   # atomic: a reader never sees a half-written binary
        # older builds of this target (other sources) are dead weight of 100-160 MB each
        for old in out.parent.glob(f"{target}-*"):
            if old != out and ".partial-" not in old.name:
                old.unlink(missing_ok=True)
        print(f"realapi: built {target} in {time.monotonic() - started:.0f}s", file=log, flush=True)
    return out


def main(argv: list[str]) -> int:
    target = argv[0] if argv else "server"
    if target not in TARGETS:
        print(f"usage: build.py [{'|'.join(TARGETS)}]", file=sys.stderr)
        return 2
    try:
        print(build(target))
    except BuildError as exc:
        print(f"realapi: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
