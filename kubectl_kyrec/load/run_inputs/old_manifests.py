"""The manifests before a change, for `eval --old PATH` and `eval --old-ref REF`.

`--old` names files or directories, read as -r reads them. `--old-ref` reads the same -r paths as they are
in a git commit (`origin/main`, a tag, a sha): each path is taken relative to the top of its work tree,
listed at REF with `git ls-tree` (a directory: every manifest file below it, as -r walks one) and read with
`git show REF:path`. A path that REF does not hold has no old manifests (every object in it is new). Their
locations read `REF:path:line`, so an old object's finding says where it was.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.files import MANIFEST_EXTENSIONS, STDIN
from kubectl_kyrec.model import Document

Run = Callable[..., subprocess.CompletedProcess[str]]


def read_old_paths(paths: Sequence[str]) -> list[Document]:
    import sys

    from kubectl_kyrec.load.documents import load_documents

    return load_documents(list(paths), stdin=sys.stdin)


def read_old_ref(ref: str, resource_paths: Sequence[str], *, run: Run = subprocess.run) -> list[Document]:
    """The documents the -r paths hold at `ref`."""
    from kubectl_kyrec.load.documents import documents_from_text

    docs: list[Document] = []
    for path in resource_paths:
        if path == STDIN:
            raise InputError("--old-ref reads the -r paths at a git ref: standard input (-r -) has no path there")
        top, relative = _in_work_tree(path, run)
        listed = _git(run, top, "ls-tree", "-r", "--name-only", ref, "--", relative or ".")
        names = [n for n in listed.splitlines() if n]
        if os.path.isdir(path):
            names = [n for n in names if n.endswith(MANIFEST_EXTENSIONS)]
        for name in sorted(names):
            text = _git(run, top, "show", f"{ref}:{name}")
            docs.extend(documents_from_text(text, f"{ref}:{name}"))
    return docs


def _in_work_tree(path: str, run: Run) -> tuple[str, str]:
    """(the work tree's top, `path` relative to it, with / separators)."""
    start = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    top = _git(run, start, "rev-parse", "--show-toplevel").strip()
    relative = os.path.relpath(os.path.realpath(path), os.path.realpath(top))
    if relative.startswith(os.pardir):
        raise InputError(f"--old-ref: {path} is not inside the git work tree {top}")
    return top, "" if relative == "." else relative.replace(os.sep, "/")


def _git(run: Run, cwd: str, *args: str) -> str:
    try:
        done = run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise InputError("--old-ref needs git on PATH") from None
    except OSError as exc:
        raise InputError(f"--old-ref: cannot run git in {cwd}: {exc.strerror}") from None
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise InputError(f"--old-ref: git {' '.join(args[:1])} in {cwd}: {reason}")
    return done.stdout
