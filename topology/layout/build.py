"""build(spec) -> Layout: the list of stages, each a pure function over the layout so far.

compute -> storage -> in-band -> converged storage -> racks (and OOB) -> OOB uplinks -> border ->
services -> cables -> addresses (and ASNs). A stage reads what the stages before it placed and
returns the draft with what it adds; none edits what another placed. The order is the plan's:
later stages take the ports, cages and pool entries the earlier ones left free."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import chain
from operator import attrgetter

from topology import catalog
from topology.catalog import Catalog
from topology.layout import ipam
from topology.layout.border import border_addresses, border_asns, border_cables, border_uplinks
from topology.layout.cabling import with_cables
from topology.layout.fabric import ComputeSizing, compute_fabric, names_for, size_compute, storage_fabric
from topology.layout.inband import inband_fabric
from topology.layout.inband_services import service_links
from topology.layout.mgmt_net import oob_uplinks
from topology.layout.model import Address, Asn, Device, Layout, Link, Rack, Tier
from topology.layout.names import Names
from topology.layout.oob_routing import upstream_asns
from topology.layout.racks import place_racks
from topology.layout.storage_converged import storage_junction
from topology.spec import PodSpec


@dataclass(frozen=True)
class Draft:
    """The layout so far: what every stage reads, and what each adds to."""

    spec: PodSpec
    cat: Catalog
    sizing: ComputeSizing
    names: Names
    devices: list[Device] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)  # between our own devices
    border: list[Link] = field(default_factory=list)  # the in-band cores' uplinks: their far end is the site's
    tiers: list[Tier] = field(default_factory=list)
    racks: list[Rack] = field(default_factory=list)
    rack_positions: int = 0
    addresses: list[Address] = field(default_factory=list)
    asns: list[Asn] = field(default_factory=list)

    def every_link(self) -> list[Link]:
        """Ours and the border's: what a stage placing ports reads as taken."""
        return self.links + self.border


def compute(d: Draft) -> Draft:
    devices, links, tiers = compute_fabric(d.spec, d.cat, d.sizing, d.names)
    return replace(d, devices=d.devices + devices, links=d.links + links, tiers=d.tiers + tiers)


def storage(d: Draft) -> Draft:
    devices, links, tiers = storage_fabric(d.spec, d.cat, d.names, d.spec.compute_fabric.fabric_manager)
    return replace(d, devices=d.devices + devices, links=d.links + links, tiers=d.tiers + tiers)


def inband(d: Draft) -> Draft:
    devices, links, tiers = inband_fabric(d.spec, d.cat, d.names, d.spec.compute_fabric.fabric_manager)
    return replace(d, devices=d.devices + devices, links=d.links + links, tiers=d.tiers + tiers)


def converged_storage(d: Draft) -> Draft:
    """Storage over the in-band bond (an option): the in-band switches' links to the storage leaves."""
    return replace(d, links=d.links + storage_junction(d.spec, d.cat, d.devices, d.links))


def racks(d: Draft) -> Draft:
    """Every device into a rack, and each rack's OOB switch cabled to the gear in it."""
    devices, oob_links, placed, rack_positions = place_racks(d.spec, d.cat, d.names, d.devices)
    return replace(d, devices=devices, links=d.links + oob_links, racks=placed, rack_positions=rack_positions)


def oob(d: Draft) -> Draft:
    return replace(d, links=d.links + oob_uplinks(d.spec, d.cat, d.devices, d.links))


def border(d: Draft) -> Draft:
    """North-south: the in-band cores' uplinks to the site's border routers (kept apart from our
    own links: the cables, addresses and the layout read them apart)."""
    return replace(d, border=d.border + border_uplinks(d.spec, d.cat, d.devices, d.every_link()))


def services(d: Draft) -> Draft:
    """UFM appliances' and storage servers' in-band bonds, in the cages the border left free."""
    return replace(d, links=d.links + service_links(d.spec, d.cat, d.devices, d.every_link()))


def cables(d: Draft) -> Draft:
    """Length, media and parts of every link; the border's are optics to the site's end."""
    check_ports(d.every_link())
    return replace(d, links=with_cables(d.spec, d.cat, d.links, d.devices, d.racks),
                   border=border_cables(d.spec, d.cat, d.border, d.devices, d.racks))


def addresses(d: Draft) -> Draft:
    """Addresses and ASNs: the fabrics' from their pools, then the border's /31s and ASN, then the
    ASN of the in-band switches the OOB uplinks reach (after the border's: the cores keep theirs)."""
    planned, asns = ipam.plan(d.spec, d.cat, d.sizing, d.devices, d.links, d.racks, d.rack_positions)
    planned += border_addresses(d.spec, d.border)
    asns += border_asns(d.spec, d.devices, asns)
    asns += upstream_asns(d.links, asns)
    return replace(d, addresses=d.addresses + planned, asns=d.asns + asns)


STAGES: tuple[Callable[[Draft], Draft], ...] = (
    compute, storage, inband, converged_storage, racks, oob, border, services, cables, addresses,
)


def check_ports(links: list[Link]) -> None:
    """No port carries two cables: a bug in a stage, never a user error. The ends are counted in C
    (600k at 100k GPUs); only when some end repeats are they walked for the first that does."""
    ends = list(chain.from_iterable(zip(map(_A_END, links), map(_B_END, links), strict=True)))
    if len(set(ends)) == len(ends):
        return
    seen: set[tuple[str, str]] = set()
    for end in ends:
        if end in seen:
            raise AssertionError(f"port used twice: {end[0]} {end[1]}")
        seen.add(end)


_A_END, _B_END = attrgetter("a_device", "a_port"), attrgetter("b_device", "b_port")


def facts(d: Draft) -> dict:
    """Derived numbers worth printing (the plan's summary)."""
    sizing = d.sizing
    nodes = sum(1 for dev in d.devices if dev.role == "gpu_node")
    return {
        "tiers": sizing.tiers,
        "nodes": nodes,
        "gpus": nodes * d.cat.nodes[d.spec.node_model].gpu_count,
        "rails": sizing.rails,
        "link_speed_gbps": sizing.speed,
        "leaf_ports_down": sizing.slots,
        "leaf_ports_up": sizing.up,
        "spines_end_state": sizing.spines_max,
        "blocks_end_state": sizing.blocks_max if sizing.tiers == 3 else 0,
        "sus_per_block": sizing.block_sus if sizing.tiers == 3 else 0,
        "cores": sizing.cores,
    }


def build(spec: PodSpec) -> Layout:
    cat = catalog.load()
    sizing = size_compute(spec, cat)
    d = Draft(spec, cat, sizing, names_for(spec, sizing))
    for stage in STAGES:
        d = stage(d)
    return Layout(
        spec=spec,
        devices=tuple(d.devices),
        links=tuple(d.links),
        racks=tuple(d.racks),
        addresses=tuple(d.addresses),
        asns=tuple(d.asns),
        tiers=tuple(d.tiers),
        facts=facts(d),
        border_links=tuple(d.border),
    )
