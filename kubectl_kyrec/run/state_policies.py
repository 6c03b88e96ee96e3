"""A `--state` that holds policies needs no `-p`: its policies are the complete set, as the cluster's are for
a live run (a capture of a cluster carries its policies)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubectl_kyrec.errors import UsageError

if TYPE_CHECKING:
    from kubectl_kyrec.load.run_inputs.sources import FileSource, Inputs

@dataclass
class StatePoliciesSource:
    files: FileSource
    what: str = "needs policies: -p PATH"

    def read(self) -> Inputs:
        from kubectl_kyrec.load.policy.policies import classify, is_policy_document

        inputs = self.files.read()
        docs = [d for d in inputs.state.objects if is_policy_document(d)]
        policies = classify(docs)
        if not (policies.validating or policies.generating or policies.admission or policies.image_validating
                or policies.classic or policies.mutating or policies.mutating_admission or policies.deleting):
            raise UsageError(f"{self.what} (the state holds no policies)")
        from kubectl_kyrec.load.run_inputs.secret_digests import secret_digest_notice
        from kubectl_kyrec.model import Notice

        notices = list(inputs.notices)
        digests = secret_digest_notice(policies, inputs.state)
        if digests and Notice(digests) not in notices:
            notices.append(Notice(digests))
        return dataclasses.replace(inputs, policies=policies, notices=notices, policies_from_state=True)
