"""Filters of the gpu_operator role: the layout's physical position of each GPU node turned
into Kubernetes node labels, the patches that add (or take back) them, scheduler topology
objects and the RDMA shared device plugin config. Pure functions on plain data, unit-tested in
tests/roles/test_gpu_operator_filters.py; the role only wires them to hostvars and modules."""

from __future__ import annotations

import math
import re

# Kubernetes label values: at most 63 characters, alphanumerics with -_. inside.
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_RAIL_SUFFIX = re.compile(r"-rail\d+$")
_POSITION_VARS = ("superpod_su", "superpod_rack", "superpod_row", "rails")


def _label_value(text: str, what: str) -> str:
    value = str(text)
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise ValueError(f"{what}: {value!r} is not a valid Kubernetes label value")
    return value


def superpod_node_topology(hostvars, hosts, node_names=None, block_sus=0):
    """One record per GPU node: where it sits (SU, row, rack), which rail leaves it hangs
    off (the leaf group) and, in three-tier pods, which fabric block. The block comes from a
    host var superpod_fabric_block when the inventory has one, else from block_sus (SUs per
    block); 0 and no host var means a two-tier fabric (no block)."""
    node_names = node_names or {}
    out = []
    for host in sorted(hosts):
        hv = hostvars[host]
        missing = [k for k in _POSITION_VARS if k not in hv]
        if missing:
            raise ValueError(f"GPU node {host} lacks {', '.join(missing)} (inventory contract: run superpod plan)")
        su = int(hv["superpod_su"])
        leaves = sorted({_RAIL_SUFFIX.sub("", r["leaf"]) for r in hv.get("rails") or []})
        if "superpod_fabric_block" in hv and hv["superpod_fabric_block"] not in (None, ""):
            block = int(hv["superpod_fabric_block"])
        elif int(block_sus or 0) > 0:
            block = math.ceil(su / int(block_sus))
        else:
            block = None
        out.append(
            {
                "host": host,
                "node": node_names.get(host, host),
                "su": f"su{su:02d}",
                "row": str(hv["superpod_row"]),
                "rack": str(hv["superpod_rack"]),
                "leaf_group": ".".join(leaves) if leaves else f"su{su:02d}",
                "block": f"block{block:02d}" if block is not None else None,
                "hcas": [r["hca"] for r in hv.get("rails") or []],
                "fabric_kind": str(hv.get("superpod_fabric_kind", "")),
            }
        )
    return out


def superpod_node_labels(topology, label_keys, marker, pod=""):
    """{node: {labels, annotations}} from the topology records. label_keys maps a level
    (pod, su, row, rack, leaf_group, block) to a label key; an empty key leaves it out.
    The marker label says "superpod manages this node's topology labels"."""
    out = {}
    for rec in topology:
        values = dict(rec, pod=pod)
        labels = {marker: "true"}
        for level, key in sorted(label_keys.items()):
            if not key:
                continue
            if level not in values:
                raise ValueError(f"gpu_operator_topology_label_keys: unknown level {level!r}")
            if values[level] in (None, ""):
                continue
            labels[key] = _label_value(values[level], f"{rec['node']} {level}")
        annotations = {}
        if rec["hcas"]:
            annotations["superpod.dev/rail-hcas"] = ",".join(rec["hcas"])
        out[rec["node"]] = {"labels": labels, "annotations": annotations}
    return out


def superpod_node_patches(planned, live, marker, keys_annotation):
    """Merge patches for Node objects. planned: {node: {labels, annotations}} (this plan);
    live: [{name, annotations}] nodes that carry the marker now (from the cluster, or a list
    given in render-only mode). Each patched node records the keys superpod set in
    keys_annotation, so keys dropped from the plan (a renamed label key) are removed next
    time, and a node that left the plan loses every key superpod set, the marker included.
    Returns {"apply": [...], "remove": [...]}, each item {name, labels, annotations}
    with None meaning "delete this key" (JSON merge patch)."""
    live_by_name = {n["name"]: n for n in live}

    def previous(name):
        ann = (live_by_name.get(name) or {}).get("annotations") or {}
        text = ann.get(keys_annotation, "")
        labels, annotations = set(), set()
        for item in filter(None, text.split(",")):
            kind, _, key = item.partition(":")
            (labels if kind == "l" else annotations).add(key)
        return labels, annotations

    apply = []
    for name in sorted(planned):
        want = planned[name]
        old_l, old_a = previous(name)
        labels = {k: None for k in sorted(old_l - set(want["labels"]))}
        labels.update(want["labels"])
        annotations = {k: None for k in sorted(old_a - set(want["annotations"]) - {keys_annotation})}
        annotations.update(want["annotations"])
        annotations[keys_annotation] = ",".join(
            [f"l:{k}" for k in sorted(want["labels"])] + [f"a:{k}" for k in sorted(want["annotations"])]
        )
        apply.append({"name": name, "labels": labels, "annotations": annotations})

    current_l = set().union(*(set(p["labels"]) for p in planned.values())) if planned else {marker}
    current_a = set().union(*(set(p["annotations"]) for p in planned.values())) if planned else set()
    remove = []
    for name in sorted(set(live_by_name) - set(planned)):
        old_l, old_a = previous(name)
        remove.append(
            {
                "name": name,
                "labels": {k: None for k in sorted(old_l | current_l | {marker})},
                "annotations": {k: None for k in sorted(old_a | current_a | {keys_annotation})},
            }
        )
    return {"apply": apply, "remove": remove}


def superpod_node_manifest(patches):
    """A v1 List of partial Node objects (what `kubectl patch --type merge` takes per node)."""
    items = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": p["name"], "labels": p["labels"], "annotations": p["annotations"]},
        }
        for p in patches
    ]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def superpod_check_nesting(topology, levels):
    """Kueue requires a strict hierarchy: every value of a lower level sits under exactly one
    value of the level above. Returns the violations as readable strings (empty: fine)."""
    problems = []
    for upper, lower in zip(levels, levels[1:], strict=False):
        parent = {}
        for rec in topology:
            if rec.get(upper) is None or rec.get(lower) is None:
                continue
            seen = parent.setdefault(rec[lower], rec[upper])
            if seen != rec[upper]:
                problems.append(f"{lower} {rec[lower]} spans {upper} {seen} and {rec[upper]}")
    return sorted(set(problems))


def superpod_volcano_hypernodes(topology, prefix="superpod", pod=""):
    """Volcano HyperNodes following the network: tier 1 = the nodes of one rail-leaf group
    (one hop on every rail), tier 2 = a fabric block (three-tier pods), top tier = the whole
    pod (its spine or core layer)."""

    def hypernode(name, tier, members, kind):
        return {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": name, "labels": {"superpod.dev/pod": pod} if pod else {}},
            "spec": {
                "tier": tier,
                "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in sorted(members)],
            },
        }

    groups, blocks = {}, {}
    for rec in topology:
        groups.setdefault(rec["leaf_group"], set()).add(rec["node"])
        if rec["block"] is not None:
            blocks.setdefault(rec["block"], set()).add(f"{prefix}-{rec['leaf_group']}")
    out = [hypernode(f"{prefix}-{g}", 1, nodes, "Node") for g, nodes in sorted(groups.items())]
    if blocks:
        out += [hypernode(f"{prefix}-{b}", 2, members, "HyperNode") for b, members in sorted(blocks.items())]
        top = {f"{prefix}-{b}" for b in blocks}
    else:
        top = {f"{prefix}-{g}" for g in groups}
    out.append(hypernode(f"{prefix}-pod", 3 if blocks else 2, top, "HyperNode"))
    return out


def superpod_rdma_config(topology_hostvars, hosts, mode="per_rail", prefix="rdma_rail", hca_max=63):
    """k8s-rdma-shared-dev-plugin configList from the rail NICs of the plan: one resource per
    rail (the netdevs serving GPU i on every node model in the plan), or one resource for all
    rails (mode "shared")."""
    per_rail = {}
    for host in hosts:
        for r in topology_hostvars[host].get("rails") or []:
            per_rail.setdefault(int(r["rail"]), set()).add(r["netdev"])
    if mode == "shared":
        names = sorted(set().union(*per_rail.values())) if per_rail else []
        return {"configList": [{"resourceName": prefix, "rdmaHcaMax": int(hca_max), "selectors": {"ifNames": names}}]}
    return {
        "configList": [
            {"resourceName": f"{prefix}{rail}", "rdmaHcaMax": int(hca_max), "selectors": {"ifNames": sorted(nd)}}
            for rail, nd in sorted(per_rail.items())
        ]
    }


def _ranges(addresses):
    """Consecutive runs of integer addresses as (first, last) pairs."""
    out = []
    for a in sorted(set(addresses)):
        if out and a == out[-1][1] + 1:
            out[-1][1] = a
        else:
            out.append([a, a])
    return out


def superpod_rail_networks(topology_hostvars, hosts, prefix="rail", resource_prefix="rdma_rail", block_size=0,
                           node_names=None, resource_mode="per_rail"):
    """One nv-ipam IPPool per rail subnet of the plan and one secondary network per rail, so pods get
    an address on the rail the RDMA shared device plugin hands them (resource `rdma/<resource_prefix>N`).
    A rail whose nodes all sit in one subnet gets one pool and one network named `<prefix>N`;
    a rail cut into one subnet per leaf (per_leaf addressing, several SUs) gets one of each per
    leaf, `<prefix>N-<leaf>`, bound to that leaf's nodes. The nodes' own addresses are excluded;
    block_size 0 shares the rest of the subnet equally. On InfiniBand the network is an IPoIBNetwork
    (macvlan attaches only to Ethernet), on Ethernet a MacvlanNetwork. A pool with a gateway routes
    the rail's other subnets (the other leaves' rail subnets, merged) through it, so a pod reaches
    the same rail on every leaf; IPoIB rails are one subnet and need no route. Raises ValueError when a subnet has no
    address left for pods (p2p /31 rails never do) or a rail's netdev differs between nodes."""
    import ipaddress

    import netaddr

    node_names = node_names or {}
    if any(topology_hostvars[h].get("superpod_rail_pods") for h in hosts):
        return _rail_cidr_pools(topology_hostvars, hosts, prefix, resource_prefix, node_names, resource_mode)
    subnets: dict[tuple[int, str], dict] = {}
    for host in hosts:
        for r in topology_hostvars[host].get("rails") or []:
            if not r.get("address"):
                raise ValueError(f"rails: {host} rail {r['rail']} has no address (InfiniBand without IPoIB?)")
            iface = ipaddress.ip_interface(r["address"])
            entry = subnets.setdefault((int(r["rail"]), str(iface.network)), {
                "rail": int(r["rail"]), "network": iface.network, "gateway": r.get("peer", ""),
                "netdevs": set(), "leaves": set(), "nodes": [], "used": set(), "kinds": set()})
            entry["netdevs"].add(r["netdev"])
            entry["kinds"].add(topology_hostvars[host].get("superpod_fabric_kind", "ethernet"))
            entry["leaves"].add(r.get("leaf", ""))
            entry["nodes"].append(node_names.get(host, host))
            entry["used"].add(int(iface.ip))
    per_rail: dict[int, int] = {}
    rail_subnets: dict[int, list[str]] = {}
    for rail, subnet in subnets:
        per_rail[rail] = per_rail.get(rail, 0) + 1
        rail_subnets.setdefault(rail, []).append(subnet)
    out = []
    for (rail, _), e in sorted(subnets.items()):
        net = e["network"]
        if len(e["netdevs"]) != 1:
            raise ValueError(f"rails: rail {rail} uses netdevs {sorted(e['netdevs'])} on different nodes; "
                             "one macvlan network needs one master interface name")
        if e["gateway"]:
            e["used"].add(int(ipaddress.ip_address(e["gateway"])))
        usable = net.num_addresses - 2 if net.prefixlen < 31 else 0
        free = usable - len(e["used"])
        nodes = sorted(e["nodes"])
        block = int(block_size) or (usable // len(nodes) if usable else 0)
        if free < len(nodes) or block < 1 or block * len(nodes) > usable:
            raise ValueError(
                f"rails: rail {rail} subnet {net} holds {len(nodes)} node address(es) and its gateway and leaves "
                f"{max(free, 0)} for pods (blocks of {block} per node): pods cannot get rail addresses here "
                "(point-to-point /31 rails never can; per_leaf subnets must be planned with room). "
                "Set gpu_operator_rail_networks_enabled: false, or plan larger rail subnets")
        leaf = sorted(e["leaves"])[0]
        name = f"{prefix}{rail}" if per_rail[rail] == 1 else f"{prefix}{rail}-{leaf}"
        exclusions = [{"startIP": str(ipaddress.ip_address(a)), "endIP": str(ipaddress.ip_address(b))}
                      for a, b in _ranges(e["used"])]
        others = netaddr.IPSet(rail_subnets[rail]) - netaddr.IPSet([str(net)])
        routes = [{"dst": str(c)} for c in others.iter_cidrs()] if e["gateway"] else []
        kind = "IPoIBNetwork" if e["kinds"] == {"infiniband"} else "MacvlanNetwork"
        out.append({"rail": rail, "name": name, "subnet": str(net), "gateway": e["gateway"],
                    "master": next(iter(e["netdevs"])), "block": block, "exclusions": exclusions,
                    "nodes": nodes, "routes": routes, "kind": kind, "pool_kind": "IPPool",
                    "resource": f"rdma/{resource_prefix}" + ("" if resource_mode == "shared" else str(rail))})
    return out


def _rail_cidr_pools(topology_hostvars, hosts, prefix, resource_prefix, node_names, resource_mode):
    """One nv-ipam CIDRPool and one MacvlanNetwork per rail for the whole pod, from the routed pod
    prefix the plan gives each GPU NIC (addressing.rail_pods): a static allocation per node (its
    prefix, its leaf's gateway in it), `cidr` the rail's aggregate (its block in the end state, so
    growth never changes it), routes to that aggregate and to every rail subnet of the plan through
    the node's own leaf. nv-ipam's CIDRPool rules hold by
    construction: prefixes of one length inside cidr, one per node, the gateway inside its prefix
    at one index for all (gatewayIndex, which routes need)."""
    import netaddr

    rails: dict[int, dict] = {}
    for host in sorted(hosts):
        hv = topology_hostvars[host]
        pods = {int(p["rail"]): p for p in hv.get("superpod_rail_pods") or []}
        for r in hv.get("rails") or []:
            rail = int(r["rail"])
            if rail not in pods:
                raise ValueError(f"superpod_rail_pods: {host} has no pod prefix on rail {rail}; the plan gives every "
                                 "GPU NIC one (addressing.rail_pods) or none: run superpod plan")
            pod = pods[rail]
            net = netaddr.IPNetwork(pod["prefix"])
            index = int(netaddr.IPAddress(pod["gateway"])) - net.first
            if net.ip != net.network or not 0 < index < net.size - 1:
                raise ValueError(f"superpod_rail_pods: {host} rail {rail}: gateway {pod['gateway']} is no host "
                                 f"address of its prefix {pod['prefix']}")
            e = rails.setdefault(rail, {"netdevs": set(), "allocs": [], "subnets": [], "indexes": set(), "lens": set(),
                                        "aggregates": set()})
            e["aggregates"].add(str(netaddr.IPNetwork(pod["aggregate"]).cidr))
            e["netdevs"].add(r["netdev"])
            e["allocs"].append({"nodeName": node_names.get(host, host), "prefix": str(net),
                                "gateway": pod["gateway"]})
            e["subnets"].append(netaddr.IPNetwork(r["address"]).cidr)
            e["indexes"].add(index)
            e["lens"].add(net.prefixlen)
    out = []
    for rail, e in sorted(rails.items()):
        if len(e["netdevs"]) != 1:
            raise ValueError(f"rails: rail {rail} uses netdevs {sorted(e['netdevs'])} on different nodes; "
                             "one macvlan network needs one master interface name")
        if len(e["indexes"]) != 1 or len(e["lens"]) != 1:
            raise ValueError(f"superpod_rail_pods: rail {rail} mixes prefix lengths {sorted(e['lens'])} or gateway "
                             f"positions {sorted(e['indexes'])}; one CIDRPool needs one of each")
        prefixes = netaddr.IPSet(a["prefix"] for a in e["allocs"])
        if prefixes.size != len(e["allocs"]) * 2 ** (32 - next(iter(e["lens"]))):
            raise ValueError(f"superpod_rail_pods: rail {rail} gives one pod prefix to two NICs")
        if len(e["aggregates"]) != 1:
            raise ValueError(f"superpod_rail_pods: rail {rail} names aggregates {sorted(e['aggregates'])}; "
                             "one CIDRPool has one cidr")
        cidr = netaddr.IPNetwork(next(iter(e["aggregates"])))  # the end state's block: growth never moves it
        outside = prefixes - netaddr.IPSet([cidr])
        if outside:
            raise ValueError(f"superpod_rail_pods: rail {rail}'s pod prefix {next(outside.iter_cidrs())} lies "
                             f"outside its aggregate {cidr}")
        for other, o in rails.items():
            clash = netaddr.IPSet([cidr]) & netaddr.IPSet(a["prefix"] for a in o["allocs"]) if other != rail else None
            if clash:
                raise ValueError(f"superpod_rail_pods: rail {rail}'s aggregate {cidr} holds rail {other}'s pod "
                                 f"prefixes ({next(clash.iter_cidrs())}); the plan keeps each rail's in one block")
        routes = netaddr.cidr_merge([cidr, *e["subnets"]])
        nodes = sorted(a["nodeName"] for a in e["allocs"])
        out.append({"rail": rail, "name": f"{prefix}{rail}", "pool_kind": "CIDRPool", "cidr": str(cidr),
                    "per_node_prefix": next(iter(e["lens"])), "gateway_index": next(iter(e["indexes"])),
                    "allocations": sorted(e["allocs"], key=lambda a: a["nodeName"]), "nodes": nodes,
                    "routes": [{"dst": str(c)} for c in routes], "master": next(iter(e["netdevs"])),
                    "kind": "MacvlanNetwork",
                    "resource": f"rdma/{resource_prefix}" + ("" if resource_mode == "shared" else str(rail))})
    return out


def superpod_key_paths(data, prefix=""):
    """Dotted paths of every key in a nested mapping (lists are leaves): what a Helm values
    file sets, to compare with the chart's documented keys."""
    out = []
    for key, value in (data or {}).items():
        path = f"{prefix}{key}"
        out.append(path)
        if isinstance(value, dict) and value:
            out.extend(superpod_key_paths(value, path + "."))
    return out


class FilterModule:
    def filters(self):
        return {
            "superpod_node_topology": superpod_node_topology,
            "superpod_node_labels": superpod_node_labels,
            "superpod_node_patches": superpod_node_patches,
            "superpod_node_manifest": superpod_node_manifest,
            "superpod_check_nesting": superpod_check_nesting,
            "superpod_volcano_hypernodes": superpod_volcano_hypernodes,
            "superpod_rdma_config": superpod_rdma_config,
            "superpod_key_paths": superpod_key_paths,
            "superpod_rail_networks": superpod_rail_networks,
        }
