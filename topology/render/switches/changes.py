"""What changes in each switch's configuration between two layouts (for `superpod diff`)."""

from __future__ import annotations

import difflib
from pathlib import Path

from topology.layout.model import Layout
from topology.render.change_list import Changes
from topology.render.switches import render_switch_configs


def _configs(layout: Layout) -> dict[str, str]:
    base = Path("/")
    return {str(p.relative_to(base / "switches")): c for p, c in render_switch_configs(layout, base).items()}


def switch_config_changes(old: Layout, new: Layout):
    """Changes (topology/render/change_list.py) with one line per switch file: added, removed, or changed with
    its line counts and the first changed lines, e.g. `su01-leaf-rail0/startup.yaml: +4 -0 (...)`."""
    a, b = _configs(old), _configs(new)
    c = Changes()
    c.added = sorted(b.keys() - a.keys())
    c.removed = sorted(a.keys() - b.keys())
    for name in sorted(a.keys() & b.keys()):
        if a[name] == b[name]:
            continue
        lines = [
            ln
            for ln in difflib.unified_diff(a[name].splitlines(), b[name].splitlines(), lineterm="", n=0)
            if ln[:1] in "+-" and not ln.startswith(("+++", "---"))
        ]
        plus = sum(ln.startswith("+") for ln in lines)
        first = "; ".join(ln.strip() for ln in lines[:3])
        c.changed.append(f"{name}: +{plus} -{len(lines) - plus} ({first}{'; …' if len(lines) > 3 else ''})")
    return c
