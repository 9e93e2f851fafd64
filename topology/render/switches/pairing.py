"""The in-band pair section: per-node bonds, the MLAG / EVPN-MH pairing and the VRR gateway.

Each node's two in-band ports land on the two switches of its SU's pair (the mgmt nodes' on the
two in-band cores); both switches bond that node's port under the same id, and both answer for
the subnet's .1 gateway (ipam: `vlan10` own address, `vlan10-v0` the shared VRR address).
"""

from __future__ import annotations

from dataclasses import replace

from topology.layout.ipam import INBAND_VLAN
from topology.layout.model import Address, Device, Link
from topology.render.switches.intent import Bond, Pairing, Svi
from topology.render.switches.sections import far_end, port_key

BOND_TIERS = ("node-inband", "mgmt-core", "service-inband")
PRIORITY = (1000, 2000)  # side a is the MLAG primary / EVPN-MH designated forwarder
DF_PREFERENCE = (50000, 10000)  # higher wins the DF election


def bond_id(node: Device, nodes_per_su: int) -> int:
    """A node's position in its SU (gpu nodes) or among the mgmt nodes, 1-based: the same on both
    switches of the pair, and stable as SUs are added."""
    return (node.slot % nodes_per_su if node.role == "gpu_node" else node.slot) + 1


def bonds(device: str, links: list[Link], nodes: dict[str, Device], nodes_per_su: int) -> tuple[Bond, ...]:
    members: dict[str, list[str]] = {}
    ids: dict[str, int] = {}
    for lk in links:
        if lk.tier in BOND_TIERS:
            local, peer, _ = far_end(lk, device)
            members.setdefault(peer, []).append(local)
            # an appliance's link slot is its place after the mgmt nodes (topology/layout/inband_services.py)
            ids[peer] = lk.slot + 1 if lk.tier == "service-inband" else bond_id(nodes[peer], nodes_per_su)
    out = [Bond(f"bond{ids[peer]}", tuple(ports), peer, ids[peer], INBAND_VLAN) for peer, ports in members.items()]
    return tuple(sorted(out, key=lambda b: b.pair_id))


def pair_index(device: Device) -> int:
    """0 for the in-band cores, 1 + the pair's ordinal for a switch pair (the SU for an SU's
    only pair): keys the pair's MACs."""
    return device.slot // 2 + 1 if device.role == "inband_switch" else 0


def side(device: Device) -> int:
    return device.slot % 2


def system_mac(index: int) -> str:
    # Cumulus reserves 44:38:39:ff:00:00-44:38:39:ff:ff:ff for MLAG system MACs.
    return f"44:38:39:ff:{index >> 8 & 0xFF:02x}:{index & 0xFF:02x}"


def vrr_mac(index: int) -> str:
    return f"00:00:5e:00:01:{index % 255 + 1:02x}"  # VRID 1..255: each pair is its own L2 domain


def pairing(
    mode: str, device: Device, peer: Device, links: list[Link], own: dict[str, Address], theirs: dict[str, Address],
    mgmt_port: str,
) -> Pairing:
    """`own` / `theirs`: this switch's and the peer's planned addresses by interface."""
    peer_ports = sorted((far_end(lk, device.name)[0] for lk in links if lk.tier == "inband-peer"), key=port_key)
    s = side(device)
    return Pairing(
        mode=mode,
        peer=peer.name,
        peer_link=tuple(peer_ports) if mode == "mlag" else (),
        backup_ip=_ip(theirs.get(mgmt_port)),
        system_mac=system_mac(pair_index(device)),
        priority=PRIORITY[s] if mode == "mlag" else DF_PREFERENCE[s],
        source_ip=_ip(own.get(f"vlan{INBAND_VLAN}")),
        peer_ip=_ip(theirs.get(f"vlan{INBAND_VLAN}")),
    )


def _ip(a: Address | None) -> str:
    return a.address.split("/")[0] if a else ""


def gateway_svis(own: dict[str, Address], device: Device) -> tuple[Svi, ...]:
    """Every in-band gateway this switch shares with its pair: vlan10 (the nodes' or the mgmt
    nodes' subnet) and, on the services pair, the appliances' vlan11, vlan12, ... (ipam.py)."""
    out = []
    for name, mine in own.items():
        vlan = name.removeprefix("vlan")
        if mine.pool == "inband" and vlan.isdigit() and int(vlan) >= INBAND_VLAN and f"{name}-v0" in own:
            out.append(Svi(int(vlan), mine.address, own[f"{name}-v0"].address, vrr_mac(pair_index(device))))
    return tuple(sorted(out, key=lambda s: s.vlan))


def subnet_vlans(bonds: tuple[Bond, ...], own: dict[str, Address],
                 addresses_by_device: dict[str, list[Address]]) -> tuple[Bond, ...]:
    """Each bond in the VLAN of its host's subnet: an appliance's is vlan11+ (its own subnet)."""
    vlan_of = {a.network: int(a.interface.removeprefix("vlan")) for a in own.values()
               if a.pool == "inband" and a.interface.removeprefix("vlan").isdigit()}
    out = []
    for b in bonds:
        host = next((a for a in addresses_by_device.get(b.peer, ()) if a.interface == "bond0"), None)
        out.append(replace(b, access_vlan=vlan_of.get(host.network, b.access_vlan)) if host else b)
    return tuple(out)


def gateway_svi(own: dict[str, Address], device: Device) -> Svi | None:
    mine, shared = own.get(f"vlan{INBAND_VLAN}"), own.get(f"vlan{INBAND_VLAN}-v0")
    if mine is None or shared is None:
        return None
    return Svi(INBAND_VLAN, mine.address, shared.address, vrr_mac(pair_index(device)))
