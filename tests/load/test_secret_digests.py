"""The digest encoding of Secret values in captures (load/run_inputs/secret_digests.py), comparing with it, and the
state reader's checks of it."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest

from kubectl_kyrec.errors import InputError
from kubectl_kyrec.load.run_inputs.secret_digests import (
    LAST_APPLIED,
    SALT_ANNOTATION,
    digest,
    digest_secret,
    digested_like,
    is_digest,
    parse_salt,
    salt_text,
)
from kubectl_kyrec.load.run_inputs.state import read_state
from kubectl_kyrec.reconcile.downstreams import Reason, compare

SALT = bytes(range(16))
OTHER = bytes(range(16, 32))


def secret(**fields: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"}, **fields}


def test_the_encoding_is_sha256_of_salt_then_bytes() -> None:
    assert digest(b"value", SALT) == "kyrec-sha256:" + hashlib.sha256(SALT + b"value").hexdigest()
    assert is_digest(digest(b"value", SALT)) and is_digest(digest(b"", SALT).encode())
    assert not is_digest("kyrec-sha256:abc") and not is_digest("dmFsdWU=") and not is_digest(None)
    assert parse_salt(salt_text(SALT)) == SALT
    assert parse_salt("zz" * 16) is None and parse_salt(SALT.hex()[:-2]) is None and parse_salt(5) is None


def test_data_and_string_data_digest_their_bytes_and_keys_stay() -> None:
    obj = secret(type="Opaque", data={"a": base64.b64encode(b"x").decode()}, stringData={"b": "x"},
                 metadata={"name": "s", "annotations": {LAST_APPLIED: '{"data": {"a": "eA=="}}', "keep": "me"}})
    out = digest_secret(obj, SALT)
    assert out["data"] == {"a": digest(b"x", SALT)} and out["stringData"] == {"b": digest(b"x", SALT)}
    assert out["metadata"]["annotations"] == {LAST_APPLIED: digest(b'{"data": {"a": "eA=="}}', SALT), "keep": "me"}
    assert out["type"] == "Opaque"
    assert obj["data"] == {"a": "eA=="}          # the object read is left as it was


def test_expected_values_are_digested_with_the_salt_that_made_the_live_digest() -> None:
    live = secret(data={"a": digest(b"x", OTHER), "b": digest(b"y", OTHER)})
    expected = secret(data={"a": base64.b64encode(b"x").decode()}, stringData={"b": "changed"})
    out = digested_like(expected, live, (SALT, OTHER))
    assert out["data"] == {"a": digest(b"x", OTHER)}
    assert out["stringData"] == {"b": digest(b"changed", SALT)}     # no salt gives it: differs, as it should
    # a value already a digest (a clone of a captured Secret) is compared as it is
    clone = secret(data={"a": digest(b"x", OTHER)})
    assert digested_like(clone, live, (SALT, OTHER))["data"] == {"a": digest(b"x", OTHER)}
    # nothing to digest: the same object back
    assert digested_like(expected, secret(data={"a": "eA=="}), (SALT,)) is expected
    assert digested_like(expected, live, ()) is expected


def test_compare_finds_a_changed_value_and_keeps_an_equal_one_in_sync() -> None:
    live = secret(data={"a": digest(b"x", SALT)})
    same = secret(data={"a": base64.b64encode(b"x").decode()})
    assert compare(same, live, server_side_apply=False, secret_salts=(SALT,))[0] is None
    assert compare(secret(stringData={"a": "x"}), live, server_side_apply=False, secret_salts=(SALT,))[0] is None
    reason, fields, shown = compare(secret(data={"a": base64.b64encode(b"z").decode()}), live,
                                    server_side_apply=False, secret_salts=(SALT,))
    assert reason is Reason.CHANGED_FIELDS and fields == ("/data/a",)
    assert shown is not None and shown.before["data"] == {"a": "*** (before)"} and shown.after["data"] == {
        "a": "*** (after)"}
    # without the salt a digest is compared as text, and differs
    assert compare(same, live, server_side_apply=False)[0] is Reason.CHANGED_FIELDS


def capture(tmp_path: Path, items: list[dict[str, object]], annotations: dict[str, str]) -> str:
    path = tmp_path / "capture.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "metadata": {"annotations": {
        "kyrec.io/listed": "[]", **annotations}}, "items": items}, indent=1))
    return str(path)


def test_the_state_reader_keeps_the_salt(tmp_path: Path) -> None:
    path = capture(tmp_path, [secret(data={"a": digest(b"x", SALT)})], {SALT_ANNOTATION: salt_text(SALT)})
    assert read_state([path]).secret_salts == (SALT,)


def test_digests_without_a_salt_are_an_input_error_at_the_secret(tmp_path: Path) -> None:
    path = capture(tmp_path, [secret(data={"a": digest(b"x", SALT)})], {})
    with pytest.raises(InputError) as err:
        read_state([path])
    assert str(err.value) == (f"{path}:11: Secret n/s holds digests of its values (kyrec-sha256:...) but the file "
                              f"has no {SALT_ANNOTATION} record to compare them with")


def test_a_malformed_salt_is_an_input_error(tmp_path: Path) -> None:
    path = capture(tmp_path, [], {SALT_ANNOTATION: "not-hex"})
    with pytest.raises(InputError, match=f"annotation {SALT_ANNOTATION} must be 32 hex digits"):
        read_state([path])


def test_a_last_applied_annotation_compares_by_digest_too() -> None:
    text = '{"kind": "Secret"}'
    live = secret(data={}, metadata={"name": "s", "namespace": "n", "annotations": {LAST_APPLIED: digest(
        text.encode(), SALT)}})
    expected = secret(data={}, metadata={"name": "s", "namespace": "n", "annotations": {LAST_APPLIED: text}})
    assert compare(expected, live, server_side_apply=False, secret_salts=(SALT,))[0] is None
    expected["metadata"]["annotations"][LAST_APPLIED] = "{}"  # type: ignore[index]
    assert compare(expected, live, server_side_apply=False, secret_salts=(SALT,))[0] is Reason.CHANGED_FIELDS
