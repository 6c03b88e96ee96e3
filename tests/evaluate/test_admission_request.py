"""The `request` variable a subject is evaluated with."""

from __future__ import annotations

from kubectl_kyrec.evaluate.request import build_request


def test_request_user_info_reads_as_a_typed_struct() -> None:
    req = build_request({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}},
                        resource="configmaps", namespaced=True)
    # the background scan's empty UserInfo: every field present with its zero value, as Kyverno's typed
    # request variable has it
    assert req.as_cel_request()["userInfo"] == {"username": "", "uid": "", "groups": [], "extra": {}}
    given = build_request({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
                          resource="configmaps", namespaced=True, user_info={"username": "alice"})
    assert given.as_cel_request()["userInfo"]["username"] == "alice"
    assert given.as_cel_request()["userInfo"]["groups"] == []
