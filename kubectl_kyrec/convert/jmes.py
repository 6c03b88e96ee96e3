"""Kyverno's JMESPath (in `{{ }}`) -> CEL, for the forms that have an exact CEL counterpart: paths into the
admission request, literals, comparisons, `||` defaults on paths, `&&`/`!`, and a few functions. Anything
else raises Unconvertible naming the expression: a guessed translation would be weaker in silence."""

from __future__ import annotations

import re
from typing import Any

from jmespath import exceptions as jp_exceptions
from jmespath import parser as jp_parser

from kubectl_kyrec.convert.cel_text import Unconvertible, has, literal, path_value, select

# the request's roots as a ValidatingPolicy names them (kk: pkg/cel/policies/vpol/compiler)
_ROOTS = {("request", "object"): "object", ("request", "oldObject"): "oldObject",
          ("request", "operation"): "request.operation", ("request", "namespace"): "request.namespace",
          ("request", "name"): "request.name", ("request", "userInfo"): "request.userInfo",
          ("request", "kind"): "request.kind", ("request", "dryRun"): "request.dryRun"}
_FUNCTIONS = {"length": lambda a: f"size({a[0]})", "to_string": lambda a: f"string({a[0]})",
              "starts_with": lambda a: f"{a[0]}.startsWith({a[1]})", "ends_with": lambda a: f"{a[0]}.endsWith({a[1]})",
              # JMESPath's contains: a list holds the element, or a string the substring; on anything else it
              # is an error (go-jmespath: invalid type), as `contains` on a non-string is in CEL
              "contains": lambda a: f"[dyn({a[0]})].all(s, type(s) == list ? {a[1]} in s : s.contains({a[1]}))",
              # Kyverno's label_match(labels, match): every key of the first with the same value in the second;
              # an argument that is no object is an error (kk: pkg/engine/jmespath/functions.go jpLabelMatch)
              "label_match": lambda a: (f"[[dyn({a[0]}), dyn({a[1]})]].map(lm, type(lm[0]) == map && type(lm[1]) == "
                                        "map ? lm[0].all(k, k in lm[1] && lm[1][k] == lm[0][k]) : "
                                        "{}['label_match: invalid type, expected an object'])[0]")}
# the functions above whose answer is a boolean (or an error): a filter keeps what they say as it is
_BOOLEAN_FUNCTIONS = {"starts_with", "ends_with", "contains", "label_match"}
_VARIABLE = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.DOTALL)


class Scope:
    """Names a translated expression may use besides the request: foreach's `element`, and so on."""

    def __init__(self, names: dict[str, str] | None = None, soft: bool = False,
                 erring: frozenset[str] = frozenset(), lists: frozenset[str] = frozenset()) -> None:
        self.names = dict(names or {})
        # the context entries whose value is a list, never a string (see gives_list)
        self.lists = lists
        # the context entries (convert/context.py) whose variable can be an error (an object not there)
        self.erring = erring
        # preconditions: a missing key makes the condition false (Kyverno skips the rule), never an error
        self.soft = soft
        self.counter = 0                # names for comprehension variables
        # > 0 while translating the left of a flatten or filter projection, where go-jmespath turns any error
        # into null (its interpreter returns nil, nil): a function that can error there is refused
        self.swallowing = 0

    def softened(self) -> Scope:
        return Scope(self.names, soft=True, erring=self.erring, lists=self.lists)


def _path(node: dict[str, Any]) -> list[str] | None:
    if node["type"] == "field":
        return [node["value"]]
    if node["type"] == "subexpression":
        out: list[str] = []
        for child in node["children"]:
            part = _path(child)
            if part is None:
                return None
            out.extend(part)
        return out
    return None


def translate(expression: str, field: str, scope: Scope | None = None) -> str:
    scope = scope or Scope()
    if "{{" in expression or "}}" in expression:
        raise Unconvertible(field, f"JMESPath {expression!r}: a variable nested in a variable is substituted as text "
                                   "first; not converted")
    try:
        ast = jp_parser.Parser().parse(expression).parsed
    except jp_exceptions.JMESPathError as err:
        raise Unconvertible(field, f"JMESPath {expression!r} does not parse: {err}") from None
    return _node(ast, field, expression, scope, soft=scope.soft)


def translate_on(expression: str, field: str, scope: Scope, current: str) -> str:
    """A JMESPath query of the value the CEL text `current` gives (an apiCall's answer, a variable's value):
    its paths start there, and a missing key is null (go-jmespath's search never errors on one)."""
    if "{{" in expression or "}}" in expression:
        raise Unconvertible(field, f"JMESPath {expression!r}: a variable nested in a variable is substituted as text "
                                   "first; not converted")
    try:
        ast = jp_parser.Parser().parse(expression).parsed
    except jp_exceptions.JMESPathError as err:
        raise Unconvertible(field, f"JMESPath {expression!r} does not parse: {err}") from None
    return _node(ast, field, expression, scope, soft=True, current=current)


def _node(node: dict[str, Any], field: str, text: str, scope: Scope, soft: bool = True,
          current: str | None = None) -> str:
    """`soft`: a missing key gives null (go-jmespath turns the error into null inside `||`, comparators,
    functions, `!`); a bare path at the top of `{{ }}` keeps the error, as CEL's plain selection does.
    `current`: the CEL text of JMESPath's current node (`@`), None at the top (the request's context)."""
    kind = node["type"]
    path = _path(node)
    if path is not None and current is None:
        root, keys = _rooted(path, field, text, scope)
        if not soft:
            # a missing key is an error, as Kyverno's substitution of an unresolved variable is; a
            # key that is no identifier is indexed (`m['a.b']`, no such key: an error too)
            strict = root
            for key in keys:
                strict = select(strict, key)
            return strict
        return path_value(root, keys)

    def sub(child: dict[str, Any], at: str | None = current) -> str:
        return _node(child, field, text, scope, True, at)

    def var() -> str:
        scope.counter += 1
        return f"j{scope.counter}"

    def bind(value: str, body: Any) -> str:
        """`body(name)` with `name` bound to `value` once: CEL has no `let`, a one-element list's map is one
        (the text would otherwise grow with each use of the value)."""
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
            return str(body(value))
        v = var()
        return f"[{value}].map({v}, {body(v)})[0]"

    if kind == "field":
        assert current is not None
        key = node["value"]
        return bind(current, lambda c: f"(type({c}) == map && {has(c, key)} ? dyn({select(c, key)}) : null)")
    if kind in ("current", "identity"):
        if current is None:
            raise Unconvertible(field, f"JMESPath {text!r}: @ at the top is the whole context; not converted")
        return current
    if kind == "subexpression":
        children = node["children"]
        n = 0
        while n < len(children) and _path(children[n]) is not None:
            n += 1
        if n and current is None:
            prefix = [k for c in children[:n] for k in (_path(c) or [])]
            acc = sub({"type": "subexpression", "children": [{"type": "field", "value": k, "children": []}
                                                             for k in prefix]} if len(prefix) > 1
                      else {"type": "field", "value": prefix[0], "children": []}, None)
        else:
            acc = sub(children[0])
            n = 1
        rest = children[n:]

        def apply(acc: str, rest: list[dict[str, Any]]) -> str:
            if not rest:
                return acc
            head = rest[0]
            if head["type"] == "index_expression" and _path(head["children"][0]) is not None and _calls(rest):
                # `a.b[0]`: the fields, then the index on what they reach
                steps = [{"type": "field", "value": k, "children": []} for k in _path(head["children"][0]) or []]
                rest = [*steps, {"type": "index_expression", "children": [{"type": "current", "children": []},
                                                                          head["children"][1]]}, *rest[1:]]
                head = rest[0]
            if head["type"] != "field":
                return apply(sub(head, acc), rest[1:])
            fields = []
            while rest and rest[0]["type"] == "field":
                fields.append(rest.pop(0)["value"])
            if _calls(rest):
                # go-jmespath: a key missing from a map on the path is NotFound, which ends the whole chain
                # (null, soft); a null reached goes on into the function, which errors on it
                return bind(acc, lambda c: _chain(c, fields, lambda v: apply(v, list(rest)), var))
            # consecutive fields on a value: one guarded path, not one binding per step
            return apply(bind(acc, lambda c, keys=tuple(fields): _fields_on(c, keys)), rest)
        if _calls(rest):
            keys = [k for c in children[:n] for k in (_path(c) or [])]
            if current is None:
                # from the request: a missing key ends the chain as above, an error at the top (not soft)
                root, keys = _rooted(keys, field, text, scope)
                guards, value = [], root
                for key in keys:
                    guards.append(has(value, key))
                    value = select(value, key)
                missing = "null" if soft else _error(f"Unknown key {keys[-1]!r} in path", root)
                return f"({' && '.join(guards)} ? {apply(value, list(rest))} : {missing})" if guards \
                    else apply(value, list(rest))
            if n:
                return bind(current, lambda c: _chain(c, keys, lambda v: apply(v, list(rest)), var))
        return apply(acc, list(rest))
    if kind == "pipe":
        left = sub(node["children"][0])
        return sub(node["children"][1], left)
    if kind == "index_expression":
        left = sub(node["children"][0])
        index = node["children"][1]
        if index["type"] != "index" or int(index["value"]) < 0:
            raise Unconvertible(field, f"JMESPath {text!r}: slices and negative indexes; not converted")
        i = int(index["value"])
        return bind(left, lambda c: f"(type({c}) == list && size({c}) > {i} ? dyn({c}[{i}]) : null)")
    if kind == "multi_select_list":
        if current is None:
            raise Unconvertible(field, f"JMESPath {text!r}: a multiselect at the top; not converted")
        return bind(current, lambda c: f"({c} == null ? null : "
                                       f"dyn([{', '.join(sub(x, c) for x in node['children'])}]))")
    if kind == "flatten":
        left = _swallowed(node["children"][0], sub, scope)
        v = var()
        # JMESPath's flatten: list elements merged one level, anything else (null too) kept as it is
        return bind(left, lambda c: f"(type({c}) == list ? dyn({c}.map({v}, type({v}) == list ? {v} : [{v}])"
                                    f".flatten()) : null)")
    if kind in ("projection", "filter_projection"):
        left = _swallowed(node["children"][0], sub, scope) if kind == "filter_projection" else sub(node["children"][0])
        v, w = var(), var()
        right = node["children"][1]

        def project(c: str) -> str:
            listed = c
            if kind == "filter_projection":
                test = node["children"][2]
                cond = sub(test, v)
                # a comparison is already a boolean; anything else filters by JMESPath's truthiness
                boolean = test["type"] in ("comparator", "not_expression") or (
                    test["type"] == "function_expression" and test["value"] in _BOOLEAN_FUNCTIONS)
                keep = cond if boolean else _truthy(cond)
                listed = f"{c}.filter({v}, {keep})"
            mapped = listed if right["type"] == "identity" else f"{listed}.map({v}, {sub(right, v)})"
            return f"(type({c}) == list ? dyn({mapped}.filter({w}, {w} != null)) : null)"
        return bind(left, project)
    if kind == "literal":
        return literal(node["value"])
    if kind == "comparator":
        op = {"eq": "==", "ne": "!=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}[node["value"]]
        left, right = (sub(c) for c in node["children"])
        if op not in ("==", "!="):
            raise Unconvertible(field, f"JMESPath {text!r}: ordering comparisons answer null on non-numbers; not "
                                       "converted")
        return f"{left} {op} {right}"
    if kind == "or_expression":
        left, right = (sub(c) for c in node["children"])
        # JMESPath's `a || b`: a unless a is false, null, '' , [] or {}
        return bind(left, lambda c: f"({_truthy(c)} ? {c} : {right})")
    if kind == "and_expression":
        left, right = (sub(c) for c in node["children"])
        return bind(left, lambda c: f"({_truthy(c)} ? {right} : {c})")
    if kind == "not_expression":
        return f"!({_truthy(sub(node['children'][0]))})"
    if kind == "function_expression" and node["value"] in ERRING and scope.swallowing:
        raise Unconvertible(field, f"JMESPath {text!r}: {node['value']} can error on the left of a flatten `[]` or "
                                   "filter `[?]`, where go-jmespath turns the error into null and CEL cannot catch "
                                   "it; not converted")
    if kind == "function_expression" and node["value"] in _FUNCTIONS:
        args = [sub(c) for c in node["children"]]
        return _FUNCTIONS[node["value"]](args)
    if kind == "function_expression" and node["value"] in _TYPED:
        name = node["value"]
        if len(node["children"]) != _TYPED[name]:
            raise Unconvertible(field, f"JMESPath {text!r}: {name} takes {_TYPED[name]} argument(s); not converted")
        args = [sub(c) for c in node["children"]]
        return _typed_function(name, args, bind, var)
    name = node.get("value") if kind == "function_expression" else kind
    raise Unconvertible(field, f"JMESPath {text!r}: {name} has no exact CEL counterpart here; not converted")


# Functions whose arguments go-jmespath checks by type (kk: go-jmespath functions.go, Kyverno's
# pkg/engine/jmespath/functions.go): CEL that answers as they do on the types they take and is an error on any
# other, as the function is. name -> number of arguments.
_TYPED = {"keys": 1, "values": 1, "to_array": 1, "regex_match": 2}
# the JMESPath functions the CEL above can make an error (policy.py refuses them inside foreach)
ERRING = ("length", "to_string", "starts_with", "ends_with", "contains", "label_match", "keys", "values", "regex_match")
# go-jmespath hands regex_match a number as Go formats a float32 (Kyverno's ifaceToString); an integer up to
# 2^24 is exact in a float32 and prints as CEL's string() prints it
_FLOAT32_EXACT = 1 << 24
REGEX_MATCH_DIFFERENCE = ("regex_match: on a number other than an integer within 2^24 the conversion is an error; "
                          "Kyverno matches the number's float32 text (Go's FormatFloat 'f', 32), which CEL cannot "
                          "write")


def _error(why: str, on: str) -> str:
    """CEL that always evaluates to an error whose text says `why` (CEL has no raise; `int()` of a text that
    is no number is an error in cel-go and in kyrec's engine). `on` is an identifier the expression reads:
    Kyverno's compiler folds constant calls, and `int('text')` alone would stop it compiling the policy."""
    return f"dyn(int([dyn({on}), dyn({literal(why)})][1]))"


def _typed_function(name: str, args: list[str], bind: Any, var: Any) -> str:
    if name in ("keys", "values"):
        # Go ranges over a map in no fixed order (jpfKeys/jpfValues), nor does CEL: neither order is promised
        k = var()
        return bind(args[0], lambda c: f"(type({c}) == map ? {c}.map({k}, {k if name == 'keys' else f'{c}[{k}]'}) "
                                       f": {_error(f'{name}: argument is not an object', c)})")
    if name == "to_array":
        return bind(args[0], lambda c: f"(type({c}) == list ? {c} : [{c}])")
    # regex_match(regex, value): Go's regexp.Match is an unanchored RE2 search, as CEL's matches()
    regex, value = args

    def on_value(r: str) -> str:
        return bind(value, lambda v: f"(type({v}) == string ? {v}.matches({r}) : type({v}) == int && "
                                     f"{v} >= -{_FLOAT32_EXACT} && {v} <= {_FLOAT32_EXACT} ? string({v}).matches({r}) "
                                     f": {_error('regex_match: argument #2 is no string nor integer within 2^24', v)})")
    if re.fullmatch(r"'(?:[^'\\]|\\.)*'", regex):
        return on_value(regex)
    return bind(regex, lambda r: f"(type({r}) == string ? {on_value(r)} : "
                                 f"{_error('regex_match: argument #1 is not of type string', r)})")


def _calls(nodes: list[dict[str, Any]]) -> bool:
    """A function is called on the chain's value (not inside a projection's or filter's own expression)."""
    return any(n["type"] == "function_expression" for n in nodes)


def _rooted(path: list[str], field: str, text: str, scope: Scope) -> tuple[str, list[str]]:
    """A path from the request or a scope name -> (its CEL root, the keys below it)."""
    for length in (2, 1):
        root = _ROOTS.get((path[0], path[1])) if length == 2 and len(path) > 1 else (
            scope.names.get(path[0]) if length == 1 else None)
        if root is not None:
            return root, path[length:]
    raise Unconvertible(field, f"JMESPath {text!r}: {'.'.join(path)} is no field of the admission request "
                               "a CEL policy can read")


def _chain(value: str, keys: list[str], then: Any, var: Any) -> str:
    """`then(v)` for the value at `keys` below `value`, or null where a map on the way lacks the key
    (go-jmespath's NotFound, soft here); a step on something that is no map gives null and goes on."""
    if not keys:
        return str(then(value))
    key, v = keys[0], var()
    return (f"(type({value}) == map && !({has(value, key)}) ? null : [type({value}) == map ? dyn({select(value, key)}) "
            f": null].map({v}, {_chain(v, keys[1:], then, var)})[0])")


def _swallowed(node: dict[str, Any], sub: Any, scope: Scope) -> str:
    scope.swallowing += 1
    try:
        return str(sub(node))
    finally:
        scope.swallowing -= 1


def _fields_on(value: str, keys: tuple[str, ...]) -> str:
    guards, current = [], value
    for key in keys:
        guards.append(f"type({current}) == map && {has(current, key)}")
        current = select(current, key)
    return f"({' && '.join(guards)} ? dyn({current}) : null)"


def _truthy(expr: str) -> str:
    # dyn: a boolean-typed operand would make CEL's checker refuse `!= null`
    e = f"dyn({expr})"
    return f"({e} != null && {e} != false && {e} != '' && {e} != [] && {e} != {{}})"


def template(text: str, field: str, scope: Scope | None = None) -> tuple[str, bool]:
    """A string with `{{ }}` variables -> (CEL expression, whether any variable was there)."""
    parts: list[str] = []
    last = 0
    found = False
    for m in _VARIABLE.finditer(text):
        found = True
        if m.start() > last:
            parts.append(literal(text[last:m.start()]))
        parts.append(f"string({translate(m.group(1), field, scope)})")
        last = m.end()
    if last < len(text):
        parts.append(literal(text[last:]))
    return (" + ".join(parts) or "''"), found


# JMESPath nodes whose result is a list or null, never a string: projections, flattens, multiselect lists
_LIST_NODES = frozenset({"projection", "value_projection", "filter_projection", "flatten", "multi_select_list"})


def gives_list(raw: str, scope: Scope | None = None) -> bool:
    """Whether a `{{ expr }}` string is one variable whose JMESPath gives a list, null or an error, never a
    string (the last step of a pipe decides; `a || b` where both do; a context entry the scope knows to
    hold a list)."""
    m = _VARIABLE.fullmatch(raw.strip())
    if not m:
        return False
    try:
        node = jp_parser.Parser().parse(m.group(1)).parsed
    except jp_exceptions.JMESPathError:
        return False
    if node["type"] == "field" and scope is not None and node["value"] in scope.lists:
        return True
    return _gives_list(node)


# functions whose answer is a list or an error, never a string
_LIST_FUNCTIONS = frozenset({"keys", "values", "to_array"})


def _gives_list(node: dict[str, Any]) -> bool:
    kind = node["type"]
    if kind in ("pipe", "subexpression"):    # the last step's answer (a missing key before it: null)
        return _gives_list(node["children"][-1])
    if kind == "or_expression":         # the left where it is truthy, else the right: both must be lists
        return all(_gives_list(child) for child in node["children"])
    if kind == "literal":
        return isinstance(node["value"], list)
    if kind == "function_expression":
        return node["value"] in _LIST_FUNCTIONS
    return kind in _LIST_NODES


def value(raw: Any, field: str, scope: Scope | None = None) -> str:
    """A condition's key or value: a whole `{{ expr }}` is the expression's value; other strings with
    variables are text; anything else a literal."""
    if isinstance(raw, str):
        m = _VARIABLE.fullmatch(raw.strip())
        if m:
            return translate(m.group(1), field, scope)
        expr, found = template(raw, field, scope)
        return expr if found else literal(raw)
    if isinstance(raw, (list, dict)) and "{{" in str(raw):
        raise Unconvertible(field, "variables inside a list or map value; not converted")
    return literal(raw)
