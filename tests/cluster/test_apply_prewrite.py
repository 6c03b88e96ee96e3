"""What `apply` does before its first write (bench/apply_prewrite.py measures it): it reads the LISTs its plan
depends on, and none of the reads that only name a finding's cause (Kyverno's Deployments, the RBAC objects,
SubjectAccessReviews: cluster/live.py), since apply names no cause and evidence decides no write; `diff`
with the same flags still makes them (the control: the API double serves them). And it imports no code for
kinds it is not given: image verification (cosign, notary, X.509) only with an ImageValidatingPolicy.
Against the API double and its request log."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kubectl_kyrec.cli.main import cli
from tests.kubeapi.server import ApiServer

POLICY = str(Path(__file__).parent / "data" / "gpol-configmap.yaml")
ROOT = Path(__file__).resolve().parents[2]
# the LISTs reconcile/causes.py reads its evidence from, and nothing else asks for (the access reviews too,
# sent when a cause asks one)
CAUSE_ONLY = {"deployments.apps", "clusterroles.rbac.authorization.k8s.io",
              "clusterrolebindings.rbac.authorization.k8s.io", "roles.rbac.authorization.k8s.io",
              "rolebindings.rbac.authorization.k8s.io"}
REVIEWS = "subjectaccessreviews.authorization.k8s.io"


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[ApiServer]:
    with ApiServer() as api:
        for name in ("default", "kyverno", "team-a", "team-b"):
            api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        api.kubeconfig(tmp_path / "kubeconfig")
        api.clear_log()
        yield api


def unselected(api: ApiServer) -> set[str]:
    """The types read by a LIST without a label selector (the owned-downstream search LISTs every type with
    `app.kubernetes.io/managed-by=kyverno`: that one is no evidence, it finds downstreams), and reviews."""
    return {r.resource for r in api.requests() if not r.is_write and "labelSelector" not in r.query}


def kyrec(tmp_path: Path, *args: str) -> Result:
    env = {"KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return CliRunner().invoke(cli, list(args), env=env)


def test_apply_makes_no_read_that_only_names_a_cause(cluster: ApiServer, tmp_path: Path) -> None:
    diff = kyrec(tmp_path, "diff", "-p", POLICY, "-o", "json")
    assert diff.exit_code == 1, diff.stderr
    assert unselected(cluster) >= CAUSE_ONLY       # diff reads them all
    assert all(c["cause"] for c in json.loads(diff.stdout)["changes"] if c["domain"] == "downstream")
    cluster.clear_log()
    applied = kyrec(tmp_path, "apply", "-p", POLICY, "--yes", "-o", "json")
    assert applied.exit_code == 0, applied.stderr
    assert json.loads(applied.stdout)["summary"]["done"] == 2
    read = unselected(cluster)
    assert read & {*CAUSE_ONLY, REVIEWS} == set()
    # what the plan depends on is still read, in full, before the first write
    assert {"namespaces", "configmaps"} <= read
    first_write = next(i for i, r in enumerate(cluster.requests()) if r.is_write)
    assert all(r.method == "GET" for r in cluster.requests()[:first_write])
    assert not any(r.method == "GET" for r in cluster.requests()[first_write:])


# the modules of image verification: what a GeneratingPolicy's apply has no use for
IMAGE_VERIFICATION = ("kubectl_kyrec.evaluate.image_validating.engine", "kubectl_kyrec.load.cosign",
                      "kubectl_kyrec.load.notary", "cryptography.x509")
IVPOL = """apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata:
  name: signed
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  matchImageReferences:
  - glob: "ghcr.io/*"
  attestors:
  - name: cosign
    cosign:
      key:
        data: |
          -----BEGIN PUBLIC KEY-----
          MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE
          -----END PUBLIC KEY-----
  validations:
  - expression: images.containers.map(image, verifyImageSignatures(image, [attestors.cosign])).all(e, e > 0)
"""


def _imported(tmp_path: Path, *policies: str, modules: tuple[str, ...] = IMAGE_VERIFICATION) -> tuple[set[str], str]:
    """The `modules` (image verification's) an `apply --dry-run=client` of `policies` imported, and its output."""
    script = ("import sys\nfrom kubectl_kyrec.cli.main import cli\n"
              "try:\n    cli(sys.argv[1:], prog_name='kubectl-kyrec')\nexcept SystemExit:\n    pass\n"
              f"sys.stderr.write('IMPORTED ' + ','.join(m for m in {modules!r} if m in sys.modules))\n")
    args = ["apply", *(a for p in policies for a in ("-p", p)), "--dry-run=client"]
    env = {"KUBECONFIG": str(tmp_path / "kubeconfig"), "XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": "/usr/bin"}
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, env=env)
    line = done.stderr.rsplit("IMPORTED ", 1)[-1].strip()
    return set(filter(None, line.split(","))), done.stdout + done.stderr


def test_apply_imports_image_verification_only_for_an_image_validating_policy(cluster: ApiServer,
                                                                               tmp_path: Path) -> None:
    imported, output = _imported(tmp_path, POLICY)
    assert "plan: 2 write(s)" in output and imported == set(), output
    ivpol = tmp_path / "ivpol.yaml"
    ivpol.write_text(IVPOL)
    imported, output = _imported(tmp_path, POLICY, str(ivpol))      # the control: its policy needs them
    assert "kubectl_kyrec.evaluate.image_validating.engine" in imported, output


# the admission policies' engines (and what the mutating one brings): imported only for such a policy
ADMISSION_ENGINES = ("kubectl_kyrec.evaluate.mutating_admission.engine", "kubectl_kyrec.evaluate.mutating.engine",
                     "kubectl_kyrec.cel.typed_objects", "kubectl_kyrec.evaluate.validating_admission.engine")
ADMISSION_POLICIES = ROOT / "testdata" / "mutating" / "map-bindings" / "policy.yaml", \
    ROOT / "testdata" / "consistency" / "kinds" / "validatingadmissionpolicy.yaml"


def test_apply_imports_the_admission_engines_only_for_an_admission_policy(cluster: ApiServer,
                                                                          tmp_path: Path) -> None:
    imported, output = _imported(tmp_path, POLICY, modules=ADMISSION_ENGINES)
    assert "plan: 2 write(s)" in output and imported == set(), output
    # the controls: each policy compiles with its engine, and is still checked (a bad one is refused)
    mutating, validating = ADMISSION_POLICIES
    imported, output = _imported(tmp_path, POLICY, str(mutating), modules=ADMISSION_ENGINES)
    assert {"kubectl_kyrec.evaluate.mutating_admission.engine", "kubectl_kyrec.evaluate.mutating.engine"} <= imported
    assert "plan: 2 write(s)" in output, output
    imported, output = _imported(tmp_path, POLICY, str(validating), modules=ADMISSION_ENGINES)
    assert "kubectl_kyrec.evaluate.validating_admission.engine" in imported, output
    bad = tmp_path / "bad-vap.yaml"
    bad.write_text(validating.read_text().replace("has(object.metadata.labels)", "has(object.metadata.labels"))
    imported, output = _imported(tmp_path, POLICY, str(bad), modules=ADMISSION_ENGINES)
    assert "kubectl_kyrec.evaluate.validating_admission.engine" in imported and "vap-app-label" in output, output


# Kyverno's UpdateRequests as its webhook writes them for a GeneratingPolicy (pkg/webhooks/updaterequest/
# generator.go: the policy-name label; api/kyverno/v2 UpdateRequest): a Failed one for team-a (a cause diff
# names), a Pending one for team-b, and one for a policy the run does not have
def _update_request(name: str, policy: str, trigger: str, state: str, message: str = "") -> dict[str, object]:
    return {"apiVersion": "kyverno.io/v2", "kind": "UpdateRequest",
            "metadata": {"name": name, "namespace": "kyverno",
                         "labels": {"generate.kyverno.io/policy-name": policy}},
            "spec": {"requestType": "generate", "policy": policy,
                     "resource": {"apiVersion": "v1", "kind": "Namespace", "name": trigger}},
            "status": {"state": state, "message": message}}


UPDATE_REQUESTS = (_update_request("ur-a", "base-config", "team-a", "Failed", "configmaps is forbidden"),
                   _update_request("ur-b", "base-config", "team-b", "Pending"),
                   _update_request("ur-other", "other", "team-a", "Completed"))


@pytest.fixture()
def with_update_requests(tmp_path: Path) -> Iterator[ApiServer]:
    from tests.kubeapi.catalogue import Catalogue, ResourceType

    catalogue = Catalogue()
    catalogue.add(ResourceType("kyverno.io", ("v2", "v1beta1"), "UpdateRequest", "updaterequests", True, True, True))
    with ApiServer(catalogue=catalogue) as api:
        *_, team_c = api.seed(*({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                                for name in ("default", "kyverno", "team-a", "team-b", "team-c")))
        # team-c's downstream is there, its own, but drifted: an update beside the two creates
        api.seed({"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "base", "namespace": "team-c", "labels": {
                      "app.kubernetes.io/managed-by": "kyverno", "generate.kyverno.io/policy-name": "base-config",
                      "generate.kyverno.io/trigger-name": "team-c", "generate.kyverno.io/trigger-namespace": "",
                      "generate.kyverno.io/trigger-uid": team_c["metadata"]["uid"],
                      "generate.kyverno.io/trigger-kind": "Namespace", "generate.kyverno.io/trigger-group": "",
                      "generate.kyverno.io/trigger-version": "v1"}}, "data": {"a": "2"}})
        api.seed(*UPDATE_REQUESTS)
        api.kubeconfig(tmp_path / "kubeconfig")
        api.clear_log()
        yield api


def _apply_plan(tmp_path: Path, *, update_requests: bool) -> tuple[object, list[str], list[str]]:
    """apply's plan as compute_plan makes it, reading Kyverno's UpdateRequests or not; and the kinds of the
    state it planned from."""
    import datetime

    from kubectl_kyrec.cluster.connection import ConnectionOptions
    from kubectl_kyrec.cluster.live_source import LiveSource
    from kubectl_kyrec.load.run_inputs.sources import FileSource
    from kubectl_kyrec.reconcile.plan import PlanOptions
    from kubectl_kyrec.run.apply import ApplyRunOptions, compute_plan

    source = LiveSource(FileSource(policy_paths=(POLICY,)), ConnectionOptions(kubeconfig=str(tmp_path / "kubeconfig")),
                        cache_dir=tmp_path / "cache", update_requests=update_requests)
    options = ApplyRunOptions(now=datetime.datetime(2026, 9, 1, tzinfo=datetime.UTC),
                              plan=PlanOptions(prune=True, reports=True))
    result = compute_plan(options, source)
    assert source.last is not None
    return result.plan, result.notices, sorted({d.kind for d in source.last.state.objects})


def test_update_requests_decide_nothing_apply_does(with_update_requests: ApiServer, tmp_path: Path) -> None:
    """What lets apply skip the UpdateRequests' LIST: read or not, the plan is the same (creates, an update
    and what --prune would delete), whatever state they are in, and a refused LIST of them changes nothing
    but a notice about causes, which apply does not name."""
    read_plan, read_notices, read_kinds = _apply_plan(tmp_path, update_requests=True)
    assert "UpdateRequest" in read_kinds            # the control: they were read and planned from
    skipped_plan, skipped_notices, skipped_kinds = _apply_plan(tmp_path, update_requests=False)
    assert "UpdateRequest" not in skipped_kinds
    assert skipped_plan == read_plan and skipped_notices == read_notices
    assert {(str(c.action), c.object.namespace) for c in read_plan.writes} == {  # type: ignore[attr-defined]
        ("create", "team-a"), ("create", "team-b"), ("update", "team-c")}
    with_update_requests.inject("/updaterequests", method="GET", status=403, times=None)
    refused_plan, refused_notices, _ = _apply_plan(tmp_path, update_requests=True)
    assert refused_plan == read_plan
    assert any("UpdateRequests in kyverno not read" in n for n in refused_notices)


def test_apply_makes_no_update_request_read(with_update_requests: ApiServer, tmp_path: Path) -> None:
    diff = kyrec(tmp_path, "diff", "-p", POLICY, "-o", "json")
    assert diff.exit_code == 1, diff.stderr
    assert "updaterequests.kyverno.io" in unselected(with_update_requests)      # the control: diff reads them
    with_update_requests.clear_log()
    applied = kyrec(tmp_path, "apply", "-p", POLICY, "--yes", "-o", "json")
    assert applied.exit_code == 0, applied.stderr
    assert json.loads(applied.stdout)["summary"]["done"] == 3
    assert not [r for r in with_update_requests.requests() if r.resource == "updaterequests.kyverno.io"]
    # the Failed one for team-a was no reason to hold its write back
    configmaps = with_update_requests.catalogue.by_kind("v1", "ConfigMap")
    assert configmaps is not None
    assert with_update_requests.store.get(configmaps, "v1", "team-a", "base")["data"] == {"a": "1"}


# what a run of GeneratingPolicies alone has no use for, imported only where a run needs it: the classic model
# and engine (JMESPath), the other kinds' models, the report and deletion domains, the causes (apply names
# none), the template engine (a GeneratingPolicy with a template) and the admission chain (an evaluation error)
NOT_FOR_GENERATING = ("kubectl_kyrec.load.policy.classic", "kubectl_kyrec.classic.variables", "jmespath",
                      "kubectl_kyrec.load.policy.mutating", "kubectl_kyrec.load.policy.image_validating",
                      "kubectl_kyrec.load.policy.deleting", "kubectl_kyrec.reconcile.reports",
                      "kubectl_kyrec.reconcile.claims", "kubectl_kyrec.reconcile.deletions",
                      "kubectl_kyrec.reconcile.causes", "kubectl_kyrec.cel.template",
                      "kubectl_kyrec.evaluate.admission_chain")
CLASSIC_GENERATE = ROOT / "testdata" / "examples" / "legacy" / "add-networkpolicy.yaml"


def test_apply_of_generating_policies_imports_no_other_kind_nor_domain(cluster: ApiServer, tmp_path: Path) -> None:
    imported, output = _imported(tmp_path, POLICY, modules=NOT_FOR_GENERATING)
    assert "plan: 2 write(s)" in output and imported == set(), output
    # the control: a ClusterPolicy's generate rule is read with the classic model and run by its engine
    imported, output = _imported(tmp_path, POLICY, str(CLASSIC_GENERATE), modules=NOT_FOR_GENERATING)
    assert {"kubectl_kyrec.load.policy.classic", "kubectl_kyrec.classic.variables", "jmespath"} <= imported, output
