"""convert --crd: rules on a custom kind name the resource its CustomResourceDefinition gives (the plural is
the CRD's own, never guessed); without the CRD such a policy is refused, naming the flag."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli

CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "vmis.kubevirt.io"},
       "spec": {"group": "kubevirt.io", "scope": "Namespaced",
                "names": {"kind": "VirtualMachineInstance", "plural": "vmis", "singular": "vmi"},
                "versions": [{"name": "v1", "served": True, "storage": True,
                              "schema": {"openAPIV3Schema": {"type": "object",
                                                             "x-kubernetes-preserve-unknown-fields": True}}}]}}
POLICY = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "vmi-labels"},
          "spec": {"validationFailureAction": "Enforce", "rules": [{
              "name": "team", "match": {"any": [{"resources": {"kinds": ["VirtualMachineInstance"]}}]},
              "validate": {"message": "team label", "pattern": {"metadata": {"labels": {"team": "?*"}}}}}]}}
VMIS = [{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
         "metadata": {"name": name, "namespace": "default", "labels": labels}, "spec": {"domain": {"cpu": 1}}}
        for name, labels in (("good", {"team": "a"}), ("bad", {"other": "x"}))]


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(POLICY))
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(CRD))
    (tmp_path / "vmis.yaml").write_text(yaml.safe_dump_all(VMIS))
    return tmp_path / "p.yaml", tmp_path / "crd.yaml", tmp_path / "vmis.yaml"


def test_without_the_crd_the_policy_is_refused_naming_the_flag(tmp_path: Path) -> None:
    policy, _, _ = _files(tmp_path)
    result = CliRunner().invoke(cli, ["convert", "-p", str(policy)])
    assert result.exit_code == 1
    assert ("kind 'VirtualMachineInstance' is not one the offline REST mapper knows and names no API group "
            "(Kyverno matches it in every group); its resource cannot be named (give its "
            "CustomResourceDefinition with --crd)") in result.stderr


def test_with_the_crd_the_rule_names_its_resource_and_decides_alike(tmp_path: Path) -> None:
    policy, crd, vmis = _files(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["convert", "-p", str(policy), "-o", str(out), "--crd", str(crd),
                                      "--verify", "-r", str(vmis)])
    assert result.exit_code == 0, result.output + result.stderr
    written = yaml.safe_load((out / "vmi-labels.yaml").read_text())
    assert written["spec"]["matchConstraints"]["resourceRules"] == [
        {"apiGroups": ["kubevirt.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
         "resources": ["vmis"]}]
    assert "0 verdict difference(s)" in result.output
    verified = int(result.output.split("verified ")[1].split(" ")[0])
    assert verified > len(VMIS)
    # the conversion does fail the bad one: the comparison saw the custom kind evaluated
    evaluated = CliRunner().invoke(cli, ["eval", "-p", str(out), "-r", str(vmis), "--crd", str(crd)])
    assert evaluated.exit_code == 1 and "VirtualMachineInstance default/bad" in evaluated.output
