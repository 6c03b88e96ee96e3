"""The recorded differential answers against a Kyverno CLI at hand: with `KYVERNO_BIN_DIR` naming a directory
that holds `kubectl-kyverno` of the golden set's version, a sample of recorded cases is run through it again and
its rows must equal the recorded ones (the golden set is reproducible, not a one-off). Without it (CI) the test
is skipped and says why; the replay in test_replay.py needs no Kyverno.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.differential.harness import dump_yaml, kyverno_answer
from tests.differential.test_replay import CORPUS, load_golden
from tests.shared_inputs import require

BIN_DIR = os.environ.get("KYVERNO_BIN_DIR")
# every 25th case: 15 policies, a minute of Kyverno runs
STRIDE = 25


def _stable(row: tuple[str, ...]) -> tuple[str, ...]:
    """A row without the path of a failed pattern: a wildcard key's expansion meets the matching keys in Go's map
    order, which changes from run to run (docs/compatibility.md, `message: failed path`)."""
    message = row[7]
    if " failed at path " in message:
        message = message.split(" failed at path ")[0]
    return (*row[:7], message)


@pytest.mark.skipif(not BIN_DIR, reason="KYVERNO_BIN_DIR not set: the Kyverno CLI is not run (CI has none)")
def test_kyverno_cli_gives_the_recorded_answers() -> None:
    require(CORPUS, "differential check against the Kyverno CLI")
    exe = Path(str(BIN_DIR)) / "kubectl-kyverno"
    assert exe.is_file(), f"{exe} does not exist"
    data = load_golden()
    version = " ".join(subprocess.run([str(exe), "version"], capture_output=True, text=True).stdout.split())
    if version != data["kyverno"]:
        pytest.skip(f"the golden set is of {data['kyverno']!r}, this CLI is {version!r}")
    differ = []
    with tempfile.TemporaryDirectory(prefix="kyrec-kyverno-") as tmp:
        for i, entry in enumerate(data["cases"][::STRIDE]):
            path = Path(tmp) / f"{i}.yaml"
            path.write_text(dump_yaml(entry["resources"]))
            out = subprocess.run([str(exe), "apply", str(CORPUS / entry["policy"]), "--resource", str(path),
                                  "--policy-report", "--output-format", "json", "--remove-color",
                                  "--continue-on-fail"], capture_output=True, text=True, timeout=300).stdout
            got = {_stable((*k, *v)) for k, v in kyverno_answer(out).items()}
            recorded = {_stable(tuple(row)) for row in entry["kyverno"]}
            if got != recorded:
                differ.append((entry["policy"], sorted(got ^ recorded)[:4]))
    assert not differ, differ
