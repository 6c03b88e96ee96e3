"""A classic verifyImages rule offline: no response without a matching image, the digest and required checks
Kyverno makes without a registry, `undetermined` (needs-registry) for everything else (kk:
handlers/mutation/mutate_image.go, internal/imageverifier.go, handlers/validation/validate_image.go)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import yaml

from kubectl_kyrec.cel.context import EmptyProvider, LibraryContext
from kubectl_kyrec.cel.libraries import library_factory
from kubectl_kyrec.classic.verify_images import evaluate
from kubectl_kyrec.evaluate.pipeline import EvalOptions, run_eval
from kubectl_kyrec.load.documents import load_documents
from kubectl_kyrec.load.policy.policies import classify
from kubectl_kyrec.load.run_inputs.kinds import KindTable
from kubectl_kyrec.model import UNDETERMINED, Document, Source

DIGEST = "sha256:859ab6768a6f26a79bc42b231664111317d095a4f04e4b6fe79ce37b3d199097"
KEYS = [{"entries": [{"keys": {"publicKeys": "-----BEGIN PUBLIC KEY-----"}}]}]


def pod(*images: str, **annotations: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "annotations": annotations},
            "spec": {"containers": [{"name": f"c{i}", "image": image} for i, image in enumerate(images)]}}


def rule(**entry: Any) -> dict[str, Any]:
    return {"name": "r", "verifyImages": [{"imageReferences": ["ghcr.io/*"], **entry}]}


def test_no_matching_image_gives_no_response() -> None:
    assert evaluate(rule(attestors=KEYS), pod("nginx:1"), None, "p", "r") is None


def test_a_signature_check_needs_the_registry() -> None:
    outcome = evaluate(rule(attestors=KEYS), pod("ghcr.io/a/b:1", "nginx"), None, "p", "r")
    assert outcome is not None and outcome.needs_registry == ["ghcr.io/a/b:1"]


def test_skip_image_references_are_skipped_without_a_registry() -> None:
    outcome = evaluate(rule(attestors=KEYS, skipImageReferences=["ghcr.io/a/*"], mutateDigest=False,
                            verifyDigest=False, required=False), pod("ghcr.io/a/b:1"), None, "p", "r")
    assert outcome is not None and not outcome.needs_registry
    assert outcome.responses == [("skip", "skipping image reference image ghcr.io/a/b:1, policy p ruleName r")]


def test_mutate_digest_of_a_tagged_image_needs_the_registry() -> None:
    # the defaults (mutateDigest, verifyDigest, required: true) hold when the fields are absent
    assert evaluate(rule(), pod("ghcr.io/a/b:1"), None, "p", "r").needs_registry == ["ghcr.io/a/b:1"]  # type: ignore[union-attr]
    with_digest = evaluate(rule(required=False), pod(f"ghcr.io/a/b@{DIGEST}"), None, "p", "r")
    assert with_digest is not None and with_digest.responses == [("pass", "image verified")]


def test_verify_digest_and_required_decided_offline() -> None:
    checks = {"mutateDigest": False, "verifyDigest": True, "required": False}
    no_digest = evaluate(rule(**checks), pod("ghcr.io/a/b:1"), None, "p", "r")
    assert no_digest is not None and no_digest.responses == [("fail", "missing digest for ghcr.io/a/b:1")]
    required = evaluate(rule(mutateDigest=False, verifyDigest=False), pod("ghcr.io/a/b:1"), None, "p", "r")
    assert required is not None and required.responses == [("fail", "unverified image ghcr.io/a/b:1")]
    # the resource's own verify-images annotation answers `required`
    marked = pod("ghcr.io/a/b:1", **{"kyverno.io/verify-images": '{"ghcr.io/a/b:1": "pass"}'})
    assert evaluate(rule(mutateDigest=False, verifyDigest=False), marked, None, "p", "r").responses == [  # type: ignore[union-attr]
        ("pass", "image verified")]


def test_an_image_no_entry_references_ends_the_validate_phase() -> None:
    # kk validate_image.go: the first image an entry does not reference returns with no response
    checks = {"mutateDigest": False, "required": False}
    outcome = evaluate(rule(**checks), pod(f"ghcr.io/a/b@{DIGEST}", "nginx"), None, "p", "r")
    assert outcome is not None and outcome.responses == [] and not outcome.needs_registry
    # ... and with a failing image beside it, Go's map order decides which comes first
    mixed = evaluate(rule(**checks), pod("ghcr.io/a/b:1", "nginx"), None, "p", "r")
    assert mixed is not None and mixed.responses == [] and "Go map order" in mixed.order_dependent


def test_an_unchanged_image_on_update_is_not_checked_again() -> None:
    outcome = evaluate(rule(attestors=KEYS, verifyDigest=False, required=False, mutateDigest=False),
                       pod("ghcr.io/a/b:1"), pod("ghcr.io/a/b:1"), "p", "r")
    assert outcome is not None and outcome.responses == [] and not outcome.needs_registry


def test_the_rule_result_is_undetermined_and_an_exception_still_skips() -> None:
    policy = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "check"},
              # Enforce: an Audit policy whose entry patches digests is refused (test_digest_mutation_refused.py)
              "spec": {"background": True, "validationFailureAction": "Enforce",
                       "rules": [{"match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                                  **rule(attestors=KEYS)}]}}
    exception = {"apiVersion": "kyverno.io/v2", "kind": "PolicyException", "metadata": {"name": "e", "namespace": "ns"},
                 "spec": {"exceptions": [{"policyName": "check", "ruleNames": ["r"]}],
                          "match": {"any": [{"resources": {"kinds": ["Pod"], "names": ["spared"]}}]}}}
    spared = pod("ghcr.io/a/b:1")
    spared["metadata"]["name"] = "spared"
    docs = [Document(policy, Source("p.yaml", 1)), Document(exception, Source("e.yaml", 1))]
    resources = [Document(pod("ghcr.io/a/b:1"), Source("r.yaml", 1)), Document(spared, Source("r.yaml", 2))]
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    out = run_eval(classify(docs).raise_errors(), resources, resources, kinds=KindTable(),
                   libraries=library_factory(LibraryContext(now=now, provider=EmptyProvider())),
                   options=EvalOptions(now=now))
    got = sorted((r.subject.name, r.rule, r.result, ok) for r, ok in out.pairs)
    assert got == [("p", "r", UNDETERMINED, False), ("spared", "r", "skip", True)]
    [undetermined] = [r for r in out.results if r.result == UNDETERMINED]
    assert undetermined.message.startswith("needs-registry: verifyImages: Kyverno checks ghcr.io/a/b:1 against")


GOLDEN = Path(__file__).resolve().parents[2] / "testdata" / "classic" / "verify-images-offline"


def _eval(*files: str) -> list[tuple[str, str, str, str, str]]:
    policies = classify(load_documents([str(GOLDEN / f) for f in files])).raise_errors()
    resources = load_documents([str(GOLDEN / "resources.yaml")])
    now = datetime.datetime(2026, 12, 4, tzinfo=datetime.timezone.utc)
    out = run_eval(policies, resources, resources, kinds=KindTable(),
                   libraries=library_factory(LibraryContext(now=now, provider=EmptyProvider())),
                   options=EvalOptions(now=now))
    assert not out.errors
    return sorted((r.policy, r.subject.name, r.rule, r.result, r.message) for r in out.results)


def test_digest_and_required_checks_give_kyvernos_results() -> None:
    # testdata/classic/verify-images-offline/kyverno-v1.17.2.yaml: Kyverno's CLI over the same files
    report = yaml.safe_load((GOLDEN / "kyverno-v1.17.2.yaml").read_text())
    theirs = sorted((r["policy"], r["resources"][0]["name"], r["rule"], r["result"], r["message"])
                    for r in report["results"])
    assert _eval("policies.yaml") == theirs


def test_a_signature_checking_rule_makes_required_undetermined() -> None:
    # with attesting.yaml in the run, Kyverno's CLI writes the annotation `required` reads from what the
    # registry said (offline: `unverified image ...` for every image but the skipped one)
    got = {(policy, name): (result, message) for policy, name, _, result, message in
           _eval("policies.yaml", "attesting.yaml") if policy != "digests"}
    assert got[("skipped", "legacy")] == (
        "skip", "skipping image reference image ghcr.io/acme/legacy:2, policy skipped ruleName skip-legacy")
    undecided = sorted(key for key, (result, _) in got.items() if result == UNDETERMINED)
    assert undecided == [("skipped", "marked"), ("skipped", "pinned"), ("skipped", "tagged"),
                         ("verified", "legacy"), ("verified", "marked"), ("verified", "pinned"),
                         ("verified", "tagged")]
    assert "`required` reads the verification" in got[("verified", "tagged")][1]
