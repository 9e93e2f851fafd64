"""In-band Ethernet for the pod's appliances: UFM appliances and storage servers.

They sit beside the mgmt nodes on the switch pair that holds the pod services' subnet (the
in-band cores in two tiers, the services pair `inband-svc-a/b` in three), each appliance's
in-band ports (catalog `inband_ports` at `inband_speed_gbps`: breakout legs of a whole cage)
split over the pair's two switches and bonded like a node's (`bond0`), its
address in the services subnet after the mgmt nodes' with the pair's VRR gateway (ipam.py).

Ports are positional: whole cages neither the end state's switch or spine links reserve nor
any other cable holds (the mgmt nodes', peer links, OOB and border uplinks, all fixed by the
spec), from the top down on a core and from the bottom up on the services pair (its uplinks and
peer links are at the top). The appliances are ordered UFM (by slot), then storage servers (by
slot); none depends on the SU count, so growing the pod moves none of them. Link slot: the
host's place among the services subnet's hosts (mgmt nodes first), also its bond id - 1.
"""

from __future__ import annotations

from math import ceil

from topology.catalog import Catalog
from topology.catalog.ports import cages_used
from topology.errors import SpecError
from topology.layout.border import reserved_core_cages
from topology.layout.cabled_ports import ports_used
from topology.layout.inband import SIDES, size_inband, svc_name
from topology.layout.model import Device, Link
from topology.spec import PodSpec

TIER = "service-inband"
ROLES = ("ufm", "storage_server")


def service_hosts(cat: Catalog, devices: list[Device]) -> list[Device]:
    """The appliances with in-band ports, in their positional order."""
    hosts = [d for d in devices if d.role in ROLES and cat.appliances[d.model].inband_ports]
    return sorted(hosts, key=lambda d: (ROLES.index(d.role), d.slot))


def link_speed(speeds: dict[int, int], wanted: int, fallback: int) -> int:
    """The appliances' port speed where the switch offers it (a breakout leg), else the slowest
    switch speed above it, else the in-band hosts' speed."""
    return min((v for v in speeds if v >= wanted), default=fallback) if wanted else fallback


def service_links(spec: PodSpec, cat: Catalog, devices: list[Device], links: list[Link]) -> list[Link]:
    hosts = service_hosts(cat, devices)
    if not hosts:
        return []
    ib = spec.management.inband
    sz = size_inband(spec, cat)
    if sz.tiers == 2:
        pair = [d.name for d in sorted(devices, key=lambda d: d.slot) if d.role == "inband_core"][:SIDES]
        sw = cat.switches[ib.core_switch_model or ib.switch_model]
        cages = list(range(sw.cages - 1, reserved_core_cages(spec, cat) - 1, -1))
        model_field = "core_switch_model"
    else:
        pair = [svc_name(s) for s in range(SIDES)]
        sw = cat.switches[ib.switch_model]
        cages = list(range(sz.first_peer // sw.lanes[sw.native_gbps]))
        model_field = "switch_model"  # the services pair is an SU pair's model
    speed = link_speed(sw.lanes, max(cat.appliances[h.model].inband_speed_gbps for h in hosts), sz.speed)
    used = ports_used(links, set(pair))
    lanes = sw.lanes[speed]
    taken = {s: cages_used(sw, used.get(s, set())) for s in pair}
    free = {s: [k for k in cages if k not in taken[s]] for s in pair}
    need: dict[str, int] = dict.fromkeys(pair, 0)
    out: list[Link] = []
    for h, host in enumerate(hosts):
        app = cat.appliances[host.model]
        for p in range(app.inband_ports):
            side = pair[p % len(pair)]
            j = need[side]
            need[side] += 1
            cage, lane = divmod(j, lanes)
            port = sw.port(free[side][cage] * lanes + lane, speed) if cage < len(free[side]) else ""
            out.append(Link(host.name, app.inband_port(p + 1), side, port, "inband", TIER, speed,
                            slot=ib.mgmt_nodes + h))
    short = [s for s in pair if ceil(need[s] / lanes) > len(free[s])]
    if short:
        s = short[0]
        raise SpecError(
            "storage_fabric.storage_servers",
            f"in-band fabric: the UFM appliances' and storage servers' {need[s]} in-band ports on {s} need "
            f"{ceil(need[s] / lanes)} free cages; it has {len(free[s])} beside its other links (fewer "
            f"storage_servers, management.oob.aggregation_uplinks: 1, or a larger management.inband.{model_field})",
        )
    return out
