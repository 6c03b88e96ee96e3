"""`Status` objects with the messages a real API server writes (k8s.io/apimachinery api/errors, the
generic registry store, the etcd3 storage layer, structured-merge-diff's conflict printer)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EXPIRED_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - objects "
    "that were created, modified, or deleted between the time the first chunk was returned and now may show "
    "up in the list."
)

_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
            409: "Conflict", 410: "Expired", 415: "UnsupportedMediaType", 422: "Invalid",
            429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}


@dataclass
class ApiError(Exception):
    """An error answer: HTTP code, the Status body, and extra response headers."""

    code: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def status(code: int, message: str, reason: str | None = None, details: dict[str, Any] | None = None,
           headers: dict[str, str] | None = None, continue_token: str | None = None) -> ApiError:
    meta: dict[str, Any] = {}
    if continue_token:
        meta["continue"] = continue_token
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": meta, "status": "Failure",
                            "message": message}
    reason = reason if reason is not None else _REASONS.get(code, "")
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return ApiError(code, body, headers or {})


def _details(group: str, resource: str, name: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if name:
        out["name"] = name
    if group:
        out["group"] = group
    out["kind"] = resource          # the API server puts the resource in `kind`
    return out


def _qualified(group: str, resource: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(group: str, resource: str, name: str) -> ApiError:
    return status(404, f'{_qualified(group, resource)} "{name}" not found', "NotFound",
                  _details(group, resource, name))


def already_exists(group: str, resource: str, name: str) -> ApiError:
    return status(409, f'{_qualified(group, resource)} "{name}" already exists', "AlreadyExists",
                  _details(group, resource, name))


def conflict(group: str, resource: str, name: str, cause: str) -> ApiError:
    """errors.NewConflict: `Operation cannot be fulfilled on <resource> "<name>": <cause>`."""
    return status(409, f'Operation cannot be fulfilled on {_qualified(group, resource)} "{name}": {cause}',
                  "Conflict", _details(group, resource, name))


def forbidden(user: str, verb: str, group: str, resource: str, namespace: str, name: str = "") -> ApiError:
    """responsewriters.ForbiddenStatusError as the RBAC authorizer leaves it (no reason suffix)."""
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    detail = f'User "{user}" cannot {verb} resource "{resource}" in API group "{group}" {where}'
    subject = f'{_qualified(group, resource)} "{name}"' if name else _qualified(group, resource)
    return status(403, f"{subject} is forbidden: {detail}", "Forbidden", _details(group, resource, name))


def unauthorized() -> ApiError:
    return status(401, "Unauthorized", "Unauthorized")


def expired_continue(new_token: str) -> ApiError:
    return status(410, EXPIRED_CONTINUE, "Expired", continue_token=new_token)


def too_many_requests(retry_after: int) -> ApiError:
    return status(429, "Too many requests, please try again later.", "TooManyRequests",
                  {"retryAfterSeconds": retry_after}, {"Retry-After": str(retry_after)})


def bad_request(message: str) -> ApiError:
    return status(400, message, "BadRequest")


def invalid(group: str, kind: str, name: str, field_path: str, message: str, kind_name: str = "") -> ApiError:
    """errors.NewInvalid: `<Kind>.<group> "<name>" is invalid: <field>: <message>`."""
    qualified = f"{kind}.{group}" if group else kind
    return status(422, f'{qualified} "{name}" is invalid: {field_path}: {message}', "Invalid",
                  {"name": name, **({"group": group} if group else {}), "kind": kind,
                   "causes": [{"reason": "FieldValueInvalid", "message": message, "field": field_path}]})


def apply_conflict(conflicts: list[tuple[str, str]]) -> ApiError:
    """managedfields' NewConflictError: `conflicts` is [(printed manager, field path)], in path order.

    A cause's kind is under `reason` (metav1.StatusCause's Go field Type is serialised as "reason"), as in
    every Status the API server sends; this double once wrote "type", and kyrec read that."""
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {manager}", "field": path}
              for manager, path in conflicts]
    if len(conflicts) == 1:
        message = f"Apply failed with 1 conflict: conflict with {conflicts[0][0]}: {conflicts[0][1]}"
    else:
        by_manager: dict[str, list[str]] = {}
        for manager, path in conflicts:
            by_manager.setdefault(manager, []).append(path)
        lines = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {manager}:")
            lines.extend(f"- {path}" for path in by_manager[manager])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return status(409, message, "Conflict", {"causes": causes})


def injected(code: int, retry_after: int | None = None) -> ApiError:
    """A fault's answer, shaped as the API server shapes that code."""
    if code == 429:
        return too_many_requests(retry_after if retry_after is not None else 1)
    if code == 410:
        return status(410, EXPIRED_CONTINUE, "Expired")
    if code == 500:
        return status(500, "Internal error occurred: injected fault", "InternalError",
                      {"causes": [{"message": "injected fault"}]})
    if code == 503:
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        return status(503, "the server is currently unable to handle the request", "ServiceUnavailable",
                      headers=headers)
    if code == 504:
        return status(504, "Timeout: request did not complete within the allowed duration", "Timeout",
                      {"retryAfterSeconds": 1})
    return status(code, f"injected fault ({code})")
