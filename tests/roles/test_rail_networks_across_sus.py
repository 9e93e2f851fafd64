"""gpu_operator: one rail network per rail for the whole pod on RoCE per_leaf rails, so one pod
template spans SUs. The plan gives every GPU NIC a routed pod prefix whose first address its leaf
holds (addressing.rail_pods); the role turns them into one nv-ipam CIDRPool per rail (a static
allocation per node, routes to the rail's aggregates) and one MacvlanNetwork per rail.

The judges are the plan (layout addresses and links, built here from the spec, never from the
rendered objects), the nv-ipam v0.4.0 CIDRPool CRD (jsonschema, offline) and nv-ipam's own rules
for a CIDRPool (api/v1alpha1/cidrpool_validate.go, restated in `nv_ipam_rules`)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import netaddr
import pytest
import yaml

from tests.conftest import spec_with
from tests.invariants import check_addresses
from tests.role_files import ROOT
from tests.roles.crd_schema import crd_errors, load_crds
from tests.roles.playbook import debug_values, run_play
from tests.roles.test_gpu_operator_values import defaults, filters, render
from topology.errors import SpecError, SpecErrors
from topology.layout.build import build
from topology.render.diff import diff_layouts
from topology.render.inventory import render_inventory
from topology.render.switches.build import build_intents

NET_DATA = ROOT / "testdata/network-operator"
CRDS = load_crds(NET_DATA / "crds-v26.4.1", NET_DATA / "nv-ipam-v0.4.0")
PODS = "100.104.0.0/14"  # outside every default pool (rails 100.64/11, fabric_p2p 100.96/13)
MODES = ("per_leaf", "p2p")  # a subnet per rail leaf (pod gateways on its SVI), or a /31 per NIC (on its port)


def pod_spec(mode: str, sus: int = 3):
    return spec_with("roce-1k", nodes_per_su=4, scalable_units=sus, max_scalable_units=4,
                     addressing={"rail_mode": mode, "rail_pods": PODS, "rail_pod_prefix": 28})


SPEC = pod_spec("per_leaf")
LAYOUT = build(SPEC)


def gpu_hostvars(layout) -> dict[str, dict]:
    """The GPU nodes' host vars as `superpod plan` writes them into hosts.yml."""
    files = render_inventory(layout, Path("inv"))
    hosts = {}

    def walk(group):
        for name, hv in (group.get("hosts") or {}).items():
            if hv and "rails" in hv:
                hosts[name] = hv
        for child in (group.get("children") or {}).values():
            walk(child or {})

    walk(yaml.safe_load(files[Path("inv/hosts.yml")])["all"])
    return hosts


HV = gpu_hostvars(LAYOUT)
_cases: dict[str, tuple] = {"per_leaf": (LAYOUT, HV)}


@pytest.fixture(params=MODES)
def case(request):
    """(layout, GPU host vars) of the 3-SU plan with pod prefixes, per rail mode."""
    if request.param not in _cases:
        layout = build(pod_spec(request.param))
        _cases[request.param] = (layout, gpu_hostvars(layout))
    return _cases[request.param]


def plan(layout):
    """From the layout alone: per rail, each node's leaf, the leaves' rail subnets (the nodes'
    addresses: one per leaf, or a /31 per node) and pod prefixes (the leaves' rail_pods addresses),
    and who holds which gateway."""
    leaf_of = {(lk.a_device, lk.a_port): lk.b_device for lk in layout.links if lk.tier == "node-leaf"}
    rail_of_leaf = {d.name: d.rail for d in layout.devices if d.role == "leaf"}
    node_leaf, subnets, pods, gateway_of = {}, defaultdict(lambda: defaultdict(set)), defaultdict(dict), {}
    for a in layout.addresses:
        if a.pool == "rails" and (a.device, a.interface) in leaf_of:
            leaf = leaf_of[(a.device, a.interface)]
            node_leaf[(rail_of_leaf[leaf], a.device)] = leaf
            subnets[rail_of_leaf[leaf]][leaf].add(a.network)
        if a.pool == "rail_pods":
            pods[rail_of_leaf[a.device]][a.network] = a.device
            gateway_of[a.network] = str(netaddr.IPNetwork(a.address).ip)
    return node_leaf, subnets, pods, gateway_of


def rendered(hv):
    d = defaults("gpu_operator")
    nets = filters.superpod_rail_networks(hv, sorted(hv))
    items = yaml.safe_load(render("rail-networks.yaml.j2", dict(d, gpu_operator_rail_networks=nets)))["items"]
    return items


def nv_ipam_rules(pool: dict) -> list[str]:
    """nv-ipam's own checks of a CIDRPool (cidrpool_validate.go, v0.4.0): node prefixes of
    perNodeNetworkPrefix inside cidr, unique per node and prefix, a gateway inside its prefix,
    routes only with gatewayIndex, the gateway index inside a node prefix."""
    spec, errors = pool["spec"], []
    cidr = netaddr.IPNetwork(spec["cidr"])
    if cidr.ip != cidr.network:
        errors.append("cidr has host bits set")
    if not cidr.prefixlen <= spec["perNodeNetworkPrefix"] <= 32:
        errors.append("perNodeNetworkPrefix outside cidr")
    if spec.get("routes") and "gatewayIndex" not in spec:
        errors.append("routes without gatewayIndex")
    nodes, prefixes = defaultdict(int), defaultdict(int)
    for alloc in spec.get("staticAllocations", []):
        prefix = netaddr.IPNetwork(alloc["prefix"])
        nodes[alloc.get("nodeName", "")] += 1
        prefixes[str(prefix.cidr)] += 1
        if prefix.ip != prefix.network or prefix not in cidr or prefix.prefixlen != spec["perNodeNetworkPrefix"]:
            errors.append(f"{alloc}: prefix not a {spec['perNodeNetworkPrefix']} of {cidr}")
        if alloc.get("gateway") and netaddr.IPAddress(alloc["gateway"]) not in prefix:
            errors.append(f"{alloc}: gateway outside the node prefix")
        if "gatewayIndex" in spec and alloc.get("gateway") and \
                str(netaddr.IPAddress(prefix.first + spec["gatewayIndex"])) != alloc["gateway"]:
            errors.append(f"{alloc}: gateway is not gatewayIndex {spec['gatewayIndex']} of its prefix")
    size = 2 ** (32 - spec["perNodeNetworkPrefix"])
    for ex in spec.get("perNodeExclusions", []):  # the CRD's CEL rule (jsonschema skips CEL), and inside a prefix
        if not 0 <= ex["startIndex"] <= ex["endIndex"] < size:
            errors.append(f"{ex}: not an index range of a node prefix")
    errors += [f"node {n} twice" for n, c in nodes.items() if c > 1 and n]
    errors += [f"prefix {p} twice" for p, c in prefixes.items() if c > 1]
    return errors


def test_the_plan_spans_several_sus_with_a_subnet_per_leaf(case):
    layout, _ = case
    node_leaf, subnets, pods, _ = plan(layout)
    assert all(len(leaves) == layout.spec.scalable_units for leaves in subnets.values())
    assert len(subnets) == layout.facts["rails"] and pods.keys() == subnets.keys()


def test_one_cidr_pool_and_one_network_per_rail_for_the_whole_pod(case):
    layout, hv = case
    items = rendered(hv)
    rails = sorted(plan(layout)[1])
    by_kind = defaultdict(list)
    for i in items:
        by_kind[i["kind"]].append(i)
    assert sorted(by_kind) == ["CIDRPool", "MacvlanNetwork"]
    assert [p["metadata"]["name"] for p in by_kind["CIDRPool"]] == [f"rail{r}" for r in rails]
    assert [n["metadata"]["name"] for n in by_kind["MacvlanNetwork"]] == [f"rail{r}" for r in rails]
    for n in by_kind["MacvlanNetwork"]:
        assert json.loads(n["spec"]["ipam"]) == {"type": "nv-ipam", "poolName": n["metadata"]["name"],
                                                 "poolType": "cidrpool"}


def test_every_object_fits_its_crd_and_nv_ipams_rules(case):
    layout, hv = case
    items = rendered(hv)
    assert [crd_errors(i, CRDS) for i in items] == [[] for _ in items]
    assert [nv_ipam_rules(p) for p in items if p["kind"] == "CIDRPool"] == [[] for _ in plan(layout)[1]]


def test_each_node_gets_the_pod_prefix_its_leaf_answers_for(case):
    layout, hv = case
    node_leaf, subnets, pods, gateway_of = plan(layout)
    seen = netaddr.IPSet()
    for pool in (i for i in rendered(hv) if i["kind"] == "CIDRPool"):
        rail = int(pool["metadata"]["annotations"]["superpod.dev/rail"])
        allocs = pool["spec"]["staticAllocations"]
        wanted = sorted(n for (r, n) in node_leaf if r == rail)
        assert sorted(a["nodeName"] for a in allocs) == wanted
        assert pool["spec"]["nodeSelector"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == wanted
        for a in allocs:
            # the prefix is one the plan gives this node's leaf on this rail, the gateway the leaf's address in it
            assert pods[rail][a["prefix"]] == node_leaf[(rail, a["nodeName"])], a
            assert a["gateway"] == gateway_of[a["prefix"]]
            mine = netaddr.IPSet([a["prefix"]])
            assert not seen & mine, f"{a['prefix']} overlaps another node's prefix"
            seen |= mine
    # no pod prefix overlaps a node's rail subnet (the hosts' own addresses)
    assert not seen & netaddr.IPSet(s for leaves in subnets.values() for ss in leaves.values() for s in ss)


def test_routes_reach_the_same_rail_on_every_other_leaf_and_nothing_else(case):
    layout, hv = case
    node_leaf, subnets, pods, _ = plan(layout)
    for pool in (i for i in rendered(hv) if i["kind"] == "CIDRPool"):
        rail = int(pool["metadata"]["annotations"]["superpod.dev/rail"])
        routed = netaddr.IPSet(r["dst"] for r in pool["spec"]["routes"])
        for a in pool["spec"]["staticAllocations"]:
            leaf = node_leaf[(rail, a["nodeName"])]
            # every other pod prefix of the rail (on this leaf too: only the node's own is on-link)
            other_pods = [p for p in pods[rail] if p != a["prefix"]]
            other_subnets = [s for lf, ss in subnets[rail].items() if lf != leaf for s in ss]
            assert netaddr.IPSet(other_pods + other_subnets) <= routed, a
        foreign = netaddr.IPSet([*(p for r, ps in pods.items() if r != rail for p in ps),
                                 *(s for r, ls in subnets.items() if r != rail for ss in ls.values() for s in ss)])
        assert not routed & foreign and not netaddr.IPSet([pool["spec"]["cidr"]]) & foreign


def test_the_leaves_hold_and_announce_the_pod_gateways(case):
    """The switch side of the same plan: each rail leaf carries the gateway of every pod prefix of
    its nodes (per_leaf: on the rail SVI; p2p: on the node's port, beside the /31), and its BGP
    originates them (a network statement or an aggregate)."""
    layout, _ = case
    node_leaf, _, pods, gateway_of = plan(layout)
    # whose pod prefix it is: the address's peer is the node's rail address, on the cable's node end
    owner = {a.network: a.peer for a in layout.addresses if a.pool == "rail_pods"}
    node_end = {str(netaddr.IPNetwork(a.address).ip): f"{a.device}:{a.interface}" for a in layout.addresses
                if a.pool == "rails" and any(n == a.device for _, n in node_leaf)}
    intents = {i.name: i for i in build_intents(layout)}
    for rail, prefixes in pods.items():
        for prefix, leaf in prefixes.items():
            sw = intents[leaf]
            if layout.spec.addressing.rail_mode == "per_leaf":
                svi = next(s for s in sw.svis if s.vlan == 100 + rail)
                held = {svi.address, *svi.secondaries}
            else:
                port = next(p for p in sw.ports if p.peer == node_end[owner[prefix]])
                held = {port.address, *port.secondaries}
            assert f"{gateway_of[prefix]}/{netaddr.IPNetwork(prefix).prefixlen}" in held
            announced = netaddr.IPSet([*sw.bgp.networks, *sw.bgp.aggregates])
            assert netaddr.IPSet([prefix]) <= announced, (leaf, prefix)


@pytest.mark.parametrize("changes, rule", [
    ({"addressing": {"rail_pods": "100.104.0.0/24"}}, "end state"),  # 8 rails x 4 SUs x 32 NICs need more
    ({"addressing": {"rail_mode": "per_leaf", "rail_pods": "100.64.0.0/14"}}, "overlaps"),
])
def test_bad_pod_pools_are_refused_naming_the_field(changes, rule):
    with pytest.raises((SpecError, SpecErrors)) as err:
        build(spec_with("roce-1k", **changes))
    assert "addressing.rail_pods" in str(err.value) and rule in str(err.value)


def test_infiniband_has_no_pod_prefixes():
    with pytest.raises((SpecError, SpecErrors)) as err:
        build(spec_with("dgx-h100-ib", addressing={"rail_pods": PODS}))
    assert "addressing.rail_pods" in str(err.value) and "RoCE" in str(err.value)


def test_pod_prefixes_are_addresses_like_any_other_and_growth_moves_none():
    """Every pod gateway sits inside its pool and its prefix, unique (tests/invariants.py), and a
    pod grown by an SU keeps every pod prefix and gateway it had (positional, as every address)."""
    check_addresses(LAYOUT)
    smaller = build(spec_with("roce-1k", nodes_per_su=4, scalable_units=2, max_scalable_units=4,
                              addressing={"rail_mode": "per_leaf", "rail_pods": PODS, "rail_pod_prefix": 28}))
    pods = lambda layout: {a for a in layout.addresses if a.pool == "rail_pods"}  # noqa: E731
    assert pods(smaller) and pods(smaller) < pods(LAYOUT)


def test_a_node_without_its_pod_prefix_fails_naming_it():
    hv = {h: dict(v) for h, v in HV.items()}
    victim = sorted(hv)[-1]
    hv[victim]["superpod_rail_pods"] = hv[victim]["superpod_rail_pods"][1:]
    with pytest.raises(ValueError, match=rf"{victim} has no pod prefix on rail 0"):
        filters.superpod_rail_networks(hv, sorted(hv))


def test_the_plan_diff_lists_every_pod_gateway():
    """`superpod diff` keys addresses by device and interface: the pod gateways share the rail SVI
    with the rail subnet's gateway and must each show, not overwrite one another."""
    without = build(spec_with("roce-1k", nodes_per_su=4, scalable_units=3, max_scalable_units=4,
                              addressing={"rail_mode": "per_leaf"}))
    added = diff_layouts(without, LAYOUT)["addresses"].added
    pods = [a for a in LAYOUT.addresses if a.pool == "rail_pods"]
    assert sorted(added) == sorted(f"{a.device} {a.interface} {a.address}" for a in pods)
    assert not diff_layouts(without, LAYOUT)["addresses"].removed


@pytest.mark.parametrize("mode", MODES)
def test_growth_by_an_su_keeps_each_pools_cidr_and_allocations(mode):
    """A pool's cidr is the rail's block for the end state (max_scalable_units), not the span of
    today's prefixes: growing from 2 to 3 SUs adds static allocations and changes no cidr, so
    nv-ipam never re-carves a pool that pods hold addresses in."""
    def pools(sus):
        layout = build(pod_spec(mode, sus))
        return {p["metadata"]["name"]: p["spec"] for p in rendered(gpu_hostvars(layout)) if p["kind"] == "CIDRPool"}
    before, after = pools(2), pools(3)
    assert before.keys() == after.keys()
    for name, spec in before.items():
        assert spec["cidr"] == after[name]["cidr"], name
        assert all(a in after[name]["staticAllocations"] for a in spec["staticAllocations"])
        assert len(after[name]["staticAllocations"]) > len(spec["staticAllocations"])


def test_ansible_itself_renders_the_same_objects(tmp_path, monkeypatch):
    """The role's filter and template run by ansible-playbook (ansible-core's templating and its
    to_json, hostvars of the planned nodes as the inventory holds them), not the Jinja2 imitation
    above: the rendered list is the same, and passes the CRD and nv-ipam checks."""
    plugins = f"{ROOT / 'filter_plugins'}:{ROOT / 'roles/gpu_operator/filter_plugins'}"
    monkeypatch.setenv("ANSIBLE_FILTER_PLUGINS", plugins)  # the environment wins over run_play's ansible.cfg
    d = defaults("gpu_operator")
    template = ROOT / "roles/gpu_operator/templates/rail-networks.yaml.j2"
    tasks = [
        {"name": "Pools and networks", "ansible.builtin.set_fact": {
            "gpu_operator_rail_networks": "{{ hostvars | superpod_rail_networks(gpu_hosts) }}"},
         "when": "inventory_hostname == 'control'"},
        {"name": "Rendered", "ansible.builtin.debug": {
            "msg": f"{{{{ (lookup('ansible.builtin.template', '{template}') | from_yaml)['items'] }}}}"},
         "when": "inventory_hostname == 'control'"},
    ]
    hosts = dict(HV, control={})
    used = ("gpu_operator_network_operator_namespace", "gpu_operator_rail_network_namespace",
            "gpu_operator_rail_network_mtu")
    extra = {"gpu_hosts": sorted(HV), **{k: d[k] for k in used}}
    items = debug_values(run_play(tmp_path, tasks, hosts, extra)["control"])[0]
    assert len(items) == 2 * LAYOUT.facts["rails"] and items == rendered(HV)
    assert [crd_errors(i, CRDS) for i in items] == [[] for _ in items]
