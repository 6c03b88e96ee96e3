"""Kyverno's CLI as the reference for Kyverno's own policy validation: each case of
tests/consistency/policy_validation_cases.py is given to `kubectl-kyverno apply CASE.yaml --resource pod.yaml`
and its verdict (the policy refused or used) and message are read from what it prints. Recorded once into
testdata/kyverno-truth/policy-validation.json (with the CLI's version and commit) and replayed by
test_kyverno_policy_validation.py, which needs no Kyverno.

    KYVERNO_BIN_DIR=/path/to/dir KYVERNO_VERSION=v1.17.2 python tests/consistency/kyverno_policy_validation.py

`KYVERNO_BIN_DIR` holds a `kubectl-kyverno` built from Kyverno's repository outside this project (see
docs/compatibility.md, "Kyverno's own policy validation"); `KYVERNO_VERSION` names the tag it was built at
(the binary's build info has the commit, not the tag).

How the CLI shows a refusal (kk: cmd/cli/kubectl-kyverno):
- policy/load.go: every document is loaded through kubectl-validate with Kyverno's CRDs and Kubernetes'
  built-in schemas; an unknown field ends the whole file (`failed to load file`), any other schema error
  skips the document (`Non-fatal parsing error for single document`), a kind the CLI does not read
  (cleanup policies) ends the file (`policy type not supported`);
- commands/apply/command.go applyPolicies: each classic policy goes through pkg/validation/policy Validate
  (`policy validation error`; the policy is skipped);
- the CEL kinds are compiled when the processor first meets a resource: an error ends the run (`Error:
  failed to apply policies on resource ...`, with the compiler's text).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.consistency.policy_validation_cases import Case, all_cases, case_digest  # noqa: E402

GOLDEN = ROOT / "testdata" / "kyverno-truth" / "policy-validation.json"
BIN_ENV = "KYVERNO_BIN_DIR"
POD = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: default\n  labels: {a: b}\n"
       "spec:\n  containers:\n  - name: c\n    image: nginx\n")
# what the CLI prints when it refuses a policy, in the order they are looked for
_REFUSALS = [re.compile(p) for p in (
    r"failed to load file.*",
    r"Non-fatal parsing error for single document.*",
    r"policy validation error.*",
    r"failed to compile policy.*",
    r"policy type not supported.*",
    r"(?m)^Error: .*",
)]


def kyverno_exe() -> Path | None:
    directory = os.environ.get(BIN_ENV)
    return Path(directory) / "kubectl-kyverno" if directory else None


def kyverno_build(exe: Path) -> dict[str, str]:
    """Version (KYVERNO_VERSION, else `version`'s) and commit (the binary's build info) of the CLI."""
    info = {"version": os.environ.get("KYVERNO_VERSION", "")}
    if not info["version"]:
        out = subprocess.run([str(exe), "version"], capture_output=True, text=True, timeout=60).stdout
        found = re.search(r"Version: (\S+)", out)
        info["version"] = found.group(1) if found else "unknown"
    go = os.environ.get("KYREC_GO") or "go"
    for candidate in (go, "/usr/local/go/bin/go"):
        try:
            out = subprocess.run([candidate, "version", "-m", str(exe)], capture_output=True, text=True,
                                 timeout=60).stdout
        except OSError:
            continue
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "build" and parts[1].startswith("vcs.revision="):
                info["commit"] = parts[1].split("=", 1)[1]
            if len(parts) >= 2 and parts[0] == "build" and parts[1].startswith("vcs.modified="):
                info["modified"] = parts[1].split("=", 1)[1]
        break
    return info


def _message(output: str) -> str:
    """The line of Kyverno's refusal, without the log prefix and the temporary folder."""
    for pattern in _REFUSALS:
        found = pattern.search(output)
        if found:
            text = found.group(0)
            return re.sub(r"/tmp/[^\s:\"]*/", "", text).strip()
    return ""


def kyverno_verdict(exe: Path, case: Case) -> dict[str, Any]:
    """{refused, message} of the CLI for one case."""
    with tempfile.TemporaryDirectory(prefix="kyrec-kyverno-validation-") as tmp:
        policy = Path(tmp) / "policy.yaml"
        policy.write_text(case.text)
        (Path(tmp) / "pod.yaml").write_text(POD)
        run = subprocess.run([str(exe), "apply", str(policy), "--resource", str(Path(tmp) / "pod.yaml"),
                              "--remove-color"], capture_output=True, text=True, timeout=300, cwd=tmp)
        output = run.stdout + "\n" + run.stderr
        message = _message(output)
        return {"refused": bool(message), "message": message, "exit": run.returncode}


def kyrec_verdict(case: Case) -> tuple[bool, list[str]]:
    """Whether `kubectl kyrec lint` refuses the case (an error: exit 3), and its error messages."""
    from click.testing import CliRunner

    from kubectl_kyrec.cli.main import cli

    with tempfile.TemporaryDirectory(prefix="kyrec-validation-") as tmp:
        policy = Path(tmp) / "policy.yaml"
        policy.write_text(case.text)
        result = CliRunner().invoke(cli, ["lint", "-p", str(policy), "-o", "json"])
    if result.exit_code not in (0, 1, 3):
        raise AssertionError((case.name, result.exit_code, result.stderr))
    if not result.stdout.strip():
        # the file could not be read as documents (one line on stderr), or, for a file of exceptions or
        # bindings alone, `no policy found`: not a refusal of a policy
        refused = result.exit_code == 3 and "no policy found" not in result.stderr
        return refused, [result.stderr.strip()] if refused else []
    errors = [p["message"] for p in json.loads(result.stdout)["problems"] if p["severity"] == "error"]
    return bool(errors), errors


def derive(exe: Path) -> dict[str, Any]:
    cases = []
    for case in all_cases():
        verdict = kyverno_verdict(exe, case)
        cases.append({"name": case.name, "digest": case_digest(case), **verdict})
    return {
        "description": "Kyverno's CLI on every invalid-policy case of the tests and a set of valid policies "
                       "(tests/consistency/policy_validation_cases.py): `kubectl-kyverno apply CASE.yaml "
                       "--resource pod.yaml`; `refused` when it printed one of its refusals (tests/consistency/"
                       "kyverno_policy_validation.py), `message` that line.",
        "kyverno": kyverno_build(exe),
        "cases": cases,
    }


def load_golden() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(GOLDEN.read_text())
    return data


def main() -> None:
    exe = kyverno_exe()
    if exe is None or not exe.is_file():
        sys.exit(f"{BIN_ENV} must name a directory holding a built kubectl-kyverno")
    data = derive(exe)
    GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    refused = sum(1 for c in data["cases"] if c["refused"])
    print(f"{GOLDEN.relative_to(ROOT)}: {len(data['cases'])} cases, {refused} refused by Kyverno's CLI")


if __name__ == "__main__":
    main()
