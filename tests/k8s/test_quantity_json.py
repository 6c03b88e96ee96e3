"""k8s.quantity.quantity_json: what the API server writes back for a quantity (apimachinery resource
ParseQuantity, then MarshalJSON), with and without SetDefaults_ResourceList's milli rounding."""

from __future__ import annotations

import pytest

from kubectl_kyrec.k8s.quantity import QuantityError, quantity_json


@pytest.mark.parametrize(("text", "written", "rounded"), [
    ("0", "0", "0"),
    ("500m", "500m", "500m"),
    ("1000m", "1", "1"),                  # trailing zeros: not the kept text, canonicalised
    ("0.5", "500m", "500m"),
    ("1.0", "1", "1"),
    ("1.5Gi", "1536Mi", "1536Mi"),
    ("1024Ki", "1Mi", "1Mi"),
    ("1025Ki", "1025Ki", "1025Ki"),
    ("0.5Ki", "512", "512"),              # a binary fraction prints as DecimalSI
    ("1e3", "1e3", "1e3"),
    ("1.5e3", "1500", "1500"),
    ("100u", "100u", "1m"),               # RoundUp(-3): away from zero to a whole milli
    ("0.0001", "100u", "1m"),
    ("+1", "+1", "+1"),                   # ParseQuantity keeps a text it judges canonical, sign and all
    ("01", "01", "01"),
])
def test_written_back(text: str, written: str, rounded: str) -> None:
    assert quantity_json(text) == written
    assert quantity_json(text, round_to_milli=True) == rounded


def test_refused() -> None:
    with pytest.raises(QuantityError):
        quantity_json("1x")
