"""The set of files a plan produces; `superpod plan` and the Pulumi program share it,
so both write byte-identical artifacts for the same spec."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from topology.layout.model import Layout
from topology.render.bom import bom_csv
from topology.render.inventory import iter_inventory
from topology.render.labels import labels_pieces
from topology.render.layout_json import layout_json_pieces
from topology.render.netbox import iter_netbox
from topology.render.pieces import Pieces, pieces_of
from topology.render.slurm_files import render_slurm
from topology.render.slurm_plan import slurm_plan
from topology.render.switches import iter_switch_configs
from topology.render.tables import asns_pieces, cabling_pieces, devices_pieces, ipplan_pieces, racks_pieces
from topology.render.telemetry import render_telemetry

TABLES = {
    "devices.csv": devices_pieces,
    "cabling.csv": cabling_pieces,
    "ipplan.csv": ipplan_pieces,
    "asns.csv": asns_pieces,
    "racks.csv": racks_pieces,
    "bom.csv": lambda layout: (bom_csv(layout),),  # a few dozen lines
    "labels.csv": labels_pieces,
    "layout.json": layout_json_pieces,
}


def iter_artifact_pieces(layout: Layout, out_dir: Path, inventory_dir: Path) -> Iterator[tuple[Path, Pieces]]:
    """The plan's files one at a time, each rendered when it is asked for and in pieces as its
    pieces are read (a str is a file of one piece): `superpod plan` writes each piece before the
    next is rendered, so a 100k-GPU plan holds neither the whole set nor its largest files whole."""
    out_dir = Path(out_dir)
    for name, render in TABLES.items():
        yield out_dir / name, render(layout)
    slurm = slurm_plan(layout)  # one build for the inventory's superpod_slurm and the slurm/ files
    yield from iter_inventory(layout, Path(inventory_dir), slurm)
    yield from iter_switch_configs(layout, out_dir)
    yield from render_telemetry(layout, out_dir).items()  # telemetry/: scrape targets, rules, dashboard
    yield from iter_netbox(layout, out_dir)  # netbox/: bulk-import CSVs (docs/nautobot.md)
    yield from render_slurm(layout, out_dir, slurm).items()  # slurm/: slurm.conf, gres.conf, ... (docs/slurm.md)


def iter_artifacts(layout: Layout, out_dir: Path, inventory_dir: Path) -> Iterator[tuple[Path, str]]:
    """The plan's files one at a time, each whole (what the pieces of iter_artifact_pieces join to)."""
    for path, pieces in iter_artifact_pieces(layout, out_dir, inventory_dir):
        yield path, "".join(pieces_of(pieces))


def render_artifacts(layout: Layout, out_dir: Path, inventory_dir: Path) -> dict[Path, str]:
    return dict(iter_artifacts(layout, out_dir, inventory_dir))
