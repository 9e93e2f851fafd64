"""The set of files a plan produces; `superpod plan` and the Pulumi program share it,
so both write byte-identical artifacts for the same spec."""

from __future__ import annotations

from pathlib import Path

from topology.model import Layout
from topology.render.bom import bom_csv
from topology.render.inventory import render_inventory
from topology.render.labels import labels_csv
from topology.render.layout_json import layout_json
from topology.render.netbox import render_netbox
from topology.render.switches import render_switch_configs
from topology.render.tables import asns_csv, cabling_csv, devices_csv, ipplan_csv, racks_csv
from topology.render.telemetry import render_telemetry

TABLES = {
    "devices.csv": devices_csv,
    "cabling.csv": cabling_csv,
    "ipplan.csv": ipplan_csv,
    "asns.csv": asns_csv,
    "racks.csv": racks_csv,
    "bom.csv": bom_csv,
    "labels.csv": labels_csv,
    "layout.json": layout_json,
}


def render_artifacts(layout: Layout, out_dir: Path, inventory_dir: Path) -> dict[Path, str]:
    files = {Path(out_dir) / name: render(layout) for name, render in TABLES.items()}
    files.update(render_inventory(layout, Path(inventory_dir)))
    files.update(render_switch_configs(layout, Path(out_dir)))
    files.update(render_telemetry(layout, Path(out_dir)))  # telemetry/: scrape targets, rules, dashboard
    files.update(render_netbox(layout, Path(out_dir)))  # netbox/: bulk-import CSVs (docs/nautobot.md)
    return files
