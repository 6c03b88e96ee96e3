"""The same object given twice: the first one counts, the others are passed over with a notice.

One rule for every command, Kyverno CLI's `RemoveDuplicates` (kk: cmd/cli/kubectl-kyverno/resource): one
object per (group, kind, namespace, name), the first wins, and a namespaced object without a namespace
is in `default` (where the CLI puts it before the check). Versions of a kind are one object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from kubectl_kyrec.model import Document, Notice, Source

CLI_RULE = "as Kyverno's CLI does"
# policies and exceptions too: a cluster holds one object of a kind and name, so one given twice is evaluated
# once (kyrec's rule: its results would otherwise count twice)
POLICY_RULE = "a cluster holds one object of a kind and name"


def first_of_each(docs: Iterable[Document], namespaced: Callable[[Document], bool | None] | None = None,
                  *, what: str = "resource", why: str = CLI_RULE) -> tuple[list[Document], list[Notice]]:
    """(the documents without repeats, one notice per repeat at its file:line).

    `namespaced`: whether a document's kind is namespaced (None: unknown, taken as namespaced); a
    cluster-scoped object is keyed without a namespace. `what`/`why`: the notice's words."""
    notices: list[Notice] = []
    return list(each_once(docs, notices, namespaced, what=what, why=why)), notices


def each_once(docs: Iterable[Document], notices: list[Notice],
              namespaced: Callable[[Document], bool | None] | None = None, *, what: str = "resource",
              why: str = CLI_RULE) -> Iterator[Document]:
    """`first_of_each` as the documents come: each first one yielded, a notice appended to `notices` per
    repeat. Only each key's Source is kept, not its document, so that a stream read lazily (eval's -r,
    issue 36) is never held whole for the check."""
    first: dict[tuple[str, str, str, str], Source] = {}
    for doc in docs:
        api_version = doc.api_version       # a property reading the object: once, not twice
        group = api_version.split("/", 1)[0] if "/" in api_version else ""
        scoped = namespaced(doc) if namespaced is not None else None
        namespace = "" if scoped is False else (doc.namespace or "default")
        key = (group, doc.kind, namespace, doc.name)
        if key not in first:
            first[key] = doc.source
            yield doc
            continue
        where = f"{namespace}/{doc.name}" if namespace else doc.name
        notices.append(Notice(f"duplicate {what} {doc.kind} {where} ignored: the first one, at {first[key]}, "
                              f"is used ({why})", doc.source))
