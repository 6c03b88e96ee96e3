"""The unified diff of a DiffPair, for every caller: drifted downstreams and stale reports (`--- live/<name>`
`+++ merged/<name>`, kubectl diff's direction) and `eval --base-policy` (`--- base/` `+++ head/`).

Each side is written as YAML (`document`): objects with sorted keys and the pure-Python dumper, report
results in report order with the C dumper at width 1000. The two emitters fold long quoted strings
differently, so each layout keeps the dumper its text was defined with (the `diff` key is contract).
The same `document` text is what `KUBECTL_EXTERNAL_DIFF` compares (cli/external_diff.py).
"""

from __future__ import annotations

import base64
import difflib
from typing import Any

import yaml

from kubectl_kyrec.reconcile.diff_pair import DiffPair, Layout


class _ObjectDumper(yaml.SafeDumper):
    pass


def _bytes_representer(dumper: yaml.SafeDumper, data: bytes) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", base64.b64encode(data).decode())


_ObjectDumper.add_representer(bytes, _bytes_representer)
# the C dumper when built: stale reports can be many
_RESULTS_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def document(value: Any, layout: Layout) -> str:
    """One side of a pair as the diff shows it."""
    if layout is Layout.RESULTS:
        return yaml.dump(value, Dumper=_RESULTS_DUMPER, sort_keys=False, default_flow_style=False,
                         allow_unicode=True, width=1000)
    # kubectl prints objects through JSON, so keys come out sorted
    return yaml.dump(value, Dumper=_ObjectDumper, sort_keys=True, default_flow_style=False, allow_unicode=True)


def unified_diff(pair: DiffPair | None) -> str | None:
    """`diff -u` of the pair's two sides, named as kubectl diff names them; None when there is nothing to show."""
    if pair is None:
        return None
    before = document(pair.before, pair.layout).splitlines(keepends=True)
    after = document(pair.after, pair.layout).splitlines(keepends=True)
    text = "".join(difflib.unified_diff(before, after, fromfile=f"{pair.before_dir}/{pair.name}",
                                        tofile=f"{pair.after_dir}/{pair.name}"))
    return text or None

