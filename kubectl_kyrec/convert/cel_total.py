"""CEL whose errors decide as a ClusterPolicy's do: an error is a failure, never an error result.

Kyverno runs a ClusterPolicy's `validate.cel` through the ValidatingAdmissionPolicy validator under failure
policy Fail, so an expression that errors fails the rule, and an erroring `celPrecondition` fails it too
(kk: pkg/engine/handlers/validation/validate_cel.go; kyrec: evaluate/classic/validate_cel.py). A ValidatingPolicy
reports an erroring validation as an error. CEL has no try, so the converter writes, for an expression E,
`T(E)`: an expression that never errors and is true exactly when E evaluates to true (and `F(E)`: exactly
when E evaluates to false). A validation `T(E)` fails where E errored or was false, as the original did.

T and F are built from the expression's syntax: `&&`, `||`, `!`, `?:` and the list macros structurally, and
every other operation behind `ok(X)`, an expression that never errors and is true exactly when X
evaluates without error (a field selected from something that is a map holding it, an index inside the
list, an operator given the types it accepts). The values come from `object`/`oldObject` (dynamic JSON: any
type at any field), from `request` (typed: its fields are always there) and from `variables` (each
variable's own ok). A construct whose error conditions are not written here (a library function, integer
arithmetic other than `+`, a regular expression that is not a literal, ...) is refused by name: a
conversion that might decide otherwise is never written."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kubectl_kyrec.convert.cel_text import Unconvertible, conj, disj, has

# ---------------------------------------------------------------------------------------------- the parser

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>[rRbB]{0,2}(?:'''(?:.|\n)*?'''|\"\"\"(?:.|\n)*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[uU]?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>\|\||&&|==|!=|<=|>=|\.\?|\[\?|[<>+\-*/%!?:.\[\](){},])
""", re.VERBOSE)


@dataclass(frozen=True)
class Node:
    kind: str                   # lit ident select oselect index call unary binary cond list map
    text: str = ""              # literal text, identifier, field name, function name or operator
    args: tuple[Node, ...] = ()
    target: Node | None = None  # a call's receiver, a selection's operand
    literal_kind: str = ""      # for literals: string bytes int uint double bool null


class CelSyntax(Exception):
    pass


@dataclass
class _Parser:
    tokens: list[tuple[str, str]]
    pos: int = 0

    def peek(self, k: int = 0) -> tuple[str, str]:
        i = self.pos + k
        return self.tokens[i] if i < len(self.tokens) else ("end", "")

    def take(self, text: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if text is not None and tok[1] != text:
            raise CelSyntax(f"expected {text!r}, found {tok[1]!r}")
        self.pos += 1
        return tok

    def at(self, *texts: str) -> bool:
        kind, text = self.peek()
        return kind in ("op", "ident") and text in texts

    def expr(self) -> Node:
        cond = self.binary(0)
        if self.at("?"):
            self.take()
            a = self.expr()
            self.take(":")
            b = self.expr()
            return Node("cond", args=(cond, a, b))
        return cond

    _LEVELS: tuple[tuple[str, ...], ...] = (("||",), ("&&",), ("==", "!=", "<", "<=", ">", ">=", "in"), ("+", "-"),
                                            ("*", "/", "%"))

    def binary(self, level: int) -> Node:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.at(*self._LEVELS[level]):
            op = self.take()[1]
            right = self.binary(level + 1)
            left = Node("binary", op, (left, right))
        return left

    def unary(self) -> Node:
        if self.at("!", "-"):
            op = self.take()[1]
            return Node("unary", op, (self.unary(),))
        return self.member()

    def arguments(self, close: str) -> tuple[Node, ...]:
        out: list[Node] = []
        while not self.at(close):
            out.append(self.expr())
            if not self.at(close):
                self.take(",")
        self.take(close)
        return tuple(out)

    def member(self) -> Node:
        node = self.primary()
        while True:
            if self.at(".", ".?"):
                op = self.take()[1]
                kind, name = self.take()
                if kind != "ident":
                    raise CelSyntax(f"expected a field name, found {name!r}")
                if op == "." and self.at("("):
                    self.take()
                    node = Node("call", name, self.arguments(")"), target=node)
                else:
                    node = Node("select" if op == "." else "oselect", name, target=node)
            elif self.at("[", "[?"):
                op = self.take()[1]
                index = self.expr()
                self.take("]")
                node = Node("index" if op == "[" else "oindex", args=(index,), target=node)
            else:
                return node

    def primary(self) -> Node:
        kind, text = self.take()
        if kind == "string":
            prefix = text[:2].lower() if text[:2].lower() in ("rb", "br") else text[:1].lower()
            return Node("lit", text, literal_kind="bytes" if "b" in prefix and prefix in ("b", "rb", "br")
                        else "string")
        if kind == "number":
            lk = "uint" if text[-1] in "uU" else ("double" if re.search(r"[.eE]", text) and not
                                                  text.lower().startswith("0x") else "int")
            return Node("lit", text, literal_kind=lk)
        if kind == "ident":
            if text in ("true", "false"):
                return Node("lit", text, literal_kind="bool")
            if text == "null":
                return Node("lit", text, literal_kind="null")
            if self.at("("):
                self.take()
                return Node("call", text, self.arguments(")"))
            return Node("ident", text)
        if text == "(":
            inner = self.expr()
            self.take(")")
            return inner
        if text == "[":
            return Node("list", args=self.arguments("]"))
        if text == "{":
            entries: list[Node] = []
            while not self.at("}"):
                entries.append(self.expr())
                self.take(":")
                entries.append(self.expr())
                if not self.at("}"):
                    self.take(",")
            self.take("}")
            return Node("map", args=tuple(entries))
        raise CelSyntax(f"unexpected {text!r}")


def parse(text: str) -> Node:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise CelSyntax(f"unexpected character {text[pos]!r}")
        pos = m.end()
        if m.lastgroup != "space":
            tokens.append((str(m.lastgroup), m.group()))
    parser = _Parser(tokens)
    node = parser.expr()
    if parser.pos != len(tokens):
        raise CelSyntax(f"unexpected {parser.peek()[1]!r}")
    return node


def show(node: Node) -> str:
    """The node as CEL text (operands parenthesized where precedence needs it)."""
    k = node.kind
    if k in ("lit", "ident"):
        return node.text
    if k in ("select", "oselect"):
        return f"{_operand(node.target)}{'.' if k == 'select' else '.?'}{node.text}"
    if k in ("index", "oindex"):
        return f"{_operand(node.target)}{'[' if k == 'index' else '[?'}{show(node.args[0])}]"
    if k == "call":
        args = ", ".join(show(a) for a in node.args)
        return f"{_operand(node.target)}.{node.text}({args})" if node.target is not None else f"{node.text}({args})"
    if k == "unary":
        return f"{node.text}{_operand(node.args[0])}"
    if k == "binary":
        return f"{_operand(node.args[0])} {node.text} {_operand(node.args[1])}"
    if k == "cond":
        return " ? ".join([_operand(node.args[0]), _operand(node.args[1])]) + " : " + _operand(node.args[2])
    if k == "list":
        return "[" + ", ".join(show(a) for a in node.args) + "]"
    pairs = [f"{show(node.args[i])}: {show(node.args[i + 1])}" for i in range(0, len(node.args), 2)]
    return "{" + ", ".join(pairs) + "}"


def _operand(node: Node | None) -> str:
    assert node is not None
    text = show(node)
    return text if node.kind not in ("binary", "cond", "unary") else f"({text})"


# ----------------------------------------------------------------------------------------- the total forms

_NUM = ("int", "uint", "double")
_ORDERED = ("string", "bool", "bytes", "google.protobuf.Timestamp", "google.protobuf.Duration")
# string methods whose receiver and arguments are all strings, with that many arguments (the overloads with an
# int argument, `indexOf(s, i)`, `split(s, n)`, `replace(a, b, n)`, are refused)
_STRING_METHODS = {"contains": 1, "startsWith": 1, "endsWith": 1, "lowerAscii": 0, "upperAscii": 0, "trim": 0,
                   "split": 1, "replace": 2, "indexOf": 1, "lastIndexOf": 1}
_TYPED_ROOTS = ("request",)           # a typed object: every declared field is there
_DYN_ROOTS = ("object", "oldObject")  # unstructured JSON, or null


def is_type(text: str, *names: str) -> str:
    return disj([f"type({text}) == {n}" for n in names])


def _static_type(node: Node) -> str | None:
    if node.kind == "lit":
        return node.literal_kind
    return "list" if node.kind == "list" else None


def of_type(node: Node, *names: str) -> str:
    """`node` is one of the types: folded to true/false for a literal."""
    known = _static_type(node)
    if known is not None:
        return "true" if known in names or (known == "null" and "null_type" in names) else "false"
    return is_type(_operand(node), *names)


@dataclass
class Totalizer:
    """T/F/ok over one policy's expressions. `variables` are the CEL variables in scope (name -> text)."""

    at: str
    variables: dict[str, str] = field(default_factory=dict)
    _bound: list[str] = field(default_factory=list)     # comprehension variables in scope
    _var_ok: dict[str, str] = field(default_factory=dict)

    def refuse(self, node: Node, why: str) -> Unconvertible:
        return Unconvertible(self.at, f"{why} in {show(node)!r}: its errors cannot be made a failure (an error "
                                      "fails the ClusterPolicy rule and is an error result of a ValidatingPolicy)")

    # T: true exactly when the node evaluates to true; never errors
    def true(self, node: Node) -> str:
        if node.kind == "binary" and node.text == "&&":
            return conj([self.true(node.args[0]), self.true(node.args[1])])
        if node.kind == "binary" and node.text == "||":
            return disj([self.true(node.args[0]), self.true(node.args[1])])
        if node.kind == "unary" and node.text == "!":
            return self.false(node.args[0])
        if node.kind == "lit" and node.literal_kind == "bool":
            return node.text
        if node.kind == "cond":
            c, a, b = node.args
            return disj([conj([self.true(c), self.true(a)]), conj([self.false(c), self.true(b)])])
        macro = self._macro(node, want=True)
        if macro is not None:
            return macro
        return conj([self.ok(node), f"{_operand(node)} == true"])

    # F: true exactly when the node evaluates to false; never errors
    def false(self, node: Node) -> str:
        if node.kind == "binary" and node.text == "&&":
            return disj([self.false(node.args[0]), self.false(node.args[1])])
        if node.kind == "binary" and node.text == "||":
            return conj([self.false(node.args[0]), self.false(node.args[1])])
        if node.kind == "unary" and node.text == "!":
            return self.true(node.args[0])
        if node.kind == "lit" and node.literal_kind == "bool":
            return "true" if node.text == "false" else "false"
        if node.kind == "cond":
            c, a, b = node.args
            return disj([conj([self.true(c), self.false(a)]), conj([self.false(c), self.false(b)])])
        macro = self._macro(node, want=False)
        if macro is not None:
            return macro
        return conj([self.ok(node), f"{_operand(node)} == false"])

    def _iterable(self, node: Node) -> str:
        return conj([self.ok(node), of_type(node, "list", "map")])

    def _macro(self, node: Node, want: bool) -> str | None:
        if node.kind != "call" or node.target is None or node.text not in ("all", "exists", "exists_one"):
            return None
        if len(node.args) != 2 or node.args[0].kind != "ident":
            raise self.refuse(node, f"{node.text} with two variables")
        var = node.args[0].text
        target = show(node.target) if node.target.kind not in ("binary", "cond", "unary") else f"({show(node.target)})"
        guard = self._iterable(node.target)
        self._bound.append(var)
        try:
            t, f = self.true(node.args[1]), self.false(node.args[1])
        finally:
            self._bound.pop()
        if node.text == "all":      # true: every one true; false: one false (the others may error)
            body = f"{target}.all({var}, {t})" if want else f"{target}.exists({var}, {f})"
        elif node.text == "exists":
            body = f"{target}.exists({var}, {t})" if want else f"{target}.all({var}, {f})"
        else:                       # exists_one errors on any error
            every = f"{target}.all({var}, {disj([t, f])})"
            body = conj([every, f"{target}.exists_one({var}, {t})" if want else f"!{target}.exists_one({var}, {t})"])
        return conj([guard, body])

    # ok: true exactly when the node evaluates without an error; never errors
    def ok(self, node: Node) -> str:
        k = node.kind
        if k == "lit":
            return "true"
        if k == "ident":
            if node.text in self._bound or node.text in _DYN_ROOTS:
                return "true"
            raise self.refuse(node, f"reads {node.text!r}")
        if k == "list":
            return conj([self.ok(a) for a in node.args])
        if k in ("select", "oselect"):
            return self._select(node)
        if k in ("index", "oindex"):
            return self._index(node)
        if k == "unary":
            inner = node.args[0]
            if node.text == "!":
                return conj([self.ok(inner), of_type(inner, "bool")])
            if inner.kind == "lit" and inner.literal_kind in ("int", "double"):
                return "true"
            raise self.refuse(node, "a negation of a value that is not a literal")
        if k == "binary":
            return self._binary(node)
        if k == "cond":
            c, a, b = node.args
            return disj([conj([self.true(c), self.ok(a)]), conj([self.false(c), self.ok(b)])])
        if k == "call":
            return self._call(node)
        keys = [show(a) for a in node.args[0::2]]
        if any(a.kind != "lit" for a in node.args[0::2]) or len(set(keys)) != len(keys):
            raise self.refuse(node, "a map literal whose keys are not distinct literals")
        return conj([self.ok(a) for a in node.args[1::2]])

    def _select(self, node: Node) -> str:
        target = node.target
        assert target is not None
        if target.kind == "ident" and target.text == "variables":
            return self._variable(node.text)
        if _under_typed(target):
            if node.kind == "oselect" or node.text in ("object", "oldObject"):
                raise self.refuse(node, "request.object or an optional field of request")
            return "true"
        base = _operand(target)
        if _optional(target):
            # on an optional value a selection is optional too: a missing field is none (so is a field of
            # none); a value that is not a map errors
            return conj([self.ok(target), disj([f"!{base}.hasValue()", is_type(f"{base}.value()", "map")])])
        if node.kind == "oselect":
            return conj([self.ok(target), of_type(target, "map")])
        return conj([self.ok(target), of_type(target, "map"), has(base, node.text)])

    def _index(self, node: Node) -> str:
        target = node.target
        assert target is not None
        base, index = _operand(target), node.args[0]
        i = _operand(index)
        if _optional(target) or node.kind == "oindex":
            # an optional index: a missing key or an index outside the list is none, not an error
            value = f"{base}.value()" if _optional(target) else base
            fits = disj([is_type(value, "map"), conj([is_type(value, "list"), of_type(index, "int")])])
            if _optional(target):
                fits = disj([f"!{base}.hasValue()", fits])
            return conj([self.ok(target), self.ok(index), fits])
        within = disj([conj([of_type(target, "list"), of_type(index, "int"), f"{i} >= 0", f"{i} < size({base})"]),
                       conj([of_type(target, "map"), f"{i} in {base}"])])
        return conj([self.ok(target), self.ok(index), within])

    def _variable(self, name: str) -> str:
        if name not in self.variables:
            raise Unconvertible(self.at, f"variables.{name} is not defined")
        if name not in self._var_ok:
            self._var_ok[name] = "false"          # a variable that reads itself errors
            saved, self._bound = self._bound, []
            try:
                self._var_ok[name] = self.ok(_parsed(self.variables[name], self.at))
            finally:
                self._bound = saved
        return self._var_ok[name]

    def _binary(self, node: Node) -> str:
        a, b = node.args
        op = node.text
        if op in ("&&", "||"):
            return disj([self.true(node), self.false(node)])
        both = [self.ok(a), self.ok(b)]
        ta, tb = _operand(a), _operand(b)
        if op in ("==", "!="):
            return conj(both)
        if op in ("<", "<=", ">", ">="):
            known = _static_type(b)
            same_type = of_type(a, known) if known is not None else f"type({ta}) == type({tb})"
            ordered = of_type(a, *_ORDERED) if known is None or known in _ORDERED else "false"
            same = disj([conj([of_type(a, *_NUM), of_type(b, *_NUM)]), conj([same_type, ordered])])
            return conj([*both, same])
        if op == "in":
            return conj([*both, of_type(b, "list", "map")])
        if op == "+":
            no_overflow = conj([of_type(a, "int"), of_type(b, "int"),
                                f"({tb} <= 0 || {ta} <= 9223372036854775807 - {tb})",
                                f"({tb} >= 0 || {ta} >= -9223372036854775807 - 1 - {tb})"])
            if "false" in (of_type(a, "int"), of_type(b, "int")):
                no_overflow = "false"
            fits = disj([conj([of_type(a, "list"), of_type(b, "list")]),
                         conj([of_type(a, "string"), of_type(b, "string")]),
                         conj([of_type(a, "double"), of_type(b, "double")]), no_overflow])
            return conj([*both, fits])
        raise self.refuse(node, f"the operator {op!r}")

    def _call(self, node: Node) -> str:
        name, args, target = node.text, node.args, node.target
        if target is None:
            if name == "has" and len(args) == 1 and args[0].kind == "select":
                inner = args[0].target
                assert inner is not None
                if _under_typed(inner):
                    return "true"
                return conj([self.ok(inner), of_type(inner, "map")])
            if name == "size" and len(args) == 1:
                return conj([self.ok(args[0]), of_type(args[0], "list", "map", "string", "bytes")])
            if name == "type" and len(args) == 1:
                return self.ok(args[0])
            if name == "string" and len(args) == 1:
                return conj([self.ok(args[0]), of_type(args[0], "string", "int", "uint", "double", "bool")])
            if name in ("duration", "timestamp") and len(args) == 1 and args[0].kind == "lit":
                return "true"
            raise self.refuse(node, f"the function {name}()")
        if name in ("all", "exists", "exists_one"):
            return disj([self.true(node), self.false(node)])
        recv = _operand(target)
        if name in ("map", "filter") and args and args[0].kind == "ident" and len(args) in (2, 3):
            var = args[0].text
            self._bound.append(var)
            try:
                if name == "filter":
                    each = disj([self.true(args[1]), self.false(args[1])])
                elif len(args) == 2:
                    each = self.ok(args[1])
                else:
                    each = disj([conj([self.true(args[1]), self.ok(args[2])]), self.false(args[1])])
            finally:
                self._bound.pop()
            return conj([self._iterable(target), f"{recv}.all({var}, {each})"])
        if name == "size" and not args:
            return conj([self.ok(target), of_type(target, "list", "map", "string", "bytes")])
        if name in _STRING_METHODS and len(args) == _STRING_METHODS[name]:
            strings = [conj([self.ok(a), of_type(a, "string")]) for a in args]
            return conj([self.ok(target), of_type(target, "string"), *strings])
        if name == "matches" and len(args) == 1 and args[0].kind == "lit":
            return conj([self.ok(target), of_type(target, "string")])
        if name == "orValue" and len(args) == 1:
            # on a value that is not optional, Kyverno's orValue is the value itself (cel/compat.py)
            return conj([self.ok(target), self.ok(args[0])]) if _optional(target) else self.ok(target)
        if name in ("hasValue", "value") and not args and _optional(target):
            return self.ok(target) if name == "hasValue" else conj([self.ok(target), f"{recv}.hasValue()"])
        raise self.refuse(node, f"the method {name}()")


def _optional(node: Node | None) -> bool:
    """The node's value is an optional: an optional selection or index, or a selection or index on one."""
    while node is not None:
        if node.kind in ("oselect", "oindex"):
            return True
        if node.kind not in ("select", "index"):
            return False
        node = node.target
    return False


def _under_typed(node: Node) -> bool:
    while node.kind == "select" and node.target is not None:
        node = node.target
    return node.kind == "ident" and node.text in _TYPED_ROOTS


def _parsed(text: str, at: str) -> Node:
    try:
        return parse(text)
    except CelSyntax as err:
        raise Unconvertible(at, f"the CEL text is outside what the converter reads ({err})") from None


def total(text: str, at: str, variables: dict[str, str] | None = None) -> tuple[str, str]:
    """(T, F) of an expression: true exactly when it evaluates to true (false); neither ever errors."""
    node = _parsed(text, at)
    t = Totalizer(at, dict(variables or {}))
    return t.true(node), t.false(node)
