"""The unified diff of a DiffPair, for every caller: drifted downstreams and stale reports (`--- live/<name>`
`+++ merged/<name>`, kubectl diff's direction) and `eval --base-policy` (`--- base/` `+++ head/`).

Each side is written as YAML (`document`): objects with sorted keys in the pure-Python dumper's text,
report results in report order with the C dumper at width 1000. The two emitters fold long strings
differently, and differ on a few others (NEL, an empty key), so each layout keeps the text it was defined
with (the `diff` key is contract). An object's text comes from libyaml's emitter all the same when it
cannot differ (`_same_in_c`): every string printable ASCII, every key a non-empty one-line string, and no
line long enough to fold; otherwise from the pure-Python emitter, four times slower.
The same `document` text is what `KUBECTL_EXTERNAL_DIFF` compares (cli/external_diff.py).
"""

from __future__ import annotations

import base64
import difflib
import re
from typing import Any

import yaml

from kubectl_kyrec.reconcile.diff_pair import DiffPair, Layout


class _ObjectDumper(yaml.SafeDumper):
    pass


def _bytes_representer(dumper: Any, data: bytes) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", base64.b64encode(data).decode())


_ObjectDumper.add_representer(bytes, _bytes_representer)
# the C dumper when built: stale reports can be many
_RESULTS_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

_CObjectDumper: Any = None
if hasattr(yaml, "CSafeDumper"):
    class _CObjectDumperClass(yaml.CSafeDumper):
        pass

    _CObjectDumperClass.add_representer(bytes, _bytes_representer)
    _CObjectDumper = _CObjectDumperClass

# a character the emitters may write differently (or escape): anything but printable ASCII and newlines
_NOT_PLAIN_ASCII = re.compile(r"[^\x20-\x7e\n]")
# a line at the emitters' width (80), where they would start folding, each in its own way
_FOLDABLE = re.compile(r"^.{80}", re.MULTILINE)
_SCALARS = (int, float, bool, type(None), bytes)


def _same_in_c(value: Any) -> bool:
    """Whether both emitters write `value` alike, before looking at line lengths (see the module's text)."""
    if isinstance(value, str):
        return not _NOT_PLAIN_ASCII.search(value)
    if isinstance(value, dict):
        for key, item in value.items():
            if type(key) is not str or not key or "\n" in key or _NOT_PLAIN_ASCII.search(key):
                return False
            if not _same_in_c(item):
                return False
        return True
    if isinstance(value, list):
        return all(_same_in_c(item) for item in value)
    return isinstance(value, _SCALARS)


def document(value: Any, layout: Layout) -> str:
    """One side of a pair as the diff shows it."""
    if layout is Layout.RESULTS:
        return yaml.dump(value, Dumper=_RESULTS_DUMPER, sort_keys=False, default_flow_style=False,
                         allow_unicode=True, width=1000)
    # kubectl prints objects through JSON, so keys come out sorted
    if _CObjectDumper is not None and _same_in_c(value):
        text = yaml.dump(value, Dumper=_CObjectDumper, sort_keys=True, default_flow_style=False,
                         allow_unicode=True)
        if not _FOLDABLE.search(text):
            return str(text)
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

