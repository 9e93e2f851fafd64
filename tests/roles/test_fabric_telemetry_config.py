"""The fabric_telemetry role's exporter.yml, templated by Ansible from the host vars the
inventory generates for the lab and roce-1k plans: every planned NIC is there, the agent
accepts the file, and each rail's labels (rail, GPU, HCA, leaf, leaf port, SU) are the
layout's cabling."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import stack_layout
from tests.roles.playbook import ROOT, debug_values, run_play
from topology.render.inventory import render_inventory

fabric_config = pytest.importorskip("fabric_telemetry.config")
ROLE = ROOT / "roles" / "fabric_telemetry"
PICK = {"lab": "su01-node03", "roce-1k": "su03-node17"}


def host_vars(stack: str, node: str) -> dict:
    files = render_inventory(stack_layout(stack), Path("/inv"))
    return yaml.safe_load(files[Path("/inv/hosts.yml")])["all"]["children"]["gpu_nodes"]["hosts"][node]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fabric_telemetry")
    role_vars = {**yaml.safe_load((ROLE / "defaults/main.yml").read_text()),
                 **yaml.safe_load((ROLE / "vars/Debian.yml").read_text()),
                 **yaml.safe_load((ROLE / "vars/main.yml").read_text())}
    role_vars = {k: v for k, v in role_vars.items() if "role_path" not in str(v)}
    hosts = {node: host_vars(stack, node) for stack, node in PICK.items()}
    tasks = [{"name": "Render", "ansible.builtin.debug": {
        "msg": "{{ lookup('ansible.builtin.template', '" + str(ROLE / "templates/exporter.yml.j2") + "') }}"}}]
    results = run_play(tmp, tasks, hosts, extra_vars=role_vars)
    return {node: yaml.safe_load(debug_values(results[node])[0]) for node in hosts}


@pytest.mark.parametrize("stack", sorted(PICK))
def test_labels_follow_the_layout(rendered, stack):
    node = PICK[stack]
    layout = stack_layout(stack)
    cfg = fabric_config.ExporterConfig.model_validate(rendered[node])
    dev = next(d for d in layout.devices if d.name == node)
    assert cfg.node == node and cfg.su == f"su{dev.su:02d}"
    cabled = {lk.a_port: (lk.b_device, lk.b_port) for lk in layout.links
              if lk.a_device == node and lk.tier == "node-leaf"}
    rails = [n for n in cfg.nics if n.kind == "rail"]
    hv = host_vars(stack, node)
    assert [n.rail for n in rails] == sorted(r["rail"] for r in hv["rails"]) == list(range(8))
    for n in rails:
        planned = next(r for r in hv["rails"] if r["rail"] == n.rail)
        assert (n.netdev, n.hca, n.gpu) == (planned["netdev"], planned["hca"], planned["gpu"])
        assert (n.leaf, n.leaf_port) == cabled[n.netdev]
        assert n.leaf.endswith(f"-leaf-rail{n.rail}") and n.leaf.startswith(cfg.su)  # rail-optimized
        labels = n.labels(cfg.node, cfg.su)
        assert labels["rail"] == str(n.rail) and labels["leaf_port"] == n.leaf_port
    storage = [n for n in cfg.nics if n.kind == "storage"]
    assert [n.netdev for n in storage] == [s["netdev"] for s in hv["superpod_storage_nics"]]
    assert cfg.ethtool_command == ["/usr/sbin/ethtool", "-S"] and cfg.listen.port == 9735
    # bound to the node's planned in-band address, where Prometheus scrapes it: not every interface
    inband = next(a for a in layout.addresses if a.device == node and a.pool == "inband")
    assert cfg.listen.address == inband.address.split("/")[0]
