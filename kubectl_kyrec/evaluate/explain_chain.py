"""What admission made of a manifest before its policies were evaluated, as an `explain` tree (issue 26).

`explain` validates what `eval` validates: the manifest as the API server would store it. This tree says
how it got there, first for each subject: the API server's defaults (each field they set), then each
mutating policy that answered (its results, and the JSON patch of what it changed), and why the stored
object may not be known (`undetermined`). Read from the chain's own record: it decides nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_kyrec.evaluate.admission_chain import Admission
from kubectl_kyrec.evaluate.explain import NONE, Explanation, Node, result_node, show
from kubectl_kyrec.k8s.json_patch import make_patch
from kubectl_kyrec.model import Obj, Result

ADMISSION = "Admission"


def explain_chain(original: Obj, admission: Admission, results: Sequence[Result]) -> Explanation:
    """`original`: the manifest as written; `results`: the mutation engines' results for the subject."""
    subject = admission.subject
    root = Node(f"admission {admission.operation}")
    if admission.operation == "DELETE":
        root.children.append(Node("stored object", NONE, "a DELETE stores nothing: nothing is defaulted or mutated"))
        return Explanation("", ADMISSION, subject.ref, root, [])
    defaults = Node("API-server defaults", "applied" if admission.defaulted else NONE)
    if admission.defaulted and admission.before_mutations is not None:
        defaults.children.extend(_op_node(op) for op in make_patch(original, admission.before_mutations))
    root.children.append(defaults)
    by_policy: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        by_policy.setdefault((r.source, r.policy), []).append(r)
    for (source, policy), found in by_policy.items():
        node = Node(f"{source} {policy}")
        for m in admission.mutations:
            if m.policy == policy:
                node.children.extend(_op_node(op, f"rule {m.rule}: " if m.rule else "") for op in m.patch)
        node.children.extend(result_node(r) for r in found)
        root.children.append(node)
    for reason in admission.undetermined:
        root.children.append(Node("stored object", "undetermined", reason))
    return Explanation("", ADMISSION, subject.ref, root, list(results))


def _op_node(op: Mapping[str, Any], prefix: str = "") -> Node:
    return Node(f"{prefix}{op.get('op')} {op.get('path')}", show(op["value"]) if "value" in op else "")
