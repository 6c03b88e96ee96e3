"""Kyverno's CLI as the reference for converted policies (issue 38): every kyverno-test.yaml of
kyverno-policies-legacy whose policies and suite kyrec converts (`convert -p DIR -o OUT`, as
tests/consistency/convert_suites_oracle.py does) is run by `kubectl-kyverno test OUT/... -o json`; its rows,
per (policy, kind, resource name), are recorded in testdata/kyverno-truth/convert.json with the CLI's version
and commit. tests/consistency/test_convert_kyverno_oracle.py runs `kubectl kyrec test` on the same
converted suites and compares.

Kyverno's CLI may print several rows for one suite row (a Pod-controller resource gets an `Excluded` row
from the policy as written and one from its autogen variant): a key passes when every row of it is `Pass`.

    KYVERNO_BIN_DIR=/path/to/dir KYVERNO_VERSION=v1.17.2 KYVERNO_COMMIT=<sha> \\
        python tests/consistency/convert_kyverno_oracle.py
"""

from __future__ import annotations

import datetime
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:       # run as a script: the repository's tests package, for shared_inputs
    sys.path.insert(0, str(ROOT))

from kubectl_kyrec.errors import InputError  # noqa: E402
from kubectl_kyrec.run.convert import run_convert  # noqa: E402
from kubectl_kyrec.run.test import TestRunOptions, run_test  # noqa: E402
from kubectl_kyrec.testsuite.row_types import Mode  # noqa: E402
from tests.consistency.kyverno_policy_validation import (  # noqa: E402
    kyverno_build,
    kyverno_exe_or_exit,
    read_golden,
)
from tests.shared_inputs import SHARED  # noqa: E402

GOLDEN = ROOT / "testdata" / "kyverno-truth" / "convert.json"
LEGACY = SHARED / "corpus" / "kyverno-policies-legacy"
NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
TIMEOUT = 300


def suite_dirs() -> list[Path]:
    """The policy directories of the legacy suites (each DIR holding DIR/.kyverno-test/kyverno-test.yaml)."""
    return [p.parent.parent for p in sorted(LEGACY.glob("*/*/.kyverno-test/kyverno-test.yaml"))]


def converted_suites(out_root: Path, names: list[str] | None = None) -> Iterator[tuple[str, Path]]:
    """(suite name `category/policy`, the converted suite's directory) for each suite kyrec converts whole:
    every policy of its directory converted, the suite written."""
    for directory in suite_dirs():
        name = str(directory.relative_to(LEGACY))
        if names is not None and name not in names:
            continue
        out = out_root / name
        try:
            result = run_convert([str(directory)], str(out))
        except InputError:
            continue
        if any(c.refusals for c in result.conversions) or len(result.suites_written) != 1:
            continue
        yield name, Path(result.suites_written[0]).parent


def _key(policy: str, kind: str, name: str) -> str:
    return f"{policy.rsplit('/', 1)[-1]} {kind} {name}"


class KyvernoRunError(Exception):
    """The CLI ran no test of the suite: its `Error:` line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def kyverno_rows(exe: Path, suite_dir: Path) -> dict[str, list[list[str]]]:
    """`kubectl-kyverno test DIR -o json`: per key, its rows' [RESULT, REASON], sorted."""
    run = subprocess.run([str(exe), "test", str(suite_dir), "-o", "json", "--remove-color"], capture_output=True,
                         text=True, timeout=TIMEOUT)
    text = run.stdout
    rows: list[dict[str, Any]] = []
    decoder = json.JSONDecoder()
    start = text.find("\n[")
    while start >= 0:       # one JSON array per test of the file, between the CLI's progress lines
        found, end = decoder.raw_decode(text, start + 1)
        rows.extend(found)
        start = text.find("\n[", end)
    if not rows:
        found = re.search(r"^Error: (.*)", text + "\n" + run.stderr, re.MULTILINE | re.DOTALL)
        raise KyvernoRunError(" ".join((found.group(1) if found else text[-400:] + run.stderr[-400:]).split()))
    out: dict[str, list[list[str]]] = {}
    for row in rows:
        parts = str(row["RESOURCE"]).split("/")
        kind = next((p for p in parts if p[:1].isupper()), "")
        out.setdefault(_key(str(row["POLICY"]), kind, parts[-1]), []).append([str(row["RESULT"]),
                                                                               str(row["REASON"])])
    return {k: sorted(v) for k, v in sorted(out.items())}


def kyrec_rows(suite_dir: Path) -> dict[str, bool]:
    """`kubectl kyrec test DIR`: per key, whether its row passed (False where any row of the key failed)."""
    result = run_test(TestRunOptions(now=NOW, mode=Mode.KYVERNO), [str(suite_dir)])
    out: dict[str, bool] = {}
    for run in result.runs:
        for row in run.rows:
            key = _key(row.policy, row.kind, str(row.resource).rsplit("/", 1)[-1])
            out[key] = out.get(key, True) and bool(row.passed)
    return out


def kyverno_passes(rows: dict[str, list[list[str]]]) -> dict[str, bool]:
    return {key: all(result == "Pass" for result, _ in held) for key, held in rows.items()}


def load_golden() -> dict[str, Any]:
    return read_golden(GOLDEN)


def main() -> None:
    import tempfile

    exe = kyverno_exe_or_exit()
    suites: dict[str, Any] = {}
    errors: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="kyrec-convert-kyverno-") as out:
        for name, suite_dir in converted_suites(Path(out)):
            try:
                suites[name] = kyverno_rows(exe, suite_dir)
            except KyvernoRunError as err:
                errors[name] = err.message.replace(out, "OUT")
                print(f"{name}: {errors[name]}", flush=True)
                continue
            print(f"{name}: {len(suites[name])} keys", flush=True)
    data = {"kyverno": kyverno_build(exe),
            "how": "kubectl kyrec convert -p DIR -o OUT for each kyverno-policies-legacy suite directory whose "
                   "policies and suite convert; `kubectl-kyverno test OUT/<suite dir> -o json`; rows by "
                   "'<policy> <kind> <resource name>', each [RESULT, REASON]",
            "suites": suites,
            "errors": errors}
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    failing = {n: [k for k, ok in kyverno_passes(rows).items() if not ok] for n, rows in suites.items()}
    print(f"{GOLDEN.relative_to(ROOT)}: {len(suites)} suites ({len(errors)} more the CLI could not run), "
          f"{sum(len(r) for r in suites.values())} keys, failing under Kyverno: "
          f"{json.dumps({n: f for n, f in failing.items() if f})}")


if __name__ == "__main__":
    main()
