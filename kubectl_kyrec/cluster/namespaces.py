"""The namespaces of a cluster for shell completion: offered only when the cluster answers in time.

A shell waits on completion, so a slow or absent cluster must cost it at most about a second and print
nothing; the listing runs on a daemon thread that is abandoned when it is late.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from kubectl_kyrec.cluster.client import RetryPolicy, connect
from kubectl_kyrec.cluster.connection import ConnectionOptions

NAMESPACE_TIMEOUT_S = 1.0
SETUP_TIMEOUT_S = 3.0

Lister = Callable[[], list[str]]


def live_namespace_lister(kubeconfig: str | None, context: str | None) -> Lister:
    """Set up a client (this imports the `kubernetes` package); the returned call lists namespace names."""
    # one try: a retry would only run past the time the shell waits
    client = connect(ConnectionOptions(kubeconfig=kubeconfig, context=context, request_timeout=NAMESPACE_TIMEOUT_S),
                     policy=RetryPolicy(attempts=1))

    def names() -> list[str]:
        listing = client.get_json("/api/v1/namespaces", category="list", verb="list", resource="namespaces")
        return sorted(str(item["metadata"]["name"]) for item in listing.get("items") or []
                      if isinstance(item, dict) and isinstance(item.get("metadata"), dict)
                      and item["metadata"].get("name"))

    return names


def namespaces_in_time(kubeconfig: str | None, context: str | None, *,
                       prepare: Callable[[str | None, str | None], Lister] = live_namespace_lister,
                       timeout: float = NAMESPACE_TIMEOUT_S, setup_timeout: float = SETUP_TIMEOUT_S) -> list[str]:
    """Namespaces when the cluster answers within `timeout`; nothing otherwise, and nothing printed.

    Importing the Kubernetes client alone takes about a second on a busy machine, so it has its own
    budget; the cluster gets `timeout` from the moment the request can be sent.
    """
    found: list[str] = []
    ready = threading.Event()

    def run() -> None:
        try:
            lister = prepare(kubeconfig, context)
            ready.set()
            found.extend(lister())
        except Exception:   # no kubeconfig, unreachable, forbidden: completion stays quiet
            ready.set()

    # a daemon thread: a cluster that does not answer must not hold the shell past the timeout
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    if not ready.wait(setup_timeout):
        return []
    worker.join(timeout)
    return list(found) if not worker.is_alive() else []
