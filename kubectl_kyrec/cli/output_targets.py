"""Refusing output files that would overwrite what the command reads (`-o json=policy.yaml`).

An output is written after every input has been read, so writing over an input loses it without a
word: a usage error (exit 2) before anything is read is the only safe answer. Inputs are the command's
own path flags, found by name (`*_path`, `*_paths`, the `test` arguments), so a new input flag is covered
without listing it here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubectl_kyrec.errors import UsageError
from kubectl_kyrec.load.files import MANIFEST_EXTENSIONS, STDIN

# path-valued parameters that are written, not read
_WRITTEN = frozenset({"output_path", "write_baseline_path", "sarif_root"})
# names of descriptors and devices: writing to them overwrites no file (render.sink writes through them)
_NOT_FILES = ("/dev/",  "/proc/self/fd/")


def input_paths(params: Mapping[str, Any]) -> list[str]:
    """The paths a command's parameters name for reading."""
    out: list[str] = []
    for name, value in params.items():
        if name in _WRITTEN or not (name.endswith(("_path", "_paths")) or name in ("paths", "kyverno_config")):
            continue
        values: Iterable[Any] = value if isinstance(value, (list, tuple)) else [value]
        out.extend(str(v) for v in values if v and v != STDIN)
    return out


def check_output_targets(targets: Sequence[tuple[str, str]], params: Mapping[str, Any]) -> None:
    """`targets`: (flag as typed, path). UsageError when two outputs share a file, or one is an input: the
    file itself, or a file the loader would read below an input directory. `--write-baseline` may name
    the `--baseline` it updates: that is what it is for."""
    seen: dict[str, str] = {}
    for flag, path in targets:
        inputs = input_paths({k: v for k, v in params.items()
                              if not (k == "baseline_path" and flag.startswith("--write-baseline"))})
        if path.startswith(_NOT_FILES):
            continue
        real = os.path.realpath(path)
        if real in seen:
            raise UsageError(f"{flag} and {seen[real]} write the same file {path}")
        seen[real] = flag
        for given in inputs:
            if _overwrites(real, given):
                raise UsageError(f"{flag}: {path} is an input of this command ({given}): writing it would "
                                 "lose it; write the output elsewhere")


def _overwrites(real: str, given: str) -> bool:
    if not os.path.exists(given):
        return False
    if os.path.isdir(given):
        root = os.path.realpath(given)
        return real.startswith(root + os.sep) and real.endswith(MANIFEST_EXTENSIONS) and os.path.exists(real) \
            and not _kyrec_output(real)
    return os.path.exists(real) and os.path.samefile(real, given)


def _kyrec_output(path: str) -> bool:
    """An earlier output of kyrec's, which the loader passes over below a directory (load/documents.py
    load_manifests): writing it again loses no input."""
    from kubectl_kyrec.load.yaml_peek import kyrec_output

    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return kyrec_output(fh.read(4096)) is not None
    except OSError:
        return False
