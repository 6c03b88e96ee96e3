"""Compile a policy's expressions once, with its `variables` composed in through `cel.bind`.

Why not evaluate variables apart and pass them in: a variable may hold an optional
(`object.metadata.?labels`), and the engine can neither turn an optional back into Python nor bind a
`cel.Value` into another activation (docs/architecture.md#the-cel-engine). So each `variables.<name>` reference is
rewritten to a bound identifier and the expression is wrapped in `cel.bind(...)` for every variable it uses,
transitively, in declaration order. `cel.bind` is lazy, which matches Kyverno's lazy variables: a
variable that would fail but is never used does not fail the expression.

Column numbers in compile errors refer to the text as written: each expression is first checked with
`variables` declared as a plain dynamic map, and only then compiled in its rewritten form.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from kubectl_kyrec.cel.compat import may_be_optional, rewrite_has, rewrite_or_value, skip_string
from kubectl_kyrec.cel.engine import CompileError, Environment, Program
from kubectl_kyrec.errors import InputError
from kubectl_kyrec.model import Source

_BOUND_PREFIX = "kyrecvar_"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class _Ref:
    start: int
    end: int
    name: str


def variable_references(text: str) -> list[_Ref]:
    """Spans of `variables.name` and `variables['name']` outside string literals."""
    refs: list[_Ref] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"":
            i = skip_string(text, i)
            continue
        m = _IDENT.match(text, i)
        if not m:
            i += 1
            continue
        word, end = m.group(0), m.end()
        before = text[:i].rstrip()
        if word == "variables" and not before.endswith("."):
            j = end
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] == ".":
                k = j + 1
                while k < n and text[k] in " \t\r\n":
                    k += 1
                m2 = _IDENT.match(text, k)
                if m2:
                    refs.append(_Ref(i, m2.end(), m2.group(0)))
                    i = m2.end()
                    continue
            elif j < n and text[j] == "[":
                m3 = re.match(r"\[\s*(['\"])([A-Za-z_][A-Za-z0-9_]*)\1\s*\]", text[j:])
                if m3:
                    refs.append(_Ref(i, j + m3.end(), m3.group(2)))
                    i = j + m3.end()
                    continue
        i = end
    return refs


_HAS_VARIABLE = re.compile(r"has\(\s*variables\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)")


def _declared_tests(text: str, declared: frozenset[str]) -> str:
    """`has(variables.x)` for a declared variable is true (the variables map always holds it).

    The bound identifier that replaces `variables.x` is not a field selection, so `has()` would not
    compile on it.
    """
    return _HAS_VARIABLE.sub(lambda m: "true" if m.group(1) in declared else m.group(0), text)


def _substitute(text: str, refs: Sequence[_Ref]) -> str:
    out = []
    last = 0
    for ref in refs:
        out.append(text[last:ref.start])
        out.append(_BOUND_PREFIX + ref.name)
        last = ref.end
    out.append(text[last:])
    return "".join(out)


@dataclass(frozen=True)
class VariableDecl:
    name: str
    expression: str


def _output_type_message(expect: Sequence[str]) -> str:
    """kk pkg/cel/compiler/compiler.go words a result of the wrong type so, naming cel-go's type names
    (types.NullType.TypeName() is `null_type`); the type found is not part of Kyverno's message."""
    names = [("null_type" if t == "null" else t) for t in expect]
    if len(names) == 1:
        return f"output is expected to be of type {names[0]}"
    return f"output is expected to be either of type {' or '.join(names)}"


_COLLECTED: contextvars.ContextVar[list[InputError] | None] = contextvars.ContextVar("collected", default=None)


@contextlib.contextmanager
def collecting_errors() -> Iterator[list[InputError]]:
    """Within, every PolicyCompiler records an expression that does not compile (its variables' too) and
    goes on with null in its place, so one compile of a policy finds each bad expression, as Kyverno's
    compilers return them all (a field.ErrorList); the programs made then serve nothing else."""
    found: list[InputError] = []
    token = _COLLECTED.set(found)
    try:
        yield found
    finally:
        _COLLECTED.reset(token)


class PolicyCompiler:
    """Compiles the expressions of one policy against one environment, reporting errors by field."""

    def __init__(self, env: Environment, check_env: Environment, variables: Sequence[VariableDecl],
                 source: Source, policy_label: str) -> None:
        self.env = env
        self.check_env = check_env          # same env, where `variables` is a plain dyn variable
        self.source = source
        self.label = policy_label
        # Kyverno's orValue compat macro, applied to variables in order so later ones know which
        # earlier variables can never hold an optional
        plain: set[str] = set()
        rewritten = []
        for var in variables:
            text = _declared_tests(rewrite_or_value(var.expression, frozenset(plain)),
                                   frozenset(v.name for v in variables))
            if not may_be_optional(text, frozenset(plain)):
                plain.add(var.name)
            rewritten.append(VariableDecl(var.name, text))
        self._plain = frozenset(plain)
        self._vars = rewritten
        self._index = {v.name: i for i, v in enumerate(self._vars)}
        self._deps: dict[str, list[str]] = {}
        for i, var in enumerate(self._vars):
            path = f"spec.variables[{i}].expression"
            deps = [r.name for r in variable_references(var.expression)]
            try:
                self._check(var.expression, path)
                for dep in deps:
                    if self._index.get(dep, len(self._vars)) >= i:
                        raise self._error(path, f"undefined field '{dep}'", 1, 1)
            except InputError as exc:
                collected = _COLLECTED.get()
                if collected is None:
                    raise
                collected.append(exc)
                # null where it is read, so that no expression reading it reports its error again
                self._vars[i] = VariableDecl(var.name, "dyn(null)")
                deps = []
            self._deps[var.name] = deps

    def _error(self, path: str, message: str, line: int, column: int) -> InputError:
        where = f"line {line}, column {column}" if line > 1 else f"column {column}"
        return InputError(f"{self.label}: {path}: {where}: {message}", self.source, field=path)

    def _check(self, text: str, path: str) -> None:
        try:
            self.check_env.compile(text)
            check_regex_literals(text)
        except CompileError as exc:
            raise self._error(path, exc.message, exc.line, exc.column) from None

    def _needed(self, text: str, path: str) -> list[str]:
        seen: set[str] = set()
        stack = [r.name for r in variable_references(text)]
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            if name not in self._index:
                raise self._error(path, f"undefined field '{name}'", 1, 1)
            seen.add(name)
            stack.extend(self._deps[name])
        return sorted(seen, key=self._index.__getitem__)

    def variable_names(self) -> list[str]:
        return [v.name for v in self._vars]

    def dependencies(self, name: str) -> list[str]:
        """The variables `name`'s expression reads directly, in the order it names them."""
        return list(dict.fromkeys(self._deps.get(name, [])))

    def compile(self, text: str, path: str, expect: Sequence[str] = ()) -> Program:
        """Compile `text` (the field at `path`); `expect` lists acceptable result types (dyn always is).
        Within collecting_errors, an expression that does not compile is recorded and stands as null."""
        try:
            return self._compile(text, path, expect)
        except InputError as exc:
            collected = _COLLECTED.get()
            if collected is None:
                raise
            collected.append(exc)
            return self.env.compile("dyn(null)")

    def _compile(self, text: str, path: str, expect: Sequence[str]) -> Program:
        text = _declared_tests(rewrite_or_value(text, self._plain), frozenset(self._index))
        self._check(text, path)
        needed = self._needed(text, path)
        # cel-go's has() on a receiver that is not a map, rewritten after checking so columns stay true
        text = rewrite_has(text)
        body = _substitute(text, variable_references(text))
        for name in reversed(needed):
            var_text = rewrite_has(self._vars[self._index[name]].expression)
            bound = _substitute(var_text, variable_references(var_text))
            body = f"cel.bind({_BOUND_PREFIX}{name}, ({bound}), ({body}))"
        try:
            program = self.env.compile(body)
        except CompileError as exc:
            raise self._error(path, exc.message, 1, 1) from None
        if expect and program.result_type not in (*expect, "dyn"):
            raise self._error(path, _output_type_message(expect), 1, 1)
        # program.text stays the compiled form, variables' cel.bind frames included: the engine adapter
        # evaluates parts of it to name the field or index cel-go's errors name (engine._cel_go)
        return program


# `.matches(` and the string literal that is its one argument (r/b prefixes allowed before the quote)
_MATCHES_CALL = re.compile(r"\.\s*matches\s*\(\s*(?=[rR]?['\"])")


def check_regex_literals(text: str) -> None:
    """cel-go's ValidateRegexLiterals, one of the AST validators of Kubernetes' base CEL environment (k8s:
    apiserver/pkg/cel/environment/base.go, from 1.29) that Kyverno's environments build on: a constant
    pattern given to `matches` must compile, else the expression does not (`invalid matches argument`, at
    the literal). CompileError with the literal's line and column."""
    import ast

    from kubectl_kyrec.golang.regexp import RegexSyntaxError, compile_re2

    if "matches" not in text:
        return
    spans = _string_starts(text)
    for m in _MATCHES_CALL.finditer(text):
        if m.start() in spans:      # inside a string literal
            continue
        start = m.end()
        quote = start + 1 if text[start] in "rR" else start
        end = skip_string(text, quote)
        if not re.match(r"\s*\)", text[end:]):
            continue                # not the whole argument: `x.matches('a' + y)`
        try:
            pattern = ast.literal_eval(text[start:end])
        except (ValueError, SyntaxError):
            continue                # an escape Python does not read the same: left to the runtime
        if not isinstance(pattern, str):
            continue
        try:
            compile_re2(pattern)
        except RegexSyntaxError:
            line = text.count("\n", 0, start) + 1
            column = start - (text.rfind("\n", 0, start) + 1) + 1
            raise CompileError("invalid matches argument", line, column) from None


def _string_starts(text: str) -> set[int]:
    """Every index inside a string literal of `text`."""
    inside: set[int] = set()
    i = 0
    while i < len(text):
        if text[i] in "'\"":
            end = skip_string(text, i)
            inside.update(range(i, end))
            i = end
        else:
            i += 1
    return inside
