"""`yaml.parse(string) -> dyn`, decoding the way Kyverno does: sigs.k8s.io/yaml over go-yaml v2
(load/sigs_yaml.py).
"""

from __future__ import annotations

from kubectl_kyrec.cel.decl import Library, Overload, fn
from kubectl_kyrec.load.sigs_yaml import parse_yaml


def yaml_library() -> Library:
    """`yaml.parse(string) -> dyn` (Kyverno declares it as a member of the `yaml` global)."""
    return Library("kyverno.yaml", [
        fn("yaml.parse", Overload("yaml_parse_string_dyn", ["string"], "dyn", parse_yaml)),
    ])
