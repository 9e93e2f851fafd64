"""build/<stack>/netbox/: NetBox bulk-import CSVs, checked for format (the columns NetBox's import
forms take, values from its choice lists) and for references (every row names objects that an
earlier file creates: cable ends, address interfaces, racks, types, roles; units inside racks)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from netaddr import IPNetwork

from tests.conftest import stack_layout
from topology.render.dcim import CABLE_TYPES, ETHERNET_TYPES, INFINIBAND_TYPES, desired_objects
from topology.render.netbox import netbox_tables, render_netbox

COLUMNS = {  # NetBox 4.x import fields, per file
    "00-tags.csv": ["name", "slug", "color"],
    "02-sites.csv": ["name", "slug", "status", "description", "tags"],
    "03-locations.csv": ["site", "name", "slug", "status", "tags"],
    "04-racks.csv": ["site", "location", "name", "status", "width", "u_height", "tags"],
    "05-manufacturers.csv": ["name", "slug"],
    "06-device-types.csv": ["manufacturer", "model", "slug", "u_height", "is_full_depth", "description"],
    "07-device-roles.csv": ["name", "slug", "color"],
    "08-devices.csv": ["name", "role", "manufacturer", "device_type", "site", "location", "rack", "position", "face",
                       "status", "cf_superpod_asn", "tags"],
    "09-interfaces.csv": ["device", "name", "type", "speed", "mgmt_only", "enabled"],
    "10-cables.csv": ["side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name",
                      "type", "status", "label", "length", "length_unit", "tags"],
    "12-asns.csv": ["asn", "rir", "description", "tags"],
    "13-prefixes.csv": ["prefix", "status", "description", "tags"],
    "14-ip-addresses.csv": ["address", "status", "role", "device", "interface", "description", "tags"],
}
IP_ROLES = {"", "loopback", "secondary", "anycast", "vip", "vrrp", "hsrp", "glbp", "carp"}  # IPAddressRoleChoices


def rows(tables: dict[str, str], name: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(tables[name])))


@pytest.fixture(scope="module", params=["lab", "roce-1k", "dgx-h100-ib"])
def tables(request):
    return netbox_tables(desired_objects(stack_layout(request.param)))


def test_columns_are_netbox_import_fields(tables):
    for name, header in COLUMNS.items():
        assert tables[name].splitlines()[0].split(",") == header, name


def test_every_row_names_existing_objects(tables):
    tags = {r["slug"] for r in rows(tables, "00-tags.csv")}
    site = {r["name"] for r in rows(tables, "02-sites.csv")}
    locations = {r["name"] for r in rows(tables, "03-locations.csv")}
    racks = {r["name"]: r for r in rows(tables, "04-racks.csv")}
    makers = {r["name"] for r in rows(tables, "05-manufacturers.csv")}
    types = {(r["manufacturer"], r["model"]): int(r["u_height"]) for r in rows(tables, "06-device-types.csv")}
    roles = {r["name"] for r in rows(tables, "07-device-roles.csv")}
    devices = {r["name"]: r for r in rows(tables, "08-devices.csv")}
    interfaces = {(r["device"], r["name"]) for r in rows(tables, "09-interfaces.csv")}
    assert {r["location"] for r in racks.values()} <= locations and {r["site"] for r in racks.values()} == site
    assert {m for m, _ in types} <= makers
    for r in racks.values():
        assert set(r["tags"].split(",")) <= tags
    for name, dev in devices.items():
        assert (dev["manufacturer"], dev["device_type"]) in types, name
        assert dev["role"] in roles and dev["site"] in site
        assert set(dev["tags"].split(",")) <= tags
        if dev["rack"]:
            assert racks[dev["rack"]]["location"] == dev["location"], name
    for dev, _ in interfaces:
        assert dev in devices
    cables = rows(tables, "10-cables.csv")
    used: set[tuple[str, str]] = set()
    for c in cables:
        for side in ("side_a", "side_b"):
            end = (c[f"{side}_device"], c[f"{side}_name"])
            assert end in interfaces, f"cable {c['label']}: {end} is not in 09-interfaces.csv"
            assert end not in used, f"{end} carries two cables"
            used.add(end)
    for a in rows(tables, "14-ip-addresses.csv"):
        assert (a["device"], a["interface"]) in interfaces, a
    prefixes = [IPNetwork(p["prefix"]) for p in rows(tables, "13-prefixes.csv") if p["status"] != "container"]
    networks = set(prefixes)
    for a in rows(tables, "14-ip-addresses.csv"):
        assert IPNetwork(a["address"]).cidr in networks, f"{a['address']} has no prefix in 13-prefixes.csv"
    assert {int(r["asn"]) for r in rows(tables, "12-asns.csv")} == {
        int(d["cf_superpod_asn"]) for d in devices.values() if d["cf_superpod_asn"]
    }


def test_rack_units_fit_their_racks(tables):
    racks = {r["name"]: int(r["u_height"]) for r in rows(tables, "04-racks.csv")}
    heights = {r["model"]: int(r["u_height"]) for r in rows(tables, "06-device-types.csv")}
    occupied: dict[tuple[str, int], str] = {}
    for dev in rows(tables, "08-devices.csv"):
        if not dev["position"]:
            assert heights[dev["device_type"]] == 0 or not dev["rack"], f"{dev['name']}: racked gear needs a unit"
            continue
        bottom, height = int(dev["position"]), heights[dev["device_type"]]
        assert 1 <= bottom and bottom + height - 1 <= racks[dev["rack"]], dev["name"]
        for unit in range(bottom, bottom + height):  # NetBox refuses two devices in one unit
            assert occupied.setdefault((dev["rack"], unit), dev["name"]) == dev["name"], (dev["rack"], unit)


def test_values_come_from_netbox_choices(tables):
    iface_types = set(ETHERNET_TYPES.values()) | set(INFINIBAND_TYPES.values()) | {"virtual", "lag", "other"}
    for i in rows(tables, "09-interfaces.csv"):
        assert i["type"] in iface_types
        assert (i["speed"] == "") == (i["type"] in ("virtual", "lag", "other")), i
    assert {c["type"] for c in rows(tables, "10-cables.csv")} <= set(CABLE_TYPES.values())
    assert {a["role"] for a in rows(tables, "14-ip-addresses.csv")} <= IP_ROLES
    shared = [a["address"] for a in rows(tables, "14-ip-addresses.csv") if a["role"] != "vrrp"]
    assert len(shared) == len(set(shared)), "only a VRR gateway may repeat (NetBox's unique check exempts vrrp)"


def test_written_by_plan_beside_the_other_artifacts(tmp_path):
    files = render_netbox(stack_layout("lab"), tmp_path)
    assert {p.parent for p in files} == {tmp_path / "netbox"}
    assert sorted(p.name for p in files) == sorted(netbox_tables(desired_objects(stack_layout("lab"))))


@pytest.mark.parametrize("stack", ["lab", "dgx-h100-ib"])
def test_plan_rows_write_what_the_objects_write(stack):
    """The plan writes the interface, cable and address tables from the view's rows (a shape per
    kind, no object per row); the Nautobot publisher reads the objects: the same text from both."""
    layout = stack_layout(stack)
    assert render_netbox(layout, Path("out")) == {
        Path("out") / "netbox" / name: text for name, text in netbox_tables(desired_objects(layout)).items()}


POWER_COLUMNS = {  # NetBox 4.x PowerPanelImportForm, PowerFeedImportForm, PowerPort/PowerOutletImportForm
    "15-power-panels.csv": ["site", "location", "name", "tags"],
    "16-power-feeds.csv": ["site", "power_panel", "location", "rack", "name", "status", "type", "supply", "phase",
                           "voltage", "amperage", "max_utilization", "tags"],
    "17-power-ports.csv": ["device", "name", "type", "maximum_draw", "allocated_draw", "tags"],
    "18-power-outlets.csv": ["device", "name", "type", "power_port", "tags"],
    "19-power-cables.csv": ["side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type",
                            "side_b_name", "status", "label", "tags"],
    "20-feed-cables.csv": ["side_a_device", "side_a_type", "side_a_name", "side_b_site", "side_b_power_panel",
                           "side_b_type", "side_b_name", "status", "label", "tags"],
}
# values of NetBox's (and Nautobot's) PowerPortTypeChoices / PowerOutletTypeChoices the plan uses
PORT_TYPES = {"", "iec-60320-c20", "iec-60309-3p-n-e-6h", "iec-60309-3p-e-9h"}
OUTLET_TYPES = {"", "iec-60320-c19"}


def test_power_rows_name_existing_objects(tables):
    for name, header in POWER_COLUMNS.items():
        assert tables[name].splitlines()[0].split(",") == header, name
    locations = {r["name"] for r in rows(tables, "03-locations.csv")}
    racks = {r["name"]: r["location"] for r in rows(tables, "04-racks.csv")}
    devices = {r["name"]: r for r in rows(tables, "08-devices.csv")}
    panels = {r["name"]: r for r in rows(tables, "15-power-panels.csv")}
    assert panels and all(p["location"] in locations for p in panels.values())
    feeds = rows(tables, "16-power-feeds.csv")
    pdus = [n for n, d in devices.items() if d["role"] == "pdu"]
    assert len(feeds) == len(pdus) > 0
    for f in feeds:
        assert f["power_panel"] in panels and racks[f["rack"]] == f["location"] == panels[f["power_panel"]]["location"]
        assert f["type"] in ("primary", "redundant") and f["supply"] == "ac"
        assert f["phase"] in ("single-phase", "three-phase") and int(f["voltage"]) > 0 and int(f["amperage"]) > 0
    ports = {(r["device"], r["name"]) for r in rows(tables, "17-power-ports.csv")}
    assert all(d in devices for d, _ in ports) and {(p, "input") for p in pdus} <= ports
    outlets = rows(tables, "18-power-outlets.csv")
    assert outlets and all((o["device"], o["power_port"]) in ports for o in outlets)


def test_psus_are_cabled_to_outlets_of_their_racks_pdus(tables):
    """Every node PSU plugs into an outlet of a PDU in its own rack, the first half on side A, the
    rest on B; no outlet or PSU is used twice; an outlet a C20 inlet plugs into is a C19."""
    devices = {r["name"]: r for r in rows(tables, "08-devices.csv")}
    ports = {(r["device"], r["name"]): r for r in rows(tables, "17-power-ports.csv")}
    outlets = {(r["device"], r["name"]): r for r in rows(tables, "18-power-outlets.csv")}
    assert {p["type"] for p in ports.values()} <= PORT_TYPES and {o["type"] for o in outlets.values()} <= OUTLET_TYPES
    psus = {k for k in ports if k[1].startswith("psu")}
    cables = rows(tables, "19-power-cables.csv")
    plugged = [(c["side_a_device"], c["side_a_name"]) for c in cables]
    used = [(c["side_b_device"], c["side_b_name"]) for c in cables]
    assert sorted(plugged) == sorted(psus), "every PSU cabled, once"
    assert len(set(used)) == len(used) and set(used) <= set(outlets), "outlets exist and take one plug each"
    per_node: dict[str, int] = {}
    for node, _ in psus:
        per_node[node] = per_node.get(node, 0) + 1
    for c in cables:
        assert (c["side_a_type"], c["side_b_type"]) == ("dcim.powerport", "dcim.poweroutlet")
        node, psu, pdu = c["side_a_device"], c["side_a_name"], c["side_b_device"]
        assert devices[pdu]["role"] == "pdu" and devices[pdu]["rack"] == devices[node]["rack"], c["label"]
        side = "a" if int(psu.removeprefix("psu")) <= (per_node[node] + 1) // 2 else "b"
        assert pdu.rsplit("-pdu-", 1)[1][0] == side, f"{node}:{psu} on {pdu}"
        outlet = outlets[(pdu, c["side_b_name"])]
        assert (outlet["type"] == "iec-60320-c19") == (ports[(node, psu)]["type"] == "iec-60320-c20")
    assert all(o["type"] == "" for k, o in outlets.items() if k not in set(used)), "free outlets: type unknown"


def test_pdu_inputs_are_cabled_to_their_feeds(tables):
    site = rows(tables, "02-sites.csv")[0]["name"]
    feeds = {(f["power_panel"], f["name"]): f for f in rows(tables, "16-power-feeds.csv")}
    devices = {r["name"]: r for r in rows(tables, "08-devices.csv")}
    ports = {(r["device"], r["name"]) for r in rows(tables, "17-power-ports.csv")}
    cables = rows(tables, "20-feed-cables.csv")
    assert sorted((c["side_b_power_panel"], c["side_b_name"]) for c in cables) == sorted(feeds), "each feed once"
    for c in cables:
        assert (c["side_a_type"], c["side_a_name"], c["side_b_type"], c["side_b_site"]) == (
            "dcim.powerport", "input", "dcim.powerfeed", site)
        assert (c["side_a_device"], "input") in ports
        assert devices[c["side_a_device"]]["rack"] == feeds[(c["side_b_power_panel"], c["side_b_name"])]["rack"]


def test_pdu_plug_follows_its_circuit():
    from topology.render.dcim import pdu_inlet
    assert pdu_inlet(415, 3) == "iec-60309-3p-n-e-6h"  # 240/415 V wye: 3P+N+E at 6 h
    assert pdu_inlet(208, 3) == "iec-60309-3p-e-9h"  # 208 V delta (APC AP8886): 3P+E at 9 h
    assert pdu_inlet(230, 1) == "" and pdu_inlet(480, 3) == ""
