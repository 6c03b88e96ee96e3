"""The CI side outputs of a run: GitHub's step summary (a file named by the environment)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from kubectl_kyrec.errors import KyrecError
from kubectl_kyrec.reconcile.findings import Finding
from kubectl_kyrec.render import github


def append_step_summary(findings: Sequence[Finding], *, title: str, fixed: Sequence[str] = (),
                        environ: Mapping[str, str] | None = None) -> None:
    """Append the Markdown summary to `$GITHUB_STEP_SUMMARY` when GitHub set it (other steps write there too)."""
    path = (os.environ if environ is None else environ).get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(github.step_summary(findings, title=title, fixed=fixed))
    except OSError as exc:
        raise KyrecError(f"cannot write $GITHUB_STEP_SUMMARY {path}: {exc.strerror}") from None
