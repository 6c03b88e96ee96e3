"""`parseServiceAccount(string)` and `user.parseServiceAccount(string)` (sdk: user/lib.go, impl.go).

Kyverno returns a native Go struct, so the fields are the Go names `Name` and `Namespace`; both are
"" unless the user name is `system:serviceaccount:<namespace>:<name>`.
"""

from __future__ import annotations

from kubectl_kyrec.cel.decl import Library, Overload, fn

_PREFIX = "system:serviceaccount:"


def parse_service_account(user: str) -> dict[str, str]:
    namespace = name = ""
    if user.startswith(_PREFIX):
        rest = user[len(_PREFIX):]
        if ":" in rest:
            namespace, name = rest.split(":", 1)
    return {"Name": name, "Namespace": namespace}


def user_library() -> Library:
    return Library("kyverno.user", [
        fn("parseServiceAccount", Overload("parse_service_account_string_non_prefixed", ["string"], "map",
                                           parse_service_account)),
        fn("user.parseServiceAccount", Overload("parse_service_account_string_prefixed", ["string"], "map",
                                                parse_service_account)),
    ])
