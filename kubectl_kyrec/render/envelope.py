"""The machine output contract (DESIGN section 3): one envelope, rendered as JSON or YAML."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

from kubectl_kyrec import __version__


def envelope(kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kyrec/v1", "kind": kind, "kyrecVersion": __version__, **body}


def to_json(doc: Any) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"


class _Dumper(yaml.SafeDumper):
    """Block style, key order kept, multi-line strings as literal blocks (diffs stay readable).

    Objects shared between entries (reports reuse one timestamp) are written out in full, never as
    YAML anchors and aliases.
    """

    def ignore_aliases(self, data: object) -> bool:
        return True


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_representer)


def to_yaml(doc: Any) -> str:
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False)


def to_yaml_stream(docs: list[Any]) -> str:
    return "".join(("---\n" if i else "") + to_yaml(d) for i, d in enumerate(docs))
