"""Kyverno's permissions asked of the cluster itself: a SubjectAccessReview (authorization.k8s.io/v1,
create) per question, answered by every authorizer the API server runs (RBAC, webhooks, ...), which the
state's RBAC objects (k8s/rbac.py) cannot speak for.

A review writes nothing: the API server answers it and keeps nothing. It still needs `create` on
`subjectaccessreviews` (docs/rbac.yaml); when it is refused or fails, the answer is None ("cannot tell"),
the reason is kept once for a notice, and the state's RBAC objects decide if the state holds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubectl_kyrec.cluster.client import KubeClient
from kubectl_kyrec.errors import ClusterError
from kubectl_kyrec.k8s.rbac import AccessRequest

REVIEWS_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


@dataclass
class SubjectAccessReviews:
    client: KubeClient
    answers: dict[AccessRequest, bool | None] = field(default_factory=dict)
    failure: str | None = None          # why the reviews could not be made (the first failure)

    def allowed(self, req: AccessRequest) -> bool | None:
        if req in self.answers:
            return self.answers[req]
        if self.failure is not None:     # one refusal stands for them all: not asked again
            return None
        attributes = {"verb": req.verb, "group": req.group, "resource": req.resource}
        for key, value in (("namespace", req.namespace), ("name", req.name), ("subresource", req.subresource)):
            if value:
                attributes[key] = value
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {"user": req.user, "groups": list(req.groups), "resourceAttributes": attributes}}
        answer: bool | None = None
        try:
            response = self.client.request("POST", REVIEWS_PATH, body=body, content_type="application/json",
                                           category="review")
            if response.ok:
                status = response.json(REVIEWS_PATH).get("status") or {}
                answer = bool(status.get("allowed"))
            else:
                self.failure = str(self.client.fail(response, "create", "subjectaccessreviews.authorization.k8s.io",
                                                    "", REVIEWS_PATH))
        except ClusterError as exc:
            self.failure = str(exc)
        self.answers[req] = answer
        return answer
