"""Kyverno's CLI as the reference for Kyverno's own policy validation: each case of
tests/consistency/policy_validation_cases.py is given to `kubectl-kyverno apply CASE.yaml --resource pod.yaml`
and its verdict (the policy refused or used) and message are read from what it prints. Recorded once into
testdata/kyverno-truth/policy-validation.json (with the CLI's version and commit) and replayed by
test_kyverno_policy_validation.py, which needs no Kyverno.

    KYVERNO_BIN_DIR=/path/to/dir KYVERNO_VERSION=v1.17.2 KYVERNO_COMMIT=<sha> \\
        python tests/consistency/kyverno_policy_validation.py

`KYVERNO_BIN_DIR` holds a `kubectl-kyverno` built from Kyverno's repository outside this project (see
docs/compatibility.md, "Kyverno's own policy validation"); `KYVERNO_VERSION` names the tag it was built at
(the binary's build info has the commit, not the tag; a build from a checkout without VCS stamping has
neither, then `KYVERNO_COMMIT` names it).

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
from tests.realapi.build import go_build_info  # noqa: E402

GOLDEN = ROOT / "testdata" / "kyverno-truth" / "policy-validation.json"
BIN_ENV = "KYVERNO_BIN_DIR"
POD = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: default\n  labels: {a: b}\n"
       "spec:\n  containers:\n  - name: c\n    image: nginx\n")
# what the CLI logs (with -v 3) or prints when it does not use a document: (phrase, verdict); `unread` where
# the CLI cannot read the kind from a policy file at all (cleanup policies), which says nothing of its
# validation
_LOGGED = ("failed to load file", "Non-fatal parsing error for single document", "skipping invalid YAML file",
           "policy validation error")
_UNREAD = re.compile(r"policy type not supported|kind \S+ not found in \S+ groupversion")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ERROR_VALUE = re.compile(r'error="((?:[^"\\]|\\.)*)"')


def kyverno_exe() -> Path | None:
    directory = os.environ.get(BIN_ENV)
    return Path(directory) / "kubectl-kyverno" if directory else None


def kyverno_exe_or_exit() -> Path:
    """The built kubectl-kyverno a recording script (each oracle's `main`) runs, or the exit saying so."""
    exe = kyverno_exe()
    if exe is None or not exe.is_file():
        sys.exit(f"{BIN_ENV} must name a directory holding a built kubectl-kyverno")
    return exe


def read_golden(path: Path) -> dict[str, Any]:
    """A file of Kyverno's recorded answers (testdata/kyverno-truth/)."""
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def kyverno_build(exe: Path) -> dict[str, str]:
    """Version (KYVERNO_VERSION, else `version`'s) and commit (the binary's build info) of the CLI."""
    info = {"version": os.environ.get("KYVERNO_VERSION", "")}
    if os.environ.get("KYVERNO_COMMIT"):
        info["commit"] = os.environ["KYVERNO_COMMIT"]
    if not info["version"]:
        out = subprocess.run([str(exe), "version"], capture_output=True, text=True, timeout=60).stdout
        found = re.search(r"Version: (\S+)", out)
        info["version"] = found.group(1) if found else "unknown"
    # the binary's own stamp, where it has one, over KYVERNO_COMMIT
    info.update(go_build_info(exe))
    return info


def _refusal(output: str) -> tuple[str, str]:
    """(verdict, message): `refused` with the first refusal the CLI printed (the phrase and Go's error text,
    one line), `unread` when it cannot read the kind, else `accepted`."""
    for line in _ANSI.sub("", output).splitlines():
        if line.startswith("Error: "):
            return "refused", line.removeprefix("Error: ")
        phrase = next((p for p in _LOGGED if f"> {p}" in line), None)
        if phrase is None:
            continue
        found = _ERROR_VALUE.search(line)
        error = json.loads(f'"{found.group(1)}"') if found else ""
        message = f"{phrase}: {error.splitlines()[0] if error else ''}"
        return ("unread" if _UNREAD.search(error) else "refused"), message
    return "accepted", ""


def _split_exceptions(text: str) -> tuple[str, str]:
    """(policies, exceptions): the CLI reads PolicyExceptions only from `--exception` files."""
    import yaml

    policies, exceptions = [], []
    for part in re.split(r"(?m)^---\n", text):
        try:
            kind = (yaml.safe_load(part) or {}).get("kind")
        except (yaml.YAMLError, AttributeError):
            kind = None
        (exceptions if kind == "PolicyException" else policies).append(part)
    return "---\n".join(policies), "---\n".join(exceptions)


def kyverno_verdict(exe: Path, case: Case) -> dict[str, Any]:
    """{verdict, message} of the CLI for one case: `kubectl-kyverno apply` of its policies (its exceptions with
    `--exception`) to one Pod, logging at level 3 (where it says why it skipped a file)."""
    with tempfile.TemporaryDirectory(prefix="kyrec-kyverno-validation-") as tmp:
        policies, exceptions = _split_exceptions(case.text)
        (Path(tmp) / "policy.yaml").write_text(policies)
        (Path(tmp) / "pod.yaml").write_text(POD)
        args = [str(exe), "apply", "policy.yaml", "--resource", "pod.yaml", "--remove-color", "-v", "3"]
        if exceptions:
            (Path(tmp) / "exception.yaml").write_text(exceptions)
            args += ["--exception", "exception.yaml"]
        run = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=tmp)
        verdict, message = _refusal(run.stdout + "\n" + run.stderr)
        return {"verdict": verdict, "message": message}


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
                       "--resource pod.yaml -v 3` (exceptions with --exception); `verdict`: `refused` when it "
                       "printed one of its refusals (tests/consistency/kyverno_policy_validation.py), `unread` "
                       "when it cannot read the kind from a file, else `accepted`; `message`: the refusal's "
                       "first line.",
        "kyverno": kyverno_build(exe),
        "cases": cases,
    }


def load_golden() -> dict[str, Any]:
    return read_golden(GOLDEN)


def main() -> None:
    exe = kyverno_exe_or_exit()
    data = derive(exe)
    GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    counts = {v: sum(1 for c in data["cases"] if c["verdict"] == v) for v in ("refused", "accepted", "unread")}
    print(f"{GOLDEN.relative_to(ROOT)}: {len(data['cases'])} cases, {counts}")


if __name__ == "__main__":
    main()
