"""`image.GetMetadata(ref)` gives one answer whatever the policy kind (issue 37): without `--registry`, where a
cluster's Kyverno reads the registry (kk: pkg/cel/libs/context.go GetImageData), a ValidatingPolicy, a
MutatingPolicy, a GeneratingPolicy and a DeletingPolicy calling it are each `undetermined` with the reason
`needs-registry: ...` naming `--registry`, never an `error` and never a decision built on it:

- MutatingPolicy: its mutation is not applied and the admitted object is not known, so the validation of the
  subject is undetermined too (evaluate/admission_chain.py `undetermined_by_admission`);
- GeneratingPolicy: nothing is generated; diff says `undetermined` (needs-registry) of its downstreams, never
  missing or orphan;
- DeletingPolicy: no deletion is decided; diff says `undetermined` (needs-registry).

With `--registry` each reads the registry (tests/registry/fixture.py) and decides; a context file's `images`
answers before either (the CLI's rule). `kyrec test`'s default mode keeps the CLI's answer (its fake provider's
"not found in the context" error): checked here on the provider it builds."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_kyrec.cel.context import LibraryContext, ObjectsProvider
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import Document, Source
from tests.registry.fixture import OciRegistry
from tests.registry.keys import make_key

NOW = "2026-01-01T00:00:00Z"
PODS = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                           "resources": ["pods"]}]}
DIGEST = "image.GetMetadata(object.spec.containers[0].image).digest"

VPOL = {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "vpol-digest"},
        "spec": {"validationActions": ["Audit"], "matchConstraints": PODS,
                 "validations": [{"expression": f"{DIGEST}.startsWith('sha256:')", "message": "no digest"}]}}
MPOL = {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": "mpol-digest"},
        "spec": {"matchConstraints": PODS, "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
            "expression": f'Object{{metadata: Object.metadata{{annotations: {{"digest": {DIGEST}}}}}}}'}}]}}
# reads only what the MutatingPolicy writes: its verdict depends on the admitted object alone
CHECK = {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "check-annotation"},
         "spec": {"validationActions": ["Audit"], "matchConstraints": PODS,
                  "validations": [{"expression": "object.metadata.?annotations[?'digest'].orValue('')"
                                                 ".startsWith('sha256:')", "message": "not pinned"}]}}
GPOL = {"apiVersion": "policies.kyverno.io/v1", "kind": "GeneratingPolicy", "metadata": {"name": "gpol-digest"},
        "spec": {"evaluation": {"synchronize": {"enabled": True}}, "matchConstraints": PODS,
                 "generate": [{"expression": (
                     'generator.Apply(object.metadata.namespace, [{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"), '
                     '"metadata": dyn({"name": object.metadata.name + "-digest"}), '
                     f'"data": dyn({{"digest": {DIGEST}}})}}])')}]}}
DPOL = {"apiVersion": "policies.kyverno.io/v1", "kind": "DeletingPolicy",
        "metadata": {"name": "dpol-digest", "creationTimestamp": "2025-12-01T00:00:00Z"},
        "spec": {"schedule": "0 3 * * *", "matchConstraints": {"resourceRules": [
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]},
                 "conditions": [{"name": "pinned", "expression": f"{DIGEST}.startsWith('sha256:')"}]}}
# the policies that read the image themselves, by kind
READERS = {"ValidatingPolicy": VPOL, "MutatingPolicy": MPOL, "GeneratingPolicy": GPOL, "DeletingPolicy": DPOL}
UID = "0f5d6a1e-0000-4000-8000-000000000001"


def pod(image: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": UID},
            "spec": {"containers": [{"name": "c", "image": image}]}}


def downstream(digest: str) -> dict[str, Any]:
    """The ConfigMap gpol-digest wrote for the Pod, as Kyverno labels it."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "p-digest", "namespace": "default", "labels": {
            "app.kubernetes.io/managed-by": "kyverno", "generate.kyverno.io/policy-name": "gpol-digest",
            "generate.kyverno.io/policy-namespace": "", "generate.kyverno.io/trigger-uid": UID,
            "generate.kyverno.io/trigger-kind": "Pod", "generate.kyverno.io/trigger-version": "v1",
            "generate.kyverno.io/trigger-group": "", "generate.kyverno.io/trigger-namespace": "default",
            "generate.kyverno.io/trigger-name": "p"}}, "data": {"digest": digest}}


def write(tmp_path: Path, image: str, *state_extra: dict[str, Any]) -> Path:
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all([VPOL, MPOL, CHECK, GPOL, DPOL]))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump(pod(image)))
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
    (tmp_path / "state.yaml").write_text(yaml.safe_dump_all([namespace, pod(image), *state_extra]))
    return tmp_path


def kyrec(where: Path, *args: str) -> tuple[int, Any]:
    done = subprocess.run([sys.executable, "-m", "kubectl_kyrec", *args, "-p", str(where / "policies.yaml"),
                           "--now", NOW, "-o", "json"], capture_output=True, text=True, timeout=180, cwd=where)
    assert done.returncode not in (2, 3, 70), done.stderr
    return done.returncode, json.loads(done.stdout)


def eval_results(where: Path, *args: str) -> dict[str, tuple[str, str]]:
    code, doc = kyrec(where, "eval", "-r", str(where / "pods.yaml"), *args)
    assert code in (0, 1)
    return {r["policy"]: (r["result"], r.get("message", "")) for r in doc["results"]}


def explained(where: Path, *args: str) -> dict[str, tuple[str, str]]:
    _, doc = kyrec(where, "explain", "Pod/p", "-n", "default", "-r", str(where / "pods.yaml"), *args)
    # the DeletingPolicy is explained on the object as it is: --state holds it
    _, dpol = kyrec(where, "explain", "Pod/p", "-n", "default", "--state", str(where / "state.yaml"), *args)
    out = {e["policy"]: (r["result"], r.get("message", "")) for e in doc["explanations"] for r in e["results"]}
    out.update({e["policy"]: (r["result"], r.get("message", "")) for e in dpol["explanations"] for r in e["results"]
                if e["policyKind"] == "DeletingPolicy"})
    return out


def diff_changes(where: Path, *args: str) -> tuple[int, dict[str, tuple[str, str | None, str]]]:
    code, doc = kyrec(where, "diff", "--state", str(where / "state.yaml"), *args)
    return code, {c["policy"]: (c["class"], c["reason"], c.get("message", "")) for c in doc["changes"]}


def needs_registry(result: tuple[str, str]) -> bool:
    status, message = result
    return status == "undetermined" and message.startswith("needs-registry: ") and "--registry" in message


def test_offline_every_kind_is_undetermined_needs_registry(tmp_path: Path) -> None:
    # the registry is never contacted offline: an address nothing listens on is enough
    where = write(tmp_path, "127.0.0.1:1/app:v1", downstream("sha256:0"))
    results = eval_results(where)
    assert needs_registry(results["mpol-digest"]), results["mpol-digest"]
    # the mutation is not applied: whatever is decided on the admitted object is not known, for the same reason
    for name in ("check-annotation", "vpol-digest", "gpol-digest"):
        status, message = results[name]
        assert status == "undetermined" and "(needs-registry: MutatingPolicy 'mpol-digest'" in message, (name, message)
    # each on its own (no mutation): its own needs-registry
    results = eval_results(where, "--no-mutate")
    for name in ("vpol-digest", "gpol-digest"):
        assert needs_registry(results[name]), (name, results[name])
    assert results["check-annotation"][0] == "fail"
    # explain gives each the cause eval gives (the MutatingPolicy's tree is the admission's)
    shown = {**explained(where, "--no-mutate"), "mpol-digest": explained(where)["mpol-digest"]}
    for policy in READERS.values():
        name = policy["metadata"]["name"]
        assert needs_registry(shown[name]), (name, shown[name])
    code, changes = diff_changes(where)
    # the downstream the GeneratingPolicy owns is neither orphan nor in-sync, the Pod's deletion not decided
    assert changes["gpol-digest"][:2] == ("undetermined", "needs-registry")
    assert changes["dpol-digest"][:2] == ("undetermined", "needs-registry")
    assert all(m.startswith("needs-registry: ") and "--registry" in m for _, _, m in changes.values())
    assert code == 0


def test_offline_diff_plans_no_downstream_it_cannot_know(tmp_path: Path) -> None:
    """With no downstream in the state, nothing is reported missing: what the policy generates is not known."""
    where = write(tmp_path, "127.0.0.1:1/app:v1", {"apiVersion": "v1", "kind": "ConfigMap",
                                                   "metadata": {"name": "other", "namespace": "default"}})
    code, doc = kyrec(where, "diff", "--state", str(where / "state.yaml"))
    assert [c for c in doc["changes"] if c["domain"] == "downstream"] == []
    assert any("gpol-digest" in n and "needs-registry" in n and "--registry" in n for n in doc["notices"])
    assert code == 0


def test_a_context_files_images_answer_first(tmp_path: Path) -> None:
    image = "127.0.0.1:1/app:v1"
    where = write(tmp_path, image)
    (where / "context.yaml").write_text(yaml.safe_dump({
        "apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Context",
        "spec": {"images": [{"image": image, "digest": "sha256:abc", "registry": "127.0.0.1:1",
                             "repository": "app", "tag": "v1"}]}}))
    results = eval_results(where, "--context-file", str(where / "context.yaml"))
    assert {name: status for name, (status, _) in results.items()} == {
        "vpol-digest": "pass", "mpol-digest": "pass", "check-annotation": "pass", "gpol-digest": "pass"}


def test_the_clis_provider_keeps_the_clis_error() -> None:
    """`kyrec test`'s default mode answers as Kyverno's CLI, whose fake provider errs (kk:
    pkg/cel/libs/fake_context.go GetImageData): the MutatingPolicy's result stays that error."""
    policies = classify([Document(MPOL, Source("p.yaml", 1))])
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    provider = ObjectsProvider()            # no registry, cluster_images off: the CLI's
    outcome = run_eval(policies, [Document(pod("127.0.0.1:1/app:v1"), Source("r.yaml", 1))], [],
                       kinds=KindTable(), libraries=library_factory(LibraryContext(now=now, provider=provider)),
                       options=EvalOptions(now=now, admit=True))
    [result] = [r for r in outcome.results if r.policy == "mpol-digest"]
    assert result.result == "error" and "image data for 127.0.0.1:1/app:v1 not found in the context" in result.message


@pytest.fixture
def pushed(oci_registry: OciRegistry) -> tuple[str, str]:
    image = f"{oci_registry.repo('kinds')}:v1"
    return image, oci_registry.push(image)


def test_with_the_switch_every_kind_reads_the_registry(pushed: tuple[str, str], tmp_path: Path) -> None:
    image, digest = pushed
    where = write(tmp_path, image, downstream(digest))
    results = eval_results(where, "--registry")
    assert {name: status for name, (status, _) in results.items()} == {
        "vpol-digest": "pass", "mpol-digest": "pass", "check-annotation": "pass", "gpol-digest": "pass"}
    _, doc = kyrec(where, "eval", "-r", str(where / "pods.yaml"), "--registry")
    [admission] = doc["admission"]
    assert admission["undetermined"] == [] and admission["object"]["metadata"]["annotations"] == {"digest": digest}
    shown = explained(where, "--registry")
    assert {name: shown[name][0] for name in ("vpol-digest", "mpol-digest", "gpol-digest", "dpol-digest")} == {
        "vpol-digest": "pass", "mpol-digest": "pass", "gpol-digest": "pass", "dpol-digest": "pass"}
    # the downstream holds the registry's digest: in sync; the Pod's image is pinned: the next run deletes it
    code, changes = diff_changes(where, "--registry")
    assert changes["gpol-digest"][:2] == ("in-sync", None)
    assert changes["dpol-digest"][:2] == ("scheduled-deletion", None)
    # a downstream the registry's data says differs is drift, one absent is missing
    where = write(tmp_path, image, downstream("sha256:0"))
    _, changes = diff_changes(where, "--registry")
    assert changes["gpol-digest"][:2] == ("drifted", "changed-fields")
    # (another ConfigMap: the state lists the kind, so an absent one is known to be absent)
    where = write(tmp_path, image, {"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": "other", "namespace": "default"}})
    code, changes = diff_changes(where, "--registry")
    assert changes["gpol-digest"][:2] == ("missing", None) and code == 1


def test_image_verification_offline_gives_evals_cause_in_explain(tmp_path: Path) -> None:
    """A classic verifyImages rule and an ImageValidatingPolicy offline: eval and explain give one cause,
    needs-registry naming --registry (explain's fetch step said "kyrec has no registry access")."""
    key = make_key(tmp_path)
    classic = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "verify-classic"},
               "spec": {"background": False, "validationFailureAction": "Enforce", "rules": [{
                   "name": "signed", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                   "verifyImages": [{"imageReferences": ["127.0.0.1:*"], "attestors": [{"entries": [
                       {"keys": {"publicKeys": key.public, "rekor": {"ignoreTlog": True},
                                 "ctlog": {"ignoreSCT": True}}}]}]}]}]}}
    ivpol = {"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ImageValidatingPolicy",
             "metadata": {"name": "verify-ivpol"},
             "spec": {"matchConstraints": PODS, "matchImageReferences": [{"glob": "127.0.0.1:*"}],
                      "attestors": [{"name": "a", "cosign": {"key": {"data": key.public}}}],
                      "validations": [{"expression": "images.containers.all(i, verifyImageSignatures(i, "
                                                     "[attestors.a]) > 0)", "message": "unsigned"}]}}
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all([classic, ivpol]))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump(pod("127.0.0.1:1/app:v1")))
    evaluated = eval_results(tmp_path, "--no-mutate")
    _, doc = kyrec(tmp_path, "explain", "Pod/p", "-n", "default", "-r", str(tmp_path / "pods.yaml"), "--no-mutate")
    for name in ("verify-classic", "verify-ivpol"):
        assert needs_registry(evaluated[name]) and "no registry access" not in evaluated[name][1], evaluated[name]
        [tree] = [e for e in doc["explanations"] if e["policy"] == name]
        assert [(r["result"], r["message"]) for r in tree["results"]] == [evaluated[name]]
    # the IVPOL's fetch step says what its result says
    text = json.dumps(doc)
    assert "no registry access" not in text and "(needs-registry: kyrec reads it only with --registry)" in text


CLASSIC_GENERATE = {
    "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "gen-classic"},
    "spec": {"rules": [{"name": "digest-cm", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                        "context": [{"name": "img", "imageRegistry": {
                            "reference": "{{ request.object.spec.containers[0].image }}"}}],
                        "generate": {"synchronize": True, "apiVersion": "v1", "kind": "ConfigMap",
                                     "name": "{{ request.object.metadata.name }}-cdigest",
                                     "namespace": "{{ request.object.metadata.namespace }}",
                                     "data": {"data": {"digest": "{{ img.resolvedImage }}"}}}}]}}


def classic_generate(tmp_path: Path, image: str) -> Path:
    where = write(tmp_path, image, {"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": "other", "namespace": "default"}})
    (where / "policies.yaml").write_text(yaml.safe_dump(CLASSIC_GENERATE))
    return where


def test_a_classic_generate_rule_reading_an_image_registry_offline(tmp_path: Path) -> None:
    """A classic generate rule with an imageRegistry context entry says what the CEL kinds say (it said the
    entry "cannot be answered offline", and diff's notice blamed request.userInfo)."""
    where = classic_generate(tmp_path, "127.0.0.1:1/app:v1")
    assert needs_registry(eval_results(where)["gen-classic"])
    code, doc = kyrec(where, "diff", "--state", str(where / "state.yaml"))
    assert [c for c in doc["changes"] if c["domain"] == "downstream"] == [] and code == 0
    assert any("gen-classic" in n and "needs-registry" in n for n in doc["notices"])
    assert not any("request.userInfo" in n for n in doc["notices"])


def test_a_classic_generate_rule_reads_the_registry_with_the_switch(pushed: tuple[str, str], tmp_path: Path) -> None:
    image, digest = pushed
    where = classic_generate(tmp_path, image)
    assert eval_results(where, "--registry")["gen-classic"][0] == "pass"
    code, doc = kyrec(where, "diff", "--state", str(where / "state.yaml"), "--registry")
    [change] = [c for c in doc["changes"] if c["domain"] == "downstream"]
    assert (change["class"], change["policy"], change["object"]["name"]) == ("missing", "gen-classic", "p-cdigest")
    assert code == 1


# a matchCondition that reads image data, in every kind that has matchConditions (a DeletingPolicy's
# conditions are above); failurePolicy Ignore turns a condition's error into a skip, but not one only a
# registry could have avoided: with the registry the conditions could hold
CONDITION = [{"name": "pinned", "expression": f"{DIGEST}.startsWith('sha256:')"}]


def _with_conditions(policy: dict[str, Any], failure_policy: str | None) -> dict[str, Any]:
    spec = {**policy["spec"], "matchConditions": CONDITION}
    if failure_policy is not None:
        spec["failurePolicy"] = failure_policy
    return {**policy, "spec": spec}


IVPOL = {"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ImageValidatingPolicy",
         "metadata": {"name": "ivpol-digest"},
         "spec": {"matchConstraints": PODS, "matchImageReferences": [{"glob": "nothing.example/*"}],
                  "attestors": [{"name": "a", "cosign": {"key": {"data": "unused"}}}],
                  "validations": [{"expression": "true", "message": "never"}]}}
ALWAYS = {"ValidatingPolicy": {**VPOL, "spec": {**VPOL["spec"], "validations": [
              {"expression": "true", "message": "never"}]}},
          "ImageValidatingPolicy": IVPOL,
          "MutatingPolicy": {**MPOL, "spec": {**MPOL["spec"], "mutations": [{
              "patchType": "ApplyConfiguration", "applyConfiguration": {
                  "expression": 'Object{metadata: Object.metadata{labels: {"seen": "yes"}}}'}}]}},
          "GeneratingPolicy": {**GPOL, "spec": {**GPOL["spec"], "generate": [{"expression": (
              'generator.Apply(object.metadata.namespace, [{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"), '
              '"metadata": dyn({"name": "seen"})}])')}]}}}


@pytest.mark.parametrize("kind,failure_policy", [
    ("ValidatingPolicy", "Fail"), ("ValidatingPolicy", "Ignore"), ("ImageValidatingPolicy", "Fail"),
    ("ImageValidatingPolicy", "Ignore"), ("MutatingPolicy", "Fail"), ("MutatingPolicy", "Ignore"),
    ("GeneratingPolicy", None)])
def test_a_match_condition_reading_image_data(kind: str, failure_policy: str | None, tmp_path: Path) -> None:
    policy = _with_conditions(ALWAYS[kind], failure_policy)
    name = policy["metadata"]["name"]
    if kind == "GeneratingPolicy":
        # generation runs beside evaluation (run/generate.py): through eval itself
        where = write(tmp_path, "127.0.0.1:1/app:v1")
        (where / "policies.yaml").write_text(yaml.safe_dump(policy))
        result = eval_results(where)[name]
    else:
        now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
        policies = classify([Document(policy, Source("p.yaml", 1))])
        assert not policies.errors, policies.errors
        # eval's provider: a cluster, which would read the registry
        provider = ObjectsProvider(cluster_images=True)
        outcome = run_eval(policies, [Document(pod("127.0.0.1:1/app:v1"), Source("r.yaml", 1))], [],
                           kinds=KindTable(), libraries=library_factory(LibraryContext(now=now, provider=provider)),
                           options=EvalOptions(now=now, admit=True))
        [result] = [(r.result, r.message) for r in outcome.results if r.policy == name]
    assert result[0] == "undetermined" and result[1].startswith("needs-registry: a matchCondition needs a "
                                                                "registry: "), result
