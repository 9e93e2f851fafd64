"""Neighbor records from ibnetdiscover's topology file (run on a node or on UFM).

The format (ibnetdiscover(8), TOPOLOGY FILE FORMAT): a block per node, its header line
`Switch  64 "S-<guid>"  # "<NodeDescription>" enhanced port 0 lid 1 lmc 0` or
`Ca  1 "H-<guid>"  # "<NodeDescription>"`, then one line per connected port:
`[<port>](<portguid>)?  "<type>-<peer guid>"[<peer port>](<peer portguid>)?  # ... <width>x<speed>`.

Node GUIDs mean nothing to the plan; node descriptions do. A host's HCA describes itself as
"<hostname> mlx5_N" (the kernel's default), a Quantum switch as "MF0;<hostname>:MQM9700/U1"
(MLNX-OS and NVOS) or plainly by the name set with `ibswitches`/`smpquery nodedesc`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from topology import catalog
from topology.errors import SpecError
from topology.operate.neighbors import Neighbor, Plan

_NODE = re.compile(r'^(Switch|Ca|Rt)\s+\d+\s+"([SHR])-([0-9a-fA-F]+)"\s*#\s*"([^"]*)"')
_LINK = re.compile(
    r'^\[(\d+)\](?:\([0-9a-fA-F]+\))?\s+"([SHR])-([0-9a-fA-F]+)"\[(\d+)\](?:\([0-9a-fA-F]+\))?\s*(?:#(.*))?$'
)
_WIDTH_SPEED = re.compile(r"\b(\d+)x(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR)\b")
# Per-lane data rate in Gb/s, as the IBTA names them (4x HDR = 200G, 4x NDR = 400G, 2x NDR = 200G).
LANE_GBPS = {"SDR": 2.5, "DDR": 5, "QDR": 10, "FDR10": 10, "FDR": 14, "EDR": 25, "HDR": 50, "NDR": 100, "XDR": 200}
_SWITCH_DESC = re.compile(r"^(?:MF0;)?([^:;\s]+)")

PortNamer = Callable[[str, str | None, int], str]


def link_speed_gbps(width: int, speed: str) -> int:
    return int(width * LANE_GBPS[speed])


def describe(desc: str, node_type: str) -> tuple[str, str | None]:
    """(device name, HCA name or None) from a NodeDescription."""
    if node_type == "S":
        m = _SWITCH_DESC.match(desc.strip())
        return (m.group(1) if m else desc.strip()), None
    host, _, hca = desc.strip().partition(" ")
    return host, (hca.strip() or None)


def parse_ibnetdiscover(text: str, port_name: PortNamer, source: str = "") -> tuple[list[Neighbor], set[str]]:
    """Neighbor records from both ends of every link, and the devices the fabric holds."""
    nodes: dict[str, tuple[str, str | None]] = {}
    links: list[tuple[str, int, str, int, int | None]] = []
    current = None
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if m := _NODE.match(line):
            current = m.group(3).lower()
            nodes[current] = describe(m.group(4), m.group(2))
            continue
        if m := _LINK.match(line):
            if current is None:
                raise SpecError(f"{source or 'ibnetdiscover'} line {n}", "a port line before any node line")
            ws = _WIDTH_SPEED.search(m.group(5) or "")
            speed = link_speed_gbps(int(ws.group(1)), ws.group(2)) if ws else None
            links.append((current, int(m.group(1)), m.group(3).lower(), int(m.group(4)), speed))
    if not nodes:
        raise SpecError(source or "ibnetdiscover", "no Switch or Ca node lines: not ibnetdiscover output")
    out = []
    for guid, port, peer_guid, peer_port, speed in links:
        if peer_guid not in nodes:
            continue  # a peer outside the discovered part: its own block names it when it is there
        (dev, hca), (peer, peer_hca) = nodes[guid], nodes[peer_guid]
        out.append(Neighbor((dev, port_name(dev, hca, port)), (peer, port_name(peer, peer_hca, peer_port)),
                            speed, source))
    return out, {dev for dev, _ in nodes.values()}


class PlanPortNames:
    """IB port numbers and HCAs to the port names the plan uses (cabling.csv)."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.cat = catalog.load()
        self._hca: dict[str, dict[str, str]] = {}

    def _hca_netdevs(self, device: str) -> dict[str, str]:
        if device not in self._hca:
            model = self.cat.nodes.get(self.plan.models.get(device, ""))
            names: dict[str, str] = {}
            if model is not None:
                names |= {nic.hca: nic.netdev("infiniband") for nic in model.compute_nics}
                names |= {nic.hca: nic.netdev("infiniband") for nic in model.storage_nics}
            self._hca[device] = names
        return self._hca[device]

    def __call__(self, device: str, hca: str | None, port: int) -> str:
        if hca is None:
            sw = self.cat.switches.get(self.plan.models.get(device, ""))
            if sw is None:
                return str(port)
            per_cage = min(sw.lanes.values())  # IB numbers every logical port of a twin-port cage
            cage, sub = divmod(port - 1, per_cage)
            return sw.port_name.format(cage=cage + 1, sub=sub + sw.sub_base)
        if port == 1 and (netdev := self._hca_netdevs(device).get(hca)):
            return netdev
        if port == 1 and (m := re.fullmatch(r"mlx5_(\d+)", hca)):
            return f"ib{m.group(1)}"  # appliances (UFM) name their IB ports ib0, ib1, ...
        return f"{hca}/{port}"
