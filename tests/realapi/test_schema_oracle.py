"""The schema check (load/schema) against the real API server of tests/realapi (Kyverno's CRDs installed, no
Kyverno webhook): every corpus and testdata policy to apply (tests/consistency/corpus_policies.py) and every
invalid case of tests/load/schema_cases.py is created with `dryRun=All` and `fieldValidation=Strict`, and
kyrec's verdict (accept or refuse, and the set of field paths named) must be the server's.

How the server answers: unknown fields are a decoding error (400 `strict decoding error: unknown field "a.b"`)
reported before, and instead of, any value check; so where kyrec finds unknown fields, the server's set is
compared with those. Kubernetes' own kinds decode into Go types: a wrong type there is a 400 naming the first
field only (`json: cannot unmarshal ... Go struct field T.spec.x of type ...`), so that field must be one of
kyrec's (Go's decoder names it without list indexes or map keys). Otherwise the 422's causes are the set; a
cause of field `<nil>` (a oneOf, anyOf or not violation, or the note "some validation rules were not
checked") names no field, and kyrec's problems of the kind NO_FIELD none either. Also: the shipped
kubernetes.json is what packaging/derive_schemas.py derives from this server.
"""

from __future__ import annotations

import importlib.util
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kubectl_kyrec.cel.schema_rules import policy_schema_check
from kubectl_kyrec.load.schema import UNKNOWN
from kubectl_kyrec.load.schema.tables import schema_for
from kubectl_kyrec.load.schema.validate import VALUE
from kubectl_kyrec.model import Document, Source
from tests.consistency.corpus_policies import policy_documents
from tests.load.schema_cases import EXTRA, invalid_cases
from tests.realapi.fixture import RealServer
from tests.shared_inputs import ROOT, SHARED

PLURALS = {
    "ClusterPolicy": "clusterpolicies", "Policy": "policies", "PolicyException": "policyexceptions",
    "CleanupPolicy": "cleanuppolicies", "ClusterCleanupPolicy": "clustercleanuppolicies",
    "ValidatingPolicy": "validatingpolicies", "NamespacedValidatingPolicy": "namespacedvalidatingpolicies",
    "GeneratingPolicy": "generatingpolicies", "NamespacedGeneratingPolicy": "namespacedgeneratingpolicies",
    "MutatingPolicy": "mutatingpolicies", "NamespacedMutatingPolicy": "namespacedmutatingpolicies",
    "DeletingPolicy": "deletingpolicies", "NamespacedDeletingPolicy": "namespaceddeletingpolicies",
    "ImageValidatingPolicy": "imagevalidatingpolicies",
    "NamespacedImageValidatingPolicy": "namespacedimagevalidatingpolicies",
    "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
    "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
    "MutatingAdmissionPolicy": "mutatingadmissionpolicies",
    "MutatingAdmissionPolicyBinding": "mutatingadmissionpolicybindings",
}
NAMESPACED = {"Policy", "PolicyException", "CleanupPolicy", "NamespacedValidatingPolicy",
              "NamespacedGeneratingPolicy", "NamespacedMutatingPolicy", "NamespacedDeletingPolicy",
              "NamespacedImageValidatingPolicy"}
_UNKNOWN = re.compile(r'unknown field "([^"]+)"')
_GO_FIELD = re.compile(r"Go struct field (\w+)\.(\S+) of type")

# Differences known and why: (file:line Kind/name, or case id) -> reason.
KNOWN: dict[str, str] = {
    "testdata/testrun/vap-bindings/policies.yaml:39 ValidatingAdmissionPolicy/ns-name-no-ops":
        "Kubernetes' Go validation of a ValidatingAdmissionPolicy requires resourceRules[].operations; that rule "
        "is in pkg/apis/admissionregistration/validation, not in the OpenAPI schema kyrec checks",
}


def _server_verdict(realapi: RealServer, obj: dict[str, Any], namespace: str) -> tuple[bool, set[str], str]:
    """(refused, field paths named, the server's message)."""
    kind = obj["kind"]
    body = {**obj, "metadata": {**(obj.get("metadata") or {})}}
    path = f"/apis/{obj['apiVersion']}"
    if kind in NAMESPACED:
        body["metadata"]["namespace"] = namespace
        path += f"/namespaces/{namespace}"
    else:
        body["metadata"].pop("namespace", None)
    answer = realapi.kube.request("POST", f"{path}/{PLURALS[kind]}", body,
                                  query={"dryRun": "All", "fieldValidation": "Strict"})
    if answer.status in (200, 201):
        return False, set(), ""
    status = answer.json() or {}
    message = str(status.get("message", ""))
    if answer.status == 400:
        fields = set(_UNKNOWN.findall(message)) or {("metadata." + f if struct == "ObjectMeta" else f)
                                                     for struct, f in _GO_FIELD.findall(message)}
        return True, fields, message
    causes = (status.get("details") or {}).get("causes") or []
    return True, {c.get("field", "") for c in causes if c.get("field") not in (None, "", "<nil>")}, message


def _kyrec_verdict(obj: dict[str, Any]) -> tuple[bool, set[str], set[str]]:
    """(refused, unknown-field paths, value-problem paths) as kyrec says."""
    problems = policy_schema_check().problems(Document(obj, Source("x")))
    return (bool(problems), {p.path for p in problems if p.kind == UNKNOWN},
            {p.path for p in problems if p.kind == VALUE})


def _agrees(obj: dict[str, Any], server: tuple[bool, set[str], str]) -> bool:
    refused, fields, message = server
    kyrec_refuses, unknown, values = _kyrec_verdict(obj)
    if refused != kyrec_refuses:
        return False
    if not refused:
        return True
    if unknown:
        return fields == unknown
    if "cannot unmarshal" in message:
        plain = {re.sub(r"\[\d+\]", "", p) for p in values}
        return len(fields) == 1 and any(p == f or p.startswith(f + ".") for p in plain for f in fields)
    return fields == values


def _corpus() -> list[tuple[str, dict[str, Any]]]:
    out = []
    roots = [ROOT / "testdata"] + ([SHARED / "corpus"] if (SHARED / "corpus").exists() else [])
    for root in roots:
        for doc in policy_documents(root):
            if schema_for(doc.api_version, doc.kind) is not None and doc.kind in PLURALS:
                where = Path(doc.source.file)
                shown = where.relative_to(ROOT) if where.is_relative_to(ROOT) else where
                out.append((f"{shown}:{doc.source.line} {doc.kind}/{doc.name}", doc.obj))
    return out


def test_kyrecs_schema_verdicts_are_the_servers(realapi: RealServer) -> None:
    namespace = realapi.namespace("schema")
    tried = [*_corpus(), *((f"case {case}", obj) for case, _, obj, _ in invalid_cases()),
             *((f"case {case}", obj) for case, (obj, _) in EXTRA.items())]

    def verdict(item: tuple[str, dict[str, Any]]) -> tuple[str, bool, str]:
        name, obj = item
        server = _server_verdict(realapi, obj, namespace)
        return name, _agrees(obj, server), f"server {sorted(server[1]) if server[0] else 'accepts'} " \
            f"({server[2][:300]}); kyrec {[sorted(s) for s in _kyrec_verdict(obj)[1:]]}"

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(verdict, tried))
    differences = [f"{name}: {why}" for name, ok, why in results if not ok and name not in KNOWN]
    agreements = sum(1 for _, ok, _ in results if ok)
    print(f"\nschema oracle: {len(tried)} policies tried, {agreements} agreements, {len(differences)} differences")
    assert not differences, "\n".join(differences)
    assert len(tried) > 80


def test_the_shipped_kubernetes_schema_is_this_servers(realapi: RealServer) -> None:
    spec = importlib.util.spec_from_file_location("derive_schemas", ROOT / "packaging" / "derive_schemas.py")
    assert spec is not None and spec.loader is not None
    derive = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(derive)
    text = derive.encode(derive.derive_kubernetes(Path(realapi.kubeconfig), "admin"))
    assert text == (ROOT / "kubectl_kyrec" / "load" / "schema" / "data" / "kubernetes.json").read_text()
