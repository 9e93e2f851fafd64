"""The objects a DCIM/IPAM system should hold for a layout, in neutral terms (site, rows, racks,
makers, device types and roles, devices at rack units, interfaces, cables, prefixes, addresses,
ASNs, tags). Both the NetBox CSVs (topology/render/netbox.py) and the Nautobot publisher
(topology/publish/nautobot.py) are drawn from this one set, so the two never disagree."""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

from netaddr import IPNetwork

from topology.catalog import load as load_catalog
from topology.layout.model import Layout
from topology.layout.names import row_letters
from topology.render.labels import cable_ids, tiers_numbered_uniquely

OWNER_TAG = "superpod"  # marks what we created: only tagged objects are ever deleted (with --prune)

# Interface type slugs shared by NetBox and Nautobot (dcim InterfaceTypeChoices), by link speed.
ETHERNET_TYPES = {
    1: "1000base-t",
    10: "10gbase-x-sfpp",
    25: "25gbase-x-sfp28",
    100: "100gbase-x-qsfp28",
    200: "200gbase-x-qsfp56",
    400: "400gbase-x-osfp",
    800: "800gbase-x-osfp",
}
INFINIBAND_TYPES = {200: "infiniband-hdr", 400: "infiniband-ndr", 800: "infiniband-xdr"}
# Cable type slugs (dcim CableTypeChoices) by the plan's medium.
CABLE_TYPES = {"DAC": "dac-passive", "ACC": "dac-active", "AOC": "aoc", "MMF": "mmf", "SMF": "smf", "CAT6": "cat6"}
ROLE_COLORS = {  # hex without '#', as both systems store it
    "gpu_node": "76b900", "leaf": "2196f3", "spine": "3f51b5", "core": "673ab7", "pdu": "9e9e9e",
}


@dataclass(frozen=True)
class Rack:
    name: str
    row: str  # rack group (Nautobot) / location (NetBox): "row-a"
    u_height: int
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeviceType:
    model: str
    manufacturer: str
    description: str
    u_height: int


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention: made by the hundred thousand (model.py)
class Device:
    name: str
    role: str
    device_type: str
    rack: str | None
    position: int | None  # lowest unit occupied; None: zero-U (PDUs) or unracked
    asn: int | None
    tags: tuple[str, ...] = ()


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention: made by the hundred thousand (model.py)
class Interface:
    device: str
    name: str
    type: str
    speed_kbps: int | None  # only physical interfaces carry a speed
    mgmt_only: bool = False


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention: made by the hundred thousand (model.py)
class Cable:
    a_device: str
    a_interface: str
    b_device: str
    b_interface: str
    type: str
    length_m: float
    label: str
    tags: tuple[str, ...] = ()

    @property
    def ends(self) -> frozenset[tuple[str, str]]:
        return frozenset({(self.a_device, self.a_interface), (self.b_device, self.b_interface)})


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention: made by the hundred thousand (model.py)
class Prefix:
    prefix: str
    pool: str
    kind: str  # container (a pool) or network


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention: made by the hundred thousand (model.py)
class IpAddress:
    address: str  # with prefix length
    pool: str
    interfaces: tuple[tuple[str, str], ...]  # (device, interface); a VRR gateway sits on two
    role: str = ""  # loopback or vrrp (NetBox lets a shared gateway repeat only with such a role)


@dataclass(frozen=True)
class PowerPanel:
    name: str  # one per rack row and feed side: the plan holds no electrical room, so panels are per row
    row: str


@dataclass(frozen=True)
class PowerFeed:
    name: str  # <rack>-feed-<suffix>, the suffix of the PDU it supplies
    panel: str
    rack: str
    side: str  # a or b: 2N feeds, a primary, b redundant (Nautobot's power_path)
    voltage: int  # line-to-line for three-phase, from the PDU model
    amperage: int
    phase: str  # single-phase or three-phase (Nautobot/NetBox choice values)
    max_utilization: int = 80  # continuous-load limit (NEC 210.19/210.20), as racks.py sizes the feeds


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention: made by the hundred thousand (model.py)
class PowerPort:
    device: str
    name: str
    maximum_draw_w: int | None = None  # a PSU's rating; None for a PDU's input (beyond the field's range)
    allocated_draw_w: int | None = None  # the node's planned draw shared over its PSUs
    type: str = ""  # plug/inlet (NetBox/Nautobot choice value); "" where the plan cannot say


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention: made by the hundred thousand (model.py)
class PowerOutlet:
    device: str
    name: str
    power_port: str  # the PDU input that feeds it
    type: str = ""  # a C19 where a PSU's C20 plugs in; "" for the outlets left free (the catalog names none)


@dataclass(frozen=True)
class PowerCable:
    feed: str  # a PDU's input on its rack's feed
    device: str
    port: str
    label: str


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention: one per node PSU (model.py)
class PsuCable:
    device: str  # a node
    port: str  # its PSU: psu1..N
    pdu: str
    outlet: str
    label: str


@dataclass(frozen=True)
class Power:
    panels: tuple[PowerPanel, ...] = ()
    feeds: tuple[PowerFeed, ...] = ()
    ports: tuple[PowerPort, ...] = ()
    outlets: tuple[PowerOutlet, ...] = ()
    cables: tuple[PowerCable, ...] = ()
    psu_cables: tuple[PsuCable, ...] = ()  # NetBox CSVs only (not published to Nautobot)

    def templates(self, model_of: dict[str, str]) -> tuple[dict, dict]:
        """Ports and outlets per device type (the first device of each type), as device-type
        templates: Nautobot gives every new device of the type its components in one step."""
        ports: dict = {}
        outlets: dict = {}
        first: dict[str, str] = {}
        for p in self.ports:
            if first.setdefault(model_of[p.device], p.device) == p.device:
                ports[(model_of[p.device], p.name)] = p
        for o in self.outlets:
            if first.get(model_of[o.device]) == o.device:
                outlets[(model_of[o.device], o.name)] = o
        return ports, outlets


Shape = Callable[..., object]  # a row's shared fields -> what a writer makes of them once (tables.RowShape)


def tuple_of(*fields) -> tuple:
    return fields


def shaped(rows: Iterable[tuple[tuple, tuple]]) -> Callable[[Shape], Iterator[tuple[object, tuple]]]:
    """Rows given as (shared fields, own values) with `shape` of the shared fields in their place,
    made once per distinct set of them (told apart by repr: 0.0 and -0.0, or 1 and True, are equal
    keys but not one text)."""

    def rows_with(shape: Shape) -> Iterator[tuple[object, tuple]]:
        made: dict[str, object] = {}
        for kind, values in rows:
            key = repr(kind)
            s = made.get(key)
            if s is None:
                s = made[key] = shape(*kind)
            yield s, values

    return rows_with


@dataclass(frozen=True)
class Desired:
    site: str
    rows: tuple[str, ...]
    racks: tuple[Rack, ...]
    manufacturers: tuple[str, ...]
    device_types: tuple[DeviceType, ...]
    roles: tuple[str, ...]
    devices: tuple[Device, ...]
    interfaces: tuple[Interface, ...]
    cables: tuple[Cable, ...]
    prefixes: tuple[Prefix, ...]
    addresses: tuple[IpAddress, ...]
    tags: tuple[str, ...]
    power: Power = Power()
    extra: dict = field(default_factory=dict)

    def interface_rows(self, shape: Shape = tuple_of) -> Iterator[tuple[object, tuple[str, str]]]:
        return shaped(((i.type, i.speed_kbps, i.mgmt_only), (i.device, i.name)) for i in self.interfaces)(shape)

    def cable_rows(self, shape: Shape = tuple_of) -> Iterator[tuple[object, tuple[str, str, str, str, str]]]:
        return shaped(((c.type, c.length_m, c.tags), (c.a_device, c.a_interface, c.b_device, c.b_interface, c.label))
                      for c in self.cables)(shape)

    def prefix_rows(self, shape: Shape = tuple_of) -> Iterator[tuple[object, tuple[str]]]:
        return shaped(((p.pool, p.kind), (p.prefix,)) for p in self.prefixes)(shape)

    def address_rows(self, shape: Shape = tuple_of) -> Iterator[tuple[object, tuple[str, str, str]]]:
        return shaped(((a.pool, a.role), (a.address, dev, ifname))
                      for a in self.addresses for dev, ifname in a.interfaces)(shape)

    @cached_property
    def counts(self) -> dict[str, int]:
        return {
            "locations": 1, "rack_groups": len(self.rows), "racks": len(self.racks),
            "manufacturers": len(self.manufacturers), "device_types": len(self.device_types),
            "roles": len(self.roles), "devices": len(self.devices), "interfaces": len(self.interfaces),
            "cables": len(self.cables), "prefixes": len(self.prefixes), "ip_addresses": len(self.addresses),
            "ip_assignments": sum(len(a.interfaces) for a in self.addresses),
            "asns": sum(1 for d in self.devices if d.asn is not None), "tags": len(self.tags),
            "power_panels": len(self.power.panels), "power_feeds": len(self.power.feeds),
            "power_ports": len(self.power.ports), "power_outlets": len(self.power.outlets),
            "power_cables": len(self.power.cables),
        }


def row_name(row: int) -> str:
    return f"row-{row_letters(row)}"


def su_tag(su: int) -> str:
    return f"su-{su:02d}"


def rail_tag(rail: int) -> str:
    return f"rail-{rail}"


def _manufacturer_and_description(model: str) -> tuple[str, str]:
    cat = load_catalog()
    for table in (cat.nodes, cat.switches, cat.appliances):
        if model in table:
            text = table[model].description
            maker = "NVIDIA" if table is cat.switches or text.startswith("NVIDIA") else "Generic"
            return maker, text
    for table in (cat.pdus, cat.cdus):
        if model in table:
            vendor = table[model].vendor
            return ("Generic" if vendor in ("generic", "dmtf") else vendor.capitalize()), model
    return "Generic", model


@functools.cache  # port names repeat on every device of a model: tens of thousands of calls
@functools.lru_cache(maxsize=4096)  # the same port names and speeds on every device of a model
def _interface_type(name: str, speed: int | None, infiniband: bool) -> tuple[str, int | None]:
    if name == "lo" or name.startswith("vlan"):
        return "virtual", None
    if name.startswith("bond"):
        return "lag", None
    if speed is None:
        return "other", None
    table = INFINIBAND_TYPES if infiniband else ETHERNET_TYPES
    return table.get(speed, "other"), speed * 1_000_000


@functools.cache  # one tuple per (SU, rail), shared by every device and cable there
def _device_tags(su: int | None, rail: int | None) -> tuple[str, ...]:
    tags = [OWNER_TAG]
    if su is not None:
        tags.append(su_tag(su))
    if rail is not None:
        tags.append(rail_tag(rail))
    return tuple(tags)


def desired_objects(layout: Layout) -> Desired:
    """Every object at once, as the Nautobot publisher diffs them."""
    view = desired_view(layout)
    return Desired(
        site=view.site,
        rows=view.rows,
        racks=view.racks,
        manufacturers=view.manufacturers,
        device_types=view.device_types,
        roles=view.roles,
        devices=view.devices,
        interfaces=tuple(view.interfaces),
        cables=tuple(view.cables),
        prefixes=tuple(view.prefixes),
        addresses=tuple(view.addresses),
        tags=view.tags,
        power=view.power,
    )


class DesiredView:
    """The same objects as desired_objects, for a writer that takes one kind at a time (the NetBox
    CSVs): interfaces, cables, prefixes and addresses are made again on each read, one by one,
    never held. At 100k GPUs they were most of a plan's peak memory (issue 39)."""

    def __init__(self, layout: Layout):
        spec = layout.spec
        self.layout = layout
        self.site = spec.name
        asn_of = {a.device: a.asn for a in layout.asns}
        self.racks = tuple(Rack(r.name, row_name(r.row), spec.racks.rack_units, _device_tags(r.su, None))
                           for r in layout.racks)
        self.rows = tuple(dict.fromkeys(r.row for r in self.racks))
        models: dict[str, int] = {}
        for d in layout.devices:
            models[d.model] = max(models.get(d.model, 0), d.rack_units)
        self.device_types = tuple(DeviceType(m, *_manufacturer_and_description(m), u) for m, u in models.items())
        self.manufacturers = tuple(sorted({t.manufacturer for t in self.device_types}))
        self.devices = tuple(
            Device(d.name, d.role, d.model, d.rack, d.rack_unit, asn_of.get(d.name), _device_tags(d.su, d.rail))
            for d in layout.devices
        )
        self.roles = tuple(dict.fromkeys(d.role for d in self.devices))
        tags = [OWNER_TAG]
        tags += sorted({t for d in self.devices for t in d.tags if t != OWNER_TAG})
        self.tags = tuple(dict.fromkeys(tags))

    @property
    def interfaces(self) -> Iterator[Interface]:
        """Every cabled port (with the link's speed) and every addressed one (lo, vlans, bonds)."""
        return (Interface(*end, *kind) for kind, end in self.interface_rows())

    def interface_rows(self, shape: Shape = tuple_of) -> Iterator[tuple[object, tuple[str, str]]]:
        """The interfaces as (shape(type, speed_kbps, mgmt_only), (device, name)): a writer's text
        for the fields many interfaces share, made once per distinct set (a few dozen over 70k
        interfaces at 8k GPUs), and the names; no object per interface (issue 39)."""
        layout = self.layout
        ib_compute = layout.spec.compute_fabric.kind == "infiniband"
        speeds: dict[tuple[str, str], int] = {}  # every cabled port, with its (last) link's speed
        mgmt: set[tuple[str, str]] = set()
        ib_ports: set[tuple[str, str]] = set()
        for lk in layout.links:  # both ends at once, each end's tuple made once (67k ends at 8k GPUs)
            a, b, speed = (lk.a_device, lk.a_port), (lk.b_device, lk.b_port), lk.speed_gbps
            speeds[a] = speed
            speeds[b] = speed
            if ib_compute and lk.fabric == "compute":
                ib_ports.add(a)
                ib_ports.add(b)
            if lk.tier == "device-oob":  # the managed end is a BMC or management port
                mgmt.add(a)
        made: dict[tuple, object] = {}  # (type, speed_kbps, mgmt_only) -> its shape: ports of a kind share one
        shapes: dict[tuple, object] = {}  # (name, speed, infiniband, mgmt) -> its shape

        def shape_of(name: str, speed: int | None, ib: bool, managed: bool) -> object:
            kind = (*_interface_type(name, speed, ib), managed)
            s = shapes[(name, speed, ib, managed)] = made.get(kind) or made.setdefault(kind, shape(*kind))
            return s

        for end, speed in speeds.items():
            ib, managed = end in ib_ports, end in mgmt
            yield shapes.get((end[1], speed, ib, managed)) or shape_of(end[1], speed, ib, managed), end
        # then the addressed ports no link ends on (lo, vlans, bonds), once each in order of first use,
        # found by C iterators (60k addresses at 8k GPUs, 3k such ports)
        for end in dict.fromkeys(itertools.filterfalse(
                speeds.__contains__, map(operator.attrgetter("device", "interface"), layout.addresses))):
            ib, managed = end in ib_ports, end in mgmt
            yield shapes.get((end[1], None, ib, managed)) or shape_of(end[1], None, ib, managed), end

    @property
    def cables(self) -> Iterator[Cable]:
        return (Cable(a, a_if, b, b_if, kind, length, label, tags)
                for (kind, length, tags), (a, a_if, b, b_if, label) in self.cable_rows())

    def cable_rows(self, shape: Shape = tuple_of) -> Iterator[tuple[object, tuple[str, str, str, str, str]]]:
        """The cables as (shape(type, length_m, tags), (a device, a interface, b device, b
        interface, label)), the shape made once per distinct medium, length, SU and rail."""
        layout = self.layout
        numbered = tiers_numbered_uniquely(layout)  # the labels' ids, without their placement text
        su_rail = {d.name: (d.su, d.rail) for d in layout.devices}  # a lookup per end, not a device's attributes
        shapes: dict[tuple, object] = {}
        for lk, label in zip(layout.links, cable_ids(layout.links, numbered), strict=True):
            # a cable carries the SU and rail of the rail leaf (or node) it serves: the a end's, else the b end's
            a_su, a_rail = su_rail[lk.a_device]
            b_su, b_rail = su_rail[lk.b_device]
            key = (lk.media, lk.length_m, a_su if a_su is not None else b_su, a_rail if a_rail is not None else b_rail)
            s = shapes.get(key)
            if s is None:
                s = shape(CABLE_TYPES.get(lk.media, "other"), lk.length_m, _device_tags(key[2], key[3]))
                if lk.length_m:  # never a zero: 0.0 and -0.0 are one key but two texts (tables.GFormats)
                    shapes[key] = s
            yield s, (lk.a_device, lk.a_port, lk.b_device, lk.b_port, label)

    @property
    def prefixes(self) -> Iterator[Prefix]:
        return (Prefix(prefix, pool, kind) for (pool, kind), (prefix,) in self.prefix_rows())

    def prefix_rows(self, shape: Shape = tuple_of) -> Iterator[tuple[object, tuple[str]]]:
        """The pools (containers), then each network in the order of its first address, as
        (shape(pool, kind), (prefix,)), the shape made once per pool and kind."""
        pools = {k: v for k, v in self.layout.spec.addressing.model_dump().items() if isinstance(v, str) and "/" in v}
        containers = [(str(IPNetwork(net).cidr), pool) for pool, net in pools.items()]
        for prefix, pool in containers:
            yield shape(pool, "container"), (prefix,)
        seen = {prefix for prefix, _ in containers}
        shapes: dict[str, object] = {}
        for a in self.layout.addresses:
            if a.network not in seen:
                seen.add(a.network)
                s = shapes.get(a.pool)
                if s is None:
                    s = shapes[a.pool] = shape(a.pool, "network")
                yield s, (a.network,)

    @property
    def addresses(self) -> Iterator[IpAddress]:
        """One per address, in the order of first use; an address on several interfaces (a
        shared gateway) names them all. Only those few are indexed: an entry per address was
        100 MB at 100k GPUs (issue 39)."""
        shared = self._shared_addresses()
        for a in self.layout.addresses:
            ifs = shared.get(a.address)
            if ifs is None:  # on one interface (nearly all): _address_role's answer for it, inline
                role = "loopback" if a.interface == "lo" and a.address.endswith("/32") else ""
                yield IpAddress(a.address, a.pool, ((a.device, a.interface),), role)
            elif ifs:  # its first use; emptied once written
                yield IpAddress(a.address, a.pool, tuple(ifs), _address_role(a.address, ifs))
                ifs.clear()

    def address_rows(self, shape: Shape = tuple_of) -> Iterator[tuple[object, tuple[str, str, str]]]:
        """The addresses' interface assignments in `addresses`' order, as (shape(pool, role),
        (address, device, interface)), the shape made once per pool and role."""
        shared = self._shared_addresses()
        shapes: dict[tuple[str, str], object] = {}
        for a in self.layout.addresses:
            ifs = shared.get(a.address)
            if ifs is None:
                role = "loopback" if a.interface == "lo" and a.address.endswith("/32") else ""
                s = shapes.get((a.pool, role))
                if s is None:
                    s = shapes[(a.pool, role)] = shape(a.pool, role)
                yield s, (a.address, a.device, a.interface)
            elif ifs:
                s = shape(a.pool, _address_role(a.address, ifs))  # a shared gateway: a few dozen
                for dev, ifname in ifs:
                    yield s, (a.address, dev, ifname)
                ifs.clear()

    def _shared_addresses(self) -> dict[str, list[tuple[str, str]]]:
        """The addresses used more than once -> every (device, interface) they are on."""
        addresses = self.layout.addresses
        seen: set[str] = set()
        shared: dict[str, list] = {}
        for a in addresses:
            if a.address in seen:
                shared[a.address] = []
            else:
                seen.add(a.address)
        del seen
        for a in addresses:
            if a.address in shared:
                shared[a.address].append((a.device, a.interface))
        return shared

    @cached_property
    def power(self) -> Power:
        return power_objects(self.layout, self.racks)


def desired_view(layout: Layout) -> DesiredView:
    return DesiredView(layout)


PDU_INPUT = "input"
C20_MAX_KW = 3.68  # IEC 60320 C20 inlet: 16 A, 3.68 kW at 230 V; a bigger PSU's inlet is left blank
PSU_INLET, PSU_OUTLET = "iec-60320-c20", "iec-60320-c19"  # the C20 inlet and the PDU outlet it mates with


def pdu_inlet(volts: int, phases: int) -> str:
    """A three-phase PDU's IEC 60309 plug by its circuit's voltage (the plug's clock position):
    3P+N+E at 6 h for 380-415 V, 3P+E at 9 h for 200-250 V (208 V delta); others left blank."""
    if phases == 3 and 380 <= volts <= 415:
        return "iec-60309-3p-n-e-6h"
    if phases == 3 and 200 <= volts <= 250:
        return "iec-60309-3p-e-9h"
    return ""


def power_objects(layout: Layout, racks: tuple[Rack, ...]) -> Power:
    """Panels, A/B feeds, PDU inputs and outlets, node PSUs. Each PDU (<rack>-pdu-<suffix>) has its
    own feed from its side's panel, rated as the PDU's circuit (catalog volts/amps/phases). A node's
    PSUs are split evenly over A and B (the first half on A); each side's PSUs in a rack take the
    side's PDUs in turn, each PDU its outlets in order (a convention: the plan names no outlet)."""
    cat = load_catalog()
    row_of = {r.name: r.row for r in racks}
    panels: dict[str, PowerPanel] = {}
    feeds, ports, cables = [], [], []
    pdus: dict[tuple[str, str], list] = {}  # (rack, side) -> [(pdu name, outlet count)]
    psus: dict[tuple[str, str], list] = {}  # (rack, side) -> [(node, psu)]
    node_psus: dict[str, tuple] = {}  # _node_psus by node model, as models are met
    for d in layout.devices:
        if d.role == "pdu" and d.model in cat.pdus and d.rack in row_of:
            pdu = cat.pdus[d.model]
            suffix = d.name.rsplit("-pdu-", 1)[-1]
            side = suffix[0]
            panel = panels.setdefault(f"{row_of[d.rack]}-panel-{side}",
                                      PowerPanel(f"{row_of[d.rack]}-panel-{side}", row_of[d.rack]))
            feed = PowerFeed(f"{d.rack}-feed-{suffix}", panel.name, d.rack, side, pdu.volts, pdu.amps,
                             "three-phase" if pdu.phases == 3 else "single-phase")
            feeds.append(feed)
            ports.append(PowerPort(d.name, PDU_INPUT, type=pdu_inlet(pdu.volts, pdu.phases)))
            pdus.setdefault((d.rack, side), []).append((d.name, pdu.outlets))
            cables.append(PowerCable(feed.name, d.name, PDU_INPUT, f"PW-{feed.name}"))
        elif d.model in cat.nodes:
            known = node_psus.get(d.model)
            if known is None:
                known = node_psus[d.model] = _node_psus(cat.nodes[d.model])
            psu_w, inlet, names, a_side = known
            share = round(d.power_kw * 1000 / len(names)) if d.power_kw else None
            ports += [PowerPort(d.name, psu, psu_w, share, inlet) for psu in names]
            if d.rack:
                psus.setdefault((d.rack, "a"), []).extend((d.name, psu) for psu in names[:a_side])
                psus.setdefault((d.rack, "b"), []).extend((d.name, psu) for psu in names[a_side:])
    psu_cables, used = _psu_outlets(pdus, psus)
    mates = {p.device for p in ports if p.type == PSU_INLET and p.name.startswith("psu")}  # C20 PSUs' nodes
    order = {name: i for i, name in enumerate(d.name for d in layout.devices)}
    # each PDU's outlets in order, the PDUs in the devices' order (as the outlets were sorted before the cabling)
    boards = sorted((board for names in pdus.values() for board in names), key=lambda board: order[board[0]])
    outlets = []
    for name, count in boards:
        plugged = used.get(name, {})
        outlets += [PowerOutlet(name, outlet, PDU_INPUT, PSU_OUTLET if plugged.get(outlet) in mates else "")
                    for outlet in _outlet_names(count)]
    return Power(tuple(panels.values()), tuple(feeds), tuple(ports), tuple(outlets), tuple(cables),
                 tuple(psu_cables))


def _node_psus(node) -> tuple[int, str, tuple[str, ...], int]:
    """A node model's PSUs' rating, inlet, names and how many are on side A (once per model)."""
    names = tuple(f"psu{n}" for n in range(1, node.psus + 1))
    return round(node.psu_kw * 1000), PSU_INLET if node.psu_kw <= C20_MAX_KW else "", names, -(-node.psus // 2)


@functools.cache  # a PDU model's outlet count: outlet1..N, shared by every PDU of it
def _outlet_names(count: int) -> tuple[str, ...]:
    return tuple(f"outlet{n}" for n in range(1, count + 1))


def _psu_outlets(pdus: dict, psus: dict) -> tuple[list[PsuCable], dict[str, dict[str, str]]]:
    """Each side's PSUs in a rack over that side's PDUs in turn, next free outlet on each; PSUs
    beyond the outlets there are left uncabled (tests check the stacks' racks have room). Also each
    PDU's used outlets: outlet -> the node plugged in."""
    cables, used = [], {}
    for (rack, side), plugs in psus.items():
        boards = pdus.get((rack, side), [])
        if not boards:
            continue
        taken = [0] * len(boards)
        names = [_outlet_names(count) for _, count in boards]
        for i, (node, psu) in enumerate(plugs):
            k = i % len(boards)
            name, count = boards[k]
            if taken[k] == count:
                continue
            outlet = names[k][taken[k]]
            taken[k] += 1
            used.setdefault(name, {})[outlet] = node
            cables.append(PsuCable(node, psu, name, outlet, f"PW-{node}-{psu}"))
    return cables, used


def _address_role(address: str, ifs: list) -> str:
    if address.endswith("/32") and all(i == "lo" for _, i in ifs):
        return "loopback"
    if len(ifs) > 1:
        return "vrrp"
    return ""
