"""The same object given twice: the first one counts, the others are passed over with a notice.

One rule for every command, Kyverno CLI's `RemoveDuplicates` (kk: cmd/cli/kubectl-kyverno/resource): one
object per (group, kind, namespace, name), the first wins, and a namespaced object without a namespace
is in `default` (where the CLI puts it before the check). Versions of a kind are one object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kubectl_kyrec.model import Document, Notice

CLI_RULE = "as Kyverno's CLI does"
# policies and exceptions too: a cluster holds one object of a kind and name, so one given twice is evaluated
# once (kyrec's rule: its results would otherwise count twice)
POLICY_RULE = "a cluster holds one object of a kind and name"


def first_of_each(docs: Iterable[Document], namespaced: Callable[[Document], bool | None] | None = None,
                  *, what: str = "resource", why: str = CLI_RULE) -> tuple[list[Document], list[Notice]]:
    """(the documents without repeats, one notice per repeat at its file:line).

    `namespaced`: whether a document's kind is namespaced (None: unknown, taken as namespaced); a
    cluster-scoped object is keyed without a namespace. `what`/`why`: the notice's words."""
    first: dict[tuple[str, str, str, str], Document] = {}
    uniques: list[Document] = []
    notices: list[Notice] = []
    for doc in docs:
        group = doc.api_version.split("/", 1)[0] if "/" in doc.api_version else ""
        scoped = namespaced(doc) if namespaced is not None else None
        namespace = "" if scoped is False else (doc.namespace or "default")
        key = (group, doc.kind, namespace, doc.name)
        kept = first.get(key)
        if kept is None:
            first[key] = doc
            uniques.append(doc)
            continue
        where = f"{namespace}/{doc.name}" if namespace else doc.name
        notices.append(Notice(f"duplicate {what} {doc.kind} {where} ignored: the first one, at {kept.source}, "
                              f"is used ({why})", doc.source))
    return uniques, notices
