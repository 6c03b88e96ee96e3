"""Kyverno's CEL libraries as the kyverno/sdk unit tests pin them (vectors/kyverno_sdk_libs.yaml).

Each vector is one case of an sdk `*_test.go`, written down as data; here it runs through the
environment a ValidatingPolicy gets in kyrec (Kubernetes' libraries and Kyverno's), which is a superset
of the base environment plus one library that the Go tests build.
"""

from __future__ import annotations

import datetime
import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.engine import CompileError, Environment
from kubectl_kyrec.cel.libraries import library_factory

VECTORS = Path(__file__).parent / "vectors" / "kyverno_sdk_libs.yaml"
DATA = yaml.safe_load(VECTORS.read_text(encoding="utf-8"))
EXPECTATIONS = ("value", "value_match", "value_type", "error", "error_match", "error_any", "compile_error_match")
NOW = datetime.datetime(2025, 1, 2, 15, 30, tzinfo=datetime.timezone.utc)


def _libraries() -> Any:
    ctx = LibraryContext(NOW, EmptyProvider(), "", random.Random(7))
    return library_factory(ctx)("ValidatingPolicy", "")


LIBRARIES = _libraries()


def _same(got: Any, want: Any) -> bool:
    """Equality that tells int from double and bool from int, as CEL's values differ."""
    if isinstance(want, bool) or isinstance(got, bool):
        return type(got) is type(want) and got == want
    if isinstance(want, (int, float)):
        return type(got) is type(want) and got == want
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(_same(got[k], want[k]) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(_same, got, want))
    if isinstance(got, datetime.datetime):
        # RFC 3339 in UTC, as Go marshals a time.Time
        utc = (got if got.tzinfo else got.replace(tzinfo=datetime.UTC)).astimezone(datetime.UTC)
        return utc.isoformat().replace("+00:00", "Z") == want
    if isinstance(got, (bytes, bytearray)):
        return bytes(got) == want
    return bool(got == want)


def _cel_type(value: Any) -> str:
    return {datetime.datetime: "timestamp", datetime.timedelta: "duration", bool: "bool", int: "int",
            float: "double", str: "string"}.get(type(value), type(value).__name__)


def test_vector_file_is_well_formed() -> None:
    ids = [v["id"] for v in DATA["vectors"]]
    assert len(ids) == len(set(ids))
    for v in DATA["vectors"]:
        assert sum(k in v for k in EXPECTATIONS) == 1, v["id"]
        assert v["from"].startswith("extensions/cel/"), v["id"]
    assert re.fullmatch(r"[0-9a-f]{40}", DATA["source"]["commit"])


def _params() -> list[Any]:
    # strict: a vector marked xfail that starts passing fails the run, so the mark goes when the gap closes
    return [pytest.param(v, id=v["id"], marks=[pytest.mark.xfail(reason=v["xfail"], strict=True)]
                         if "xfail" in v else []) for v in DATA["vectors"]]


@pytest.mark.parametrize("vector", _params())
def test_sdk_vector(vector: dict[str, Any]) -> None:
    variables = vector.get("vars", {})
    env = Environment(LIBRARIES, list(variables))
    if "compile_error_match" in vector:
        with pytest.raises(CompileError) as caught:
            env.compile(vector["expr"])
        assert re.search(vector["compile_error_match"], caught.value.message), caught.value.message
        return
    outcome = env.compile(vector["expr"]).evaluate(env.activation(variables))
    if "error" in vector:
        assert outcome.error == vector["error"], outcome
    elif "error_match" in vector:
        assert outcome.error is not None and re.search(vector["error_match"], outcome.error), outcome
    elif "error_any" in vector:
        assert outcome.error is not None, outcome
    else:
        assert outcome.error is None, outcome.error
        if "value" in vector:
            assert _same(outcome.value, vector["value"]), outcome.value
        elif "value_match" in vector:
            assert isinstance(outcome.value, str) and re.fullmatch(vector["value_match"], outcome.value)
        else:
            assert _cel_type(outcome.value) == vector["value_type"]
