#!/usr/bin/env python3
"""Build the release archive of kubectl-kyrec and the krew manifest that installs it.

    python packaging/build_release.py --url https://example.org/releases/v0.1.0/kubectl-kyrec-v0.1.0.tar.gz \
        --homepage https://example.org/kubectl-kyrec [--dist dist]

Writes dist/kubectl-kyrec-vX.Y.Z.tar.gz and dist/kyrec.yaml (the manifest, with the archive's URL and
sha256 filled in), and prints both paths.

The archive is a wheel-based launcher, not a zipapp: kyrec's dependencies include compiled extensions
(cel-expr-python, the CEL engine; PyYAML's C loader), which Python cannot import from inside a zip file and
which differ per OS, CPU and Python version. The archive holds kyrec's own (pure Python) wheel and a small
POSIX launcher; on first run the launcher makes a virtual environment and lets pip choose the right binary
dependencies for that machine. One archive therefore serves every krew platform listed in the manifest.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGING = ROOT / "packaging"
# a fixed time for every archive member, so the same sources give the same archive (and sha256)
EPOCH = 1_700_000_000


def project_version() -> str:
    text = (ROOT / "kubectl_kyrec" / "__init__.py").read_text()
    match = re.search(r'^__version__\s*=\s*"([^"]+)"', text, re.M)
    if not match:
        raise SystemExit("error: kubectl_kyrec/__init__.py: no __version__")
    return match.group(1)


def build_wheel(out: Path) -> Path:
    """kyrec's wheel, without dependencies (pip installs those for the user's platform)."""
    cmd = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(ROOT)]
    # the wheel's own timestamps follow SOURCE_DATE_EPOCH, so the archive's sha256 depends on the sources only
    subprocess.run(cmd, check=True, env={**os.environ, "SOURCE_DATE_EPOCH": str(EPOCH)})
    wheels = sorted(out.glob("kubectl_kyrec-*.whl"))
    if len(wheels) != 1:
        raise SystemExit(f"error: expected one kyrec wheel in {out}, found {len(wheels)}")
    return wheels[0]


def _member(name: str, data: bytes, mode: int) -> tuple[tarfile.TarInfo, io.BytesIO]:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, EPOCH
    info.uname = info.gname = ""
    return info, io.BytesIO(data)


def build_archive(version: str, wheel: Path, dist: Path) -> Path:
    tag = f"v{version}"
    top = f"kubectl-kyrec-{tag}"
    launcher = (PACKAGING / "launcher.sh").read_text().replace("@VERSION@", version).replace("@WHEEL@", wheel.name)
    members = [
        (f"{top}/kubectl-kyrec", launcher.encode(), 0o755),
        (f"{top}/kubectl_complete-kyrec", launcher.encode(), 0o755),
        (f"{top}/{wheel.name}", wheel.read_bytes(), 0o644),
        (f"{top}/README.md", (ROOT / "README.md").read_bytes(), 0o644),
    ]
    licence = ROOT / "LICENSE"
    if licence.exists():
        members.append((f"{top}/LICENSE", licence.read_bytes(), 0o644))
    archive = dist / f"{top}.tar.gz"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data, mode in members:
            tar.addfile(*_member(name, data, mode))
    # gzip with a fixed mtime and no file name: the header would otherwise change the sha256 per build
    with open(archive, "wb") as fh, gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=EPOCH) as gz:
        gz.write(raw.getvalue())
    return archive


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def render_manifest(*, version: str, uri: str, sha256: str, homepage: str) -> str:
    text = (PACKAGING / "krew" / "kyrec.yaml.in").read_text()
    values = {"@VERSION@": f"v{version}", "@URI@": uri, "@SHA256@": sha256, "@HOMEPAGE@": homepage}
    # the files.from pattern names the archive's top directory, which carries the v-prefixed tag
    text = text.replace("kubectl-kyrec-@VERSION@", f"kubectl-kyrec-v{version}")
    for key, value in values.items():
        text = text.replace(key, value)
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    left = sorted(set(re.findall(r"@[A-Z0-9_]+@", body)))
    if left:
        raise SystemExit(f"error: packaging/krew/kyrec.yaml.in: unfilled {', '.join(left)}")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="where the archive will be downloaded from (default: a file:// URL to it)")
    parser.add_argument("--homepage", default="https://kyverno.io/", help="the plugin's homepage")
    parser.add_argument("--dist", default=str(ROOT / "dist"), help="output directory (default: dist/)")
    args = parser.parse_args(argv)
    version = project_version()
    dist = Path(args.dist).resolve()
    dist.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        wheel = build_wheel(Path(tmp))
        archive = build_archive(version, wheel, dist)
    digest = sha256_of(archive)
    manifest = dist / "kyrec.yaml"
    manifest.write_text(render_manifest(version=version, uri=args.url or archive.as_uri(), sha256=digest,
                                        homepage=args.homepage))
    print(archive)
    print(manifest)
    os.chmod(manifest, 0o644)
    return 0


if __name__ == "__main__":
    sys.exit(main())
