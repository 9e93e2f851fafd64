"""What changes for the scheduler between two layouts (for `superpod diff`): the Slurm files'
lines added or removed (nodes, features, switches, partitions), one item per line."""

from __future__ import annotations

from pathlib import Path

from topology.layout.model import Layout
from topology.render.change_list import Changes
from topology.render.slurm_files import render_slurm


def _lines(layout: Layout) -> set[str]:
    out: set[str] = set()
    for path, text in render_slurm(layout, Path("/")).items():
        out |= {f"{path.name}: {ln}" for ln in text.splitlines() if ln and not ln.startswith("#")}
    return out


def scheduler_changes(old: Layout, new: Layout):
    """Changes (topology/render/change_list.py): `slurm.conf: NodeName=su05-node[01-04] ...` added or removed."""
    a, b = _lines(old), _lines(new)
    return Changes(added=sorted(b - a), removed=sorted(a - b))
