"""Unit tests of the gpu_operator role's filters (roles/gpu_operator/filter_plugins): the layout
position of each node, labels, add/take-back patches, Kueue nesting, Volcano tiers, RDMA config."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "superpod_k8s", ROOT / "roles/gpu_operator/filter_plugins/superpod_k8s.py"
)
f = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(f)

KEYS = {
    "pod": "superpod.dev/pod",
    "su": "topology.kubernetes.io/zone",
    "row": "superpod.dev/row",
    "rack": "superpod.dev/rack",
    "leaf_group": "superpod.dev/leaf-group",
    "block": "superpod.dev/fabric-block",
}
MARKER = "superpod.dev/topology-managed"
KEYS_ANN = "superpod.dev/topology-keys"


def node(su, rack, row="a", rails=2, **extra):
    return {
        "superpod_su": su,
        "superpod_rack": rack,
        "superpod_row": row,
        "superpod_fabric_kind": "roce",
        "rails": [
            {"rail": r, "hca": f"mlx5_{r}", "netdev": f"enp{r}s0np0", "leaf": f"su{su:02d}-leaf-rail{r}"}
            for r in range(rails)
        ],
        **extra,
    }


HOSTVARS = {
    "su01-node01": node(1, "rack-a01"),
    "su01-node02": node(1, "rack-a01"),
    "su05-node01": node(5, "rack-c02", row="c"),
}


def test_topology_places_nodes_and_derives_blocks_from_block_size():
    topo = f.superpod_node_topology(HOSTVARS, list(HOSTVARS), {"su05-node01": "n5"}, 4)
    by = {t["host"]: t for t in topo}
    assert by["su01-node01"]["su"] == "su01" and by["su01-node01"]["block"] == "block01"
    assert by["su05-node01"]["block"] == "block02" and by["su05-node01"]["node"] == "n5"
    assert by["su05-node01"]["leaf_group"] == "su05-leaf"
    assert by["su01-node02"]["hcas"] == ["mlx5_0", "mlx5_1"]


def test_topology_prefers_the_inventory_block_and_has_none_on_two_tiers():
    hv = {"a": node(1, "r1", superpod_fabric_block=7), "b": node(2, "r2")}
    topo = {t["host"]: t for t in f.superpod_node_topology(hv, ["a", "b"], {}, 0)}
    assert topo["a"]["block"] == "block07" and topo["b"]["block"] is None


def test_labels_follow_configured_keys_and_skip_empty_levels():
    topo = f.superpod_node_topology(HOSTVARS, list(HOSTVARS), {}, 0)
    labels = f.superpod_node_labels(topo, dict(KEYS, row=""), MARKER, pod="lab")
    one = labels["su01-node01"]["labels"]
    assert one == {
        MARKER: "true",
        "superpod.dev/pod": "lab",
        "topology.kubernetes.io/zone": "su01",
        "superpod.dev/rack": "rack-a01",
        "superpod.dev/leaf-group": "su01-leaf",
    }  # no row (key disabled), no block (two tiers)
    assert labels["su01-node01"]["annotations"] == {"superpod.dev/rail-hcas": "mlx5_0,mlx5_1"}


def test_labels_reject_bad_values_and_unknown_levels():
    topo = f.superpod_node_topology({"x": node(1, "rack a01")}, ["x"], {}, 0)
    with pytest.raises(ValueError, match="rack.*not a valid Kubernetes label value"):
        f.superpod_node_labels(topo, KEYS, MARKER)
    with pytest.raises(ValueError, match="unknown level 'aisle'"):
        f.superpod_node_labels(topo, {"aisle": "x/y"}, MARKER)


def test_patches_take_back_labels_from_nodes_that_left_the_plan():
    topo = f.superpod_node_topology(HOSTVARS, list(HOSTVARS), {}, 4)
    planned = f.superpod_node_labels(topo, KEYS, MARKER, pod="p")
    first = f.superpod_node_patches(planned, [], MARKER, KEYS_ANN)
    assert [p["name"] for p in first["apply"]] == sorted(HOSTVARS) and first["remove"] == []
    recorded = first["apply"][0]["annotations"][KEYS_ANN]
    # su05-node01 leaves the plan; su01-node01 is still in it
    live = [
        {"name": "su01-node01", "annotations": {KEYS_ANN: recorded}},
        {"name": "su05-node01", "annotations": {KEYS_ANN: recorded}},
    ]
    del planned["su05-node01"]
    second = f.superpod_node_patches(planned, live, MARKER, KEYS_ANN)
    assert [p["name"] for p in second["remove"]] == ["su05-node01"]
    gone = second["remove"][0]
    assert set(gone["labels"]) == set(planned["su01-node01"]["labels"]) and set(gone["labels"].values()) == {None}
    assert gone["annotations"] == {KEYS_ANN: None, "superpod.dev/rail-hcas": None}
    # nothing is deleted from a node still in the plan
    kept = second["apply"][0]
    assert None not in kept["labels"].values()


def test_patches_drop_a_renamed_label_key():
    topo = f.superpod_node_topology({"n": node(1, "r1")}, ["n"], {}, 0)
    old = f.superpod_node_labels(topo, KEYS, MARKER)
    recorded = f.superpod_node_patches(old, [], MARKER, KEYS_ANN)["apply"][0]["annotations"][KEYS_ANN]
    new = f.superpod_node_labels(topo, dict(KEYS, rack="example.com/rack"), MARKER)
    patch = f.superpod_node_patches(new, [{"name": "n", "annotations": {KEYS_ANN: recorded}}], MARKER, KEYS_ANN)
    labels = patch["apply"][0]["labels"]
    assert labels["superpod.dev/rack"] is None and labels["example.com/rack"] == "r1"


def test_nesting_reports_a_rack_split_across_sus():
    topo = f.superpod_node_topology({"a": node(1, "r1"), "b": node(2, "r1")}, ["a", "b"], {}, 0)
    assert f.superpod_check_nesting(topo, ["su", "rack", "node"]) == ["rack r1 spans su su01 and su02"]
    assert f.superpod_check_nesting(topo, ["rack", "node"]) == []


def test_volcano_tiers_follow_leaf_groups_blocks_and_pod():
    three = f.superpod_volcano_hypernodes(f.superpod_node_topology(HOSTVARS, list(HOSTVARS), {}, 4), "sp")
    tiers = {
        h["metadata"]["name"]: (h["spec"]["tier"], [m["selector"]["exactMatch"]["name"] for m in h["spec"]["members"]])
        for h in three
    }
    assert tiers["sp-su01-leaf"] == (1, ["su01-node01", "su01-node02"])
    assert tiers["sp-block02"] == (2, ["sp-su05-leaf"])
    assert tiers["sp-pod"] == (3, ["sp-block01", "sp-block02"])
    two = f.superpod_volcano_hypernodes(f.superpod_node_topology(HOSTVARS, list(HOSTVARS), {}, 0), "sp")
    assert [h["spec"]["tier"] for h in two] == [1, 1, 2]


def test_rdma_config_per_rail_and_shared():
    hv = dict(HOSTVARS, other=node(2, "r9"))
    hv["other"]["rails"][1]["netdev"] = "ibp64s0"  # another node model on rail 1
    per_rail = f.superpod_rdma_config(hv, list(hv))["configList"]
    assert [c["resourceName"] for c in per_rail] == ["rdma_rail0", "rdma_rail1"]
    assert per_rail[1]["selectors"]["ifNames"] == ["enp1s0np0", "ibp64s0"]
    shared = f.superpod_rdma_config(hv, list(hv), "shared", "rdma_shared", 8)["configList"]
    assert shared == [
        {
            "resourceName": "rdma_shared",
            "rdmaHcaMax": 8,
            "selectors": {"ifNames": ["enp0s0np0", "enp1s0np0", "ibp64s0"]},
        }
    ]


def test_key_paths_of_nested_values():
    assert f.superpod_key_paths({"a": {"b": 1, "c": {"d": []}}, "e": {}}) == ["a", "a.b", "a.c", "a.c.d", "e"]


def test_topology_names_the_node_and_the_missing_inventory_vars():
    hv = {"su01-node01": {"superpod_su": 1, "rails": []}}
    with pytest.raises(ValueError, match="su01-node01 lacks superpod_rack, superpod_row"):
        f.superpod_node_topology(hv, ["su01-node01"], {}, 0)
