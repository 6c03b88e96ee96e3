"""k8s/times.py kubectl_age: the one age format of every table and cause, kubectl's AGE column."""

from __future__ import annotations

import pytest

from kubectl_kyrec.k8s.times import kubectl_age


@pytest.mark.parametrize(("seconds", "shown"), [
    (None, "-"), (-5, "0s"), (0, "0s"), (119.9, "119s"), (120, "2m"), (7199, "119m"), (7200, "2h"),
    (172799, "47h"), (172800, "2d"), (30 * 86400, "30d"),
])
def test_kubectl_age(seconds: float | None, shown: str) -> None:
    assert kubectl_age(seconds) == shown
