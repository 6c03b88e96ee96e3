"""Derive the schema data kyrec validates policies against (kubectl_kyrec/load/schema/data/), so that an
installed kyrec validates without ../shared.

    python packaging/derive_schemas.py [--shared DIR] [--kubeconfig FILE] [--check]

- `kyverno.json`: from Kyverno's CRDs in DIR/crds/kyverno (default ../shared beside the checkout, or
  KYREC_SHARED): for every policy kind kyrec reads, the openAPIV3Schema of each served version, minimised
  (descriptions, examples and the keywords validation never reads dropped; equal subschemas stored once).
  The Kyverno commit the CRDs were taken at (named in DIR/crds/README.md) is recorded in the file.
- `kubernetes.json`: Kubernetes' own types for the admissionregistration.k8s.io kinds kyrec reads, and
  ObjectMeta (the metadata of every kind, CRDs' included: the API server decodes it strictly as
  ObjectMeta), read from a real API server's OpenAPI v3 (`/openapi/v3/apis/admissionregistration.k8s.io/<v>`)
  through --kubeconfig (tests/realapi/serve.sh starts one). Without --kubeconfig the committed file is kept.

`--check` derives and compares with the committed files instead of writing (exit 1 on a difference).
tests/consistency/test_schema_data.py runs the Kyverno half of it; tests/realapi the Kubernetes half.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "kubectl_kyrec" / "load" / "schema" / "data"

# the CRD files of the policy kinds kyrec reads (load/policy/policies.py POLICY_KINDS): not the reports, update
# requests or global context entries, which are never policies
KYVERNO_CRDS = (
    "kyverno.io_clusterpolicies.yaml", "kyverno.io_policies.yaml", "kyverno.io_policyexceptions.yaml",
    "kyverno.io_cleanuppolicies.yaml", "kyverno.io_clustercleanuppolicies.yaml",
    "policies.kyverno.io_validatingpolicies.yaml", "policies.kyverno.io_namespacedvalidatingpolicies.yaml",
    "policies.kyverno.io_generatingpolicies.yaml", "policies.kyverno.io_namespacedgeneratingpolicies.yaml",
    "policies.kyverno.io_mutatingpolicies.yaml", "policies.kyverno.io_namespacedmutatingpolicies.yaml",
    "policies.kyverno.io_deletingpolicies.yaml", "policies.kyverno.io_namespaceddeletingpolicies.yaml",
    "policies.kyverno.io_imagevalidatingpolicies.yaml",
    "policies.kyverno.io_namespacedimagevalidatingpolicies.yaml",
    "policies.kyverno.io_policyexceptions.yaml",
)
ADMISSION_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy",
                   "MutatingAdmissionPolicyBinding")
ADMISSION_VERSIONS = ("v1", "v1beta1", "v1alpha1")
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

# keywords validation reads (load/schema/validate.py); everything else (description, example,
# x-kubernetes-map-type, ...) is dropped
SCALAR_KEYWORDS = ("type", "format", "enum", "required", "nullable", "default", "pattern", "maxLength",
                   "minLength", "maxItems", "minItems", "maxProperties", "minProperties", "minimum", "maximum",
                   "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "uniqueItems",
                   "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
                   "x-kubernetes-embedded-resource", "x-kubernetes-list-type", "x-kubernetes-list-map-keys")
CHILD_KEYWORDS = ("items", "additionalProperties", "not")
LIST_KEYWORDS = ("allOf", "anyOf", "oneOf")
MAP_KEYWORDS = ("properties",)


class Table:
    """Subschemas stored once each: a node's children are indexes into `nodes`."""

    def __init__(self, keep_default: bool = True) -> None:
        # a CRD's defaults are applied before validation (a required field with one is never missing); the
        # `default` of Kubernetes' OpenAPI is only the Go zero value, which decoding does not make count
        self.keep_default = keep_default
        self.nodes: list[dict[str, Any]] = []
        self.index: dict[str, int] = {}

    def add(self, schema: dict[str, Any], resolve: Any = None) -> int:
        if resolve is not None:
            schema = resolve(schema)
        node: dict[str, Any] = {}
        for key in SCALAR_KEYWORDS:
            if key in schema and (key != "default" or self.keep_default):
                node[key] = schema[key]
        if (not self.keep_default and schema.get("type") == "object" and "properties" not in schema
                and "additionalProperties" not in schema):
            # a Kubernetes type of no declared fields (FieldsV1, RawExtension) is opaque JSON to its decoder
            node["x-kubernetes-preserve-unknown-fields"] = True
        for key in CHILD_KEYWORDS:
            value = schema.get(key)
            if isinstance(value, dict):
                node[key] = self.add(value, resolve)
            elif isinstance(value, bool):
                node[key] = value
        for key in LIST_KEYWORDS:
            if key in schema:
                node[key] = [self.add(s, resolve) for s in schema[key]]
        for key in MAP_KEYWORDS:
            if key in schema:
                node[key] = {name: self.add(s, resolve) for name, s in sorted(schema[key].items())}
        rules = schema.get("x-kubernetes-validations")
        if rules:
            node["x-kubernetes-validations"] = [
                {k: r[k] for k in ("rule", "message", "messageExpression", "reason", "fieldPath", "optionalOldSelf")
                 if k in r} for r in rules]
        text = json.dumps(node, sort_keys=True, separators=(",", ":"))
        found = self.index.get(text)
        if found is None:
            found = self.index[text] = len(self.nodes)
            self.nodes.append(node)
        return found


def kyverno_commit(shared: Path) -> str:
    readme = (shared / "crds" / "README.md").read_text()
    found = re.search(r"\b[0-9a-f]{40}\b", readme)
    if not found:
        raise SystemExit(f"{shared / 'crds' / 'README.md'} names no Kyverno commit")
    return found.group(0)


def derive_kyverno(shared: Path) -> dict[str, Any]:
    import yaml

    table = Table()
    kinds: dict[str, int] = {}
    scopes: dict[str, str] = {}
    for name in KYVERNO_CRDS:
        crd = yaml.load((shared / "crds" / "kyverno" / name).read_text(), Loader=yaml.CSafeLoader)
        spec = crd["spec"]
        for version in spec["versions"]:
            if not version.get("served"):
                continue
            key = f"{spec['group']}/{version['name']}/{spec['names']['kind']}"
            kinds[key] = table.add(version["schema"]["openAPIV3Schema"])
            scopes[key] = spec["scope"]
    return {"source": {"repository": "github.com/kyverno/kyverno", "commit": kyverno_commit(shared),
                       "path": "config/crds"},
            "kinds": dict(sorted(kinds.items())), "scopes": dict(sorted(scopes.items())), "nodes": table.nodes}


def derive_kubernetes(kubeconfig: Path, context: str | None = None) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from kubectl_kyrec.cluster.client import connect
    from kubectl_kyrec.cluster.connection import ConnectionOptions

    kube = connect(ConnectionOptions(kubeconfig=str(kubeconfig), context=context))
    version = kube.get_json("/version")["gitVersion"]
    table = Table(keep_default=False)
    kinds: dict[str, int] = {}
    meta: int | None = None
    for group_version in (f"admissionregistration.k8s.io/{v}" for v in ADMISSION_VERSIONS):
        response = kube.request("GET", f"/openapi/v3/apis/{group_version}")
        if response.status == 404:
            continue
        document = response.json()
        schemas = document["components"]["schemas"]

        def resolve(schema: dict[str, Any], schemas: dict[str, Any] = schemas) -> dict[str, Any]:
            # OpenAPI v3 as Kubernetes serves it: `allOf: [{$ref}]` beside a default, or a bare $ref
            while True:
                if "$ref" in schema:
                    schema = {**schemas[schema["$ref"].rsplit("/", 1)[-1]],
                              **{k: v for k, v in schema.items() if k != "$ref"}}
                elif len(schema.get("allOf", ())) == 1 and "$ref" in schema["allOf"][0]:
                    rest = {k: v for k, v in schema.items() if k != "allOf"}
                    schema = {**schemas[schema["allOf"][0]["$ref"].rsplit("/", 1)[-1]], **rest}
                else:
                    return schema

        for name, schema in schemas.items():
            gvk = schema.get("x-kubernetes-group-version-kind") or []
            for entry in gvk:
                if entry.get("kind") in ADMISSION_KINDS and f"{entry['group']}/{entry['version']}" == group_version:
                    kinds[f"{group_version}/{entry['kind']}"] = table.add(schema, resolve)
            if name == OBJECT_META and meta is None:
                meta = table.add(schema, resolve)
    if meta is None:
        raise SystemExit("the server's OpenAPI holds no ObjectMeta")
    return {"source": {"repository": "github.com/kubernetes/kubernetes", "version": version,
                       "path": "/openapi/v3/apis/admissionregistration.k8s.io"},
            "kinds": dict(sorted(kinds.items())), "objectMeta": meta, "nodes": table.nodes}


def encode(data: dict[str, Any]) -> str:
    """Compact JSON, one node a line (a diff of a new Kyverno version stays readable)."""
    head = {k: v for k, v in data.items() if k != "nodes"}
    lines = [json.dumps(n, sort_keys=True, separators=(",", ":")) for n in data["nodes"]]
    return (json.dumps(head, sort_keys=True, separators=(",", ":"))[:-1] + ',"nodes":[\n'
            + ",\n".join(lines) + "\n]}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path,
                        default=Path(os.environ.get("KYREC_SHARED") or ROOT.parent / "shared"))
    parser.add_argument("--kubeconfig", type=Path)
    parser.add_argument("--context")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    outputs = {"kyverno.json": encode(derive_kyverno(args.shared))}
    if args.kubeconfig:
        outputs["kubernetes.json"] = encode(derive_kubernetes(args.kubeconfig, args.context))
    differ = []
    for name, text in outputs.items():
        path = DATA / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                differ.append(name)
        else:
            DATA.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)} ({len(text)} bytes)")
    if differ:
        print(f"differs from what {', '.join(differ)} derive to: run packaging/derive_schemas.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
