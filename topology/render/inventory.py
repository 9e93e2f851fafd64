"""The Ansible inventory: the one contract between the layout and the roles.

Host vars of GPU nodes are defined here, typed (`GpuNodeVars`, `RailVars`), and checked
again by each role's meta/argument_specs.yml. Generated files carry a header and are
rewritten whole; `group_vars/all/overrides.yml` is the user's and is only created once.
Secrets are never written: BMC credentials are references to vault variables.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict

from topology import catalog
from topology.layout.ipam import rail_pod_aggregate
from topology.layout.model import Device, Layout
from topology.layout.names import row_letters
from topology.render import rollout
from topology.render.files import GENERATED
from topology.render.pieces import Pieces, pieces_of
from topology.render.slurm_plan import SlurmPlan, slurm_plan
from topology.render.switches.build import FABRIC_OF_ROLE, switch_os
from topology.render.switches.intent import HOST_RAIL_MTU

ROLE_GROUPS = {
    "gpu_node": "gpu_nodes",
    "leaf": "leaf_switches",
    "spine": "spine_switches",
    "core": "core_switches",
    "storage_leaf": "storage_leaf_switches",
    "storage_spine": "storage_spine_switches",
    "storage_server": "storage_servers",
    "inband_switch": "inband_switches",
    "inband_core": "inband_core_switches",
    "inband_spine": "inband_spine_switches",
    "oob_switch": "oob_switches",
    "oob_aggregation": "oob_aggregation_switches",
    "mgmt_node": "mgmt_nodes",
    "ufm": "ufm",
}
DATA_ONLY_ROLES = ("pdu", "cdu")  # monitored, not managed over SSH
HOST_ROLES = ("gpu_node", "mgmt_node", "storage_server", "ufm")  # every other role is a switch
# The switches `superpod plan` renders a configuration for (switch_fabric pushes it): every
# Ethernet switch, whatever its role; InfiniBand switches are the subnet manager's.
ETHERNET_SWITCHES = "ethernet_switches"
# The user's hand-kept file: created once with this seed, never rewritten (public: the Pulumi
# program creates it the same way and never deletes an edited one).
OVERRIDES = Path("group_vars/all/overrides.yml")
OVERRIDES_SEED = (
    "# Hand-kept overrides for this pod. `superpod plan` never rewrites this file.\n"
    "# Variables here win over the generated 00_generated.yml beside it (files load in name order).\n"
    "---\n{}\n"
)


class _Vars(BaseModel):
    # strict: a value is checked as it is, never converted, so the mapping that passes is what the
    # model would dump, and is written as it came (model_dump was a tenth of the inventory's CPU)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class RailVars(_Vars):
    rail: int
    gpu: int
    hca: str
    netdev: str
    numa: int
    leaf: str
    leaf_port: str
    address: str  # with prefix length; "" on InfiniBand without IPoIB
    peer: str  # leaf address (p2p) or gateway (per_leaf); "" when none
    speed_mbps: int  # the link to the leaf as planned (sysfs `speed` reports Mb/s)
    mtu: int | None  # RoCE: the host rail MTU; None on InfiniBand (IPoIB's MTU is rail_network's choice)


class RailPodVars(_Vars):
    """A GPU NIC's routed pod prefix (addressing.rail_pods): its leaf holds `gateway`, the node's pods
    take the rest (roles/gpu_operator: one nv-ipam CIDRPool per rail)."""

    rail: int
    netdev: str
    prefix: str
    gateway: str
    aggregate: str  # the rail's block of pod prefixes in the end state (ipam.rail_pod_aggregate)


class HostNicVars(_Vars):
    netdev: str
    hca: str
    address: str
    gateway: str


class GpuNodeVars(_Vars):
    ansible_host: str
    superpod_bmc_address: str
    superpod_su: int
    superpod_rack: str
    superpod_row: str
    superpod_node_model: str
    superpod_gpu_model: str
    superpod_gpu_count: int
    superpod_nvswitch: bool
    superpod_numa_nodes: int
    superpod_fabric_kind: str
    superpod_rail_speed_gbps: int  # the node model's compute NIC speed (node_check reads the HCA port rate)
    superpod_inband_interface: str
    superpod_inband_address: str  # with prefix length (roles/host_network configures the bond with it)
    superpod_inband_members: list[str]
    superpod_inband_gateway: str
    superpod_storage_nics: list[HostNicVars]
    rails: list[RailVars]
    superpod_rail_pods: list[RailPodVars]  # empty unless the plan has addressing.rail_pods


class SwitchVars(_Vars):
    ansible_host: str  # OOB management address
    superpod_role: str
    superpod_model: str
    superpod_rack: str
    superpod_su: int | None
    superpod_loopback: str | None
    superpod_asn: int | None
    superpod_switch_os: str | None  # cumulus | sonic (its fabric's switch_os); None: InfiniBand


def group_name(text: str) -> str:
    """Ansible group names: letters, digits and underscores."""
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def _index(layout: Layout) -> tuple[dict, dict, dict, dict]:
    """Addresses by (device, interface), of hosts and switches' loopbacks only (what host vars
    read: the switches' point-to-point addresses were most of the index, 80 MB at 100k GPUs), and
    the leaves' pod gateways by (leaf, "rail_pods", the NIC's address);
    the first by (device, pool); ASNs by device; rows by rack."""
    hosts = {d.name for d in layout.devices if d.role in HOST_ROLES}
    addr: dict[tuple[str, str], object] = {}
    for a in layout.addresses:
        if a.pool == "rail_pods":  # beside the leaf's rail address on one interface: known by the NIC it serves
            addr[(a.device, "rail_pods", a.peer)] = a
        elif a.interface == "lo" or a.device in hosts:
            addr[(a.device, a.interface)] = a
    by_pool = layout.first_address  # read for in-band and OOB addresses only
    asn = {a.device: a.asn for a in layout.asns}
    rows = {r.name: r.row for r in layout.racks}
    return addr, by_pool, asn, rows


def _ip(a) -> str:
    return a.address.split("/")[0] if a is not None else ""


def node_nics(node: catalog.NodeModel, kind: str, storage_kind: str) -> tuple[tuple, tuple, list[str]]:
    """What a node model's NICs give each node of it, worked out once per model: its rails' (gpu, hca,
    netdev, numa) in GPU order, its storage NICs' (netdev, hca), its in-band bond members."""
    ordered = sorted(node.compute_nics, key=lambda n: n.gpu)
    rails = tuple((nic.gpu, nic.hca, nic.netdev(kind), nic.numa) for nic in ordered)
    storage = tuple((nic.netdev(storage_kind), nic.hca) for nic in node.storage_nics)
    return rails, storage, [n.netdev("ethernet") for n in node.inband_nics]


def gpu_node_vars(layout: Layout, d: Device, addr, by_pool, rows, leaf_ports, link_speeds,
                  nics: dict | None = None) -> dict:
    """A node's vars, checked as GpuNodeVars (strict: the mapping written is the one checked, in
    the model's field order); `nics`: node_nics by model, filled as models are met (a caller's memo).
    The nested vars go in as mappings: GpuNodeVars validates them as RailVars, RailPodVars and
    HostNicVars in one call (the same checks as one model each, a tenth of the inventory's CPU)."""
    cat = catalog.load()
    spec = layout.spec
    node = cat.nodes[d.model]
    kind = spec.compute_fabric.kind
    nics = {} if nics is None else nics
    known = nics.get(d.model)
    if known is None:
        known = nics[d.model] = node_nics(node, kind, cat.switches[spec.storage_fabric.switch_model].kind)
    rail_nics, storage_nics, inband_members = known
    mtu = HOST_RAIL_MTU if kind == "roce" else None
    rails, pods = [], []
    for gpu, hca, netdev, numa in rail_nics:
        a = addr.get((d.name, netdev))
        leaf, leaf_port = leaf_ports[(d.name, netdev)]
        rails.append({"rail": gpu, "gpu": gpu, "hca": hca, "netdev": netdev, "numa": numa, "leaf": leaf,
                      "leaf_port": leaf_port, "address": a.address if a else "", "peer": a.peer if a else "",
                      "speed_mbps": link_speeds[(d.name, netdev)] * 1000, "mtu": mtu})
        pod = addr.get((leaf, "rail_pods", _ip(a))) if a is not None else None
        if pod is not None:
            pods.append({"rail": gpu, "netdev": netdev, "prefix": pod.network, "gateway": _ip(pod),
                         "aggregate": rail_pod_aggregate(spec, gpu)})
    storage = []
    for netdev, hca in storage_nics:
        a = addr.get((d.name, netdev))
        if a is not None:
            storage.append({"netdev": netdev, "hca": hca, "address": a.address, "gateway": a.peer})
    inband = by_pool.get((d.name, "inband"))
    hv = {
        "ansible_host": _ip(inband),
        "superpod_bmc_address": _ip(by_pool.get((d.name, "oob"))),
        "superpod_su": d.su,
        "superpod_rack": d.rack,
        "superpod_row": row_letters(rows[d.rack]),
        "superpod_node_model": d.model,
        "superpod_gpu_model": node.gpu,
        "superpod_gpu_count": node.gpu_count,
        "superpod_nvswitch": node.nvswitch,
        "superpod_numa_nodes": node.numa_nodes,
        "superpod_fabric_kind": kind,
        "superpod_rail_speed_gbps": node.compute_nic_speed_gbps,
        "superpod_inband_interface": inband.interface if inband else "bond0",
        "superpod_inband_address": inband.address if inband else "",
        "superpod_inband_members": list(inband_members),
        "superpod_inband_gateway": inband.peer if inband else "",
        "superpod_storage_nics": storage,
        "rails": rails,
        "superpod_rail_pods": pods,
    }
    GpuNodeVars.model_validate(hv)
    return hv


def _monitoring(layout: Layout, by_pool, rows) -> dict:
    cat = catalog.load()
    su_name = {d.name: f"su{d.su:02d}" for d in layout.devices if d.su is not None}
    racks = [
        {
            "name": r.name,
            "row": row_letters(r.row),
            "su": f"su{r.su:02d}" if r.su else None,
            "budget_kw": r.budget_kw,
            "planned_kw": r.planned_kw,
            "cooling": r.cooling,
        }
        for r in layout.racks
    ]
    pdus, cdus = [], []
    for d in layout.devices:
        if d.role == "pdu":
            model = cat.pdus[d.model]
            pdus.append(
                {
                    "name": d.name,
                    "rack": d.rack,
                    "row": row_letters(rows[d.rack]),
                    "su": su_name.get(d.name),
                    "feed": d.name.rsplit("-", 1)[1][0].upper(),
                    "address": _ip(by_pool.get((d.name, "oob"))),
                    "protocol": model.protocol,
                    "profile": model.vendor,
                    "model": d.model,
                }
            )
        elif d.role == "cdu":
            model = cat.cdus[d.model]
            cdus.append(
                {
                    "name": d.name,
                    "rack": d.rack,
                    "row": row_letters(rows[d.rack]),
                    "su": su_name.get(d.name),
                    "address": _ip(by_pool.get((d.name, "oob"))),
                    "protocol": model.protocol,
                    "redfish_id": "1",
                    "capacity_kw": model.capacity_kw,
                }
            )
    return {"ashrae_class": layout.spec.racks.ashrae_class, "racks": racks, "pdus": pdus, "cdus": cdus}


def _yaml(doc: dict, what: str) -> str:
    # libyaml's emitter when present: the pure-Python one takes seconds on big pods
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    body = yaml.dump(doc, Dumper=dumper, sort_keys=False, default_flow_style=False, width=200)
    return f"# {what}: {GENERATED}\n---\n{body}"


def _vars_yaml(doc: dict, what: str) -> str:
    """group_vars with the monitoring lists (a rack, PDU or CDU each: thousands at 100k GPUs) one
    item per line as a flow mapping, as hosts.yml writes hosts: JSON is YAML, json.dumps is C code,
    and PyYAML's representer is Python even with libyaml's emitter (a twentieth of a plan)."""
    flow = ("superpod_slurm", "superpod_monitoring")  # the Slurm node lines too: one per rack
    lines = [_yaml({k: v for k, v in doc.items() if k not in flow}, what).rstrip("\n")]
    for name in flow:
        lines.append(f"{name}:")
        for key, value in doc[name].items():
            if isinstance(value, list) and value:
                lines.append(f"  {key}:")
                lines += [f"  - {json.dumps(item)}" for item in value]
            else:
                lines.append(f"  {key}: {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def _hosts_yaml(children: dict[str, list], host_vars: Callable[[Device], dict], what: str) -> Iterator[str]:
    """hosts.yml with one line per host: its vars as a flow mapping. JSON is YAML, and
    json.dumps is C code: a 100k-GPU inventory renders in seconds, not minutes. A group lists
    devices (their vars made here, each dropped once written: 250 MB at 100k GPUs held at once)
    or names (no vars); the text comes in pieces of up to 1,024 lines."""
    lines = [f"# {what}: {GENERATED}", "---", "all:", "  children:"]
    for group, hosts in children.items():
        if not hosts:
            lines.append(f"    {group}: {{}}")
            continue
        lines += [f"    {group}:", "      hosts:"]
        for host in hosts:
            if isinstance(host, str):
                lines.append(f"        {host}:")
            else:
                lines.append(f"        {host.name}: {json.dumps(host_vars(host))}")
            if len(lines) >= 1024:
                yield "\n".join(lines) + "\n"
                lines = []
    if lines:
        yield "\n".join(lines) + "\n"


def ethernet_switch_os(layout: Layout, d: Device) -> str | None:
    """The OS of a switch whose configuration the plan renders, None for any other device."""
    fabric = FABRIC_OF_ROLE.get(d.role)
    model = catalog.load().switches.get(d.model)
    if fabric is None or model is None or model.kind != "ethernet":
        return None
    return switch_os(layout.spec, fabric)


def render_inventory(layout: Layout, root: Path, slurm: SlurmPlan | None = None) -> dict[Path, str]:
    """Files of the inventory under `root` (inventories/<stack>/ or <out>/inventory/); `slurm`: the
    Slurm plan when the caller built it already (`superpod plan` also writes the Slurm files from it)."""
    return {path: "".join(pieces_of(content)) for path, content in iter_inventory(layout, root, slurm)}


def iter_inventory(layout: Layout, root: Path, slurm: SlurmPlan | None = None) -> Iterator[tuple[Path, Pieces]]:
    """render_inventory's files one at a time, hosts.yml in pieces: a host's vars are made as its
    line is written."""
    addr, by_pool, asn, rows = _index(layout)
    leaf_ports: dict[tuple[str, str], tuple[str, str]] = {}  # a node's NIC -> its leaf and port
    link_speeds: dict[tuple[str, str], int] = {}
    service_members: dict[str, list[str]] = {}  # mgmt nodes' and appliances' in-band bond members
    for lk in layout.links:  # one pass over the links for the three (330k links at 100k GPUs)
        if lk.tier == "node-leaf":
            end = (lk.a_device, lk.a_port)
            leaf_ports[end] = (lk.b_device, lk.b_port)
            link_speeds[end] = lk.speed_gbps
        elif lk.tier in ("mgmt-core", "service-inband"):
            service_members.setdefault(lk.a_device, []).append(lk.a_port)
    groups: dict[str, list[Device]] = {g: [] for g in ROLE_GROUPS.values()}
    switch_oses: dict[str, str | None] = {}  # a switch's superpod_switch_os
    ethernet_devices: list[Device] = []
    su_groups: dict[str, list[str]] = {}
    rack_groups: dict[str, list[str]] = {}
    for d in layout.devices:
        if d.role in DATA_ONLY_ROLES:
            continue
        if d.role not in HOST_ROLES:
            os_name = switch_oses[d.name] = ethernet_switch_os(layout, d)
            if os_name is not None:
                ethernet_devices.append(d)
        groups[ROLE_GROUPS[d.role]].append(d)
        if d.su is not None:
            su_groups.setdefault(f"su{d.su:02d}", []).append(d.name)
        rack_groups.setdefault(group_name(d.rack), []).append(d.name)

    nics: dict = {}  # node_nics by node model

    def host_vars(d: Device) -> dict:
        if d.role == "gpu_node":
            return gpu_node_vars(layout, d, addr, by_pool, rows, leaf_ports, link_speeds, nics)
        if d.role in HOST_ROLES:
            hv = {
                "ansible_host": _ip(by_pool.get((d.name, "inband"))) or _ip(by_pool.get((d.name, "oob"))),
                "superpod_bmc_address": _ip(by_pool.get((d.name, "oob"))),
                "superpod_rack": d.rack,
                "superpod_model": d.model,
            }
            inband = by_pool.get((d.name, "inband"))
            if inband is not None:  # its bond on the services pair (inband.py, inband_services.py)
                hv |= {"superpod_inband_interface": inband.interface, "superpod_inband_address": inband.address,
                       "superpod_inband_members": service_members.get(d.name, []),
                       "superpod_inband_gateway": inband.peer}
            return hv
        loop = addr.get((d.name, "lo"))
        hv = {
            "ansible_host": _ip(by_pool.get((d.name, "oob"))),
            "superpod_role": d.role,
            "superpod_model": d.model,
            "superpod_rack": d.rack,
            "superpod_su": d.su,
            "superpod_loopback": loop.address if loop else None,
            "superpod_asn": asn.get(d.name),
            "superpod_switch_os": switch_oses[d.name],
        }
        SwitchVars.model_validate(hv)  # strict: written as checked, in the model's field order
        return hv

    children: dict[str, list] = dict(groups)
    children[ETHERNET_SWITCHES] = [d.name for d in ethernet_devices]
    # switch_fabric's batches, one play each in site.yml (topology/render/rollout.py)
    for g, names in rollout.batches(ethernet_devices).items():
        children[g] = list(names)
    children[rollout.CANARY_GROUP] = []
    for g, names in sorted(su_groups.items()) + sorted(rack_groups.items()):
        children[g] = names

    spec = layout.spec
    all_vars = {
        "superpod_pod": spec.name,
        "superpod_fabric_kind": spec.compute_fabric.kind,
        "superpod_node_model": spec.node_model,
        # The storage pool: nodes reach storage servers on other leaves' subnets through their storage NICs.
        "superpod_storage_prefix": str(spec.addressing.storage),
        # storage_fabric.qos: roles/roce_qos sets the storage NICs to what the storage switches run
        "superpod_storage_qos": spec.storage_fabric.qos,
        # the in-band bond's resolvers and search domains (roles/host_network)
        "superpod_dns_servers": list(spec.dns.servers),
        "superpod_dns_search": list(spec.dns.search),
        # Secrets stay out of generated files: put these in group_vars/all/vault.yml
        # (ansible-vault encrypted) or point them at a lookup in overrides.yml.
        "superpod_bmc_username": "{{ vault_bmc_username | default('') }}",
        "superpod_bmc_password": "{{ vault_bmc_password | default('') }}",
        "superpod_munge_key": "{{ vault_munge_key | default('') }}",  # Slurm's shared key (roles/munge)
        # The scheduler's view of the plan (roles/slurm templates slurm.conf, gres.conf, topology.conf from it)
        "superpod_slurm": (slurm or slurm_plan(layout)).model_dump(),
        "superpod_monitoring": _monitoring(layout, by_pool, rows),
    }
    yield root / "hosts.yml", _hosts_yaml(children, host_vars, f"inventory of pod {spec.name}")
    yield root / "group_vars" / "all" / "00_generated.yml", _vars_yaml(all_vars, f"pod-wide variables of {spec.name}")
    overrides = root / OVERRIDES
    if not overrides.exists():
        yield overrides, OVERRIDES_SEED
