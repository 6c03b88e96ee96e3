"""A rule's `context` entries -> ValidatingPolicy `variables` (Kyverno's migration mapping, kyverno/kyverno#16506:
configMap and apiCall become `resource` library calls; docs/convert.md, context entries).

What the classic loaders give (kubectl_kyrec/classic/context_loader.py, kk: pkg/engine/context/loaders) and
what the conversion writes for each:

- `variable`: the value (or the JMESPath's answer on the value, or on the request), else `default`; nil is an
  error. The CEL variable is that expression, with the default (or an error) where it gives null.
- `configMap`: `{data, metadata}` of the ConfigMap; a ConfigMap that is not there is an error. The CEL
  variable reads it with `resource.Get('v1', 'configmaps', ns, name)` and errors where that finds nothing.
- `apiCall` GET of an API path: the object or the List, the JMESPath applied to it; an object that is not
  there is an error (or `default`, without the JMESPath). `resource.Get` / `resource.List`, the JMESPath
  written as CEL on the answer.

The classic loaders are deferred: an entry is loaded when a condition that reads it is reached, and an entry
that fails then is the rule's error. CEL variables are evaluated where first read too; a CEL `||`, `&&` or
`all()` would let another operand decide past the error, so conditions reading context entries are written
in Kyverno's order as ternaries (convert/conditions.py `ordered`), and an entry that can fail is not read
inside foreach (policy.py)."""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from kubectl_kyrec.convert import jmes
from kubectl_kyrec.convert.cel_text import Unconvertible, literal, selectable

_READS = re.compile(r"\bvariables\.([A-Za-z_][A-Za-z0-9_]*)")
_WHOLE_VARIABLE = re.compile(r"^\{\{-?\s*(.*?)\s*-?\}\}$", re.DOTALL)
# a `{{ }}` that is the whole of a JMESPath raw string literal: substituted as text, it is the value's string;
# the whole of a JSON literal (backquotes): its JSON text, the value itself where it is a map or list
_QUOTED_VARIABLE = re.compile(r"'\{\{-?\s*([^{}']*?)\s*-?\}\}'|`\{\{-?\s*([^{}`]*?)\s*-?\}\}`")
# request paths whose values are names: they cannot hold `/`, so as a segment of an API path they stay one
_NAME_PATHS = {"request.namespace", "request.name", "request.object.metadata.name",
               "request.object.metadata.namespace", "request.oldObject.metadata.name",
               "request.oldObject.metadata.namespace"}


def may_error(entry: dict[str, Any]) -> bool:
    """Whether the entry's variable can be an error: a ConfigMap or an object that is not there, a value
    that is nil, a request value substituted into its JMESPath. A List, a literal and a default cannot."""
    if entry.get("configMap") is not None:
        return True
    if entry.get("variable") is not None:
        spec = entry["variable"]
        literal_value = spec.get("value") is not None and "{{" not in str(spec["value"]) and not spec.get("jmesPath")
        return not literal_value and spec.get("default") is None
    call = entry.get("apiCall") or {}
    path = str(call.get("urlPath") or "").partition("?")[0]
    parts = [p for p in path.split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    if len(rest) > 2 and rest[0] == "namespaces":
        rest = rest[2:]
    return len(rest) == 2 or "{{" in str(call.get("jmesPath") or "")


def fail(text: str) -> str:
    """A CEL expression that is an error whose text says `text` (a lookup in an empty map)."""
    return f"{{}}[{literal(text)}]"


def reads(cel: str, known: set[str]) -> list[str]:
    return [n for n in dict.fromkeys(_READS.findall(cel)) if n in known]


def convert_entries(entries: Any, at: str, scope: jmes.Scope, policy_namespace: str) -> list[dict[str, str]]:
    """The entries as CEL variables, in order (a later entry may read an earlier one); each entry's name is
    added to `scope` as `variables.<name>`."""
    if not isinstance(entries, list):
        raise Unconvertible(at, "context must be a list")
    out: list[dict[str, str]] = []
    for i, entry in enumerate(entries):
        where = f"{at}[{i}]"
        if not isinstance(entry, dict):
            raise Unconvertible(where, "a context entry must be a map")
        name = str(entry.get("name") or "")
        if not selectable(name) or name in ("object", "oldObject", "request", "variables", "namespaceObject",
                                            "element", "elementIndex"):
            raise Unconvertible(f"{where}.name", f"{name!r} is not a name a CEL variable can have; not converted")
        if name in scope.names:
            raise Unconvertible(f"{where}.name", f"{name!r} is defined twice (a later entry replaces the earlier "
                                                 "in Kyverno); not converted")
        if entry.get("variable") is not None:
            expression = _variable(entry["variable"], f"{where}.variable", name, scope)
        elif entry.get("configMap") is not None:
            expression = _config_map(entry["configMap"], f"{where}.configMap", policy_namespace)
        elif entry.get("apiCall") is not None:
            expression = _api_call(entry["apiCall"], f"{where}.apiCall", scope, policy_namespace)
        elif entry.get("globalReference") is not None:
            raise Unconvertible(f"{where}.globalReference", "globalReference is not converted yet "
                                                            "(globalContext.Get)")
        elif entry.get("imageRegistry") is not None:
            raise Unconvertible(f"{where}.imageRegistry", "image.GetMetadata gives the image's data in another "
                                                          "shape (Kyverno v1.17.2 cannot read its fields: "
                                                          "docs/compatibility.md); not converted")
        else:
            raise Unconvertible(where, "an entry with no variable, configMap, apiCall, globalReference or "
                                       "imageRegistry")
        out.append({"name": name, "expression": expression})
        scope.names[name] = f"variables.{name}"
        if may_error(entry):
            scope.erring = scope.erring | {name}
    return out


def _or_else(value: str, otherwise: str) -> str:
    """`value`, or `otherwise` where it is null (each read once)."""
    return f"[{value}].map(v, dyn(v) != null ? v : {otherwise})[0]"


def _variable(spec: Any, at: str, name: str, scope: jmes.Scope) -> str:
    """kk: loaders/variable.go (context_loader.py _variable): the value, the JMESPath on the value or on the
    context, the default where that is null; nil at the end is an error."""
    if not isinstance(spec, dict):
        raise Unconvertible(at, "must be a map")
    nil = fail(f"failed to add context entry for variable {name} since it evaluated to nil")
    default = (jmes.value(spec["default"], f"{at}.default", scope) if spec.get("default") is not None
               else nil)
    path = spec.get("jmesPath")
    if path is not None and not isinstance(path, str):
        raise Unconvertible(f"{at}.jmesPath", "must be a string")
    if spec.get("value") is not None:
        raw = spec["value"]
        base = jmes.value(raw, f"{at}.value", scope)
        if not path:
            # a literal is never nil; a value from a variable may be
            return base if not (isinstance(raw, str) and "{{" in raw) else _or_else(base, nil)
        if spec.get("default") is not None and "(" in path:
            # a JMESPath function that errors on the value gives the default in Kyverno, an error in CEL
            raise Unconvertible(f"{at}.jmesPath", "a function on the value with a default; not converted")
        return _or_else(jmes.translate_on(path, f"{at}.jmesPath", scope, base), default)
    if not path:
        raise Unconvertible(at, "neither value nor jmesPath")
    if spec.get("default") is not None and "(" in path:
        raise Unconvertible(f"{at}.jmesPath", "a function with a default (an error gives the default in "
                                              "Kyverno, an error in CEL); not converted")
    # a query of the context: a missing key is null, never an error
    return _or_else(jmes.translate(path, f"{at}.jmesPath", scope.softened()), default)


def _plain(value: Any, at: str) -> str:
    if not isinstance(value, str) or not value:
        raise Unconvertible(at, "must be a non-empty string")
    if "{{" in value:
        raise Unconvertible(at, "variables here are not converted yet")
    return value


def _config_map(spec: Any, at: str, policy_namespace: str) -> str:
    """kk: loaders/configmap.go: `{data, metadata}` of the ConfigMap; not found is an error."""
    if not isinstance(spec, dict):
        raise Unconvertible(at, "must be a map")
    name = _plain(spec.get("name"), f"{at}.name")
    namespace = str(spec.get("namespace") or "")
    if "{{" in namespace:
        raise Unconvertible(f"{at}.namespace", "variables here are not converted yet")
    if policy_namespace:
        raise Unconvertible(at, "a namespaced Policy's configMap entry is not converted yet")
    namespace = namespace or "default"
    missing = fail(f'failed to get configmap {namespace}/{name} : configmaps "{name}" not found')
    # what the loader stores: data (left out where the ConfigMap has none, as a null there reads as missing
    # in both) and metadata
    return (f"[resource.Get('v1', 'configmaps', {literal(namespace)}, {literal(name)})].map(c, dyn(c) != null ? "
            f"{{?'data': c.?data, 'metadata': c.metadata}} : {missing})[0]")


def _segment(text: str, at: str, scope: jmes.Scope) -> str:
    """One segment of an API path as CEL text: a literal, or one name-valued request variable."""
    m = _WHOLE_VARIABLE.match(text)
    if m is None:
        if "{{" in text or "}}" in text:
            raise Unconvertible(at, f"segment {text!r}: a variable beside text in an API path; not converted")
        return literal(urllib.parse.unquote(text))
    inner = re.sub(r"\s+", "", m.group(1))
    if inner not in _NAME_PATHS:
        raise Unconvertible(at, f"segment {text!r}: only request names and namespaces are converted in an API "
                                "path (another value could hold '/', changing the path's shape); not converted")
    return jmes.translate(inner, at, scope)


def _api_call(spec: Any, at: str, scope: jmes.Scope, policy_namespace: str) -> str:
    """kk: pkg/engine/apicall (context_loader.py _api_call, _get_path): a GET of an API path, the JMESPath
    applied to the object or List it answers; an object that is not there is an error, or the default."""
    if not isinstance(spec, dict):
        raise Unconvertible(at, "must be a map")
    method = str(spec.get("method") or "GET").upper()
    if spec.get("service") is not None:
        raise Unconvertible(f"{at}.service", "calls to a service are not converted (http.Get answers in another "
                                             "shape, and neither side can be checked offline)")
    if method != "GET" or spec.get("data") is not None:
        raise Unconvertible(f"{at}.method", f"{method} calls are not converted (resource.Post creates what a "
                                            "review API answers; not converted)")
    if policy_namespace:
        raise Unconvertible(at, "a namespaced Policy's apiCall is not converted yet")
    raw = _plain_path(spec.get("urlPath"), f"{at}.urlPath")
    path, _, query = raw.partition("?")
    parts = [p for p in path.split("/") if p != ""]
    if not path.startswith("/") or "//" in path or path.endswith("/") or ".." in parts or "." in parts:
        raise Unconvertible(f"{at}.urlPath", f"{raw!r}: not a plain API path; not converted")
    if len(parts) >= 2 and parts[0] == "api":
        api_version, rest = literal(parts[1]), parts[2:]
        group = ""
    elif len(parts) >= 3 and parts[0] == "apis":
        group, api_version, rest = parts[1], literal(f"{parts[1]}/{parts[2]}"), parts[3:]
    else:
        raise Unconvertible(f"{at}.urlPath", f"{raw!r}: not a path of the Kubernetes API; not converted")
    if "{{" in parts[1] or (group and "{{" in parts[2]):
        raise Unconvertible(f"{at}.urlPath", "a variable in the API group or version; not converted")
    namespace = "''"
    if len(rest) > 2 and rest[0] == "namespaces":
        namespace, rest = _segment(rest[1], f"{at}.urlPath", scope), rest[2:]
    if not rest or len(rest) > 2:
        raise Unconvertible(f"{at}.urlPath", f"{raw!r}: subresources and bare API groups are not converted")
    if "{{" in rest[0] or rest[0] != rest[0].lower():
        raise Unconvertible(f"{at}.urlPath", f"{raw!r}: resource {rest[0]!r} is no lowercase plural; not converted")
    resource = literal(rest[0])
    params = urllib.parse.parse_qs(query, keep_blank_values=True) if query else {}
    if "{{" in query or set(params) - {"labelSelector"} or any(len(v) != 1 for v in params.values()):
        raise Unconvertible(f"{at}.urlPath", f"{raw!r}: query parameters other than one literal labelSelector "
                                             "are not converted")
    labels = _label_map(params["labelSelector"][0], f"{at}.urlPath") if params else None
    jmes_path = spec.get("jmesPath")
    if len(rest) == 2:
        if labels is not None:
            raise Unconvertible(f"{at}.urlPath", "a labelSelector on one object; not converted")
        fetched = f"resource.Get({api_version}, {resource}, {namespace}, {_segment(rest[1], f'{at}.urlPath', scope)})"
        if spec.get("default") is not None:
            # Kyverno's resource.Get is an error where the object is not there (kk: pkg/cel/libs/resource/impl.go
            # get_resource_string_string_string_string; its CLI agrees): no default can stand in
            raise Unconvertible(f"{at}.default", "a default for one object: resource.Get is an error where the "
                                                 "object is not there, so no default can stand in; not converted")
        otherwise = fail(f"failed to GET resource with raw url: {raw}: {rest[0]} not found")
        answer = _on_answer(jmes_path, f"{at}.jmesPath", scope, "o")
        return f"[{fetched}].map(o, dyn(o) != null ? {answer} : {otherwise})[0]"
    args = f"{api_version}, {resource}, {namespace}" + (f", {literal(labels)}" if labels is not None else "")
    listed = f"resource.List({args})"
    if not jmes_path:
        return listed
    return f"[{listed}].map(o, {_on_answer(jmes_path, f'{at}.jmesPath', scope, 'o')})[0]"


def _plain_path(value: Any, at: str) -> str:
    if not isinstance(value, str) or not value:
        raise Unconvertible(at, "must be a non-empty string")
    return value.strip()


def _label_map(selector: str, at: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in selector.split(","):
        key, sep, value = part.partition("=")
        if not sep or value.startswith("=") or key.endswith("!") or not key.strip():
            raise Unconvertible(at, f"labelSelector {selector!r}: only key=value terms are converted")
        out[key.strip()] = value.strip()
    return out


def _on_answer(path: Any, at: str, scope: jmes.Scope, current: str) -> str:
    """The JMESPath of an apiCall on its answer `current`, with `'{{ x }}'` literals (substituted as text in
    Kyverno before the query) as `string(x)`."""
    if not path:
        return current
    if not isinstance(path, str):
        raise Unconvertible(at, "must be a string")
    substituted: dict[str, str] = {}

    def hole(m: re.Match[str]) -> str:
        token = f"kyrec_variable_{len(substituted)}"
        quoted = m.group(1) is not None
        inner = m.group(1) if quoted else m.group(2)
        value = jmes.translate(inner, at, scope)
        if quoted:
            # a name's or kind's string form; a map or list value (inserted as JSON text in Kyverno) is an error
            substituted[literal(token)] = (f"[{value}].map(s, type(s) == map || type(s) == list ? "
                                           f"{fail('a map or list inserted into a JMESPath string')} : "
                                           "string(s))[0]")
            return f"'{token}'"
        # a map or list is inserted as its JSON text, which the literal reads back as the same value; a string
        # is inserted bare (no JSON), a number or boolean is not a selector's or labels' value: errors here
        substituted[literal(token)] = (f"[{value}].map(s, type(s) == map || type(s) == list ? s : "
                                       f"{fail('a scalar inserted into a JMESPath JSON literal')})[0]")
        return f'`"{token}"`'

    text = _QUOTED_VARIABLE.sub(hole, path)
    cel = jmes.translate_on(text, at, scope, current)
    # Kyverno substitutes every variable before the query runs (an error there is the entry's error, even
    # where the query would not reach the value): each is read first, bound to a name the query uses
    for n, (token, value) in reversed(list(enumerate(substituted.items()))):
        if cel.count(token) < 1:
            raise Unconvertible(at, f"JMESPath {path!r}: a variable not used as one value; not converted")
        cel = f"[{value}].map(sub{n}, {cel.replace(token, f'sub{n}')})[0]"
    return cel
