"""The schema data shipped in the package (kubectl_kyrec/load/schema/data/kyverno.json) is what
packaging/derive_schemas.py derives from Kyverno's CRDs in ../shared, and records their commit.
(kubernetes.json is derived from a real API server: tests/realapi/test_schema_oracle.py checks it.)"""

from __future__ import annotations

import importlib.util
import json

import pytest

from kubectl_kyrec.load.schema.tables import sources
from tests.shared_inputs import ROOT, SHARED, cases


def _derive_module() -> object:
    spec = importlib.util.spec_from_file_location("derive_schemas", ROOT / "packaging" / "derive_schemas.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("crds", cases(SHARED / "crds" / "kyverno", "Kyverno's CRDs", lambda: ["kyverno"]))
def test_kyverno_data_is_what_the_crds_derive_to(crds: str) -> None:
    derive = _derive_module()
    text = derive.encode(derive.derive_kyverno(SHARED))  # type: ignore[attr-defined]
    shipped = (ROOT / "kubectl_kyrec" / "load" / "schema" / "data" / "kyverno.json").read_text()
    assert text == shipped, "run packaging/derive_schemas.py: the shipped schema data is not the CRDs' any more"
    assert json.loads(shipped)["source"]["commit"] in (SHARED / "crds" / "README.md").read_text()


def test_the_data_says_where_it_came_from() -> None:
    found = sources()
    assert len(found["kyverno.json"]["commit"]) == 40
    assert found["kubernetes.json"]["version"].startswith("v1.")
