"""Kyverno's policy validation of a classic policy's variables, as its admission webhook and its CLI run it
before using the policy (kk: pkg/validation/policy/validate.go ValidateVariables -> hasInvalidVariables, and
validateElementInForEach; the background check, containsUserVariables, is evaluate/classic/engine.py's).

Every `{{ }}` of every rule is substituted in a mock context (kk: pkg/engine/context/mock_context.go): each
variable must compile as JMESPath, and must be one Kyverno provides (`request.`, `element`, `images`, a
function call, ... by regex) or one the rule's context declares. Variables may not appear in match, exclude,
image references or JSON patch paths. A policy that fails is refused, whatever resource comes: a JMESPath
syntax error is bad input, not an `error` result per resource.

What Kyverno's validation does not check is not refused here either: an unknown JMESPath function, or a bad
regular expression given to `regex_match`, fails only when evaluated (go-jmespath's Compile only parses).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from kubectl_kyrec.classic.jmespath_types import JMESPathCompileError
from kubectl_kyrec.classic.json_context import ContextError, EvalContext, InvalidVariableError
from kubectl_kyrec.classic.variables import (
    REGEX_VARIABLES,
    Position,
    elements_outside_foreach,
    substitution_errors,
)
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.golang.wildcard import match as wildcard_match
from kubectl_kyrec.load.policy.classic import ClassicPolicy, ClassicRule

# kk: validate.go allowedVariables (context.ReservedKeys), allowedVariablesBackground, ...InTarget
_ALLOWED = re.compile(r"request|serviceAccountName|serviceAccountNamespace|element|elementIndex|@|images|image|"
                      r"([a-z_0-9]+\()[^{}]")
_ALLOWED_BACKGROUND = re.compile(r"request\.|element|elementIndex|@|images|images\.|image\.|([a-z_0-9]+\()[^{}]")
_ALLOWED_IN_TARGET = re.compile(r"request\.|serviceAccountName|serviceAccountNamespace|element|elementIndex|@|"
                                r"images|images\.|image\.|target\.|([a-z_0-9]+\()[^{}]")
_ALLOWED_BACKGROUND_IN_TARGET = re.compile(r"request\.|element|elementIndex|@|images|images\.|image\.|target\.|"
                                           r"([a-z_0-9]+\()[^{}]")
# kk: validate.go regexVariables (objectHasVariables: match and exclude)
_ANY_VARIABLE = re.compile(r"\{\{[^{}]*\}\}")
_INVALID = "policy contains invalid variables: "


class MockContext(EvalContext):
    """kk: MockContext: every query compiles as JMESPath and is allowed by regex or declared pattern, or
    fails; an allowed one is null."""

    def __init__(self, allowed: re.Pattern[str], patterns: Sequence[str]) -> None:
        super().__init__()
        self.allowed = allowed
        self.patterns = list(patterns)

    def query(self, expression: str) -> Any:
        query = expression.strip()
        if query == "":
            raise ContextError("invalid query (nil)")
        try:
            self.engine.compile(query)
        except JMESPathCompileError as exc:
            # one line: the parser's text goes on with the expression and a caret under the fault
            text = str(exc).splitlines()[0].rstrip(":")
            raise ContextError(f"invalid JMESPath query {query}: {text}", exc) from None
        query = query.replace('"', "")
        if self.allowed.search(query) or any(wildcard_match(p, query) for p in self.patterns):
            return None
        raise InvalidVariableError(f'variable {query} must match regex "{self.allowed.pattern}" or patterns '
                                   f"[{' '.join(self.patterns)}]")

    def query_operation(self) -> str:
        return ""


def _declared(entries: Any) -> list[str]:
    """kk: addContextVariables: the patterns a rule's context entries make valid."""
    out: list[str] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping):
            continue
        name = str(entry.get("name") or "")
        if any(entry.get(k) is not None for k in ("apiCall", "globalReference", "imageRegistry", "variable")):
            out.append(name + "*")
        if entry.get("configMap") is not None:
            out.extend((f"{name}.data", f"{name}.metadata", f"{name}.data.*", f"{name}.metadata.*"))
    return out


def _context_patterns(raw: Mapping[str, Any]) -> list[str]:
    """kk: buildContext: the rule's context, its top-level foreach contexts and its attestations' names."""
    out = _declared(raw.get("context"))
    for part, key in (("validate", "foreach"), ("mutate", "foreach"), ("mutate", "targets"),
                      ("generate", "foreach")):
        block = raw.get(part)
        for item in (block.get(key) if isinstance(block, Mapping) else None) or []:
            if isinstance(item, Mapping):
                out.extend(_declared(item.get("context")))
    verify = raw.get("verifyImages")
    if isinstance(verify, list) and any(isinstance(v, Mapping) and v.get("validate") is not None for v in verify):
        for v in verify:
            for attestation in (v.get("attestations") if isinstance(v, Mapping) else None) or []:
                if isinstance(attestation, Mapping):
                    out.append(str(attestation.get("name") or "") + "*")
    return out


def _allowed(background: bool, target: bool) -> re.Pattern[str]:
    if target:
        return _ALLOWED_BACKGROUND_IN_TARGET if background else _ALLOWED_IN_TARGET
    return _ALLOWED_BACKGROUND if background else _ALLOWED


def _forbidden_section(rule: ClassicRule) -> tuple[str, str] | None:
    """kk: ruleForbiddenSectionsHaveVariables: (field, message) of the first section with a variable."""
    raw = rule.raw
    mutate = raw.get("mutate")
    patch = mutate.get("patchesJson6902") if isinstance(mutate, Mapping) else None
    if isinstance(patch, str) and "{{" in patch:
        try:
            operations = yaml.safe_load(patch)
        except yaml.YAMLError:
            operations = None
        for op in operations if isinstance(operations, list) else []:
            if isinstance(op, Mapping) and REGEX_VARIABLES.search(str(op.get("path", ""))):
                return ("mutate.patchesJson6902",
                        f'rule "{rule.name}" should not have variables in patchesJSON6902 path section')
    for section in ("exclude", "match"):
        block = raw.get(section)
        if block is not None and _ANY_VARIABLE.search(json.dumps(block)):
            return section, f'rule "{rule.name}" should not have variables in {section} section'
    for i, verify in enumerate(raw.get("verifyImages") or []):
        if not isinstance(verify, Mapping):
            continue
        refs = verify.get("imageReferences") or ([verify["image"]] if verify.get("image") else [])
        for ref in refs if isinstance(refs, list) else []:
            if REGEX_VARIABLES.search(str(ref)):
                return (f"verifyImages[{i}].imageReferences",
                        f'rule "{rule.name}" should not have variables in image reference section')
    return None


def _without_attestation_conditions(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """kk: hasInvalidVariables skips verifyImages[].attestations[].conditions (their variables are the
    attestation's, known only when it is fetched)."""
    verify = raw.get("verifyImages")
    if not isinstance(verify, list):
        return raw
    images = []
    for v in verify:
        if isinstance(v, Mapping) and isinstance(v.get("attestations"), list):
            v = {**v, "attestations": [{k: a[k] for k in a if k != "conditions"} if isinstance(a, Mapping) else a
                                       for a in v["attestations"]]}
        images.append(v)
    return {**raw, "verifyImages": images}


def _field(rule: ClassicRule, where: Position) -> str:
    """`spec.rules[0].validate.deny.conditions.any[0].key`; a key that is not a plain name in brackets
    (`metadata.labels[app.kubernetes.io/name]`), as Kubernetes' field paths write it."""
    out = f"spec.rules[{rule.index}]"
    for step in where:
        if isinstance(step, int):
            out += f"[{step}]"
        elif re.fullmatch(r"[A-Za-z_$()][A-Za-z0-9_$()-]*", step):
            out += f".{step}"
        else:
            out += f"[{step}]"
    return out


def variable_problems(policy: ClassicPolicy) -> list[InputError]:
    """Every problem Kyverno's ValidateVariables (after its background check) and validateElementInForEach
    find in the policy's rules, one per field, each naming the field (`field`) with Kyverno's text."""
    label = policy.meta.label
    out: list[InputError] = []

    def problem(path: str, message: str) -> None:
        out.append(InputError(f"{label}: {path}: {message}", policy.meta.source, path))

    for rule in policy.rules:
        forbidden = _forbidden_section(rule)
        if forbidden is not None:
            problem(f"spec.rules[{rule.index}].{forbidden[0]}", _INVALID + forbidden[1])
            continue
        raw = _without_attestation_conditions(rule.raw)
        mutate = raw.get("mutate")
        targets = mutate.get("targets") if isinstance(mutate, Mapping) else None
        failed = False
        if isinstance(targets, list) and targets:
            # each target's resource spec alone, with the rule's context and preconditions (kk:
            # ruleWithoutPattern), without `target.` among the allowed variables
            ctx = MockContext(_allowed(policy.background, False), _declared(raw.get("context")))
            for i, target in enumerate(targets):
                spec = {k: target[k] for k in ("apiVersion", "kind", "namespace", "name", "uid", "selector")
                        if isinstance(target, Mapping) and k in target}
                only = {"context": raw.get("context"), "preconditions": raw.get("preconditions"),
                        "mutate": {"targets": [spec if j == i else {} for j in range(len(targets))]}}
                for where, message in substitution_errors(ctx, only):
                    problem(_field(rule, where), f"{_INVALID}invalid variables defined at mutate.targets[{i}]: "
                                                 f"{message}")
                    failed = True
        if failed:
            continue
        ctx = MockContext(_allowed(policy.background, isinstance(targets, list) and bool(targets)),
                          _context_patterns(raw))
        errors = substitution_errors(ctx, raw)
        for where, message in errors:
            problem(_field(rule, where), f"{_INVALID}variable substitution failed for rule {rule.name}: {message}")
        if not errors:
            for where, message in elements_outside_foreach(rule.raw):
                problem(_field(rule, where), message)
    return out
