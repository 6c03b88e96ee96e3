"""The release archive and its krew manifest: every field krew's validation requires, the right sha256,
and a launcher that runs kyrec."""

from __future__ import annotations

import fnmatch
import hashlib
import importlib.util
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from kubectl_kyrec import __version__

ROOT = Path(__file__).resolve().parents[2]
URL = f"https://downloads.example.org/kyrec/v{__version__}/kubectl-kyrec-v{__version__}.tar.gz"


def _build_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_release", ROOT / "packaging" / "build_release.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    dist = tmp_path_factory.mktemp("dist")
    assert _build_module().main(["--dist", str(dist), "--url", URL, "--homepage", "https://example.org/kyrec"]) == 0
    return dist / f"kubectl-kyrec-v{__version__}.tar.gz", dist / "kyrec.yaml"


def test_manifest_has_what_krew_validates(release: tuple[Path, Path]) -> None:
    archive, manifest = release
    doc = yaml.safe_load(manifest.read_text())
    # the rules of krew's internal/index/validation.ValidatePlugin
    assert doc["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert doc["kind"] == "Plugin"
    assert doc["metadata"]["name"] == manifest.stem == "kyrec"
    assert re.fullmatch(r"[\w-]+", doc["metadata"]["name"])
    spec = doc["spec"]
    assert spec["version"] == f"v{__version__}"
    assert re.fullmatch(r"v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?", spec["version"])
    assert spec["shortDescription"] and not re.search(r"[\r\n]", spec["shortDescription"])
    assert spec["homepage"] == "https://example.org/kyrec" and spec["description"] and spec["caveats"]
    assert spec["platforms"]
    with tarfile.open(archive) as tar:
        members = tar.getnames()
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    seen = set()
    for platform in spec["platforms"]:
        assert platform["uri"] == URL
        assert platform["sha256"] == digest and re.fullmatch(r"[a-f0-9]{64}", platform["sha256"])
        labels = platform["selector"]["matchLabels"]
        assert labels and set(labels) <= {"os", "arch"}
        seen.add((labels["os"], labels["arch"]))
        assert platform["files"]
        for op in platform["files"]:
            assert op["from"] and op["to"]
            assert any(fnmatch.fnmatch(m, op["from"]) for m in members), op["from"]
        # the bin is a file the `files` operations put at the plugin's root
        assert any(m.endswith("/" + platform["bin"]) and fnmatch.fnmatch(m, op["from"]) for m in members)
    assert seen == {("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64")}


def test_archive_holds_the_wheel_and_executable_launchers(release: tuple[Path, Path]) -> None:
    archive, _ = release
    with tarfile.open(archive) as tar:
        by_name = {m.name.split("/", 1)[1]: m for m in tar.getmembers()}
        assert by_name["kubectl-kyrec"].mode & 0o111 and by_name["kubectl_complete-kyrec"].mode & 0o111
        wheels = [n for n in by_name if n.endswith(".whl")]
        assert wheels == [f"kubectl_kyrec-{__version__}-py3-none-any.whl"]
        launcher = tar.extractfile(by_name["kubectl-kyrec"]).read().decode()  # type: ignore[union-attr]
    assert not re.search(r"@[A-Z]+@", launcher)        # every placeholder filled
    assert f'VERSION="{__version__}"' in launcher and wheels[0] in launcher


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX launcher")
def test_launcher_runs_kyrec_through_a_krew_style_symlink(release: tuple[Path, Path], tmp_path: Path) -> None:
    archive, _ = release
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "store", filter="data")
    plugin_dir = tmp_path / "store" / f"kubectl-kyrec-v{__version__}"
    # krew links its bin directory to the installed file; the launcher must find the archive through it
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubectl-kyrec").symlink_to(plugin_dir / "kubectl-kyrec")
    # an environment already installed (the first-run pip install needs the network): this checkout's
    home = tmp_path / "home"
    venv_bin = home / __version__ / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "kubectl-kyrec").write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                                             "from kubectl_kyrec.cli.console import main\nmain()\n")
    (venv_bin / "kubectl-kyrec").chmod(0o755)
    (home / __version__ / ".kyrec-installed").touch()
    env = dict(os.environ, KUBECTL_KYREC_HOME=str(home))
    out = subprocess.run([str(bin_dir / "kubectl-kyrec"), "version"], capture_output=True, text=True, env=env,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"kyrec {__version__}")


def test_launcher_refuses_an_old_python(release: tuple[Path, Path], tmp_path: Path) -> None:
    archive, _ = release
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path, filter="data")
    fake = tmp_path / "python-old"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    env = dict(os.environ, KUBECTL_KYREC_HOME=str(tmp_path / "home"), KUBECTL_KYREC_PYTHON=str(fake))
    out = subprocess.run([str(tmp_path / f"kubectl-kyrec-v{__version__}" / "kubectl-kyrec"), "version"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 3 and "needs Python 3.11 or newer" in out.stderr
