"""`convert` on verifyImages rules (convert/images.py): each is written as an ImageValidatingPolicy, and
`convert --verify --registry` evaluates the ClusterPolicy and its conversion against the test registry
(tests/registry: push.sh signs with keys, keyless-style with a test CA, Notary). Per image (signed, unsigned,
wrongly signed, tampered, by digest, not referenced) both sides must give the same verdict, and that verdict
must be decided (no `undetermined` on either side): the proof is the registry's answer, not two shrugs.
Kyverno's CLI is the reference: convert_images_oracle.py records its verdicts on the originals and the
conversions (testdata/kyverno-truth/convert-images.json), which kyrec's must equal."""

from __future__ import annotations

import datetime
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from kubectl_kyrec.convert.policy import convert_policy
from kubectl_kyrec.evaluate.admission_chain import ORDER_DEPENDENT
from kubectl_kyrec.load.registry import Registry
from kubectl_kyrec.model import UNDETERMINED
from kubectl_kyrec.run.convert import Difference, _verdicts, run_convert, verify
from tests.consistency import convert_images_oracle
from tests.registry.fixture import OciRegistry
from tests.registry.keys import KeyPair, make_ca, make_key, make_leaf, notary_chain

SUBJECT, ISSUER = "https://github.com/org/repo/.github/workflows/release.yaml@refs/heads/main", \
    "https://token.actions.githubusercontent.com"


def cluster_policy(entry: dict[str, Any], name: str = "verify", action: str = "Enforce") -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": name},
            "spec": {"background": False, "validationFailureAction": action, "rules": [{
                "name": "signed", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "verifyImages": [entry]}]}}


def key_entry(*keys: KeyPair, references: tuple[str, ...] = ("127.0.0.1:*",), count: int | None = None,
              **more: Any) -> dict[str, Any]:
    attestor_set: dict[str, Any] = {"entries": [
        {"keys": {"publicKeys": k.public, "rekor": {"ignoreTlog": True, "url": "https://rekor.sigstore.dev"},
                  "ctlog": {"ignoreSCT": True}}} for k in keys]}
    if count is not None:
        attestor_set["count"] = count
    return {"imageReferences": list(references), "attestors": [attestor_set], **more}


def pod(name: str, *images: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": f"c{i}", "image": image} for i, image in enumerate(images)]}}


def both_sides(original: dict[str, Any], pods: list[dict[str, Any]], registry: Registry
               ) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """Each pod's verdict under the ClusterPolicy and under its conversion, and the verify run's difference
    lines (pods and their variants)."""
    conv = convert_policy(original)
    assert not conv.refusals, conv.refusals
    assert [d["kind"] for d in conv.documents] == ["ImageValidatingPolicy"]
    with tempfile.TemporaryDirectory() as workdir:
        before = _verdicts([original], pods, workdir, "original", registry=registry)
        after = _verdicts(conv.documents, pods, workdir, "converted", registry=registry)
    diffs, count = verify(original, conv.documents, pods, registry=registry)
    assert count >= len(pods)
    for d in diffs:
        if d.verdict or d.undecided:
            print(d.line())

    def by_pod(found: dict[tuple[str, str, str], tuple[str, str]]) -> dict[str, str]:
        return {p["metadata"]["name"]: found.get(("Pod", "default", p["metadata"]["name"]), ("pass", ""))[0]
                for p in pods}
    return by_pod(before), by_pod(after), [d.line() for d in diffs if (d.verdict or d.undecided) and not pinned(d)]


def pinned(d: Difference) -> bool:
    """The variants whose difference is known: kyrec's classic engine leaves a rule undetermined where its
    validate phase's answer depends on Go's map order (an image the rule does not reference beside one that
    failed: classic/verify_images.py _validate), though its mutate phase already failed the resource; and the
    documented `reference` difference (convert/images.py DIFFERENCES): a container image made a wildcard
    (`repo:signe*`) is no image reference, to which the ClusterPolicy gives no result and the
    ImageValidatingPolicy an error (undetermined offline) or the other images' fail, as Kyverno CLI v1.17.2
    does for each."""
    if d.original == UNDETERMINED and d.original_message.startswith(ORDER_DEPENDENT):
        return True
    return bool(re.fullmatch(r"wildcard spec\.(template\.spec\.|jobTemplate\.spec\.template\.spec\.)?"
                             r"(containers|initContainers|ephemeralContainers)\.\d+\.image", d.variant)) and \
        d.original == "pass" and d.converted in ("error", "fail", UNDETERMINED)


@pytest.fixture(scope="module")
def signed(oci_registry: OciRegistry, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("convimg")
    key, other = make_key(tmp, "ecdsa"), make_key(tmp, "rsa")
    repo = oci_registry.repo("convimg")
    digests = {"signed": oci_registry.push(f"{repo}:signed", "--sign", key.private)}
    oci_registry.push(f"{repo}:unsigned")
    digests["wrong"] = oci_registry.push(f"{repo}:wrong", "--sign", other.private)
    oci_registry.push(f"{repo}:tampered", "--sign", key.private, "--tamper")
    ca = make_ca()
    leaf = make_leaf(tmp, ca, SUBJECT, ISSUER)
    oci_registry.push(f"{repo}:keyless", "--sign", leaf.private, "--cert", leaf.cert, "--chain", leaf.chain)
    notary_leaf = make_leaf(tmp, make_ca("kyrec notary CA"), "notary@example.com", ISSUER)
    chain = notary_chain(notary_leaf)
    oci_registry.push(f"{repo}:notary", "--notary", chain, notary_leaf.private)
    other_repo = oci_registry.repo("elsewhere")
    oci_registry.push(f"{other_repo}:v1")
    return {"key": key, "other": other, "repo": repo, "digests": digests, "ca": ca, "other_repo": other_repo,
            "notary_chain": chain.read_text(), "notary_root": notary_leaf.chain.read_text()}


def registry() -> Registry:
    return Registry(now=datetime.datetime.now(datetime.timezone.utc))


def test_keys_signed_unsigned_wrong_tampered_agree(signed: dict[str, Any]) -> None:
    repo = signed["repo"]
    pods = [pod(tag, f"{repo}:{tag}") for tag in ("signed", "unsigned", "wrong", "tampered")]
    pods.append(pod("by-digest", f"{repo}@{signed['digests']['signed']}"))
    pods.append(pod("mixed", f"{repo}:signed", f"{repo}:unsigned"))
    before, after, diffs = both_sides(cluster_policy(key_entry(signed["key"])), pods, registry())
    assert before == {"signed": "pass", "unsigned": "fail", "wrong": "fail", "tampered": "fail",
                      "by-digest": "pass", "mixed": "fail"}
    assert after == before
    assert diffs == []


def deployment(name: str, image: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}],
                         "initContainers": [{"name": "i", "image": image}]}}}}


def test_pod_controllers_through_autogen(signed: dict[str, Any]) -> None:
    # classic autogen copies the rule onto the controllers; the ImageValidatingPolicy autogen rewrites the
    # conversion's image extractors (object.spec) into the pod template
    repo = signed["repo"]
    resources = [deployment("signed", f"{repo}:signed"), deployment("unsigned", f"{repo}:unsigned")]
    conv = convert_policy(cluster_policy(key_entry(signed["key"])))
    with tempfile.TemporaryDirectory() as workdir:
        before = _verdicts([cluster_policy(key_entry(signed["key"]))], resources, workdir, "original",
                           registry=registry())
        after = _verdicts(conv.documents, resources, workdir, "converted", registry=registry())
    expected = {("Deployment", "default", "signed"): "pass", ("Deployment", "default", "unsigned"): "fail"}
    assert {k: v[0] for k, v in before.items()} == expected == {k: v[0] for k, v in after.items()}
    diffs, _ = verify(cluster_policy(key_entry(signed["key"])), conv.documents, resources, registry=registry())
    assert [d.line() for d in diffs if (d.verdict or d.undecided) and not pinned(d)] == []


def test_images_the_rule_does_not_reference_pass_both(signed: dict[str, Any]) -> None:
    entry = key_entry(signed["key"], references=(f"{signed['repo']}*",))
    pods = [pod("elsewhere", f"{signed['other_repo']}:v1"),
            pod("mixed", f"{signed['repo']}:signed", f"{signed['other_repo']}:v1"),
            pod("bad", f"{signed['repo']}:unsigned", f"{signed['other_repo']}:v1")]
    before, after, diffs = both_sides(cluster_policy(entry), pods, registry())
    # "bad": the unsigned image fails the classic mutate phase, and its validate phase meets the unreferenced
    # image too, in an order Go's map decides: kyrec's classic engine says undetermined (pinned above)
    assert before == {"elsewhere": "pass", "mixed": "pass", "bad": UNDETERMINED}
    assert after == {"elsewhere": "pass", "mixed": "pass", "bad": "fail"}
    assert diffs == []


def test_count(signed: dict[str, Any]) -> None:
    repo = signed["repo"]
    pods = [pod(tag, f"{repo}:{tag}") for tag in ("signed", "wrong", "unsigned")]
    # count 1: either key; without count: every entry of the set (kk RequiredCount)
    before, after, diffs = both_sides(cluster_policy(key_entry(signed["other"], signed["key"], count=1)), pods,
                                      registry())
    assert before == {"signed": "pass", "wrong": "pass", "unsigned": "fail"} == after
    assert diffs == []
    before, after, diffs = both_sides(cluster_policy(key_entry(signed["other"], signed["key"])), pods, registry())
    assert before == {"signed": "fail", "wrong": "fail", "unsigned": "fail"} == after
    assert diffs == []


def test_verify_digest_without_mutate_digest(signed: dict[str, Any]) -> None:
    repo = signed["repo"]
    entry = key_entry(signed["key"], mutateDigest=False)
    pods = [pod("tag", f"{repo}:signed"), pod("digest", f"{repo}@{signed['digests']['signed']}"),
            pod("digest-wrong", f"{repo}@{signed['digests']['wrong']}")]
    before, after, diffs = both_sides(cluster_policy(entry), pods, registry())
    # the validate phase's `missing digest` fails a signed image given by tag
    assert before == {"tag": "fail", "digest": "pass", "digest-wrong": "fail"} == after
    assert diffs == []


def test_required_false_and_skipped_images(signed: dict[str, Any]) -> None:
    repo = signed["repo"]
    entry = key_entry(signed["key"], required=False, verifyDigest=False, mutateDigest=False,
                      skipImageReferences=[f"{repo}:unsigned"])
    pods = [pod("skipped", f"{repo}:unsigned"), pod("signed", f"{repo}:signed"), pod("wrong", f"{repo}:wrong")]
    before, after, diffs = both_sides(cluster_policy(entry, action="Audit"), pods, registry())
    assert before == {"skipped": "pass", "signed": "pass", "wrong": "fail"} == after
    assert diffs == []


def test_notary_certificates(signed: dict[str, Any]) -> None:
    repo = signed["repo"]
    entry = {"type": "Notary", "imageReferences": ["127.0.0.1:*"],
             "attestors": [{"entries": [{"certificates": {"cert": signed["notary_root"]}}]}]}
    pods = [pod("notary", f"{repo}:notary"), pod("cosign-only", f"{repo}:signed")]
    before, after, diffs = both_sides(cluster_policy(entry), pods, registry())
    assert before == {"notary": "pass", "cosign-only": "fail"} == after
    assert diffs == []


def keyless_entry(roots: str = "", subject: str = SUBJECT) -> dict[str, Any]:
    keyless = {"subject": subject, "issuer": ISSUER,
               "rekor": {"ignoreTlog": True, "url": "https://rekor.sigstore.dev"}, "ctlog": {"ignoreSCT": True}}
    return {"imageReferences": ["127.0.0.1:*"],
            "attestors": [{"entries": [{"keyless": {**keyless, **({"roots": roots} if roots else {})}}]}]}


def test_keyless_is_written_as_cosign_keyless() -> None:
    conv = convert_policy(cluster_policy(keyless_entry()))
    [attestor] = conv.documents[0]["spec"]["attestors"]
    assert attestor["cosign"]["keyless"] == {"identities": [{"subject": SUBJECT, "issuer": ISSUER}]}
    assert attestor["cosign"]["ctlog"] == {"url": "https://rekor.sigstore.dev", "insecureIgnoreTlog": True,
                                           "insecureIgnoreSCT": True}


def test_keyless_with_its_own_roots_is_refused(signed: dict[str, Any]) -> None:
    """The classic rule checks the chain against the attestor's `roots`; Kyverno v1.17.2's
    ImageValidatingPolicy against its TUF trusted root only (tests/consistency/ivpol_keyless_oracle.py: the
    CLI passes the test CA's signature whatever `roots` names). Against the test registry the original
    admits the test CA's signature (and kyrec's ImageValidatingPolicy engine could not decide a conversion
    there: the chain is the TUF root's to decide), so the conversion is refused."""
    original = cluster_policy(keyless_entry(signed["ca"].pem))
    [refusal] = convert_policy(original).refusals
    assert refusal.startswith("spec.rules[0].verifyImages[0].attestors[0].entries[0].keyless.roots: Kyverno "
                              "v1.17.2's ImageValidatingPolicy checks a keyless chain against its TUF trusted root")
    repo = signed["repo"]
    pods = [pod("keyless", f"{repo}:keyless"), pod("key-signed", f"{repo}:signed")]
    with tempfile.TemporaryDirectory() as workdir:
        before = _verdicts([original], pods, workdir, "original", registry=registry())
    assert {k[2]: v[0] for k, v in before.items()} == {"keyless": "pass", "key-signed": "fail"}


def test_without_registry_nothing_is_claimed(signed: dict[str, Any]) -> None:
    # offline both sides are undetermined: listed as not verified, never counted as agreeing passes
    _, _, diffs = both_sides(cluster_policy(key_entry(signed["key"])), [pod("signed", f"{signed['repo']}:signed")],
                             None)  # type: ignore[arg-type]
    assert diffs and all("undetermined on both sides, not verified" in d for d in diffs)


def test_cli_verify_with_registry(signed: dict[str, Any], tmp_path: Path) -> None:
    repo = signed["repo"]
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(cluster_policy(key_entry(signed["key"]))))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all([pod("signed", f"{repo}:signed"),
                                                            pod("unsigned", f"{repo}:unsigned")]))
    args = ["convert", "-p", str(tmp_path / "policy.yaml"), "-o", str(tmp_path / "out"), "--verify",
            "-r", str(tmp_path / "pods.yaml")]
    done = CliRunner().invoke(cli, [*args, "--registry"])
    # the one verdict the two differ on is the documented `reference` difference: each Pod's image made a
    # wildcard, no image reference (the ClusterPolicy gives no result, the ImageValidatingPolicy errors), which
    # the command reports as a verdict difference (exit 1) and names in the policy's `difference:` lines
    assert done.exit_code == 1, done.output
    assert "ClusterPolicy 'verify': converted with substitutes" in done.output
    assert "difference: an image that is no image reference" in done.output
    verdicts = [line for line in done.output.splitlines() if line.startswith("verify: ") and ", converted " in line
                and "message differs" not in line]
    assert sorted(verdicts) == sorted(
        f"verify: Pod/default/{name}-v{n} (wildcard spec.containers.0.image): original pass, converted error"
        for name, n in (("signed", 4), ("unsigned", 4))), done.output
    assert "2 verdict difference(s)" in done.output and "undetermined" not in done.output
    written = yaml.safe_load((tmp_path / "out" / "verify.yaml").read_text())
    assert written["kind"] == "ImageValidatingPolicy"
    assert written["spec"]["validationConfigurations"] == {"mutateDigest": True, "verifyDigest": True,
                                                           "required": True}
    offline = CliRunner().invoke(cli, args)
    assert "undetermined on both sides (not verified)" in offline.output
    # offline the wildcard images' difference stays (no result against an undetermined one), nothing else
    assert offline.exit_code == 1, offline.output
    assert sorted(line for line in offline.output.splitlines() if ": original " in line and "converted" in line
                  and "message differs" not in line) == sorted(
        f"verify: Pod/default/{name}-v{n} (wildcard spec.containers.0.image): original pass, converted undetermined"
        for name, n in (("signed", 4), ("unsigned", 4))), offline.output
    # --registry is what --verify evaluates with: alone it is a usage error (kubectl's exit 2)
    alone = CliRunner().invoke(cli, ["convert", "-p", str(tmp_path / "policy.yaml"), "--registry"])
    assert alone.exit_code == 2 and "--registry is for --verify" in alone.output


@pytest.mark.parametrize("entry, field, why", [
    ({"attestations": [{"type": "https://slsa.dev/provenance/v0.2", "conditions": [{"all": []}],
                        "attestors": [{"entries": [{"keys": {"publicKeys": "k", "rekor": {"ignoreTlog": True}}}]}]}]},
     "verifyImages[0].attestations", "Rekor bundle"),
    ({"attestations": [{"type": "https://slsa.dev/provenance/v0.2", "conditions": [{"all": []}]}]},
     "verifyImages[0].attestations", "not converted yet"),
    ({"skipImageReferences": ["127.0.0.1:5000/x*"]}, "verifyImages[0].skipImageReferences", "required"),
    ({"imageReferences": ["ghcr.io/{a,b}/*"]}, "verifyImages[0].imageReferences", "glob"),
    ({"type": "SigstoreBundle"}, "verifyImages[0].type", "not converted"),
    ({"imageRegistryCredentials": {"secrets": ["s"]}}, "verifyImages[0].imageRegistryCredentials", "credentials"),
])
def test_refused_by_field(entry: dict[str, Any], field: str, why: str) -> None:
    key = KeyPair(Path("/dev/null"), "-----BEGIN PUBLIC KEY-----\nx\n-----END PUBLIC KEY-----\n")
    conv = convert_policy(cluster_policy({**key_entry(key), **entry}))
    assert not conv.documents
    [refusal] = conv.refusals
    assert refusal.startswith(f"spec.rules[0].{field}: ") and why in refusal


def test_audit_with_digest_mutation_is_refused_as_kyverno_refuses_the_original() -> None:
    key = KeyPair(Path("/dev/null"), "-----BEGIN PUBLIC KEY-----\nx\n-----END PUBLIC KEY-----\n")
    conv = convert_policy(cluster_policy(key_entry(key), action="Audit"))
    assert conv.refusals == ["spec.rules[0].verifyImages[0].mutateDigest: mutateDigest must be set to false for "
                             "\u2018Audit\u2019 failure action"]


def test_two_entries_in_one_rule_are_refused() -> None:
    key = KeyPair(Path("/dev/null"), "-----BEGIN PUBLIC KEY-----\nx\n-----END PUBLIC KEY-----\n")
    pol = cluster_policy(key_entry(key))
    pol["spec"]["rules"][0]["verifyImages"].append(key_entry(key, references=("ghcr.io/*",)))
    conv = convert_policy(pol)
    assert conv.refusals and conv.refusals[0].startswith("spec.rules[0].verifyImages: one entry per rule")




@pytest.fixture(scope="module")
def oracle_setup(oci_registry: OciRegistry, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return convert_images_oracle.prepare(oci_registry, tmp_path_factory.mktemp("convimg-oracle"))


@pytest.mark.parametrize("case", sorted(convert_images_oracle.POLICIES))
def test_kyverno_cli_recorded_verdicts(oracle_setup: Any, case: str) -> None:
    """kyrec's verdicts on each side equal Kyverno's CLI's (testdata/kyverno-truth/convert-images.json), and
    the CLI itself gave the original and the conversion the same verdicts."""
    golden = convert_images_oracle.load_golden()
    assert golden["kyverno"]["version"] == "v1.17.2"
    recorded = golden["cases"][case]
    assert recorded["original"] == recorded["converted"]
    setup, _ = oracle_setup
    build, cases = convert_images_oracle.POLICIES[case]
    original = build(setup)
    resources = convert_images_oracle.pods(setup, cases)
    with tempfile.TemporaryDirectory() as workdir:
        ours = {side: _verdicts(docs, resources, workdir, side, registry=registry())
                for side, docs in (("original", [original]),
                                   ("converted", convert_images_oracle.converted(original)))}
    for side, found in ours.items():
        assert {p["metadata"]["name"]: found.get((p["kind"], "default", p["metadata"]["name"]), ("pass", ""))[0]
                for p in resources} == recorded[side], side


def test_attestation_refusal_is_what_kyverno_decides(oracle_setup: Any) -> None:
    """An attestation verified with the Rekor log skipped: Kyverno's CLI admits the attested image under the
    ClusterPolicy and denies it under the ImageValidatingPolicy a conversion would write (recorded), as
    kyrec's ImageValidatingPolicy engine does; so convert refuses the attestation, saying why."""
    recorded = convert_images_oracle.load_golden()["refused"]["attestation"]
    assert recorded == {"original": {"attested": "pass", "signed": "fail"},
                        "converted": {"attested": "fail", "signed": "fail"}}
    setup, _ = oracle_setup
    build, would_be, cases = convert_images_oracle.REFUSED["attestation"]
    [refusal] = convert_policy(build(setup)).refusals
    assert refusal.startswith("spec.rules[0].verifyImages[0].attestations: attestations verified without the "
                              "Rekor log (rekor.ignoreTlog) are not converted")
    resources = convert_images_oracle.pods(setup, cases)
    with tempfile.TemporaryDirectory() as workdir:
        found = _verdicts([would_be(setup)], resources, workdir, "would-be", registry=registry())
    assert {p["metadata"]["name"]: found[("Pod", "default", p["metadata"]["name"])][0] for p in resources} \
        == recorded["converted"]


def test_a_suite_of_a_verify_images_policy_converts(tmp_path: Path) -> None:
    """Test suites convert with their policies (convert/suite.py): a row of a verifyImages rule names the
    ImageValidatingPolicy with its kind's flag (before, the converted kind had no flag: a KeyError, exit 70)."""
    key = KeyPair(Path("/dev/null"), "-----BEGIN PUBLIC KEY-----\nx\n-----END PUBLIC KEY-----\n")
    src = tmp_path / "src"
    (src / ".kyverno-test").mkdir(parents=True)
    (src / "policy.yaml").write_text(yaml.safe_dump(cluster_policy(key_entry(key, references=("ghcr.io/*",)))))
    (src / ".kyverno-test" / "resources.yaml").write_text(yaml.safe_dump(pod("p", "ghcr.io/x:v1")))
    (src / ".kyverno-test" / "kyverno-test.yaml").write_text(yaml.safe_dump({
        "apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Test", "metadata": {"name": "t"},
        "policies": ["../policy.yaml"], "resources": ["resources.yaml"],
        "results": [{"policy": "verify", "rule": "signed", "resources": ["p"], "kind": "Pod", "result": "fail"}]}))
    result = run_convert([str(src)], str(tmp_path / "out"))
    assert not result.suite_refusals and len(result.suites_written) == 1
    suite = yaml.safe_load(Path(result.suites_written[0]).read_text())
    assert suite["results"] == [{"policy": "verify", "isImageValidatingPolicy": True, "resources": ["p"],
                                 "kind": "Pod", "result": "fail"}]
