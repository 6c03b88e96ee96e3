"""kyrec's side of the differential campaign and the comparison of both sides' rows."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubectl_kyrec.cli.main import cli
from tests.differential.harness import Answer, Key, kyrec_answer, resource_key


def run_kyrec(policy: Path, resources: Path, now: str) -> tuple[Answer, list[str]]:
    """`kubectl kyrec eval -p POLICY -r RESOURCES -o json` in this process (one process: the pairs of one
    policy are far below the size where workers pay off). Returns the rows and the run's errors (a policy
    that does not load is exit 3 and no rows). `--no-mutate`: Kyverno's CLI validates the manifests with no
    API-server defaults, and the campaign recorded it before kyrec's eval admitted manifests first."""
    result = CliRunner().invoke(cli, ["eval", "-p", str(policy), "-r", str(resources), "-o", "json", "--now", now,
                                      "--jobs", "1", "--no-mutate"])
    try:
        document = json.loads(result.stdout)
    except ValueError:
        return {}, [result.stderr.strip() or f"exit {result.exit_code}"]
    return kyrec_answer(document), [str(e.get("message")) for e in document.get("errors") or []]


@dataclass
class Comparison:
    rows: set[Key] = field(default_factory=set)          # every (policy, rule, resource) either side answered
    pairs: set[tuple[str, ...]] = field(default_factory=set)    # (policy, resource) with a row on either side
    disagree: set[Key] = field(default_factory=set)
    theirs: Answer = field(default_factory=dict)         # both answers as compared (normalized)
    ours: Answer = field(default_factory=dict)


def pair_of(key: Key) -> tuple[str, ...]:
    return (key[0], *key[2:])


def unnamespaced(resources: Sequence[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(apiVersion, kind, name) of the inputs written without a namespace."""
    return {(k[0], k[1], k[3]) for k in map(resource_key, resources) if not k[2]}


def normalize(answer: Answer, without_namespace: set[tuple[str, str, str]]) -> Answer:
    """Rows of a resource written without a namespace keyed with namespace "": Kyverno's CLI gives every such
    object namespace `default`, cluster-scoped ones too (cmd/cli/kubectl-kyverno/resource/resource.go:55,
    `YamlToUnstructured`), where kyrec keeps a cluster-scoped object's empty namespace (docs/compatibility.md)."""
    if not without_namespace:
        return answer
    return {(k[0], k[1], k[2], k[3], "", k[5]) if k[4] in ("", "default") and (k[2], k[3], k[5]) in
            without_namespace else k: v for k, v in answer.items()}


def compare(theirs: Answer, ours: Answer, resources: Sequence[dict[str, Any]] = ()) -> Comparison:
    bare = unnamespaced(resources)
    theirs, ours = normalize(theirs, bare), normalize(ours, bare)
    out = Comparison(theirs=theirs, ours=ours)
    out.rows = set(theirs) | set(ours)
    out.pairs = {pair_of(k) for k in out.rows}
    out.disagree = {k for k in out.rows if theirs.get(k) != ours.get(k)}
    return out


# apiVersions that Kubernetes no longer serves: Kyverno's CLI cannot map them to a resource and evaluates no
# CEL policy on such an object (`failed to map gvk to gvr`); kyrec evaluates the manifest as written
REMOVED_VERSIONS = {"batch/v1beta1", "policy/v1beta1", "discovery.k8s.io/v1beta1", "events.k8s.io/v1beta1",
                    "node.k8s.io/v1beta1", "flowcontrol.apiserver.k8s.io/v1beta1",
                    "flowcontrol.apiserver.k8s.io/v1beta2", "flowcontrol.apiserver.k8s.io/v1beta3",
                    "autoscaling/v2beta1", "autoscaling/v2beta2", "extensions/v1beta1", "networking.k8s.io/v1beta1",
                    "storage.k8s.io/v1beta1", "rbac.authorization.k8s.io/v1beta1", "apps/v1beta1", "apps/v1beta2",
                    "admissionregistration.k8s.io/v1beta1", "apiextensions.k8s.io/v1beta1",
                    "certificates.k8s.io/v1beta1", "coordination.k8s.io/v1beta1", "scheduling.k8s.io/v1beta1"}
COMPOSITED = re.compile(r'composited variable "[^"]*" fails to evaluate: ')

# The classes (docs/compatibility.md, "Differential testing against the Kyverno CLI", explains each):
VPOL_ERROR = "version: ValidatingPolicy error row"
AUTOGEN_GVK = "version: classic autogen kinds"
REMOVED_API = "cli: removed apiVersion"
USER_UNKNOWN = "kyrec: requesting user not given"
COMPOSITED_MESSAGE = "message: composited variable"
CEL_ERROR_TEXT = "message: CEL error text"
FAILED_PATH = "message: failed path"
PSS_ORDER = "message: PodSecurity order"

# cel-go's texts where cel-cpp's differ (docs/compatibility.md, "The CEL engine"): compared without them
_CEL_TEXTS = ((re.compile(r"no such overload: [^'\n]*"), "no such overload"),
              (re.compile(r"type conversion error from '[^']*' to 'google\.protobuf\.(Duration|Timestamp)'"),
               r"String to \1 conversion failed"))
_PATH = re.compile(r" (rule [^ ]+ )?failed at path /[^ ]*$")


def classify(key: Key, cmp: Comparison) -> str:
    """A disagreement's class: a known cause when the rows show it, else what differs (a row on one side
    only, the result, or the message alone)."""
    theirs, ours = cmp.theirs.get(key), cmp.ours.get(key)
    resource = key[2:]
    # v1.17.2's vpol engine reports an expression error as rule `evaluation`, "failed to load context: E";
    # Kyverno's main (111e07bb, kyrec's reference) as rule "", "error: E": two rows that cannot meet
    if theirs is not None and ours is None and key[1] == "evaluation" and theirs[1].startswith(
            "failed to load context: "):
        return VPOL_ERROR
    if ours is not None and theirs is None and key[1] == "" and ours[0] == "error" and \
            (key[0], "evaluation", *resource) in cmp.theirs:
        return VPOL_ERROR
    # v1.17.2 autogen matches `CronJob` of any group/version; main writes batch/v1/CronJob (#14246)
    if theirs is not None and ours is None and key[1].startswith("autogen-") and \
            key[2] != _AUTOGEN_VERSION.get(key[3], key[2]):
        return AUTOGEN_GVK
    if ours is not None and theirs is None and key[2] in REMOVED_VERSIONS and \
            not any(k[2:] == resource for k in cmp.theirs):
        return REMOVED_API
    if ours is not None and ours[0] == "undetermined" and "requesting user" in ours[1]:
        return USER_UNKNOWN
    if ours is not None and theirs is not None and ours[0] == theirs[0] and \
            COMPOSITED.sub("", theirs[1]) == ours[1]:
        return COMPOSITED_MESSAGE
    if ours is not None and theirs is not None and ours[0] == theirs[0]:
        text = theirs[1]
        for pattern, replacement in _CEL_TEXTS:
            text = pattern.sub(replacement, text)
        if text == ours[1]:
            return CEL_ERROR_TEXT
        # the first failing key of a pattern over a map: Go's map order, which differs from run to run
        if _PATH.sub("", theirs[1]) == _PATH.sub("", ours[1]):
            return FAILED_PATH
        # the same PodSecurity checks, listed in another order
        if "It violates PodSecurity" in theirs[1] and _pss_parts(theirs[1]) == _pss_parts(ours[1]):
            return PSS_ORDER
    if ours is None:
        assert theirs is not None
        return f"kyverno only: {theirs[0]}"
    if theirs is None:
        return f"kyrec only: {ours[0]}"
    if theirs[0] != ours[0]:
        return f"result: kyverno {theirs[0]}, kyrec {ours[0]}"
    return f"message ({theirs[0]})"


def _pss_parts(message: str) -> tuple[str, list[str]]:
    start = message.find("(Forbidden reason")
    if start < 0:
        return message, []
    return message[:start], sorted(message[start:].strip("()").split(")("))


_AUTOGEN_VERSION = {"CronJob": "batch/v1", "Job": "batch/v1", "Deployment": "apps/v1", "DaemonSet": "apps/v1",
                    "StatefulSet": "apps/v1", "ReplicaSet": "apps/v1", "ReplicationController": "v1"}
