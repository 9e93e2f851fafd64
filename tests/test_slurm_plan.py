"""The plan's Slurm files (build/<stack>/slurm/), read by Slurm's own slurmctld and scontrol.

Expectations come from the layout (which nodes are in which SU and rack, which leaves they
cable to, which spine block those leaves reach) and the catalog's NIC map, never from the
files under test."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.conftest import spec_with, stack_layout
from tests.slurm_daemon import MISSING, SCONTROL, local_conf, slurmctld
from topology import catalog
from topology.layout.build import build
from topology.render.diff import diff_layouts
from topology.render.slurm_files import render_slurm
from topology.render.slurm_plan import hostlist

needs_slurm = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


def _write(layout, out: Path) -> Path:
    for path, text in render_slurm(layout, out).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return out / "slurm"


def _expand(scontrol, expr: str) -> set[str]:
    return set(scontrol("show", "hostnames", expr).split()) if expr else set()


def _records(text: str) -> list[dict[str, str]]:
    """scontrol's one-line records (`-o`): Key=Value pairs."""
    return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in text.splitlines() if line.strip()]


def _planned_tree(layout) -> tuple[dict[int, set[str]], dict[int, int]]:
    """Each SU's GPU nodes, and each SU's spine block (three tiers) from the compute links."""
    by_name = layout.by_name
    nodes: dict[int, set[str]] = {}
    for d in layout.role("gpu_node"):
        nodes.setdefault(d.su, set()).add(d.name)
    block: dict[int, int] = {}
    for lk in layout.links:
        if lk.tier == "leaf-spine" and by_name[lk.b_device].block is not None:
            block[by_name[lk.a_device].su] = by_name[lk.b_device].block
    return nodes, block


@needs_slurm
@pytest.mark.parametrize("stack", ["lab", "dgx-h100-ib", "roce-8k"])
def test_slurmctld_reads_the_plan(stack, tmp_path):
    layout = stack_layout(stack)
    node_model = catalog.load().nodes[layout.spec.node_model]
    host = node_model.host
    su_nodes, su_block = _planned_tree(layout)
    # the lowest switch is the SU only because every node of it cables to every rail leaf of its SU
    leaves = {}
    for lk in layout.links:
        if lk.tier == "node-leaf":
            leaves.setdefault(lk.a_device, set()).add(lk.b_device)
    for su, names in su_nodes.items():
        rail_leaves = {d.name for d in layout.role("leaf") if d.su == su}
        assert all(leaves[n] == rail_leaves for n in names)

    with slurmctld(_write(layout, tmp_path / "plan"), tmp_path / "run") as scontrol:
        switches = _records(scontrol("show", "topology"))
        level = {int(s["Level"]) for s in switches}
        lowest = {s["SwitchName"]: _expand(scontrol, s["Nodes"]) for s in switches if s["Level"] == "0"}
        assert lowest == {f"su{su:02d}": names for su, names in su_nodes.items()}
        top = [s for s in switches if int(s["Level"]) == max(level)]
        if len(su_nodes) > 1:  # one switch above joins every node
            assert len(top) == 1 and _expand(scontrol, top[0]["Nodes"]) == set().union(*su_nodes.values())
        if su_block:  # three tiers: SUs under the spine block their leaves reach
            blocks = {s["SwitchName"]: _expand(scontrol, s["Nodes"]) for s in switches if s["Level"] == "1"}
            want: dict[str, set[str]] = {}
            for su, b in su_block.items():
                want.setdefault(f"block{b:02d}", set()).update(su_nodes[su])
            assert blocks == want
        else:
            assert max(level) <= 1

        nodes = {n["NodeName"]: n for n in _records(scontrol("show", "nodes", "-o"))}
        assert set(nodes) == {d.name for d in layout.role("gpu_node")}
        for d in layout.role("gpu_node"):
            n = nodes[d.name]
            features = [f"su{d.su:02d}", d.rack, layout.spec.compute_fabric.kind]
            features += [f"block{su_block[d.su]:02d}"] if su_block else []
            assert n["AvailableFeatures"].split(",") == features
            assert n["Gres"] == f"gpu:{node_model.gpu.split('-')[0]}:{node_model.gpu_count}"
            assert int(n["CPUTot"]) == host.sockets * host.cores_per_socket * host.threads_per_core
            assert int(n["RealMemory"]) < host.memory_gb * 1024
        partitions = _records(scontrol("show", "partition", "-o"))
        assert [p["Default"] for p in partitions] == ["YES"]
        assert int(partitions[0]["TotalNodes"]) == len(nodes)


def test_gres_binds_each_gpu_to_the_cores_beside_its_rail_nic(tmp_path):
    """GPU i sits beside rail NIC i (DGX H100 user guide): its cores are that NIC's NUMA node's."""
    layout = stack_layout("roce-1k")
    model = catalog.load().nodes[layout.spec.node_model]
    per_socket = model.host.cores_per_socket
    text = (_write(layout, tmp_path) / "gres.conf").read_text()
    lines = [dict(re.findall(r"(\w+)=(\S+)", ln)) for ln in text.splitlines() if ln.startswith("Name=gpu")]
    assert len(lines) == model.gpu_count
    for nic in model.compute_nics:
        line = lines[nic.gpu]
        assert line["File"] == f"/dev/nvidia{nic.gpu}"
        first, last = map(int, line["Cores"].split("-"))
        assert (first, last) == (nic.numa * per_socket, (nic.numa + 1) * per_socket - 1)


@needs_slurm
def test_hostlist_expands_back_with_slurm(tmp_path):
    names = ["su01-node01", "su01-node02", "su01-node03", "su01-node05", "su02-node31", "mgmt-01", "x"]
    expr = hostlist(names)
    conf = tmp_path / "slurm.conf"  # scontrol reads a configuration first, even to expand names
    conf.write_text(local_conf((_write(stack_layout("lab"), tmp_path) / "slurm.conf").read_text(), tmp_path))
    out = subprocess.run([SCONTROL, "show", "hostnames", expr], capture_output=True, text=True, check=True,
                         env=dict(os.environ, SLURM_CONF=str(conf))).stdout
    assert sorted(out.split()) == sorted(names)


def test_catalog_refuses_a_gpu_numa_map_of_the_wrong_length():
    data = catalog.load().nodes["dgx-h100"].model_dump()
    data["host"]["gpu_numa"] = [0, 1]
    with pytest.raises(ValidationError, match=r"host.gpu_numa: 2 entries for gpu_count 8"):
        catalog.NodeModel.model_validate(data)


def test_plan_writes_the_slurm_files_for_every_example():
    from tests.conftest import STACKS

    for stack in STACKS:
        files = render_slurm(stack_layout(stack), Path("/out"))
        assert sorted(p.name for p in files) == ["cgroup.conf", "gres.conf", "slurm.conf", "topology.conf"]


def test_diff_lists_the_scheduler_changes_of_a_new_su():
    old = stack_layout("lab")
    new = build(spec_with("lab", scalable_units=2))
    added = diff_layouts(old, new)["scheduler (slurm)"].added
    su2 = hostlist(d.name for d in new.role("gpu_node") if d.su == 2)
    assert f"topology.conf: SwitchName=su02 Nodes={su2}" in added
    assert any(a.startswith("slurm.conf: NodeName=su02-") for a in added)


def test_plan_builds_the_slurm_plan_once(monkeypatch, tmp_path):
    """`superpod plan` renders the inventory (superpod_slurm) and build/<stack>/slurm/ from one Slurm
    plan: building it walks every GPU node and compute link, so it is built once, not per artifact."""
    from topology.render import artifacts, inventory, slurm_files, slurm_plan

    built = []

    def counting(layout):
        built.append(layout)
        return slurm_plan.slurm_plan(layout)

    for module in (artifacts, inventory, slurm_files):
        if hasattr(module, "slurm_plan"):
            monkeypatch.setattr(module, "slurm_plan", counting)
    files = artifacts.render_artifacts(stack_layout("lab"), tmp_path / "out", tmp_path / "inv")
    assert len(built) == 1
    assert tmp_path / "out" / "slurm" / "topology.conf" in files
    assert "superpod_slurm" in files[tmp_path / "inv" / "group_vars" / "all" / "00_generated.yml"]
