"""The rules of topology/'s shape (docs/architecture.md), checked on the source's AST: no private
name imported across modules, no import cycle among topology modules, and each floor imports only
the floors below it (a layout stage never reaches into render/, operate/ or the CLI)."""

from __future__ import annotations

from tests.package_rules import cycles, imports, modules

# Lowest first. A module may import its own floor and those below, never one above.
FLOORS = [
    ("topology.errors", "topology.gc_tuning"),
    ("topology.spec", "topology.catalog"),
    ("topology.layout",),
    ("topology.render",),
    ("topology.operate", "topology.publish", "topology.pulumi"),
    ("topology.cli", "topology"),  # the package itself re-exports build() for callers
]


def floor(module: str) -> int:
    best = None
    for level, prefixes in enumerate(FLOORS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (level, len(prefix))
    assert best, f"{module} sits on no floor: add its folder to FLOORS"
    return best[0]


def test_the_walk_sees_the_package():
    # a walk that found nothing would pass every rule below
    assert len(modules()) > 100 and len(imports()) > 300
    assert any(i.importer == "topology.layout.build" and i.module.startswith("topology.layout.") for i in imports())


def test_no_private_name_imported_across_modules():
    crossing = [f"{i.importer}:{i.line} imports {i.name} from {i.module}" for i in imports()
                if i.name and i.name.startswith("_") and not i.name.startswith("__") and i.module != i.importer]
    assert not crossing, "\n".join(crossing)


def test_no_import_cycle():
    edges: dict[str, set[str]] = {}
    for i in imports():
        if i.module != i.importer:
            edges.setdefault(i.importer, set()).add(i.module)
    assert not cycles(edges)


def test_each_floor_imports_only_floors_below():
    upward = [f"{i.importer}:{i.line} imports {i.module}" for i in imports()
              if floor(i.module) > floor(i.importer)]
    assert not upward, "\n".join(upward)


def test_every_module_sits_on_a_floor():
    for name in modules():
        floor(name)


def test_one_release_comparison():
    # was three copies (spec, render/switches/nvue.py, bench): one home, numeric, so 5.10 > 5.9
    from topology.spec import release_key

    assert release_key("5.10") > release_key("5.9") > release_key("5.6")
