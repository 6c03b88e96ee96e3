"""Secret values in a capture, as salted digests: the one encoding, and comparing with it
(docs/architecture.md#secrets-are-never-shown).

A capture is a file people keep (a pre-merge check reads it later), so by default `capture` writes no Secret
value into it. Each value of a v1 Secret's `data` and `stringData` becomes

    kyrec-sha256:<64 lower-case hex digits>

the SHA-256 of the capture's salt followed by the value's bytes (`data` base64-decoded, `stringData` as
UTF-8), and the salt (16 random bytes, as 32 hex digits) is written once, in the capture's record: the
`kyrec.io/secret-digest-salt` annotation of the List, beside the listed and unreadable kinds. Keys, type and
metadata stay as they were. A Secret's `kubectl.kubernetes.io/last-applied-configuration` annotation, which
repeats the Secret's data, becomes the digest of its UTF-8 text the same way: kept rather than dropped, so
that the field kubectl's manager owns is still there for the foreign-fields check as in a live run, and a
change of it still shows.

Drift needs only equality: where the captured value is a digest, kyrec digests what the policy would write
with the capture's salt and compares digests, so an offline diff finds a changed Secret and an unchanged one
stays in sync. The salt is per capture, so one value has different digests in two captures and no table of
digests of common values can be computed once for all captures. It does not hide a value that can be
guessed: with the salt beside it, a short password can be found by trying candidates. Keep captures where
the cluster's Secrets may be read when they hold such values, or leave the Secrets out.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubectl_kyrec.errors import few
from kubectl_kyrec.k8s.secrets import is_secret, secret_value_bytes

if TYPE_CHECKING:
    from kubectl_kyrec.load.policy.policies import PolicySet
    from kubectl_kyrec.load.run_inputs.cluster_state import ClusterState

PREFIX = "kyrec-sha256:"
SALT_ANNOTATION = "kyrec.io/secret-digest-salt"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
VALUE_FIELDS = ("data", "stringData")
_SALT_BYTES = 16
SALT_DIGITS = 2 * _SALT_BYTES
_DIGEST = re.compile(r"kyrec-sha256:[0-9a-f]{64}")


def new_salt() -> bytes:
    return secrets.token_bytes(_SALT_BYTES)


def salt_text(salt: bytes) -> str:
    """How the record writes a salt."""
    return salt.hex()


def parse_salt(text: Any) -> bytes | None:
    """The salt a record gives, or None when the text is not one (`salt_text`'s form)."""
    if not isinstance(text, str) or len(text) != SALT_DIGITS:
        return None
    try:
        return bytes.fromhex(text)
    except ValueError:
        return None


def digest(value: bytes, salt: bytes) -> str:
    return PREFIX + hashlib.sha256(salt + value).hexdigest()


def is_digest(value: Any) -> bool:
    """A value written by `digest` (as text, or as the bytes a Secret's comparable form holds)."""
    if isinstance(value, bytes | bytearray):
        try:
            value = bytes(value).decode("ascii")
        except UnicodeDecodeError:
            return False
    return isinstance(value, str) and _DIGEST.fullmatch(value) is not None


def digest_secret(obj: Mapping[str, Any], salt: bytes) -> dict[str, Any]:
    """A copy of a Secret with every value (and the last-applied annotation) replaced by its digest; the
    parts it leaves unchanged are shared with `obj`."""
    out = dict(obj)
    for field in VALUE_FIELDS:
        values = out.get(field)
        if isinstance(values, Mapping):
            out[field] = {key: digest(secret_value_bytes(field, value), salt) for key, value in values.items()}
    meta = out.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    if isinstance(meta, Mapping) and isinstance(annotations, Mapping) and isinstance(annotations.get(LAST_APPLIED),
                                                                                       str):
        out["metadata"] = {**meta, "annotations": {**annotations,
                                                   LAST_APPLIED: digest(annotations[LAST_APPLIED].encode(), salt)}}
    return out


def has_digests(obj: Mapping[str, Any]) -> bool:
    """Whether a Secret holds digests in place of its values."""
    return is_secret(obj) and any(is_digest(v) for field in VALUE_FIELDS
                                  if isinstance(values := obj.get(field), Mapping) for v in values.values())


def _as_captured(value: bytes, captured: str, salts: Sequence[bytes]) -> str:
    """`value` as the capture would hold it: the digest with the salt that gives `captured` when one does
    (several state files may come from captures with different salts), else with the first salt."""
    for salt in salts:
        candidate = digest(value, salt)
        if candidate == captured:
            return candidate
    return digest(value, salts[0])


def digested_like(expected: Mapping[str, Any], live: Mapping[str, Any], salts: Sequence[bytes]) -> Mapping[str, Any]:
    """What a policy would write (`expected`), with each Secret value the live object holds as a digest
    digested too, so that comparing the two compares digests; `expected` itself when there is nothing to
    digest. A value that already is a digest (copied from a captured Secret, as a clone is) stays as it is."""
    if not salts or not is_secret(expected) or not is_secret(live):
        return expected
    captured: dict[str, str] = {}
    for field in VALUE_FIELDS:
        values = live.get(field)
        if isinstance(values, Mapping):
            captured.update((str(k), v) for k, v in values.items() if is_digest(v))
    live_meta = live.get("metadata")
    live_annotations = live_meta.get("annotations") if isinstance(live_meta, Mapping) else None
    applied = live_annotations.get(LAST_APPLIED) if isinstance(live_annotations, Mapping) else None
    if not captured and not is_digest(applied):
        return expected
    out = dict(expected)
    for field in VALUE_FIELDS:
        values = expected.get(field)
        if captured and isinstance(values, Mapping):
            out[field] = {key: (_as_captured(secret_value_bytes(field, value), captured[str(key)], salts)
                                if str(key) in captured and not is_digest(value) else value)
                          for key, value in values.items()}
    meta = expected.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    if is_digest(applied) and isinstance(meta, Mapping) and isinstance(annotations, Mapping) \
            and isinstance(annotations.get(LAST_APPLIED), str) and not is_digest(annotations[LAST_APPLIED]):
        out["metadata"] = {**meta, "annotations": {**annotations, LAST_APPLIED: _as_captured(
            annotations[LAST_APPLIED].encode(), str(applied), salts)}}
    return out


def stored_value(value: bytes) -> str:
    """A Secret's `data` value for bytes from normalize.secret_bytes: base64, except a digest, which is
    kept as its text (the object it came from held it so)."""
    return value.decode("ascii") if is_digest(value) else base64.b64encode(value).decode()


# policies a notice names before "and N more"
_POLICIES_NAMED = 3


def secret_digest_notice(policies: PolicySet, state: ClusterState) -> str | None:
    """Said when the state's Secrets hold digests of their values (`capture`'s default) and a policy may read
    a Secret: as a subject or trigger, through `resource.Get/List`, an apiCall or a `*`. Such a policy sees
    `kyrec-sha256:...` strings where the values were, so what it says of them is not what it would say in the
    cluster; kyrec cannot tell from an expression whether it reads the values, so it names the policies."""
    digested = sum(1 for d in state.objects if has_digests(d.obj))
    if not digested:
        return None
    every: list[tuple[str, Mapping[str, Any]]] = [
        *((p.meta.key, p.raw) for p in policies.validating), *((p.meta.key, p.raw) for p in policies.admission),
        *((p.meta.key, p.raw) for p in policies.generating), *((p.meta.key, p.raw) for p in policies.classic),
        *((p.meta.key, p.raw) for p in policies.image_validating)]
    readers = sorted({key for key, raw in every if _may_read_secrets(raw.get("spec"))})
    if not readers:
        return None
    return (f"the state holds {digested} Secret(s) whose values are salted digests (kubectl kyrec capture's "
            f"default), and {few(readers, _POLICIES_NAMED)} may read Secrets: they see {PREFIX}... strings where "
            "the values were, so their results on Secret values are not the cluster's. Capture with "
            "--include-secret-values for such policies")


def _may_read_secrets(spec: Any) -> bool:
    """Whether a policy's spec names Secrets (or `*`) outside what it generates: what it writes is compared
    digest to digest (load/run_inputs/secret_digests.py), what it reads is not."""
    if not isinstance(spec, Mapping):
        return False
    reads = {k: v for k, v in spec.items() if k != "generate"}
    rules = reads.get("rules")
    if isinstance(rules, list):
        reads["rules"] = [{k: v for k, v in r.items() if k != "generate"} if isinstance(r, Mapping) else r
                          for r in rules]
    text = json.dumps(reads)
    return "secret" in text.lower() or '"*"' in text
