"""`eval` results for CI systems: JUnit XML (one test case per policy and subject) and SARIF 2.1.0.

Both keep the subject's file:line, so a pull-request check can point at the manifest that failed.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from kubectl_kyrec import __version__
from kubectl_kyrec.model import UNDETERMINED, Result
from kubectl_kyrec.render.envelope import dumps, write_json_array

if TYPE_CHECKING:
    from kubectl_kyrec.run.eval import EvalResult

_SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {"fail": "error", "error": "error", "warn": "warning"}


_ATTR = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\n": "&#10;", "\r": "&#13;",
                       "\t": "&#09;"})
_TEXT = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def _attrs(pairs: Sequence[tuple[str, str]]) -> str:
    return "".join(f' {k}="{v.translate(_ATTR)}"' for k, v in pairs)


def _counts(rs: Sequence[Result]) -> dict[str, int]:
    return {"failures": sum(r.result in ("fail", "warn") for r in rs),
            "errors": sum(r.result == "error" for r in rs),
            "skipped": sum(r.result in ("skip", UNDETERMINED) for r in rs)}


def _case(r: Result, policy: str) -> str:
    attrs = [("name", r.subject.display()), ("classname", policy)]
    if r.location is not None:
        attrs.append(("file", r.location.file))
        if r.location.line:
            attrs.append(("line", str(r.location.line)))
    head = f"    <testcase{_attrs(attrs)}"
    if r.result in ("fail", "warn"):
        inner = f'<failure{_attrs([("message", r.message), ("type", r.result)])}>{r.message.translate(_TEXT)}</failure>'
    elif r.result == "error":
        inner = f'<error{_attrs([("message", r.message), ("type", "error")])}>{r.message.translate(_TEXT)}</error>'
    elif r.result == "skip":
        inner = f'<skipped{_attrs([("message", r.message)])} />'
    elif r.result == UNDETERMINED:
        # JUnit has no "unknown": skipped, typed, so a CI view shows it was not decided
        inner = f'<skipped{_attrs([("message", f"{UNDETERMINED}: {r.message}"), ("type", UNDETERMINED)])} />'
    else:
        return head + " />\n"
    return f"{head}>\n      {inner}\n    </testcase>\n"


def _junit(results: Sequence[Result]) -> Iterator[str]:
    """A `<testsuites>` document: a suite per policy, a case per subject; fail is a failure, error an error.

    Written line by line as ElementTree with `ET.indent` would lay it out; the totals on the root are
    counted first (one pass), so nothing but the grouping is held."""
    by_policy: dict[str, list[Result]] = {}
    for r in results:
        found = by_policy.get(r.policy)
        if found is None:
            by_policy[r.policy] = [r]
        else:
            found.append(r)
    per_policy = {policy: _counts(rs) for policy, rs in by_policy.items()}
    totals = {key: sum(c[key] for c in per_policy.values()) for key in ("failures", "errors", "skipped")}
    yield '<?xml version="1.0" encoding="UTF-8"?>\n'
    root = [("name", "kyrec eval"), ("tests", str(len(results))), *((k, str(v)) for k, v in totals.items())]
    if not by_policy:
        yield f"<testsuites{_attrs(root)} />\n"
        return
    yield f"<testsuites{_attrs(root)}>\n"
    for policy in sorted(by_policy):
        rs = by_policy[policy]
        suite = [("name", policy), ("tests", str(len(rs))), *((k, str(v)) for k, v in per_policy[policy].items())]
        yield f"  <testsuite{_attrs(suite)}>\n"
        out = [_case(r, policy) for r in rs]
        yield "".join(out)
        yield "  </testsuite>\n"
    yield "</testsuites>\n"


def render_junit(results: Sequence[Result]) -> str:
    return "".join(_junit(results))


def write_junit(run: EvalResult, stream: TextIO) -> None:
    for piece in _junit(run.results):
        stream.write(piece)


def _sarif(results: Sequence[Result], stream: TextIO) -> None:
    """SARIF 2.1.0: a rule per policy, a result per failing, erroring or warning (policy, subject), and one
    of kind `review` (level `none`, as SARIF requires for it) per undetermined result."""
    findings = [r for r in results if r.result in _SARIF_LEVEL or r.result == UNDETERMINED]
    rules: dict[str, dict[str, Any]] = {}
    for r in results:
        if r.policy in rules:
            continue
        rule: dict[str, Any] = {"id": r.policy, "name": r.policy,
                                "shortDescription": {"text": f"Kyverno policy {r.policy}"},
                                "properties": {"source": r.source}}
        if r.category:
            rule["properties"]["category"] = r.category
        if r.severity:
            rule["properties"]["severity"] = r.severity
        if r.policy_location is not None:
            rule["helpUri"] = r.policy_location.file
        rules[r.policy] = rule
    order = {name: i for i, name in enumerate(rules)}

    def entries() -> Iterator[dict[str, Any]]:
        for r in findings:
            entry: dict[str, Any] = {
                "ruleId": r.policy, "ruleIndex": order[r.policy],
                **({"kind": "review", "level": "none"} if r.result == UNDETERMINED
                   else {"level": _SARIF_LEVEL[r.result]}),
                "message": {"text": f"{r.subject.display()}: {r.message}"},
                "properties": {"result": r.result, "subject": r.subject.to_json()},
            }
            if r.location is not None:
                region = {"startLine": r.location.line} if r.location.line else {}
                entry["locations"] = [{"physicalLocation": {"artifactLocation": {"uri": r.location.file},
                                                            **({"region": region} if region else {})}}]
            yield entry

    # written as json.dumps(indent=2) lays the document out, the results one at a time
    driver = {"name": "kyrec", "version": __version__, "rules": list(rules.values())}
    stream.write(f'{{\n  "$schema": {json.dumps(_SARIF_SCHEMA)},\n  "version": "2.1.0",\n  "runs": [\n    {{\n'
                 f'      "tool": {dumps({"driver": driver}, "      ")},\n      "results": ')
    write_json_array(entries(), stream.write, "      ")
    stream.write("\n    }\n  ]\n}\n")


def render_sarif(results: Sequence[Result]) -> str:
    out = io.StringIO()
    _sarif(results, out)
    return out.getvalue()


def write_sarif(run: EvalResult, stream: TextIO) -> None:
    _sarif(run.results, stream)
