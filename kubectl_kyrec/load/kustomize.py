"""`-k DIR`: the objects a kustomization renders, read as a GitOps repository holds its inputs.

The overlay is rendered by `kustomize build DIR` when kustomize is on PATH, else by `kubectl kustomize DIR`
(kubectl embeds kustomize), and the stream is read as -r reads a file. The objects evaluated are exactly
that render's.

Each object is then located where a reviewer edits it, a file of the repository: the resource's source file
(in the base or the overlay) at the line its document starts, as kustomize's origin annotation names it
(`config.kubernetes.io/origin`, `path:`); an object a generator made (`configuredIn:`) at its entry in that
kustomization; one from a remote base, or when kustomize names no origin, at the -k kustomization file. The
annotation is there when the kustomization asks for it (`buildMetadata: [originAnnotations]`); otherwise
kyrec renders the overlay a second time through a kustomization of its own, in a temporary directory, that
asks for it (the objects evaluated stay those of the first render: the annotation is not the user's). The
rendered stream is kept as the location's `via` (`<kustomize DIR>`: `--write-mutated` writes per overlay).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.model import Document, Source

ORIGIN = "config.kubernetes.io/origin"
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_Run = Callable[..., subprocess.CompletedProcess[str]]


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
    """What the rendered stream is called (a location's `via`, and a syntax error's file in it)."""
    return f"<kustomize {directory}>"


def render(directory: str, *, run: _Run = subprocess.run) -> str:
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


def kustomization_file(directory: str) -> str:
    """The kustomization file of `directory` as kustomize looks for it (its first name present)."""
    for name in KUSTOMIZATION_FILES:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return path
    return os.path.join(directory, KUSTOMIZATION_FILES[0])


def _identity(doc: Document) -> tuple[str, str, str, str]:
    return doc.api_version, doc.kind, doc.namespace, doc.name


def _origin_of(doc: Document) -> Mapping[str, Any] | None:
    import yaml

    text = ((doc.obj.get("metadata") or {}).get("annotations") or {}).get(ORIGIN)
    if not isinstance(text, str):
        return None
    try:
        origin = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    return origin if isinstance(origin, Mapping) else None


def _origins_rendered(directory: str, run: _Run) -> tuple[dict[tuple[str, str, str, str], Mapping[str, Any]], str]:
    """The origin of each object (by identity) as kustomize gives it when asked, and the directory its
    paths are relative to: the overlay rendered through a temporary kustomization that asks for
    originAnnotations. Empty when that does not render (the caller falls back to the kustomization)."""
    from kubectl_kyrec.load.documents import documents_from_text

    with tempfile.TemporaryDirectory(prefix="kyrec-origins-") as wrapper:
        # kustomize takes no absolute path to another kustomization: relative from the wrapper
        target = os.path.relpath(os.path.abspath(directory), wrapper)
        with open(os.path.join(wrapper, "kustomization.yaml"), "w", encoding="utf-8") as fh:
            fh.write(f"resources:\n- {target}\nbuildMetadata: [originAnnotations]\n")
        try:
            text = render(wrapper, run=run)
            docs = documents_from_text(text, stream_name(directory))
        except InputError:
            return {}, wrapper
        found = {}
        for doc in docs:
            origin = _origin_of(doc)
            if origin is not None:
                found[_identity(doc)] = origin
        return found, wrapper


def _as_given(directory: str, path: str) -> str:
    """`path` (absolute) in the form `directory` was given in: relative to the working directory when it was
    relative, as -r locations are."""
    return path if os.path.isabs(directory) else os.path.relpath(path)


_NAME_LINE = re.compile(r"""^\s*(?:-\s*)?name:\s*["']?([\w.-]+)["']?\s*(?:#.*)?$""")


def _line_of_entry(text: str, rendered_name: str, key: str) -> int:
    """The line of the generator entry (`- name: N`) whose name the rendered name contains (kustomize adds
    prefixes, suffixes and a content hash), the longest such; else the line of `key:`; else 1."""
    best = (0, 1)
    key_line = 0
    for n, line in enumerate(text.splitlines(), 1):
        if key and line.startswith(f"{key}:"):
            key_line = key_line or n
        match = _NAME_LINE.match(line)
        if match and match.group(1) in rendered_name and len(match.group(1)) > best[0]:
            best = (len(match.group(1)), n)
    return best[1] if best[0] else (key_line or 1)


class _Files:
    """The documents of each source file, read once: where in the file a rendered object's document starts."""

    def __init__(self) -> None:
        self.docs: dict[str, list[Document] | None] = {}
        self.texts: dict[str, str] = {}

    def text(self, path: str) -> str | None:
        if path not in self.texts:
            try:
                with open(path, encoding="utf-8") as fh:
                    self.texts[path] = fh.read()
            except (OSError, UnicodeDecodeError):
                return None
        return self.texts[path]

    def line(self, path: str, doc: Document) -> int:
        """The line of `doc`'s document in `path`: the document of its kind whose name the rendered name
        holds (a namePrefix or nameSuffix changes it; the longest name wins, its namespace breaking a tie),
        or the only one of its kind; else 1."""
        from kubectl_kyrec.load.documents import documents_from_text

        if path not in self.docs:
            text = self.text(path)
            try:
                self.docs[path] = documents_from_text(text, path) if text is not None else None
            except InputError:
                self.docs[path] = None
        docs = self.docs[path]
        if not docs:
            return 1
        same_kind = [d for d in docs if d.kind == doc.kind]
        named = [d for d in same_kind if d.name and d.name in doc.name]
        if named:
            best = max(named, key=lambda d: (len(d.name), d.namespace == doc.namespace))
            return best.source.line or 1
        return (same_kind[0].source.line or 1) if len(same_kind) == 1 else 1


_GENERATOR_KEYS = {"ConfigMapGenerator": "configMapGenerator", "SecretGenerator": "secretGenerator",
                   "HelmChartInflationGenerator": "helmCharts"}


def locate(directory: str, docs: Sequence[Document], *, run: _Run = subprocess.run) -> list[Document]:
    """`docs` (the render of `directory`) each at the repository file and line it came from, as the module
    says, with the rendered stream as `via`."""
    via = stream_name(directory)
    own = {_identity(d): o for d in docs if (o := _origin_of(d)) is not None}
    if len(own) == len(docs):
        origins, root = own, directory            # the kustomization asks for them itself
    else:
        origins, root = _origins_rendered(directory, run)
    kustomization = kustomization_file(directory)
    files = _Files()
    out = []
    for doc in docs:
        origin = origins.get(_identity(doc))
        where = _source(doc, origin, root, directory, kustomization, files) if origin is not None else None
        if where is None:
            where = Source(kustomization, 1)
        out.append(Document(doc.obj, Source(where.file, where.line, via)))
    return out


def _source(doc: Document, origin: Mapping[str, Any], root: str, directory: str, kustomization: str,
            files: _Files) -> Source | None:
    path, configured_in = origin.get("path"), origin.get("configuredIn")
    if origin.get("repo"):
        # a remote base: no file of this repository; its line in the kustomization that names it
        repo = str(origin["repo"])
        lines = (files.text(kustomization) or "").splitlines()
        line = next((n for n, text_line in enumerate(lines, 1) if repo in text_line), 1)
        return Source(kustomization, line)
    if isinstance(path, str) and path:
        file = _as_given(directory, os.path.normpath(os.path.join(os.path.abspath(root), path)))
        return Source(file, files.line(file, doc)) if os.path.isfile(file) else None
    if isinstance(configured_in, str) and configured_in:
        file = _as_given(directory, os.path.normpath(os.path.join(os.path.abspath(root), configured_in)))
        generator = files.text(file)
        if generator is None:
            return None
        by = origin.get("configuredBy")
        key = _GENERATOR_KEYS.get(str(by.get("kind", "")), "") if isinstance(by, Mapping) else ""
        return Source(file, _line_of_entry(generator, doc.name, key))
    return None
