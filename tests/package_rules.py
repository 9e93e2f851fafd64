"""The import graph of topology/, read from the source's AST (nothing is imported): what
tests/test_package_rules.py checks the package's rules against."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "topology"


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name of the file holding the import
    module: str  # the topology module it resolves to
    name: str | None  # the name taken from it (`from m import name`), None for `import m`
    line: int


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def absolute(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


@cache
def imports() -> list[Import]:
    """Every import of a topology module anywhere in a file (top level, in functions, under
    TYPE_CHECKING): each is a dependency a reader has to follow. A name read off an imported
    module (`sections._port_key`) counts as a name imported from it."""
    known = modules()
    found = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        bound: dict[str, str] = {}  # local name -> the topology module it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == "topology":
                        found.append(Import(name, a.name, None, node.lineno))
                        if a.asname:
                            bound[a.asname] = a.name
            elif isinstance(node, ast.ImportFrom):
                target = absolute(name, path.name == "__init__.py", node)
                if target.split(".")[0] != "topology":
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"  # `from topology.render import switches` imports a module
                    if sub in known:
                        found.append(Import(name, sub, None, node.lineno))
                        bound[alias.asname or alias.name] = sub
                    else:
                        found.append(Import(name, target, alias.name, node.lineno))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
                found.append(Import(name, bound[node.value.id], node.attr, node.lineno))
    return found


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found
