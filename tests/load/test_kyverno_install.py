"""load/run_inputs/kyverno_install.py: Kyverno's controllers' flags as Go's flag package reads them, and the service
accounts they run as."""

from __future__ import annotations

from typing import Any

from kubectl_kyrec.load.run_inputs.kyverno_install import BACKGROUND, REPORTS, KyvernoInstall, parse_go_flags


def test_go_flag_forms() -> None:
    assert parse_go_flags(["--backgroundScan", "-v=2", "--backgroundScanInterval", "2h", "--policyReports=0"]) == {
        "backgroundScan": "true", "v": "2", "backgroundScanInterval": "2h", "policyReports": "0"}
    # the last of a repeated flag wins; parsing stops at `--` and at the first argument that is no flag
    assert parse_go_flags(["--backgroundScan=false", "--backgroundScan=true", "--", "--policyReports=false"]) == {
        "backgroundScan": "true"}
    assert parse_go_flags(["serve", "--backgroundScan=false"]) == {}


def _deployment(name: str, labels: dict[str, str], pod: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "security", "labels": labels},
            "spec": {"template": {"spec": pod}}}


def test_accounts_from_the_chart_defaults_the_deployment_or_its_default_account() -> None:
    assert KyvernoInstall.of([]).account(BACKGROUND) == ("kyverno", "kyverno-background-controller")
    labels = {"app.kubernetes.io/component": "reports-controller", "app.kubernetes.io/part-of": "kyverno"}
    named = _deployment("kyv-reports", labels, {"serviceAccountName": "reporter", "containers": [
        {"name": "c", "args": ["--backgroundScan=false"]}]})
    install = KyvernoInstall.of([named])
    assert install.account(REPORTS) == ("security", "reporter")
    controller = install.controller(REPORTS)
    assert controller is not None and controller.bool_flag("backgroundScan") is False
    assert controller.bool_flag("policyReports") is None                  # not given: Kyverno's default holds
    unnamed = _deployment("kyv-reports", labels, {"containers": [{"name": "c"}]})
    assert KyvernoInstall.of([unnamed]).account(REPORTS) == ("security", "default")
    # another component's Deployment, or one that is not Kyverno's, is not the reports controller
    assert KyvernoInstall.of([_deployment("reports-controller", {}, {})]).controller(REPORTS) is None
