"""Which cluster, as whom: kubectl's connection flags and kubeconfig resolution, without the network.

kubectl passes a plugin nothing, so kyrec reads `--kubeconfig --context --as --as-group --request-timeout`
itself and honours `KUBECONFIG` (several paths joined by the OS path separator, merged as kubectl merges
them: the first file to set a value wins, `current-context` included). Nothing here imports `kubernetes`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubectl_kyrec.errors import ClusterError, UsageError

DEFAULT_KUBECONFIG = "~/.kube/config"
OFFLINE_HINT = "run offline with --state FILE (a `kubectl kyrec capture` or `kubectl get -o json` List)"


@dataclass(frozen=True)
class ConnectionOptions:
    kubeconfig: str | None = None         # --kubeconfig, else $KUBECONFIG (may hold several paths)
    context: str | None = None
    as_user: str | None = None
    as_groups: tuple[str, ...] = ()
    request_timeout: float | None = None  # seconds; None = no limit (kubectl's "0")
    offline: bool = True                  # the command can run offline (--state) instead: errors say so


def or_offline(options: ConnectionOptions, advice: str) -> str:
    """`advice`, and the offline way round it when the command has one: `apply` and `capture` work on the
    live cluster alone, so their errors never suggest the --state they refuse."""
    return f"{advice}, or {OFFLINE_HINT}" if options.offline else advice


@dataclass(frozen=True)
class ResolvedConfig:
    """The kubeconfig files and the context that will be used, for messages and for the client."""

    paths: tuple[str, ...]
    context: str
    user: str
    cluster: str
    server: str


_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_request_timeout(value: str | None) -> float | None:
    """kubectl's --request-timeout: `0` (no limit), a bare number of seconds, or `1s`, `2m`, `3h`, `500ms`."""
    if value is None or value.strip() in ("", "0"):
        return None
    text = value.strip()
    m = _DURATION.match(text)
    if m is None:
        # kubectl accepts Go durations such as 1m30s too
        parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise UsageError(f"--request-timeout: invalid duration {value!r} (use 0, 30, 30s, 2m, 1h)")
        return sum(float(n) * _UNITS[u] for n, u in parts) or None
    seconds = float(m.group(1)) * _UNITS[m.group(2)]
    return seconds or None


def kubeconfig_paths(flag: str | None, environ: Mapping[str, str] | None = None) -> list[str]:
    """The kubeconfig files to read, in precedence order: the flag's value (or $KUBECONFIG, which the flag
    defaults to) split on the path separator, else ~/.kube/config. Only existing files are returned."""
    env = os.environ if environ is None else environ
    value = flag if flag else env.get("KUBECONFIG", "")
    candidates = [p for p in value.split(os.pathsep) if p] if value else [DEFAULT_KUBECONFIG]
    return [p for p in (os.path.expanduser(c) for c in candidates) if os.path.isfile(p)]


def _load(path: str) -> Mapping[str, Any]:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ClusterError(f"{path}: cannot read kubeconfig: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ClusterError(f"{path}: cannot read kubeconfig: not valid UTF-8: {exc.reason}") from None
    except yaml.YAMLError as exc:
        # PyYAML's text spans several lines (a caret under the spot): one line, at the line it names
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else path
        raise ClusterError(f"{where}: cannot read kubeconfig: bad YAML: {getattr(exc, 'problem', None) or exc}"
                           ) from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ClusterError(f"{path}: not a kubeconfig (expected a mapping)")
    return data


def context_names(flag: str | None, environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(context, its cluster) for every context in the kubeconfig files, the first file to name one
    winning; a file that cannot be read is skipped without a word (shell completion asks this)."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for path in kubeconfig_paths(flag, environ):
        try:
            config = _load(path)
        except ClusterError:
            continue
        contexts = config.get("contexts")
        for entry in contexts if isinstance(contexts, list) else []:
            if not isinstance(entry, Mapping):
                continue
            name = str(entry.get("name") or "")
            context = entry.get("context")
            if name and name not in seen:
                seen.add(name)
                out.append((name, str(context.get("cluster", "")) if isinstance(context, Mapping) else ""))
    return out


def _named(configs: Sequence[Mapping[str, Any]], section: str, name: str) -> Mapping[str, Any] | None:
    for config in configs:               # the first file to define a name wins
        for item in config.get(section) or []:
            if isinstance(item, Mapping) and item.get("name") == name:
                value = item.get(section[:-1])
                return value if isinstance(value, Mapping) else {}
    return None


def resolve(options: ConnectionOptions, environ: Mapping[str, str] | None = None) -> ResolvedConfig:
    """The files and context a live run uses; ClusterError (exit 5) with one line when there are none."""
    if options.as_groups and not options.as_user:
        # kubectl refuses this before sending anything, and the API server answers 500 to it
        raise UsageError("--as-group needs --as: groups cannot be impersonated without impersonating a user")
    paths = kubeconfig_paths(options.kubeconfig, environ)
    if not paths:
        looked = options.kubeconfig or (environ or os.environ).get("KUBECONFIG") or DEFAULT_KUBECONFIG
        raise ClusterError(or_offline(options, f"no kubeconfig found (looked at {looked}); point --kubeconfig "
                                               "or KUBECONFIG at one"))
    configs = [_load(p) for p in paths]
    context = options.context or next((str(c["current-context"]) for c in configs if c.get("current-context")),
                                      "")
    if not context:
        raise ClusterError(or_offline(options, f"{paths[0]}: no current context is set; pass --context NAME"))
    ctx = _named(configs, "contexts", context)
    if ctx is None and options.context:
        # `--context nope`: the flag names nothing, a usage error (2) as in kubectl; the cluster was never
        # reached, so it is no cluster error
        raise UsageError(f'--context {context}: no such context in the kubeconfig ({", ".join(paths)})')
    if ctx is None:
        raise ClusterError(f'context "{context}" is not in the kubeconfig ({", ".join(paths)})')
    cluster_name = str(ctx.get("cluster") or "")
    cluster = _named(configs, "clusters", cluster_name) or {}
    if not cluster.get("server"):
        raise ClusterError(f'context "{context}": cluster "{cluster_name}" has no server in the kubeconfig '
                           f'({", ".join(paths)})')
    return ResolvedConfig(tuple(paths), context, str(ctx.get("user") or ""), cluster_name,
                          str(cluster.get("server") or ""))
