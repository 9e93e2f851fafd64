"""build(spec) -> Layout: composes the builders and checks the invariants that must hold."""

from __future__ import annotations

from topology import catalog
from topology.layout import ipam
from topology.layout.border import border_addresses, border_asns, border_cables, border_uplinks
from topology.layout.cabling import with_cables
from topology.layout.fabric import compute_fabric, names_for, size_compute, storage_fabric
from topology.layout.inband import inband_fabric
from topology.layout.inband_services import service_links
from topology.layout.mgmt_net import oob_uplinks
from topology.layout.model import Layout, Link
from topology.layout.oob_routing import upstream_asns
from topology.layout.racks import place_racks
from topology.layout.storage_converged import storage_junction
from topology.spec import PodSpec


def check_ports(links: list[Link]) -> None:
    """No port carries two cables: a bug in a builder, never a user error."""
    seen: set[tuple[str, str]] = set()
    for link in links:
        for end in ((link.a_device, link.a_port), (link.b_device, link.b_port)):
            if end in seen:
                raise AssertionError(f"port used twice: {end[0]} {end[1]}")
            seen.add(end)


def build(spec: PodSpec) -> Layout:
    cat = catalog.load()
    sizing = size_compute(spec, cat)
    names = names_for(spec, sizing)
    ufm = spec.compute_fabric.fabric_manager
    devices, links, tiers = compute_fabric(spec, cat, sizing, names)
    for builder in (storage_fabric, inband_fabric):
        d, lk, t = builder(spec, cat, names, ufm)
        devices += d
        links += lk
        tiers += t
    links += storage_junction(spec, cat, devices, links)  # storage over the in-band bond (option)
    devices, oob_links, racks, rack_positions = place_racks(spec, cat, names, devices)
    links += oob_links
    links += oob_uplinks(spec, cat, devices, links)
    border = border_uplinks(spec, cat, devices, links)  # north-south: the in-band cores to the site
    links += service_links(spec, cat, devices, links + border)  # UFM and storage servers' in-band bonds
    check_ports(links + border)
    links = with_cables(spec, cat, links, devices, racks)
    addresses, asns = ipam.plan(spec, cat, sizing, devices, links, racks, rack_positions)
    border = border_cables(spec, cat, border, devices, racks)
    addresses += border_addresses(spec, border)
    asns += border_asns(spec, devices, asns)
    asns += upstream_asns(links, asns)  # after the border's: the cores keep theirs
    facts = {
        "tiers": sizing.tiers,
        "nodes": sum(1 for d in devices if d.role == "gpu_node"),
        "gpus": sum(1 for d in devices if d.role == "gpu_node") * cat.nodes[spec.node_model].gpu_count,
        "rails": sizing.rails,
        "link_speed_gbps": sizing.speed,
        "leaf_ports_down": sizing.slots,
        "leaf_ports_up": sizing.up,
        "spines_end_state": sizing.spines_max,
        "blocks_end_state": sizing.blocks_max if sizing.tiers == 3 else 0,
        "sus_per_block": sizing.block_sus if sizing.tiers == 3 else 0,
        "cores": sizing.cores,
    }
    return Layout(
        spec=spec,
        devices=tuple(devices),
        links=tuple(links),
        racks=tuple(racks),
        addresses=tuple(addresses),
        asns=tuple(asns),
        tiers=tuple(tiers),
        facts=facts,
        border_links=tuple(border),
    )
