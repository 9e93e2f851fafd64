"""The layout's vocabulary: plain frozen data, no behaviour beyond lookups.

Devices, links and addresses are made by the hundred thousand at 100k GPUs, and frozen=True's
`__init__` sets each field through `object.__setattr__` (several times slower, a tenth of a big
plan's CPU): they are frozen by convention instead (hashable by value, never assigned to; a
changed copy comes from `dataclasses.replace`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention (see above)
class Device:
    name: str
    role: str  # gpu_node, leaf, spine, core, storage_leaf, storage_spine, storage_server, ...
    model: str
    su: int | None = None  # 1-based scalable unit, None for pod-wide gear
    rack: str | None = None
    rail: int | None = None  # rail leaves only
    block: int | None = None  # spines of a three-tier fabric
    power_kw: float = 0.0
    rack_units: int = 0
    slot: int = 0  # position among its kind in the end state; addresses and ASNs derive from it
    rack_unit: int | None = None  # lowest unit it occupies, 1 = bottom; None for zero-U gear (PDUs)


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention (see above)
class Link:
    a_device: str
    a_port: str
    b_device: str
    b_port: str
    fabric: str  # compute, storage, inband, oob
    tier: str  # node-leaf, leaf-spine, spine-core, ...
    speed_gbps: int
    slot: int = -1  # position among its tier's links in the end state (addresses derive from it)
    length_class: str = ""  # in_rack, same_row, cross_row
    media: str = ""  # DAC, ACC, AOC, MMF, SMF, CAT6
    length_m: float = 0.0  # stock length to order
    a_part: str = ""  # what plugs into the a end: a transceiver, or the cable assembly itself
    b_part: str = ""
    cable_part: str = ""  # the fiber between two transceivers, or the assembly
    a_shared: int = 1  # links that share the a end's module or splitter (breakout)
    b_shared: int = 1
    cable_count: int = 1  # cables the link takes (an 800G twin-port optic: two fibres, one per port)
    cable_shared: int = 1  # links one cable serves (a breakout assembly or a 1:2 splitter fibre)


@dataclass(frozen=True, slots=True)
class Rack:
    name: str
    row: int  # 0-based
    position: int  # 1-based within the row
    kind: str  # compute, network, infra, cdu
    su: int | None
    budget_kw: float
    planned_kw: float
    liquid_kw: float
    air_kw: float
    cooling: str
    rack_units_used: int
    ordinal: int = 0  # position among the end state's rack positions (OOB subnets derive from it)
    feed_capacity_kw: float = 0.0  # one feed's continuous rating (2N: it may carry the rack alone)
    feed_loss_kw: float = 0.0  # what the surviving feed carries when the other fails
    on_feed_loss: str = "full load"  # or which gear is power-capped by its PSU layout


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention (see above)
class Address:
    device: str
    interface: str
    address: str  # with prefix length, e.g. 100.64.0.1/31
    network: str
    pool: str
    peer: str = ""  # the other end of a point-to-point link, or the gateway


@dataclass(frozen=True, slots=True)
class Asn:
    device: str
    asn: int
    scope: str  # leaf, spine-group, top-tier, storage-leaf, storage-top-tier


@dataclass(frozen=True, slots=True)
class Tier:
    """Counts and oversubscription of one tier, for the summary and the purchase order."""

    fabric: str
    role: str
    switches: int
    down_ports: int
    up_ports: int
    model: str
    speed_gbps: int  # its down ports
    up_speed_gbps: int = 0  # its uplinks (switch-to-switch, the cage's native speed); 0: as speed_gbps

    @property
    def down_gbps(self) -> int:
        return self.down_ports * self.speed_gbps

    @property
    def up_gbps(self) -> int:
        """Oversubscription is down_gbps : up_gbps (bandwidth, not ports)."""
        return self.up_ports * (self.up_speed_gbps or self.speed_gbps)


@dataclass(frozen=True)
class Layout:
    spec: object  # topology.spec.PodSpec
    devices: tuple[Device, ...]
    links: tuple[Link, ...]
    racks: tuple[Rack, ...] = ()
    addresses: tuple[Address, ...] = ()
    asns: tuple[Asn, ...] = ()
    tiers: tuple[Tier, ...] = ()
    facts: dict = field(default_factory=dict)  # derived numbers worth printing (tiers, blocks, ...)
    border_links: tuple[Link, ...] = ()  # in-band cores to the site's border (its end is no device of ours)

    @cached_property
    def by_name(self) -> dict[str, Device]:
        return {d.name: d for d in self.devices}

    def role(self, role: str) -> list[Device]:
        return [d for d in self.devices if d.role == role]

    @cached_property
    def first_address(self) -> dict[tuple[str, str], Address]:
        """Each device's first address in each pool, by (device, pool): what devices.csv, the
        inventory and the telemetry targets read (each scanned every address for it)."""
        out: dict[tuple[str, str], Address] = {}
        for a in self.addresses:
            out.setdefault((a.device, a.pool), a)
        return out

    @cached_property
    def addresses_by_device(self) -> dict[str, list[Address]]:
        out: dict[str, list[Address]] = {}
        for a in self.addresses:
            out.setdefault(a.device, []).append(a)
        return out
