"""The test-suite oracle for `convert` (issue 38): every kyverno-test.yaml of kyverno-policies-legacy whose
policies kyrec converts, converted with its policy directory (`convert -p DIR -o OUT`), then run by `kubectl
kyrec test` before and after. A row that passes on the original suite and not on the converted one is a
finding about the conversion. `python tests/consistency/convert_suites_oracle.py` prints the figures."""

from __future__ import annotations

import datetime
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:       # run as a script: the repository's tests package, for shared_inputs
    sys.path.insert(0, str(ROOT))

from kubectl_kyrec.errors import InputError  # noqa: E402
from kubectl_kyrec.run.convert import run_convert  # noqa: E402
from kubectl_kyrec.run.test import TestRunOptions, run_test  # noqa: E402
from kubectl_kyrec.testsuite.row_types import Mode  # noqa: E402
from tests.shared_inputs import SHARED  # noqa: E402

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


@dataclass
class SuiteCase:
    directory: Path
    status: str = ""                # "converted", "not converted", "policies not converted"
    reason: str = ""
    rows: int = 0
    passed_before: int = 0
    passed_after: int = 0
    lost: list[str] = field(default_factory=list)       # rows passing before, not after


def _rows(path: str, mode: Mode) -> list[tuple[bool, str]]:
    result = run_test(TestRunOptions(now=NOW, mode=mode), [path])
    return [(row.passed, f"{row.policy} {row.kind} {row.resource} expected {row.expected} got {row.actual} "
                         f"({row.reason})") for run in result.runs for row in run.rows]


def run_case(case: SuiteCase, mode: Mode = Mode.KYVERNO) -> SuiteCase:
    with tempfile.TemporaryDirectory(prefix="kyrec-suite-") as out:
        try:
            result = run_convert([str(case.directory)], out)
        except InputError as err:
            case.status, case.reason = "not converted", str(err)
            return case
        if any(c.refusals for c in result.conversions):
            case.status = "policies not converted"
            return case
        if not result.suites_written:
            case.status = "not converted"
            case.reason = "; ".join(result.suite_refusals) or "no suite"
            return case
        before = _rows(str(case.directory), mode)
        after = _rows(out, mode)
    case.status = "converted"
    case.rows = len(after)
    case.passed_before = sum(p for p, _ in before)
    case.passed_after = sum(p for p, _ in after)
    passing = {text.split(" expected")[0] for p, text in before if p}
    case.lost = [text for p, text in after if not p]
    # a row's policy is renamed where rules were split: report each failing row of the converted suite
    # whose original counterpart (same kind and resource) passed
    case.lost = [t for t in case.lost if any(t.split(" ", 1)[1].split(" expected")[0] == q.split(" ", 1)[1]
                                             for q in passing)]
    return case


def cases() -> list[SuiteCase]:
    root = SHARED / "corpus" / "kyverno-policies-legacy"
    return [SuiteCase(p.parent.parent) for p in sorted(root.glob("*/*/.kyverno-test/kyverno-test.yaml"))]


def main() -> int:
    results = [run_case(c) for c in cases()]
    by_status: dict[str, int] = {}
    for c in results:
        by_status[c.status] = by_status.get(c.status, 0) + 1
        if c.status == "converted":
            print(f"{c.directory.name}: {c.rows} rows, passing {c.passed_before} before, {c.passed_after} after")
            for line in c.lost:
                print("  LOST  " + line)
        elif c.status == "not converted":
            print(f"{c.directory.name}: suite not converted ({c.reason})")
    converted = [c for c in results if c.status == "converted"]
    print(f"{len(results)} suites: {by_status}; rows {sum(c.rows for c in converted)}, passing before "
          f"{sum(c.passed_before for c in converted)}, after {sum(c.passed_after for c in converted)}, rows lost "
          f"{sum(len(c.lost) for c in converted)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
