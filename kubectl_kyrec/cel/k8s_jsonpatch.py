"""Kubernetes' JSONPatch CEL library: `jsonpatch.escapeKey` (k8s.io/apiserver pkg/cel/library/jsonpatch.go).

Only the mutating kinds get it (pkg/admission/plugin/cel/compile.go `hasPatchTypes`), with the typed
literals of :mod:`kubectl_kyrec.cel.typed_objects`.
"""

from __future__ import annotations

from kubectl_kyrec.cel.decl import Library, Overload, fn


def escape_key(key: str) -> str:
    """RFC 6901 escaping of one path segment: `~` -> `~0`, `/` -> `~1` (jsonpatch.go jsonPatchReplacer;
    strings.NewReplacer replaces in one pass, so `~1` written by the user becomes `~01`)."""
    return key.replace("~", "~0").replace("/", "~1")


LIBRARY = Library("kubernetes.jsonpatch", [
    fn("jsonpatch.escapeKey", Overload("string_jsonpatch_escapeKey_string", ["string"], "string", escape_key)),
])
