"""`kyrec eval --http-payload/--envoy-payload`: HTTP- and Envoy-mode ValidatingPolicies over check requests
(the flags of Kyverno's `apply`), in every output format. The case is testdata/testrun/authz-payloads."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

CASE = Path(__file__).resolve().parents[2] / "testdata" / "testrun" / "authz-payloads"
NOW = ("--now", "2026-01-01T00:00:00Z")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["eval", *NOW, "-p", str(CASE / "policies.yaml"), *args])
    return result.exit_code, result.stdout, result.stderr


def test_each_mode_answers_its_own_requests() -> None:
    code, out, err = run("--http-payload", str(CASE / "http-guest.json"),
                         "--envoy-payload", str(CASE / "envoy-admin.json"), "-o", "json")
    doc = json.loads(out)
    got = sorted((r["policy"], Path(r["subject"]["name"]).name, r["result"], r["message"]) for r in doc["results"])
    assert got == [
        ("envoy-silent", "envoy-admin.json", "skip", "request does not match"),
        ("envoy-tenant-jwt", "envoy-admin.json", "pass", "request allowed"),
        ("http-first-page", "http-guest.json", "error", "index out of bounds: 0"),
        ("http-first-page-ignore", "http-guest.json", "skip", "request does not match"),
        ("http-roles", "http-guest.json", "fail", "request denied, reason: role guest"),
    ]
    assert doc["reports"] == []         # a request is no Kubernetes object
    assert code == 1
    assert "applies to payloads" not in err


def test_only_envoy_requests_leave_http_policies_skipped_with_a_notice() -> None:
    code, out, err = run("--envoy-payload", str(CASE / "envoy-no-tenant.json"), "-o", "yaml")
    doc = yaml.safe_load(out)
    assert {(r["policy"], r["result"]) for r in doc["results"]} == {("envoy-tenant-jwt", "fail"),
                                                                     ("envoy-silent", "skip")}
    assert "'http-roles': evaluation mode HTTP applies to payloads" in err
    assert code == 1


def test_a_bad_request_file_is_one_line_with_its_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"attributes": {"bogus": 1}}')
    code, _out, err = run("--envoy-payload", str(bad))
    assert code == 3
    assert f"{bad}:1: failed to load Envoy payload" in err and "unknown field 'bogus'" in err
    assert "Traceback" not in err


def test_allowed_requests_exit_0_with_payloads_alone() -> None:
    code, out, err = run("--http-payload", str(CASE / "http-admin.json"))
    assert code == 0 and "eval needs resources" not in err
    assert "pass: 3, fail: 0, warn: 0, error: 0, skip: 0" in out


def test_a_lone_surrogate_escape_reads_as_each_decoder_reads_it(tmp_path: Path) -> None:
    # HTTP requests are read with encoding/json: U+FFFD, the same answer as the character in the file
    http = (CASE / "http-guest.json").read_text()
    outs = []
    for role in ("gu\\ud800est", "gu\ufffdest"):
        (tmp_path / "h.json").write_text(http.replace('"guest"', f'"{role}"'), encoding="utf-8")
        outs.append(run("--http-payload", str(tmp_path / "h.json"), "-o", "json"))
    assert outs[0] == outs[1]
    assert "request denied, reason: role gu\ufffdest" in json.dumps(json.loads(outs[0][1]), ensure_ascii=False)
    # Envoy requests with protojson, which refuses a surrogate escape that is not half of a pair
    envoy = (CASE / "envoy-admin.json").read_text().replace('"blue"', '"bl\\udc00ue"')
    (tmp_path / "e.json").write_text(envoy, encoding="utf-8")
    code, _, err = run("--envoy-payload", str(tmp_path / "e.json"))
    assert code == 3
    assert err.splitlines()[-1] == (f"error: {tmp_path / 'e.json'}:1: failed to load Envoy payload "
                                    f"{tmp_path / 'e.json'}: invalid escape code in string: a lone UTF-16 surrogate")
