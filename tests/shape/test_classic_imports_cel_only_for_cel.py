"""classic/ imports cel/ only for CEL (docs/architecture.md#layers-and-what-each-owns): Go's behaviour (JSON,
regexp, semver, X.509, YAML, random strings) comes from golang/ or load/, Kubernetes' quantities from k8s/, never
through a CEL library. Every import counts, inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "kubectl_kyrec"
CLASSIC = PACKAGE / "classic"
# the CEL evaluation itself, which classic rules that embed CEL (validate.cel, celPreconditions) would use
CEL_MODULES = {"kubectl_kyrec.cel.engine", "kubectl_kyrec.cel.compiler", "kubectl_kyrec.cel.environment",
               "kubectl_kyrec.cel.libraries"}


def _imports(path: Path) -> list[str]:
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.level:
                base = ".".join(["kubectl_kyrec", *path.relative_to(PACKAGE).parts[:-node.level]])
                module = f"{base}.{node.module}"
            else:
                module = node.module
            # `from kubectl_kyrec.cel import kyverno_x509` imports the module kubectl_kyrec.cel.kyverno_x509
            if module in ("kubectl_kyrec", "kubectl_kyrec.cel", "kubectl_kyrec.golang"):
                out += [f"{module}.{a.name}" for a in node.names]
            else:
                out.append(module)
    return out


def _classic_imports() -> dict[str, list[str]]:
    return {p.relative_to(PACKAGE).as_posix(): _imports(p) for p in sorted(CLASSIC.rglob("*.py"))}


def test_classic_imports_cel_only_for_cel() -> None:
    found = sorted((path, module) for path, modules in _classic_imports().items() for module in modules
                   if (module == "kubectl_kyrec.cel" or module.startswith("kubectl_kyrec.cel."))
                   and module not in CEL_MODULES)
    assert found == []


def test_the_walk_sees_classic_imports_of_go_ports() -> None:
    # not vacuous: the Go ports classic uses are found where they live now
    modules = {m for ms in _classic_imports().values() for m in ms}
    assert {"kubectl_kyrec.golang.json", "kubectl_kyrec.golang.regexp", "kubectl_kyrec.golang.semver",
            "kubectl_kyrec.golang.x509", "kubectl_kyrec.golang.regen", "kubectl_kyrec.load.sigs_yaml",
            "kubectl_kyrec.k8s.quantity"} <= modules
