"""build/<stack>/netbox/: the plan as NetBox bulk-import CSVs (Import -> CSV on each object list).

One file per object type, numbered in the order NetBox needs them (a row may only name objects
that already exist). Columns are NetBox 4.x import fields (dcim/ipam `*ImportForm`); the NetBox
3.x renames are listed in docs/nautobot.md. Drawn from the same object set as the Nautobot
publisher (topology/render/dcim.py)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from topology.layout.model import Layout
from topology.render.dcim import OWNER_TAG, ROLE_COLORS, Desired, DesiredView, desired_view
from topology.render.tables import SLOT, RowShape, csv_pieces, shaped_csv_pieces

ASN_FIELD = "superpod_asn"  # device custom field: NetBox's ASN model attaches to sites, not devices
RIR = "RFC 6996 private"


@functools.lru_cache(maxsize=4096)  # names and tag sets repeat on every device and cable of an SU
def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-")


@functools.lru_cache(maxsize=4096)
def _tags(tags: tuple[str, ...]) -> str:
    return ",".join(slug(t) for t in tags)


def _blank(v) -> object:
    return "" if v is None else v


def netbox_tables(d: Desired | DesiredView) -> dict[str, str]:
    return {name: "".join(make()) for name, make in _table_makers(d).items()}


def _table_makers(d: Desired | DesiredView) -> dict[str, Callable[[], Iterator[str]]]:
    """Each file's name and a function that renders it: the plan writes one table before
    the next is made (the interface, cable and address tables are 30 MB each at 100k GPUs)."""
    site = d.site
    maker = {t.model: t.manufacturer for t in d.device_types}
    rack_row = {r.name: r.row for r in d.racks}
    return {
        "00-tags.csv": lambda: csv_pieces(["name", "slug", "color"], ((t, slug(t), "76b900") for t in d.tags)),
        "01-custom-fields.csv": lambda: csv_pieces(
            ["name", "label", "type", "object_types", "description"],
            [(ASN_FIELD, "ASN", "integer", "dcim.device", "BGP ASN from the superpod plan")],
        ),
        "02-sites.csv": lambda: csv_pieces(["name", "slug", "status", "description", "tags"],
                             [(site, slug(site), "planned", "GPU pod planned by superpod", OWNER_TAG)]),
        "03-locations.csv": lambda: csv_pieces(["site", "name", "slug", "status", "tags"],
                                 ((site, row, f"{slug(site)}-{row}", "planned", OWNER_TAG) for row in d.rows)),
        "04-racks.csv": lambda: csv_pieces(
            ["site", "location", "name", "status", "width", "u_height", "tags"],
            ((site, r.row, r.name, "planned", 19, r.u_height, _tags(r.tags)) for r in d.racks),
        ),
        "05-manufacturers.csv": lambda: csv_pieces(["name", "slug"], ((m, slug(m)) for m in d.manufacturers)),
        "06-device-types.csv": lambda: csv_pieces(
            ["manufacturer", "model", "slug", "u_height", "is_full_depth", "description"],
            ((t.manufacturer, t.model, slug(t.model), t.u_height, "true" if t.u_height else "false", t.description)
             for t in d.device_types),
        ),
        "07-device-roles.csv": lambda: csv_pieces(["name", "slug", "color"],
                                    ((r, slug(r), ROLE_COLORS.get(r, "607d8b")) for r in d.roles)),
        "08-devices.csv": lambda: csv_pieces(
            ["name", "role", "manufacturer", "device_type", "site", "location", "rack", "position", "face", "status",
             f"cf_{ASN_FIELD}", "tags"],
            (
                (dev.name, dev.role, maker[dev.device_type], dev.device_type, site, rack_row.get(dev.rack, ""),
                 _blank(dev.rack), _blank(dev.position), "front" if dev.position else "", "planned",
                 _blank(dev.asn), _tags(dev.tags))
                for dev in d.devices
            ),
        ),
        "09-interfaces.csv": lambda: shaped_csv_pieces(
            ["device", "name", "type", "speed", "mgmt_only", "enabled"],
            # a shape per kind of interface: its rows differ only by device and name
            d.interface_rows(lambda kind, kbps, mgmt: RowShape(
                SLOT, SLOT, kind, "" if kbps is None else kbps, "true" if mgmt else "false", "true")),
        ),
        "10-cables.csv": lambda: shaped_csv_pieces(
            ["side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name", "type",
             "status", "label", "length", "length_unit", "tags"],
            d.cable_rows(lambda kind, length, tags: RowShape(
                SLOT, "dcim.interface", SLOT, SLOT, "dcim.interface", SLOT, kind, "planned", SLOT, f"{length:g}", "m",
                _tags(tags))),
        ),
        "11-rirs.csv": lambda: csv_pieces(["name", "slug", "is_private"], [(RIR, slug(RIR), "true")]),
        "12-asns.csv": lambda: csv_pieces(
            ["asn", "rir", "description", "tags"],
            sorted({(dev.asn, RIR, dev.name, OWNER_TAG) for dev in d.devices if dev.asn is not None}),
        ),
        "13-prefixes.csv": lambda: shaped_csv_pieces(
            ["prefix", "status", "description", "tags"],
            d.prefix_rows(lambda pool, kind: RowShape(
                SLOT, "container" if kind == "container" else "planned", pool, OWNER_TAG)),
        ),
        "14-ip-addresses.csv": lambda: shaped_csv_pieces(
            ["address", "status", "role", "device", "interface", "description", "tags"],
            # NetBox gives an address one interface: a shared gateway repeats as one row per switch (role vrrp)
            d.address_rows(lambda pool, role: RowShape(SLOT, "planned", role, SLOT, SLOT, pool, OWNER_TAG)),
        ),
        **_power_table_makers(d),
    }


def _power_table_makers(d: Desired | DesiredView) -> dict[str, Callable[[], Iterator[str]]]:
    """Panels per row and feed side, a feed per PDU; PDU inputs, outlets and node PSUs with their
    plug types; PSU-to-outlet and PDU-to-feed cables. NetBox has no CSV import for device-type
    components, so ports and outlets are one row per device. The power objects are made when
    the first power table is read, after the interface and address tables (issue 39: their peak
    and the power objects, 80 MB at 100k GPUs, were held together)."""
    site = d.site
    rack_row = {r.name: r.row for r in d.racks}

    def feed_cables(p):
        panel_of = {f.name: f.panel for f in p.feeds}
        return ((c.device, "dcim.powerport", c.port, site, panel_of[c.feed], "dcim.powerfeed", c.feed, "planned",
                 c.label, OWNER_TAG) for c in p.cables)

    return {
        "15-power-panels.csv": lambda: csv_pieces(["site", "location", "name", "tags"],
                                    ((site, x.row, x.name, OWNER_TAG) for x in d.power.panels)),
        "16-power-feeds.csv": lambda: csv_pieces(
            ["site", "power_panel", "location", "rack", "name", "status", "type", "supply", "phase", "voltage",
             "amperage", "max_utilization", "tags"],
            ((site, f.panel, rack_row[f.rack], f.rack, f.name, "planned", "primary" if f.side == "a" else "redundant",
              "ac", f.phase, f.voltage, f.amperage, f.max_utilization, OWNER_TAG) for f in d.power.feeds),
        ),
        "17-power-ports.csv": lambda: csv_pieces(
            ["device", "name", "type", "maximum_draw", "allocated_draw", "tags"],
            ((x.device, x.name, x.type, _blank(x.maximum_draw_w), _blank(x.allocated_draw_w), OWNER_TAG)
             for x in d.power.ports)),
        "18-power-outlets.csv": lambda: csv_pieces(["device", "name", "type", "power_port", "tags"],
                                     ((o.device, o.name, o.type, o.power_port, OWNER_TAG) for o in d.power.outlets)),
        "19-power-cables.csv": lambda: csv_pieces(  # node PSU -> PDU outlet
            ["side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name", "status",
             "label", "tags"],
            ((c.device, "dcim.powerport", c.port, c.pdu, "dcim.poweroutlet", c.outlet, "planned", c.label, OWNER_TAG)
             for c in d.power.psu_cables)),
        "20-feed-cables.csv": lambda: csv_pieces(  # PDU input -> power feed: the feed is named by site and panel
            ["side_a_device", "side_a_type", "side_a_name", "side_b_site", "side_b_power_panel", "side_b_type",
             "side_b_name", "status", "label", "tags"],
            feed_cables(d.power)),
    }


def render_netbox(layout: Layout, out_dir: Path) -> dict[Path, str]:
    return {path: "".join(pieces) for path, pieces in iter_netbox(layout, out_dir)}


def iter_netbox(layout: Layout, out_dir: Path) -> Iterator[tuple[Path, Iterator[str]]]:
    """The NetBox files one at a time, each table rendered in pieces as it is read, from objects
    made as it reads them (desired_view): the interfaces, cables and addresses are never all held,
    nor a whole table's text."""
    for name, make in _table_makers(desired_view(layout)).items():
        yield Path(out_dir) / "netbox" / name, make()
