"""gpu_operator: Network Operator secondary networks so pods get rail addresses without
hostNetwork. The NicClusterPolicy carries Multus, the CNI plugins and nv-ipam; per rail subnet of
the plan an nv-ipam IPPool and a network on the rail NIC that names it (MacvlanNetwork here: Ethernet
rails; IPoIB and the CRD schemas in test_operator_crds.py). Structural checks
against the CRD field names of NVIDIA's docs (NicClusterPolicy spec.secondaryNetwork.{multus,
cniPlugins}, spec.nvIpam; IPPool spec.{subnet, gateway, perNodeBlockSize, exclusions, nodeSelector};
MacvlanNetwork spec.{networkNamespace, master, mode, mtu, ipam}); no kubeconform here."""

import ipaddress
import json

import pytest
import yaml

from tests.role_files import ROOT, load
from tests.roles.test_gpu_operator_values import defaults, filters, render

LAB = load(ROOT / "roles/gpu_operator/molecule/default/molecule.yml")["provisioner"]["inventory"]["hosts"]["all"]


def per_leaf_plan(sus=2, nodes=2, rails=2, prefix=27):
    """A per_leaf plan: rail r of SU s is one /prefix behind leaf su<s>-leaf-rail<r>, gateway .1, nodes from .2."""
    hv = {}
    for s in range(1, sus + 1):
        for n in range(1, nodes + 1):
            name = f"su{s:02d}-node{n:02d}"
            hv[name] = {"rails": [
                {"rail": r, "netdev": f"enp{r}s0np0", "leaf": f"su{s:02d}-leaf-rail{r}",
                 "address": f"100.64.{s * 16 + r}.{n + 1}/{prefix}", "peer": f"100.64.{s * 16 + r}.1"}
                for r in range(rails)]}
    return hv


def test_one_pool_and_network_per_rail_and_leaf_subnet():
    hv = per_leaf_plan()
    nets = filters.superpod_rail_networks(hv, sorted(hv))
    assert [n["name"] for n in nets] == ["rail0-su01-leaf-rail0", "rail0-su02-leaf-rail0",
                                         "rail1-su01-leaf-rail1", "rail1-su02-leaf-rail1"]
    first = nets[0]
    assert first["subnet"] == "100.64.16.0/27" and first["gateway"] == "100.64.16.1"
    assert first["nodes"] == ["su01-node01", "su01-node02"] and first["master"] == "enp0s0np0"
    # the nodes' own addresses and the gateway are excluded; 30 usable addresses shared by 2 nodes
    assert first["exclusions"] == [{"startIP": "100.64.16.1", "endIP": "100.64.16.3"}]
    assert first["block"] == 15 and first["resource"] == "rdma/rdma_rail0"


def test_a_rail_in_one_subnet_is_named_after_the_rail_only():
    hv = per_leaf_plan(sus=1, prefix=26)
    nets = filters.superpod_rail_networks(hv, sorted(hv), block_size=8, resource_mode="shared")
    assert [(n["name"], n["block"], n["resource"]) for n in nets] == [("rail0", 8, "rdma/rdma_rail"),
                                                                     ("rail1", 8, "rdma/rdma_rail")]


def test_point_to_point_rails_have_no_room_for_pods():
    nodes = LAB["children"]["gpu_nodes"]["hosts"]
    with pytest.raises(ValueError, match=r"rail 0 subnet 100\.64\.0\.0/31 .*gpu_operator_rail_networks_enabled"):
        filters.superpod_rail_networks(nodes, sorted(nodes))


def test_a_full_subnet_fails_with_the_numbers():
    hv = per_leaf_plan(sus=1, nodes=5, prefix=29)  # 6 usable: gateway + 5 nodes, nothing left
    with pytest.raises(ValueError, match=r"holds 5 node address\(es\) and its gateway and leaves 0 for pods"):
        filters.superpod_rail_networks(hv, sorted(hv))


def test_rendered_policy_and_networks_agree():
    d = defaults("gpu_operator")
    hv = per_leaf_plan()
    nets = filters.superpod_rail_networks(hv, sorted(hv))
    rdma = filters.superpod_rdma_config(hv, sorted(hv))
    policy = yaml.safe_load(render("nic-cluster-policy.yaml.j2", dict(d, gpu_operator_rdma_config=rdma)))["spec"]
    assert policy["secondaryNetwork"]["multus"] == {"image": "multus-cni",
                                                    "repository": d["gpu_operator_multus_repository"],
                                                    "version": d["gpu_operator_multus_version"]}
    assert policy["secondaryNetwork"]["cniPlugins"]["image"] == "plugins"
    assert policy["nvIpam"]["image"] == "nvidia-k8s-ipam" and policy["nvIpam"]["enableWebhook"] is False
    items = yaml.safe_load(render("rail-networks.yaml.j2", dict(d, gpu_operator_rail_networks=nets)))["items"]
    pools = {i["metadata"]["name"]: i for i in items if i["kind"] == "IPPool"}
    macvlans = [i for i in items if i["kind"] == "MacvlanNetwork"]
    assert len(pools) == len(macvlans) == 4
    assert all(p["apiVersion"] == "nv-ipam.nvidia.com/v1alpha1" for p in pools.values())
    assert all(p["metadata"]["namespace"] == d["gpu_operator_network_operator_namespace"] for p in pools.values())
    resources = {"rdma/" + c["resourceName"] for c in rdma["configList"]}
    for m in macvlans:
        spec = m["spec"]
        assert m["apiVersion"] == "mellanox.com/v1alpha1"
        assert set(spec) == {"networkNamespace", "master", "mode", "mtu", "ipam"}
        ipam = json.loads(spec["ipam"])
        pool = pools[ipam["poolName"]]["spec"]
        assert ipam["type"] == "nv-ipam" and ipam["poolName"] == m["metadata"]["name"]
        rail = int(m["metadata"]["annotations"]["superpod.dev/rail"])
        assert spec["master"] == f"enp{rail}s0np0" and spec["mtu"] == 9000
        assert m["metadata"]["annotations"]["superpod.dev/rdma-resource"] in resources
        # the pool's nodes are the nodes whose rail address sits in the pool's subnet
        subnet = ipaddress.ip_network(pool["subnet"])
        wanted = sorted(n for n, v in hv.items() for r in v["rails"]
                        if ipaddress.ip_interface(r["address"]).ip in subnet)
        assert pool["nodeSelector"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == wanted
        assert ipaddress.ip_address(pool["gateway"]) in subnet


def test_policy_without_rail_networks_has_no_secondary_network():
    d = dict(defaults("gpu_operator"), gpu_operator_rail_networks_enabled=False)
    policy = yaml.safe_load(render("nic-cluster-policy.yaml.j2", dict(d, gpu_operator_rdma_config={})))["spec"]
    assert "secondaryNetwork" not in policy and "nvIpam" not in policy
