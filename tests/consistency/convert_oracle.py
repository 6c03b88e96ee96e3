"""The corpus oracle for `convert` (issue 38): every ClusterPolicy in kyverno-policies-legacy whose name a CEL
policy in kyverno-policies (converted by Kyverno's maintainers by hand) also has. For each pair: kyrec's
conversion, then original vs kyrec's conversion and original vs the maintainers' conversion, on both pairs'
kyverno-test.yaml resources plus variants (run/convert.py). `python tests/consistency/convert_oracle.py`
prints the figures."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:       # run as a script: the repository's tests package, for shared_inputs
    sys.path.insert(0, str(ROOT))

from kubectl_kyrec.convert.policy import convert_policy  # noqa: E402
from kubectl_kyrec.errors import InputError  # noqa: E402
from kubectl_kyrec.run.convert import Difference, _documents, _resources, compile_check, variants, verify  # noqa: E402
from tests.shared_inputs import SHARED  # noqa: E402

CEL_KINDS = ("ValidatingPolicy", "GeneratingPolicy", "MutatingPolicy", "ImageValidatingPolicy", "DeletingPolicy")


@dataclass
class Pair:
    name: str
    original: dict[str, Any]
    original_dir: Path
    hand: dict[str, Any]
    hand_dir: Path
    status: str = ""
    reason: str = ""
    subjects: int = 0
    refused: int = 0              # variants not made: objects the API server refuses (run/convert.py variants)
    ours: list[Difference] = field(default_factory=list)
    theirs: list[Difference] = field(default_factory=list)


def _policies(root: Path, kinds: tuple[str, ...]) -> dict[str, tuple[dict[str, Any], Path]]:
    out: dict[str, tuple[dict[str, Any], Path]] = {}
    for doc, where in _documents([str(root)], skip_hidden=True):
        if doc.get("kind") in kinds:
            path = Path(where.rsplit(":", 1)[0])
            out.setdefault(str(doc["metadata"]["name"]), (doc, path.parent))
    return out


def pairs() -> list[Pair]:
    legacy = _policies(SHARED / "corpus" / "kyverno-policies-legacy", ("ClusterPolicy",))
    cel = _policies(SHARED / "corpus" / "kyverno-policies", CEL_KINDS)
    return [Pair(n, legacy[n][0], legacy[n][1], cel[n][0], cel[n][1]) for n in sorted(legacy) if n in cel]


def _test_resources(directory: Path) -> list[str]:
    suite = directory / ".kyverno-test" / "kyverno-test.yaml"
    if not suite.exists():
        return []
    test = yaml.safe_load(suite.read_text()) or {}
    return [str(suite.parent / r) for r in test.get("resources") or [] if (suite.parent / r).exists()]


def run_pair(pair: Pair) -> Pair:
    conv = compile_check(convert_policy(pair.original))
    pair.status = conv.status
    if conv.refusals:
        pair.reason = "; ".join(conv.refusals)
        return pair
    paths = _test_resources(pair.original_dir)
    if pair.hand_dir != pair.original_dir:
        paths += _test_resources(pair.hand_dir)
    if not paths:
        pair.reason = "no test resources"
        return pair
    resources = _resources(paths, ())
    refused: list[str] = []
    for resource in resources:
        if isinstance(resource, dict) and resource.get("kind"):
            for _ in variants(resource, refused):
                pass
    pair.refused = len(refused)
    try:
        pair.ours, pair.subjects = verify(pair.original, conv.documents, resources)
    except InputError as err:
        # kyrec refuses its own output (a CEL type error): counted as a failure of the converter
        pair.status, pair.reason = "invalid conversion", str(err)
        return pair
    if pair.hand and pair.hand.get("kind") in ("ValidatingPolicy", "GeneratingPolicy"):
        pair.theirs, _ = verify(pair.original, [pair.hand], resources)
    return pair


# a refusal's reason -> its category in the figures (docs/convert.md), first match wins
_CATEGORIES = (("offline REST mapper", "kind unknown offline (a CRD's kind)"),
               ("context entries", "context entries"), ("clone", "generate clone and cloneList"),
               ("generate foreach", "generate foreach"), ("generate", "generate rules (other)"),
               ("verifyImages", "verifyImages"), ("mutate foreach", "mutate foreach"),
               ("anchors and $patch", "mutate anchors"), ("a list in patchStrategicMerge", "mutate lists"),
               ("mutate targets", "mutate existing"), ("mutate existing", "mutate existing"),
               ("JSONPatch", "patchesJson6902"), ("mutate rules with different", "mutate rule layout"),
               ("both mutate and other", "mutate rule layout"), ("JMESPath", "JMESPath forms and functions"),
               ("podSecurity", "podSecurity"),
               ("a value from a variable", "condition values from variables (Equals, in-operators)"),
               ("a key an element can lack", "foreach conditions that can error"),
               ("under failurePolicy Ignore", "preconditions that can error (mutate; failurePolicy Ignore)"),
               ("the mutate rule's error", "preconditions that can error (mutate; failurePolicy Ignore)"),
               ("wildcard", "wildcard keys and values"),
               ("cannot be made a failure", "CEL whose errors cannot be made a failure"),
               ("does not load in kyrec", "the converted CEL does not load"),
               ("cluster roles", "roles and subjects"), ("subjects", "roles and subjects"),
               ("numbers compare", "condition values (quantities, durations, ranges)"),
               ("on a non-number", "condition values (quantities, durations, ranges)"),
               ("single string value", "condition values (quantities, durations, ranges)"))


def category(reason: str) -> str:
    found = re.search(r"verifyImages\[\d+\]\.(\w+)", reason)
    if found:
        # the verifyImages field refused (convert/images.py): attestations, skipImageReferences, ...
        return f"verifyImages ({found.group(1)})"
    if "verifyImages" in reason:
        return "verifyImages (the rule's other fields, several entries)"
    return next((name for key, name in _CATEGORIES if key in reason), "other")


def _message_only(d: Difference) -> bool:
    return not d.verdict and not d.undecided


def _plain_verdict(d: Difference) -> bool:
    """A difference of verdict, not of a mutated object nor of a generated downstream."""
    return d.verdict and not d.mutation and not d.downstream


def main() -> int:
    chosen = every_legacy_policy() if "--all" in sys.argv else pairs()
    results = [run_pair(p) for p in chosen]
    by_status: dict[str, int] = {}
    for p in results:
        by_status[p.status] = by_status.get(p.status, 0) + 1
        line = f"{p.name}: {p.status}"
        if p.reason:
            line += f" ({p.reason})"
        if p.subjects:
            line += (f"; {p.subjects} subjects, kyrec {sum(_plain_verdict(d) for d in p.ours)} verdict "
                     f"diff(s) {sum(bool(d.mutation) for d in p.ours)} mutation diff(s) "
                     f"{sum(bool(d.downstream) for d in p.ours)} downstream diff(s) "
                     f"{sum(_message_only(d) for d in p.ours)} message diff(s), "
                     f"{sum(d.undecided for d in p.ours)} undetermined on both sides, maintainers "
                     f"{sum(d.verdict for d in p.theirs)} verdict diff(s)")
        print(line)
        for d in p.ours[:5]:
            print("  KYREC  " + d.line())
        for d in [d for d in p.theirs if d.verdict][:3]:
            print("  HAND   " + d.line())
    print(f"{len(results)} pairs: {by_status}")
    reasons: dict[str, int] = {}
    for p in results:
        if p.status == "not converted":
            reasons[category(p.reason)] = reasons.get(category(p.reason), 0) + 1
    print("not converted, by reason: " + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items(),
                                                                                   key=lambda kv: -kv[1])))
    print(f"subjects compared: {sum(p.subjects for p in results)} (variants not made, refused by the API server: "
          f"{sum(p.refused for p in results)}); kyrec verdict differences: "
          f"{sum(_plain_verdict(d) for p in results for d in p.ours)}, mutated-object differences: "
          f"{sum(bool(d.mutation) for p in results for d in p.ours)}, downstream differences: "
          f"{sum(bool(d.downstream) for p in results for d in p.ours)}, message differences: "
          f"{sum(_message_only(d) for p in results for d in p.ours)}, undetermined on both sides (not verified, "
          f"e.g. signatures without --registry): {sum(d.undecided for p in results for d in p.ours)}; pairs "
          "where the hand conversion's verdicts "
          f"differ: {sum(1 for p in results if any(d.verdict for d in p.theirs))}")
    return 0



def every_legacy_policy() -> list[Pair]:
    """Every ClusterPolicy of kyverno-policies-legacy (pairs or not), verified on its own test resources."""
    out = []
    for doc, where in _documents([str(SHARED / "corpus" / "kyverno-policies-legacy")], skip_hidden=True):
        if doc.get("kind") != "ClusterPolicy":
            continue
        directory = Path(where.rsplit(":", 1)[0]).parent
        out.append(Pair(str(doc["metadata"]["name"]), doc, directory, {}, directory))
    return out


if __name__ == "__main__":
    sys.exit(main())
