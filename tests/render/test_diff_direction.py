"""Both diff styles of `kyrec diff` point kubectl diff's way: `--- live/<name>` (what the cluster has) to
`+++ merged/<name>` (what it should be), for downstreams and for reports alike, in every format."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

DATA = Path(__file__).resolve().parents[2] / "testdata"
ARGS = ["diff", "--now", "2026-11-29T00:00:00Z",
        "-p", str(DATA / "coverage-cli" / "policy.yaml"),
        "-p", str(DATA / "diff" / "secret-drift-masked" / "policy.yaml"),
        "--state", str(DATA / "coverage-cli" / "state.json"),
        "--state", str(DATA / "diff" / "secret-drift-masked" / "state.yaml")]
HEADERS = re.compile(r"^--- (\S+)\n\+\+\+ (\S+)$", re.M)


def _headers(text: str) -> list[tuple[str, str]]:
    return HEADERS.findall(text)


def test_unified_output_goes_from_live_to_merged_for_both_domains() -> None:
    out = CliRunner().invoke(cli, [*ARGS, "-o", "diff"]).stdout
    headers = _headers(out)
    assert ("live/v1.Secret.team-a.app-credentials", "merged/v1.Secret.team-a.app-credentials") in headers
    report = "wgpolicyk8s.io.v1alpha2.PolicyReport.shop.11111111-0000-0000-0000-000000000002"
    assert (f"live/{report}", f"merged/{report}") in headers
    assert all(a.startswith("live/") and b.startswith("merged/") for a, b in headers)
    # the stale report: the cluster's report says pass, the policy now fails the Pod
    hunk = out[out.index(f"--- live/{report}"):]
    assert "\n-  result: pass\n" in hunk and "\n+  result: fail\n" in hunk


def test_json_diffs_point_the_same_way() -> None:
    doc = json.loads(CliRunner().invoke(cli, [*ARGS, "-o", "json"]).stdout)
    diffs = [c["diff"] for c in doc["changes"] if c["diff"]]
    assert {c["domain"] for c in doc["changes"] if c["diff"]} == {"downstream", "report"}
    for text in diffs:
        [(a, b)] = _headers(text)
        assert a.startswith("live/") and b.startswith("merged/"), text
