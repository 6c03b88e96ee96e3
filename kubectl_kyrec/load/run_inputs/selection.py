"""What the user selected (`--policy-name`, `-n`, `--kind`, `-l`): one value passed whole from the command line
through evaluation (which subjects and triggers are looked at) to the findings (reconcile/selection.py: which
of them a row or an action may be), so every stage narrows by the same four filters.

`now` stays beside it in each run's options: it is the moment a run answers for, not a filter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubectl_kyrec.k8s.labels import Selector


@dataclass(frozen=True)
class Selection:
    policy_names: tuple[str, ...] = ()
    namespace: str | None = None
    kinds: tuple[str, ...] = ()
    selector: Selector | None = None

    def __post_init__(self) -> None:
        # `-n ""` and no -n are one selection: every namespace
        if not self.namespace:
            object.__setattr__(self, "namespace", None)

    @property
    def narrows(self) -> bool:
        return bool(self.policy_names or self.namespace or self.kinds
                    or (self.selector is not None and not self.selector.empty))

    def holds_policy(self, key: str) -> bool:
        """`key` is `name` or `namespace/name`; `--policy-name` takes either form."""
        return not self.policy_names or key in self.policy_names or key.rpartition("/")[2] in self.policy_names

    def text(self) -> str:
        """The subject filters as typed (`-n a --kind Pod -l x=y`), for notices; "" when none."""
        parts = []
        if self.namespace:
            parts.append(f"-n {self.namespace}")
        if self.kinds:
            parts.append("--kind " + ",".join(self.kinds))
        if self.selector is not None and not self.selector.empty:
            parts.append(f"-l {self.selector}")
        return " ".join(parts)
