"""convert on custom kinds without their CustomResourceDefinition (issue 38): a kind written with its group
(`velero.io/v1/Restore`) gets Kubernetes' guessed plural (UnsafeGuessKindToResource, load/run_inputs/kinds.py
guess_plural) and is written as a documented substitute naming the guess; a kind without a group is refused
(Kyverno matches it in every group, a resourceRule names one group's resource) unless a CRD gives it. Kind
selectors are read as Kyverno reads them (pkg/utils/kube/kind.go ParseKindSelector): `v1/BuildConfig` is any
group's BuildConfig at v1, `TaskRun.status` the status subresource. docs/convert.md, "Custom kinds"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.convert.policy import convert_policy
from tests.shared_inputs import SHARED, present, shared


def _policy(name: str, kinds: list[str], pattern: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": name},
            "spec": {"validationFailureAction": "Enforce", "background": True, "rules": [{
                "name": "check", "match": {"any": [{"resources": {"kinds": kinds}}]},
                "validate": {"message": "checked", "pattern": pattern}}]}}


RESTORE_POLICY = _policy("block-restore", ["velero.io/v1/Restore"],
                         {"spec": {"namespaceMapping": {"X(kube-system)": "null"}}})
RESTORES = [{"apiVersion": "velero.io/v1", "kind": "Restore",
             "metadata": {"name": name, "namespace": "velero"}, "spec": {"backupName": "b", **spec}}
            for name, spec in (("good", {"namespaceMapping": {"apps": "apps2"}}),
                               ("bad", {"namespaceMapping": {"kube-system": "ks2"}}))]


def _rules(conv_doc: dict[str, Any]) -> list[dict[str, Any]]:
    return list(conv_doc["spec"]["matchConstraints"]["resourceRules"])


def test_a_grouped_kind_gets_the_guessed_plural_as_a_named_substitute() -> None:
    conv = convert_policy(RESTORE_POLICY)
    assert conv.refusals == [] and conv.status == "converted with substitutes"
    assert _rules(conv.documents[0]) == [{"apiGroups": ["velero.io"], "apiVersions": ["v1"],
                                          "operations": ["CREATE", "UPDATE"], "resources": ["restores"]}]
    assert conv.substitutes == [
        "spec.rules[0].match: kind 'velero.io/v1/Restore' is not one the offline REST mapper knows; its resource "
        "is guessed as velero.io/restores (Kubernetes' UnsafeGuessKindToResource): should its "
        "CustomResourceDefinition name another plural, the policy matches another resource or none (give the "
        "CRD with --crd for its own plural)"]


def test_the_guess_is_kubernetes_own_not_a_plain_s() -> None:
    # UnsafeGuessKindToResource: y -> ies, s -> ses, else s (what makes it unsafe: Gateway -> gatewaies,
    # Mesh -> meshs, where their CRDs say gateways and meshes)
    for kind, plural in (("Policy", "policies"), ("Status", "statuses"), ("Mesh", "meshs"),
                         ("Gateway", "gatewaies")):
        conv = convert_policy(_policy("p", [f"example.io/v1/{kind}"], {"spec": {"x": "?*"}}))
        assert _rules(conv.documents[0])[0]["resources"] == [plural], kind


def test_the_cli_writes_the_guess_and_verify_evaluates_both_sides(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(RESTORE_POLICY))
    (tmp_path / "r.yaml").write_text(yaml.safe_dump_all(RESTORES))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["convert", "-p", str(tmp_path / "p.yaml"), "-o", str(out), "--verify",
                                      "-r", str(tmp_path / "r.yaml")])
    assert result.exit_code == 0, result.output + result.stderr
    assert "ClusterPolicy 'block-restore': converted with substitutes" in result.output
    text = (out / "block-restore.yaml").read_text()
    assert "# difference: spec.rules[0].match: kind 'velero.io/v1/Restore' is not one" in text
    assert "0 verdict difference(s)" in result.output
    verified = int(result.output.split("verified ")[1].split(" ")[0])
    assert verified > len(RESTORES)
    # not vacuous: the converted policy matches the custom kind and fails the bad Restore only
    evaluated = CliRunner().invoke(cli, ["eval", "-p", str(out), "-r", str(tmp_path / "r.yaml")])
    assert evaluated.exit_code == 1, evaluated.output + evaluated.stderr
    assert "Restore velero/bad" in evaluated.output and "Restore velero/good" not in evaluated.output


def test_a_kind_without_a_group_is_refused_naming_why() -> None:
    for kind in ("TaskRun", "v1/BuildConfig"):
        conv = convert_policy(_policy("p", [kind], {"spec": {"x": "?*"}}))
        assert conv.documents == []
        assert conv.refusals == [
            f"spec.rules[0].match: kind {kind!r} is not one the offline REST mapper knows and names no API group "
            "(Kyverno matches it in every group); its resource cannot be named (give its CustomResourceDefinition "
            "with --crd)"], kind


BUILD_CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
             "metadata": {"name": "buildconfigs.build.openshift.io"},
             "spec": {"group": "build.openshift.io", "scope": "Namespaced",
                      "names": {"kind": "BuildConfig", "plural": "buildconfigs", "singular": "buildconfig"},
                      "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                          "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def test_a_version_without_a_group_is_any_group_so_the_crd_names_it(tmp_path: Path) -> None:
    # Kyverno reads `v1/BuildConfig` as group `*`, version v1; it was read as the core group, where no CRD is
    policy = _policy("bc", ["v1/BuildConfig"], {"spec": {"strategy": {"type": "Docker"}}})
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(policy))
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(BUILD_CRD))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["convert", "-p", str(tmp_path / "p.yaml"), "-o", str(out), "--crd",
                                      str(tmp_path / "crd.yaml")])
    assert result.exit_code == 0, result.output + result.stderr
    assert "converted exactly" in result.output
    written = yaml.safe_load((out / "bc.yaml").read_text())
    assert _rules(written) == [{"apiGroups": ["build.openshift.io"], "apiVersions": ["v1"],
                                "operations": ["CREATE", "UPDATE"], "resources": ["buildconfigs"]}]


def test_a_crd_plural_wins_over_the_guess_and_is_exact(tmp_path: Path) -> None:
    crd = {**BUILD_CRD, "metadata": {"name": "bcfgs.build.openshift.io"},
           "spec": {**BUILD_CRD["spec"], "names": {"kind": "BuildConfig", "plural": "bcfgs"}}}
    policy = _policy("bc", ["build.openshift.io/v1/BuildConfig"], {"spec": {"strategy": {"type": "Docker"}}})
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(policy))
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(crd))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["convert", "-p", str(tmp_path / "p.yaml"), "-o", str(out), "--crd",
                                      str(tmp_path / "crd.yaml")])
    assert result.exit_code == 0 and "converted exactly" in result.output, result.output + result.stderr
    assert _rules(yaml.safe_load((out / "bc.yaml").read_text()))[0]["resources"] == ["bcfgs"]


def test_a_dotted_subresource_is_read_as_kyverno_reads_it() -> None:
    conv = convert_policy(_policy("p", ["tekton.dev/v1beta1/TaskRun.status"], {"status": {"x": "?*"}}))
    assert conv.refusals == []
    assert _rules(conv.documents[0])[0]["resources"] == ["taskruns/status"]
    assert _rules(conv.documents[0])[0]["apiGroups"] == ["tekton.dev"]


def test_a_cleanup_policy_on_a_grouped_custom_kind_names_the_guess_too() -> None:
    cleanup = {"apiVersion": "kyverno.io/v2", "kind": "ClusterCleanupPolicy", "metadata": {"name": "old-backups"},
               "spec": {"schedule": "0 0 * * *",
                        "match": {"any": [{"resources": {"kinds": ["velero.io/v1/Backup"]}}]}}}
    conv = convert_policy(cleanup)
    assert conv.refusals == [] and conv.status == "converted with substitutes"
    assert conv.documents[0]["kind"] == "DeletingPolicy"
    assert _rules(conv.documents[0]) == [{"apiGroups": ["velero.io"], "apiVersions": ["v1"], "operations": ["*"],
                                          "resources": ["backups"]}]
    assert conv.substitutes[0].startswith("spec.match: kind 'velero.io/v1/Backup' is not one the offline REST")


@present(shared("corpus"), "convert: the corpus's custom kinds")
def test_every_corpus_guess_a_chainsaw_crd_assert_names_is_right() -> None:
    # The legacy corpus's chainsaw tests assert the CRDs they install (metadata.name `<plural>.<group>`,
    # status.acceptedNames.kind); they hold no spec, so they are no --crd, but they check the guesses
    root = SHARED / "corpus" / "kyverno-policies-legacy"
    checked: list[str] = []
    for path in sorted(root.glob("*/*/*.yaml")):
        crds = {}
        for assert_file in path.parent.glob(".chainsaw-test/*.yaml"):
            for doc in yaml.safe_load_all(assert_file.read_text()):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    name = str(doc["metadata"]["name"])
                    crds[(name.split(".", 1)[1], doc["status"]["acceptedNames"]["kind"])] = name.split(".", 1)[0]
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict) or doc.get("kind") != "ClusterPolicy":
                continue
            conv = convert_policy(doc)
            for note in (s for s in conv.substitutes if "guessed as" in s):
                kind = note.split("kind '")[1].split("'")[0]
                group, plural = note.split("guessed as ")[1].split(" ")[0].split("/")
                real = crds.get((group, kind.split("/")[-1]))
                if real is not None:
                    assert plural == real, (path, kind)
                    checked.append(f"{path.parent.name}: {kind}")
    # velero's Restore and Schedule, Kasten's Policy, external-secrets' ExternalSecret (and their -cel twins)
    assert len(checked) >= 6, checked


EVENT_AND_HPA = [
    {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
     "metadata": {"name": "h2", "namespace": "default"},
     "spec": {"maxReplicas": 2, "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}},
    {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e2", "namespace": "default"},
     "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "x", "reportingInstance": "y",
     "action": "a", "reason": "b", "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}},
    {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", "namespace": "default"},
     "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}}]


def test_a_kind_served_by_several_groups_or_versions_matches_them_all(tmp_path: Path) -> None:
    # Kyverno's `HorizontalPodAutoscaler` and `Event` match every version and group serving them; the
    # conversion named the first only (autoscaling/v1, core Events), "exactly", and --verify found 12
    # verdict differences on an autoscaling/v2 HPA and an events.k8s.io Event
    policy = _policy("hpa-ev", ["HorizontalPodAutoscaler", "Event"], {"metadata": {"labels": {"team": "?*"}}})
    conv = convert_policy(policy)
    assert [(r["apiGroups"], r["apiVersions"], r["resources"]) for r in _rules(conv.documents[0])] == [
        (["autoscaling"], ["v1", "v2"], ["horizontalpodautoscalers"]), ([""], ["v1"], ["events"]),
        (["events.k8s.io"], ["v1"], ["events"])]
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(policy))
    (tmp_path / "r.yaml").write_text(yaml.safe_dump_all(EVENT_AND_HPA))
    result = CliRunner().invoke(cli, ["convert", "-p", str(tmp_path / "p.yaml"), "-o", str(tmp_path / "out"),
                                      "--verify", "-r", str(tmp_path / "r.yaml")])
    assert result.exit_code == 0, result.output + result.stderr
    assert "converted exactly" in result.output and "0 verdict difference(s)" in result.output
    # not vacuous: each of the three fails the converted policy (none carries the label)
    evaluated = CliRunner().invoke(cli, ["eval", "-p", str(tmp_path / "out"), "-r", str(tmp_path / "r.yaml")])
    assert evaluated.exit_code == 1
    for shown in ("HorizontalPodAutoscaler default/h2", "Event default/e2", "Event default/e1"):
        assert shown in evaluated.output, evaluated.output
