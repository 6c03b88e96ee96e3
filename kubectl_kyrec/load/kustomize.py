"""`-k DIR`: the objects a kustomization renders, read as a GitOps repository holds its inputs.

The overlay is rendered by `kustomize build DIR` when kustomize is on PATH, else by `kubectl kustomize DIR`
(kubectl embeds kustomize), and the stream is read as -r reads a file. Each object is located in the
rendered stream: `<kustomize DIR>:LINE` is line LINE of what `kubectl kustomize DIR` prints, as `<stdin>:LINE`
is a line of standard input. So a result names the overlay (several -k render one base differently) and,
with its subject, the object; the base file an object came from is not known to the rendered stream.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.model import Source


def render_command(directory: str, which: Callable[[str], str | None] = shutil.which) -> list[str]:
    """The command that renders `directory`: kustomize when present, else kubectl's embedded kustomize."""
    kustomize = which("kustomize")
    if kustomize:
        return [kustomize, "build", directory]
    kubectl = which("kubectl")
    if kubectl:
        return [kubectl, "kustomize", directory]
    raise InputError("-k needs kustomize or kubectl on PATH to render the kustomization", Source(directory))


def stream_name(directory: str) -> str:
    """What locations name the rendered stream by: not a file, as `<stdin>` is none."""
    return f"<kustomize {directory}>"


def render(directory: str, *, run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> str:
    """The rendered YAML stream of the kustomization in `directory`; InputError when it does not render."""
    if not os.path.isdir(directory):
        raise InputError("-k: not a directory (a kustomization's directory)", Source(directory))
    command = render_command(directory)
    try:
        done = run(command, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise InputError(f"-k: cannot run {command[0]}: {exc.strerror or exc}", Source(directory)) from None
    if done.returncode != 0:
        # kubectl prefixes klog's header; the cause is the last line kustomize wrote
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        reason = lines[-1] if lines else f"exit status {done.returncode}"
        raise InputError(f"{' '.join(os.path.basename(c) if i == 0 else c for i, c in enumerate(command))} "
                         f"failed: {reason}", Source(directory))
    return done.stdout
