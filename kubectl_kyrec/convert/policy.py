"""A ClusterPolicy/Policy -> ValidatingPolicy documents (Kyverno's migration mapping, kyverno/kyverno#16506
and the website's migration guide; docs/convert.md lists what maps and what is refused).

Rules that share their match, exclude, preconditions and failure action become one policy with one validation
each, named as the original; otherwise each rule becomes its own policy named `<policy>-<rule>`. A rule or
setting without an exact CEL counterpart refuses the whole policy (Conversion.refusals) unless Kyverno
documents a substitute, which is then written with a comment naming the difference (Conversion.substitutes)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from kubectl_kyrec.classic.autogen import POD_CONTROLLERS
from kubectl_kyrec.convert import cel_total, cleanup, conditions, context, generate, images, jmes, mutate
from kubectl_kyrec.convert.cel_text import Unconvertible, conj, disj, literal, negate
from kubectl_kyrec.convert.match import convert_match
from kubectl_kyrec.convert.pattern import PatternWriter
from kubectl_kyrec.load.run_inputs.kinds import KindTable

CEL_API = "policies.kyverno.io/v1"
AUTOGEN_ANNOTATION = "pod-policies.kyverno.io/autogen-controllers"
# classic autogen controller kind -> the CEL autogen's resource (kk: pkg/cel/autogen); ReplicationController
# has none
_CEL_CONTROLLERS = {"DaemonSet": "daemonsets", "Deployment": "deployments", "ReplicaSet": "replicasets",
                    "StatefulSet": "statefulsets", "Job": "jobs", "CronJob": "cronjobs"}
_ACTIONS = {"enforce": "Deny", "audit": "Audit"}


@dataclass
class Conversion:
    name: str
    kind: str                                   # the original's kind
    documents: list[dict[str, Any]] = field(default_factory=list)
    substitutes: list[str] = field(default_factory=list)     # written, with the difference named
    refusals: list[str] = field(default_factory=list)        # `field: why`; nothing written when any
    # rule name -> (name, kind) of the written policy that holds it (test suites' rows name rules)
    rule_policies: dict[str, tuple[str, str]] = field(default_factory=dict)
    # rule name -> what a suite's `skip` for it is in the conversion: "skip" (its preconditions became
    # matchConditions, which answer skip), "pass" (no preconditions: a classic skip came from a conditional
    # anchor, and the validation holds), "" (both could be the cause)
    rule_skips: dict[str, str] = field(default_factory=dict)

    @property
    def exact(self) -> bool:
        return bool(self.documents) and not self.refusals and not self.substitutes

    @property
    def status(self) -> str:
        if self.refusals:
            return "not converted"
        return "converted with substitutes" if self.substitutes else "converted exactly"


@dataclass
class _Group:
    key: str
    constraints: dict[str, Any]
    match_conditions: list[dict[str, str]]
    actions: list[str]
    guard: str = "true"                  # celPreconditions: none of them errored (cel_total)
    rules: list[str] = field(default_factory=list)
    validations: list[dict[str, Any]] = field(default_factory=list)
    mutations: list[dict[str, Any]] = field(default_factory=list)
    generations: list[dict[str, str]] = field(default_factory=list)
    generate_settings: dict[str, bool] = field(default_factory=dict)
    variables: list[dict[str, str]] = field(default_factory=list)


def convert_policy(doc: dict[str, Any], kinds: KindTable | None = None) -> Conversion:
    """`kinds`: the REST mapper's kinds (built-ins and the CRDs given with --crd); default the built-ins."""
    meta = doc.get("metadata") or {}
    name = str(meta.get("name", ""))
    conv = Conversion(name, str(doc.get("kind")))
    try:
        if doc.get("kind") in cleanup.CLEANUP_KINDS:
            conv.documents, conv.substitutes = cleanup.convert_cleanup(doc, kinds)
        else:
            _convert(doc, conv, kinds)
    except Unconvertible as err:
        conv.refusals.append(str(err))
    if not conv.refusals and _REGEX_MATCH.search(json.dumps(doc)):
        conv.substitutes.append(jmes.REGEX_MATCH_DIFFERENCE)
    if conv.refusals:
        conv.documents = []
        conv.rule_policies = {}
        conv.rule_skips = {}
    return conv


def _spec_settings(spec: dict[str, Any], conv: Conversion) -> tuple[str, dict[str, Any]]:
    for key, why in (("validationFailureActionOverrides", "per-namespace failure actions have no CEL counterpart "
                                                          "(a ValidatingPolicy has one validationActions)"),
                     ("mutateExistingOnPolicyUpdate", "mutate existing is not converted yet")):
        if spec.get(key):
            raise Unconvertible(f"spec.{key}", why)
    out: dict[str, Any] = {}
    evaluation: dict[str, Any] = {}
    if "background" in spec:
        evaluation["background"] = {"enabled": bool(spec["background"])}
    if "admission" in spec:
        evaluation["admission"] = {"enabled": bool(spec["admission"])}
    if evaluation:
        out["evaluation"] = evaluation
    if spec.get("failurePolicy"):
        out["failurePolicy"] = spec["failurePolicy"]
    if spec.get("webhookTimeoutSeconds") is not None:
        out["webhookConfiguration"] = {"timeoutSeconds": spec["webhookTimeoutSeconds"]}
    action = str(spec.get("validationFailureAction") or "Audit")
    return action, out


def _autogen(meta: dict[str, Any], conv: Conversion) -> dict[str, Any] | None:
    value = (meta.get("annotations") or {}).get(AUTOGEN_ANNOTATION)
    if value is None:
        conv.substitutes.append("autogen: Kyverno's CEL autogen has no ReplicationController; the original's "
                                "rules also covered ReplicationControllers")
        return None
    if value.strip() == "none":
        return {"podControllers": {"controllers": []}}
    kinds = [k.strip() for k in value.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in POD_CONTROLLERS]
    if unknown:
        raise Unconvertible(f"metadata.annotations[{AUTOGEN_ANNOTATION}]", f"unknown controllers {unknown}")
    if "ReplicationController" in kinds:
        conv.substitutes.append("autogen: Kyverno's CEL autogen has no ReplicationController")
    return {"podControllers": {"controllers": [_CEL_CONTROLLERS[k] for k in kinds if k in _CEL_CONTROLLERS]}}


def _message(validate: dict[str, Any], at: str, scope: jmes.Scope | None = None) -> dict[str, str]:
    text = validate.get("message")
    if not text:
        return {}
    expr, found = jmes.template(str(text), f"{at}.message", scope)
    return {"messageExpression": expr} if found else {"message": str(text)}


def _check(validate: dict[str, Any], at: str, writer: PatternWriter, base: str = "object",
           scope: jmes.Scope | None = None) -> str:
    """A validate block's (or a foreach entry's) check: true when the resource passes."""
    present = [k for k in ("pattern", "anyPattern", "deny", "foreach", "cel", "podSecurity", "manifests") if
               validate.get(k) is not None]
    if len(present) != 1:
        raise Unconvertible(at, f"expected one of pattern/anyPattern/deny/foreach/cel, found {present or 'none'}")
    what = present[0]
    if what == "pattern":
        return writer.top(base, validate["pattern"])
    if what == "anyPattern":
        patterns = validate["anyPattern"]
        if not isinstance(patterns, list):
            raise Unconvertible(f"{at}.anyPattern", "must be a list")
        return disj([writer.top(base, p) for p in patterns])
    if what == "deny":
        # with context entries (which can fail), in Kyverno's order: a failing entry is an error where reached
        return negate(conditions.block((validate["deny"] or {}).get("conditions"), f"{at}.deny.conditions", scope,
                                       ordered=bool(_context_names(scope))))
    if what == "foreach":
        return conj([_foreach(entry, f"{at}.foreach[{i}]", writer, scope)
                      for i, entry in enumerate(validate["foreach"])])
    raise Unconvertible(f"{at}.{what}", {"podSecurity": "podSecurity is not converted yet (Kyverno's "
                                                        "pod-security ValidatingPolicies express one control each)",
                                         "manifests": "validate.manifests (signed YAML) has no CEL counterpart",
                                         "cel": "validate.cel inside foreach"}.get(what, what))


def _foreach(entry: dict[str, Any], at: str, writer: PatternWriter, scope: jmes.Scope | None) -> str:
    if scope is not None and "element" in scope.names:
        raise Unconvertible(at, "a nested foreach; not converted")
    if entry.get("context"):
        raise Unconvertible(f"{at}.context", "context entries of a foreach are not converted yet")
    if entry.get("elementScope") is False:
        raise Unconvertible(f"{at}.elementScope", "elementScope: false; not converted")
    # a list that is not there is no list to iterate: read softly (null), never an error
    listed = jmes.translate(str(entry.get("list", "")), f"{at}.list", (scope or jmes.Scope()).softened())
    var = writer.var()
    inner = jmes.Scope({**(scope.names if scope else {}), "element": var, "elementIndex": f"{var}_index"},
                       erring=scope.erring if scope else frozenset(), lists=scope.lists if scope else frozenset())
    if "elementIndex" in json.dumps(entry):
        raise Unconvertible(at, "elementIndex; not converted")
    if _ERRING_FUNCTION.search(json.dumps(entry)):
        # Kyverno's foreach stops at the first element that fails or errors, in order; CEL's all() is false
        # when any element is false, whatever errors come before it
        raise Unconvertible(at, "a JMESPath function that can error, inside foreach (Kyverno's first element "
                                "decides between error and failure, CEL's all() does not); not converted")
    body = {k: v for k, v in entry.items() if k in ("pattern", "anyPattern", "deny", "foreach")}
    for name, block in (("preconditions", entry.get("preconditions")),
                        ("deny.conditions", (entry.get("deny") or {}).get("conditions"))):
        if _can_error(block, f"{at}.{name}", inner):
            # kk: validateElements passes over an element that errors unless it is the list's last one, whose
            # error is the rule's; CEL's all() is an error where any element errors and none is false
            raise Unconvertible(f"{at}.{name}", "reads a key an element can lack (Kyverno's substitution error, "
                                                "which a foreach passes over but on the list's last element; "
                                                "CEL's all() does not); not converted")
    check = _check(body, at, writer, base=var, scope=inner)
    known = _context_names(scope)
    pre = conditions.block(entry.get("preconditions"), f"{at}.preconditions", inner.softened(), ordered=bool(known))
    erring = context.reads(pre + check, set(inner.erring))
    if erring:
        # an element that fails the entry's read is an error; Kyverno stops at the first element that fails or
        # errors, in order, where CEL's all() is false when any element is false, whatever errors come before
        raise Unconvertible(at, f"reads the context entries {erring}, which can fail, inside foreach (Kyverno's "
                                "first element decides between error and failure, CEL's all() does not); not "
                                "converted")
    each = f"({pre} ? {check} : true)" if known and pre != "true" else disj([negate(pre), check])
    # Kyverno: a list that evaluates to null is no list to iterate (the rule passes, kk: foreach.go)
    return f"({listed} == null || {listed}.all({var}, {each}))"


def _can_error(block: Any, field: str, scope: jmes.Scope) -> bool:
    """Whether conditions can be an error where a key they read is missing: Kyverno's substitution of an
    unresolved variable in a condition is an error (kk: pkg/engine/variables/evaluate.go Evaluate), the
    conversion's hard reading (jmes.Scope soft=False) selects where the soft one gives null."""
    if block is None:
        return False
    hard = conditions.block(block, field, jmes.Scope(scope.names, erring=scope.erring, lists=scope.lists))
    return hard != conditions.block(block, field, jmes.Scope(scope.names, soft=True, erring=scope.erring,
                                                             lists=scope.lists))


def _context_names(scope: jmes.Scope | None) -> set[str]:
    """The context entries a scope holds (their CEL names are `variables.<name>`)."""
    return {k for k, v in (scope.names if scope else {}).items() if v == f"variables.{k}"}


def _context(rule: dict[str, Any], at: str, doc: dict[str, Any], scope: jmes.Scope) -> list[dict[str, str]]:
    """A validate rule's context entries as CEL variables (convert/context.py), added to `scope`."""
    if not rule.get("context"):
        return []
    if (rule.get("validate") or {}).get("cel") is not None:
        raise Unconvertible(f"{at}.context", "context entries on a validate.cel rule are not converted")
    namespace = str((doc.get("metadata") or {}).get("namespace") or "") if doc.get("kind") == "Policy" else ""
    out = context.convert_entries(rule["context"], f"{at}.context", scope, namespace)
    scope.lists = frozenset(_list_entries(rule["context"]))
    config_maps = [str(e.get("name")) for e in rule["context"] if isinstance(e, dict) and e.get("configMap")]
    for where, value in _condition_values(rule.get("validate"), f"{at}.validate"):
        read = [n for n in config_maps if re.search(rf"\{{\{{[^}}]*\b{re.escape(n)}\b", value)]
        if read:
            # Kyverno's operators read a string value as a wildcard, a range, a quantity or duration, or (the
            # in-operators) a JSON list; the conversion compares a value from a variable as it is
            raise Unconvertible(where, f"a condition's value reads the ConfigMap entries {read}: a ConfigMap's "
                                       "data are strings, which Kyverno's operators read as JSON lists, "
                                       "wildcards, ranges, quantities or durations; not converted")
    if rule.get("preconditions") is not None:
        read = context.reads(conditions.block(rule["preconditions"], f"{at}.preconditions", scope.softened()),
                            _context_names(scope))
        if read:
            raise Unconvertible(f"{at}.preconditions", f"reads the context entries {read}: preconditions become "
                                                       "matchConditions, which are decided before a ValidatingPolicy's "
                                                       "variables; not converted")
    return out


def _list_entries(entries: list[Any]) -> list[str]:
    """The context entries whose value is a list, never a string: a literal list, or a JMESPath that gives
    one (jmes.gives_list), with no default or a list one (an in-operator reads a string value otherwise)."""
    out = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        variable = entry.get("variable")
        source = variable if isinstance(variable, dict) else entry.get("apiCall")
        if not isinstance(source, dict) or ("default" in source and not isinstance(source["default"], list)):
            continue
        query = source.get("jmesPath")
        if isinstance(query, str) and query:
            listed = jmes.gives_list("{{ " + query + " }}")
        else:
            listed = isinstance(variable, dict) and isinstance(variable.get("value"), list)
        if listed:
            out.append(str(entry.get("name")))
    return out


def _condition_values(node: Any, at: str) -> list[tuple[str, str]]:
    """(field, text) of each condition value with variables below `node` (deny and foreach conditions)."""
    out: list[tuple[str, str]] = []
    if isinstance(node, dict):
        if "operator" in node and isinstance(node.get("value"), str) and "{{" in node["value"]:
            out.append((f"{at}.value", node["value"]))
        for key, child in node.items():
            out.extend(_condition_values(child, f"{at}.{key}"))
    elif isinstance(node, list):
        for i, child in enumerate(node):
            out.extend(_condition_values(child, f"{at}[{i}]"))
    return out


_REGEX_MATCH = re.compile(r"\{\{[^}]*\bregex_match\s*\(")
_ERRING_FUNCTION = re.compile(r"\{\{[^}]*\b(?:" + "|".join(jmes.ERRING) + r")\s*\(")


def _rule_constraints(rule: dict[str, Any], at: str, kinds: KindTable | None, conv: Conversion,
                      failure_policy: str = "") -> tuple[dict[str, Any], list[dict[str, str]]]:
    operations = ["CREATE", "UPDATE"]
    text = json.dumps(rule)
    if "DELETE" in text:
        operations.append("DELETE")
    constraints, match_conditions = convert_match(rule.get("match"), rule.get("exclude"), operations, at, kinds,
                                                  guesses=conv.substitutes)
    if rule.get("preconditions") is not None:
        # a rule's preconditions as Kyverno reads them: a key that is not there is the rule's error (kk:
        # pkg/engine/variables/evaluate.go Evaluate, the substitution's NotFound; validate_resource.go:
        # "failed to evaluate preconditions"), reached in Kyverno's order; a matchCondition's error is the
        # policy's error result (a generate rule's: its generation's error)
        # (read so only where a key can be missing: the ternaries nest, and CEL parsers stop at a depth of 32)
        ordered = not rule.get("mutate") and _can_error(rule["preconditions"], f"{at}.preconditions", jmes.Scope())
        if rule.get("mutate") and _can_error(rule["preconditions"], f"{at}.preconditions", jmes.Scope()):
            # the classic rule's error leaves the admitted object unknown (Kyverno denies under failurePolicy
            # Fail); what a MutatingPolicy's erring matchCondition does to the request is not modelled alike
            raise Unconvertible(f"{at}.preconditions", "reads a key the resource can lack (the mutate rule's error "
                                                       "in Kyverno, which decides the request); not converted")
        pre = conditions.block(rule["preconditions"], f"{at}.preconditions", jmes.Scope(soft=not ordered),
                               ordered=ordered)
        if ordered and rule.get("validate") and failure_policy == "Ignore":
            # under failurePolicy Ignore a matchCondition's error skips the policy; the rule's error stays one
            raise Unconvertible(f"{at}.preconditions", "reads a key the resource can lack (the rule's error in "
                                                       "Kyverno), under failurePolicy Ignore (a matchCondition's "
                                                       "error skips the policy); not converted")
        match_conditions.append({"name": "preconditions", "expression": pre})
    variables = {str(v.get("name")): str(v.get("expression")) for v in
                 ((rule.get("validate") or {}).get("cel") or {}).get("variables") or []}
    for i, cel_pre in enumerate(rule.get("celPreconditions") or []):
        # Kyverno skips the rule when a celPrecondition is false and fails it when none is false but one
        # errors (evaluate/classic/validate_cel.py): the matchCondition is "not false" (never an error), and each
        # validation requires every celPrecondition true (_celpre_guard)
        _, false = cel_total.total(str(cel_pre.get("expression")), f"{at}.celPreconditions[{i}].expression",
                                   variables)
        match_conditions.append({"name": str(cel_pre.get("name", f"cel-{i}")), "expression": f"!({false})"})
    return constraints, match_conditions


def _convert(doc: dict[str, Any], conv: Conversion, kinds: KindTable | None) -> None:
    if doc.get("kind") not in ("ClusterPolicy", "Policy"):
        raise Unconvertible("kind", f"{doc.get('kind')} is not converted (ClusterPolicy and Policy are)")
    meta = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    rules = spec.get("rules") or []
    if not rules:
        raise Unconvertible("spec.rules", "no rules")
    if str(spec.get("applyRules", "All")) == "One" and len(rules) > 1:
        raise Unconvertible("spec.applyRules", "applyRules: One stops at the first matching rule; a "
                                               "ValidatingPolicy evaluates every validation")
    if any(isinstance(rule, dict) and rule.get("verifyImages") for rule in rules):
        return images.convert_image_rules(doc, conv, kinds, images.PolicyParts(
            _spec_settings, _autogen, _rule_constraints, _ACTIONS, AUTOGEN_ANNOTATION, CEL_API))
    default_action, settings = _spec_settings(spec, conv)
    groups: dict[str, _Group] = {}
    mutating = [bool(rule.get("mutate")) for rule in rules]
    if any(mutating) and not all(mutating):
        raise Unconvertible("spec.rules", "a policy with both mutate and other rules is not converted yet")
    generating = [bool(rule.get("generate")) for rule in rules]
    if any(generating) and not all(generating):
        raise Unconvertible("spec.rules", "a policy with both generate and other rules is not converted yet")
    if spec.get("generateExisting") and not any(generating):
        raise Unconvertible("spec.generateExisting", "set on a policy without generate rules; not converted")
    for i, rule in enumerate(rules):
        at = f"spec.rules[{i}]"
        if rule.get("mutate"):
            _mutate_rule(rule, at, groups, kinds, conv)
            continue
        if rule.get("generate"):
            _generate_rule(rule, at, groups, spec, doc, conv, kinds)
            continue
        validate = rule.get("validate")
        if not validate:
            raise Unconvertible(at, "a rule with no validate block")
        scope = jmes.Scope()
        context_variables = _context(rule, at, doc, scope)
        if validate.get("failureActionOverrides") or validate.get("validationFailureActionOverrides"):
            raise Unconvertible(f"{at}.validate.failureActionOverrides", "per-namespace failure actions have no "
                                                                        "CEL counterpart")
        action = str(validate.get("failureAction") or default_action)
        if action.lower() not in _ACTIONS:
            raise Unconvertible(f"{at}.validate.failureAction", f"unknown action {action!r}")
        actions = [_ACTIONS[action.lower()]]
        if validate.get("allowExistingViolations") is False:
            raise Unconvertible(f"{at}.validate.allowExistingViolations", "false has no CEL counterpart")
        if rule.get("celPreconditions") and validate.get("cel") is None:
            raise Unconvertible(f"{at}.celPreconditions", "Kyverno evaluates celPreconditions for validate.cel "
                                                          "rules only; not converted on another rule")
        constraints, match_conditions = _rule_constraints(rule, at, kinds, conv, str(spec.get("failurePolicy") or ""))
        if rule.get("celPreconditions"):
            conv.substitutes.append(f"{at}.celPreconditions: where one errors, the ClusterPolicy rule fails with "
                                    "the error's text, the conversion with the validation's message")
        # a rule reading context entries can error (an object that is not there): in a ValidatingPolicy one
        # validation's error is the whole policy's result, where a classic rule's error leaves the other rules'
        # results, so such a rule shares its policy with no other rule
        key = json.dumps([constraints, match_conditions, actions, at if context_variables else ""],
                         sort_keys=True)
        group = groups.get(key)
        if group is None:
            group = groups[key] = _Group(key, constraints, match_conditions, actions,
                                         guard=_celpre_guard(rule, at))
        group.rules.append(str(rule.get("name", i)))
        group.variables.extend(v for v in context_variables if v not in group.variables)
        if validate.get("cel") is not None:
            _copy_cel(validate["cel"], f"{at}.validate.cel", group, validate)
            conv.substitutes.append(f"{at}.validate.cel: an expression that errors fails the ClusterPolicy rule "
                                    "with the error's text; each is written to be false there instead (never an "
                                    "error result), failing with the validation's message")
            continue
        writer = PatternWriter(f"{at}.validate")
        check = _check(validate, f"{at}.validate", writer, scope=scope)
        group.validations.append({"expression": check, **_message(validate, f"{at}.validate", scope)})
    # classic autogen leaves generate rules alone (kk: CanAutoGen), and so does the conversion
    autogen = _autogen(meta, conv) if _targets_pods(groups) and not any(generating) else None
    if _targets_pods(groups) and not any(generating) and autogen != {"podControllers": {"controllers": []}}:
        _autogen_reads_alike(rules)
    if any(mutating) and autogen != {"podControllers": {"controllers": []}}:
        _autogen_renames_mutations(rules, groups)      # autogen None: every controller
    many = len(groups) > 1
    if many and any(mutating):
        raise Unconvertible("spec.rules", "mutate rules with different match, exclude or preconditions would "
                                          "become separate MutatingPolicies, applied in another order than the "
                                          "rules; not converted")
    if any(mutating):
        settings.get("evaluation", {}).pop("background", None)   # classic: background is for mutate existing
        if settings.get("evaluation") == {}:
            del settings["evaluation"]
    if any(generating):
        settings = _generating_settings(settings, spec, conv)
    if many:
        conv.substitutes.append("rules with different match, exclude, preconditions or failure action, or "
                                "reading context entries (one validation's error is the whole ValidatingPolicy's "
                                "result; a classic rule's error leaves the other rules' results), became one "
                                "ValidatingPolicy each, named <policy>-<rule>" if not any(generating) else
                                "generate rules with different match, exclude, preconditions or settings, or with "
                                "variables (an error in one GeneratingPolicy expression stops the policy's other "
                                "generations; a classic rule's error does not stop the other rules), became one "
                                "GeneratingPolicy each, named <policy>-<rule>")
    for group in groups.values():
        spec_out: dict[str, Any] = ({"validationActions": group.actions}
                                    if not group.mutations and not group.generations else {})
        if group.generations:
            evaluation = dict(settings.get("evaluation") or {})
            evaluation.update({k: {"enabled": True} for k, on in group.generate_settings.items() if on})
            spec_out.update({**({"evaluation": evaluation} if evaluation else {}),
                             "matchConstraints": group.constraints})
        else:
            spec_out.update({**settings, "matchConstraints": group.constraints})
        if group.match_conditions:
            spec_out["matchConditions"] = group.match_conditions
        if group.variables:
            spec_out["variables"] = group.variables
        if group.mutations:
            spec_out["mutations"] = group.mutations
        elif group.generations:
            spec_out["generate"] = group.generations
        else:
            spec_out["validations"] = group.validations
        if autogen is not None and _group_targets_pods(group) and not group.generations:
            spec_out["autogen"] = autogen
        kept = {k: v for k, v in (meta.get("annotations") or {}).items() if k != AUTOGEN_ANNOTATION}
        out_meta: dict[str, Any] = {"name": conv.name if not many else f"{conv.name}-{group.rules[0]}"}
        if doc.get("kind") == "Policy" and meta.get("namespace"):
            out_meta["namespace"] = meta["namespace"]
        if kept:
            out_meta["annotations"] = kept
        if meta.get("labels"):
            out_meta["labels"] = meta["labels"]
        kind = ("MutatingPolicy" if group.mutations else "GeneratingPolicy" if group.generations
                else "ValidatingPolicy")
        conv.documents.append({"apiVersion": CEL_API,
                               "kind": kind if doc.get("kind") == "ClusterPolicy" else f"Namespaced{kind}",
                               "metadata": out_meta, "spec": spec_out})
        conv.rule_policies.update({rule: (out_meta["name"], kind) for rule in group.rules})
    for i, rule in enumerate(rules):
        # a classic rule skips where its preconditions are false, and where a conditional anchor or every
        # foreach element's preconditions leave nothing to check (the conversion's validation holds there)
        inner = bool(re.search(r'"[=X^]?\(|"foreach"', json.dumps(rule.get("validate") or {})))
        preconditioned = bool(rule.get("preconditions") or rule.get("celPreconditions"))
        conv.rule_skips[str(rule.get("name", i))] = ("" if inner else "skip") if preconditioned else "pass"


_AUTOGEN_PATHS = re.compile(r"request\.(?:object|oldObject)\.(?:spec|metadata)")


def _autogen_reads_alike(rules: list[dict[str, Any]]) -> None:
    """Classic autogen rewrites the text `request.object.spec` (and `.metadata`) byte for byte into the pod
    template's path (kk: pkg/autogen/rule.go); the CEL kinds' autogen rewrites `object.spec` in the converted
    CEL. A path spelled otherwise (`request."object".metadata`) keeps reading the controller's own object in
    the ClusterPolicy and would read the template in the conversion: refused."""
    for i, rule in enumerate(rules):
        for text in re.findall(r"\{\{.*?\}\}", json.dumps(rule).replace('\\"', '"')):
            if len(_AUTOGEN_PATHS.findall(re.sub(r'["\s]', "", text))) != len(_AUTOGEN_PATHS.findall(text)):
                raise Unconvertible(f"spec.rules[{i}]", f"{text}: a quoted request path is not rewritten by "
                                                        "classic autogen, and is by the CEL autogen; not converted")


def _autogen_renames_mutations(rules: list[dict[str, Any]], groups: dict[str, _Group]) -> None:
    """Kyverno's MutatingPolicy autogen copies a Pod policy onto the controllers, renaming only some typed
    literals (convert/mutate.py autogen_unrenamed); a converted patch with another (`Object.metadata{...}`,
    needed for a map in metadata) would be a type mismatch on every controller: refused."""
    names = [str(rule.get("name", f"spec.rules[{i}]")) for i, rule in enumerate(rules)]
    for group in groups.values():
        if not group.mutations or not _cel_autogens(group.constraints):
            continue
        for rule_name, mutation in zip(group.rules, group.mutations, strict=True):
            name = mutate.autogen_unrenamed(mutation["applyConfiguration"]["expression"])
            if name is not None:
                at = f"spec.rules[{names.index(rule_name)}].mutate.patchStrategicMerge.{name.split('.')[1]}"
                raise Unconvertible(at, f"needs the typed literal {name}{{...}} (a map literal inside a map "
                                        "literal is refused by Kubernetes' patcher), which Kyverno's "
                                        "MutatingPolicy autogen does not move into the pod template: the "
                                        "controllers' copies would fail with a type mismatch; not converted")


def _cel_autogens(constraints: dict[str, Any]) -> bool:
    """evaluate/autogen.py can_autogen over a converted matchConstraints (kk: pkg/cel/autogen CanAutoGen)."""
    rules = constraints.get("resourceRules") or []
    selector = constraints.get("objectSelector") or {}
    return (len(rules) == 1 and not constraints.get("excludeResourceRules") and not rules[0].get("resourceNames")
            and not (selector.get("matchLabels") or selector.get("matchExpressions"))
            and rules[0].get("apiGroups") == [""] and rules[0].get("apiVersions") == ["v1"]
            and rules[0].get("resources") == ["pods"])


def _mutate_rule(rule: dict[str, Any], at: str, groups: dict[str, _Group], kinds: KindTable | None,
                 conv: Conversion) -> None:
    """A mutate rule's patch as the mutations of its group's MutatingPolicy (convert/mutate.py)."""
    if rule.get("context"):
        raise Unconvertible(f"{at}.context", "context entries (configMap, apiCall, globalReference, variable) are "
                                             "not converted yet")
    if rule.get("celPreconditions"):
        raise Unconvertible(f"{at}.celPreconditions", "Kyverno evaluates celPreconditions for validate.cel "
                                                      "rules only; not converted on another rule")
    constraints, match_conditions = _rule_constraints(rule, at, kinds, conv)
    key = json.dumps([constraints, match_conditions, "mutate"], sort_keys=True)
    group = groups.get(key)
    if group is None:
        group = groups[key] = _Group(key, constraints, match_conditions, [])
    group.rules.append(str(rule.get("name", at)))
    group.mutations.extend(mutate.mutations(rule["mutate"], f"{at}.mutate", _rule_kinds(rule)))


def _generate_rule(rule: dict[str, Any], at: str, groups: dict[str, _Group], spec: dict[str, Any],
                   doc: dict[str, Any], conv: Conversion, kinds: KindTable | None) -> None:
    """A generate rule's `generator.Apply` call in its group's GeneratingPolicy (convert/generate.py); rules
    share a policy when their match, exclude, preconditions and generate settings are the same."""
    if doc.get("kind") != "ClusterPolicy":
        raise Unconvertible(f"{at}.generate", "generate rules of a namespaced Policy are not converted yet")
    if rule.get("context"):
        raise Unconvertible(f"{at}.context", "context entries (configMap, apiCall, globalReference, variable) are "
                                             "not converted yet")
    if rule.get("celPreconditions"):
        raise Unconvertible(f"{at}.celPreconditions", "Kyverno evaluates celPreconditions for validate.cel "
                                                      "rules only; not converted on another rule")
    gen = rule["generate"]
    constraints, match_conditions = _rule_constraints(rule, at, kinds, conv)
    rule_settings = generate.settings(gen, spec)
    # a GeneratingPolicy whose generate expression errors generates nothing, where the classic rules beside an
    # erroring one still generate theirs: a rule that can error shares its policy with no other rule
    alone = at if generate.may_error(gen) else ""
    key = json.dumps([constraints, match_conditions, "generate", rule_settings, alone], sort_keys=True)
    group = groups.get(key)
    if group is None:
        group = groups[key] = _Group(key, constraints, match_conditions, [], generate_settings=rule_settings)
    group.rules.append(str(rule.get("name", at)))
    group.generations.append({"expression": generate.expression(gen, f"{at}.generate")})


def _generating_settings(settings: dict[str, Any], spec: dict[str, Any], conv: Conversion) -> dict[str, Any]:
    """The spec settings a GeneratingPolicy keeps: admission. Generation does not decide admission (Kyverno
    generates after the request is admitted), so failurePolicy and the webhook timeout have no effect on
    what is generated; background is the classic switch for background scans, which generate rules do not
    take part in (generateExisting is its own setting)."""
    evaluation = {k: v for k, v in (settings.get("evaluation") or {}).items() if k == "admission"}
    if spec.get("background") is False and any(
            (r.get("generate") or {}).get("generateExisting") or spec.get("generateExisting")
            for r in spec.get("rules") or []):
        raise Unconvertible("spec.background", "background: false with generateExisting; not converted")
    dropped = [k for k in ("failurePolicy", "webhookTimeoutSeconds") if spec.get(k) is not None]
    if dropped:
        conv.substitutes.append(f"spec.{', spec.'.join(dropped)}: not carried over (a GeneratingPolicy generates "
                                "after admission; the setting decided nothing for the generate rules)")
    return {"evaluation": evaluation} if evaluation else {}


def _rule_kinds(rule: dict[str, Any]) -> list[str]:
    """The kinds (last segment of `group/version/Kind`) a rule's match names."""
    match = rule.get("match") or {}
    blocks = [match, *(match.get("any") or []), *(match.get("all") or [])]
    return sorted({str(k).split("/")[-1] for b in blocks if isinstance(b, dict)
                   for k in ((b.get("resources") or {}).get("kinds") or [])})


def _group_targets_pods(group: _Group) -> bool:
    return any("pods" in r.get("resources", []) for r in group.constraints.get("resourceRules", []))


def _targets_pods(groups: dict[str, _Group]) -> bool:
    return any(_group_targets_pods(g) for g in groups.values())


def _celpre_guard(rule: dict[str, Any], at: str) -> str:
    variables = {str(v.get("name")): str(v.get("expression")) for v in
                 ((rule.get("validate") or {}).get("cel") or {}).get("variables") or []}
    return cel_total.conj([cel_total.total(str(p.get("expression")), f"{at}.celPreconditions[{i}].expression",
                                           variables)[0]
                           for i, p in enumerate(rule.get("celPreconditions") or [])])


def _copy_cel(cel: dict[str, Any], at: str, group: _Group, validate: dict[str, Any]) -> None:
    """validate.cel is a ValidatingAdmissionPolicy's body: each expression E becomes the never-erroring
    `T(E)` (convert/cel_total.py), so that where E errors the validation fails, as the ClusterPolicy rule
    does, instead of giving an error result."""
    for key in ("paramKind", "paramRef"):
        if cel.get(key):
            raise Unconvertible(f"{at}.{key}", "parameters have no ValidatingPolicy counterpart here; not converted")
    if cel.get("auditAnnotations"):
        raise Unconvertible(f"{at}.auditAnnotations", "not converted")
    known = {v["name"]: v["expression"] for v in group.variables}
    for v in cel.get("variables") or []:
        if v["name"] in known and known[v["name"]] != v["expression"]:
            raise Unconvertible(f"{at}.variables", f"variable {v['name']!r} defined differently by two rules")
        if v["name"] not in known:
            group.variables.append({"name": v["name"], "expression": v["expression"]})
            known[v["name"]] = v["expression"]
    message = _message(validate, at)
    for j, expression in enumerate(cel.get("expressions") or []):
        out = {k: expression[k] for k in ("expression", "message", "messageExpression", "reason")
               if expression.get(k) is not None}
        true, _ = cel_total.total(str(expression.get("expression")), f"{at}.expressions[{j}].expression", known)
        out["expression"] = cel_total.conj([group.guard, true])
        if "message" not in out and "messageExpression" not in out:
            out.update(message)
        group.validations.append(out)


def header(conv: Conversion, source: str) -> str:
    """The YAML comment above a written policy: where it came from, and every substitute's difference."""
    lines = [f"# converted by kubectl kyrec convert from {conv.kind} {conv.name!r} ({source})"]
    lines += [f"# difference: {s}" for s in conv.substitutes]
    return "\n".join(lines) + "\n"


__all__ = ["Conversion", "convert_policy", "header", "literal"]
