"""The health_watcher role's watcher.yml and systemd unit, templated by Ansible from the host vars
the inventory generates for the lab and roce-1k plans: the agent's own model accepts the file, its
rails and GPU count are the layout's (derived from the plan, not from the inventory under test), and
systemd's own verifier accepts the unit."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import stack_layout
from tests.roles.playbook import ROOT, debug_values, run_play
from topology import catalog
from topology.render.inventory import render_inventory

watcher_config = pytest.importorskip("health_watcher.config")
ROLE = ROOT / "roles" / "health_watcher"
PICK = {"lab": "su01-node03", "roce-1k": "su03-node17"}


def host_vars(stack: str, node: str) -> dict:
    files = render_inventory(stack_layout(stack), Path("/inv"))
    return yaml.safe_load(files[Path("/inv/hosts.yml")])["all"]["children"]["gpu_nodes"]["hosts"][node]


def role_vars(**over) -> dict:
    out = {**yaml.safe_load((ROLE / "defaults/main.yml").read_text()),
           **yaml.safe_load((ROLE / "vars/Debian.yml").read_text()),
           **yaml.safe_load((ROLE / "vars/main.yml").read_text())}
    return {**{k: v for k, v in out.items() if "role_path" not in str(v)}, **over}


def render(tmp: Path, template: str, hosts: dict, **over) -> dict[str, str]:
    tasks = [{"name": "Render", "ansible.builtin.debug": {
        "msg": "{{ lookup('ansible.builtin.template', '" + str(ROLE / "templates" / template) + "') }}"}}]
    results = run_play(tmp, tasks, hosts, extra_vars=role_vars(**over))
    return {node: debug_values(results[node])[0] for node in hosts}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    hosts = {node: host_vars(stack, node) for stack, node in PICK.items()}
    out = render(tmp_path_factory.mktemp("health_watcher"), "watcher.yml.j2", hosts)
    return {node: yaml.safe_load(text) for node, text in out.items()}


@pytest.mark.parametrize("stack", sorted(PICK))
def test_rails_and_gpus_follow_the_layout(rendered, stack):
    node = PICK[stack]
    layout = stack_layout(stack)
    cfg = watcher_config.WatcherConfig.model_validate(rendered[node])  # the agent's own model
    dev = next(d for d in layout.devices if d.name == node)
    cabled = sorted(lk.a_port for lk in layout.links if lk.a_device == node and lk.tier == "node-leaf")
    assert cfg.node == node
    assert sorted(r.netdev for r in cfg.rails) == cabled and len(cabled) == 8
    assert [r.rail for r in cfg.rails] == list(range(8))
    assert cfg.gpu_count == catalog.load().nodes[dev.model].gpu_count
    # node_check's module and its plan, run by the system Python; PFC from the node's own exporter
    assert cfg.node_check == ["/usr/bin/python3", "/opt/superpod-health-watcher/node_check/superpod_node_check.py",
                              "/etc/superpod-health-watcher/node_check_args.json"]
    inband = next(a for a in layout.addresses if a.device == node and a.pool == "inband")
    assert cfg.pfc.url == f"http://{inband.address.split('/')[0]}:9735/metrics"
    assert cfg.scheduler.kind == "slurm" and cfg.nvidia_smi == ["/usr/bin/nvidia-smi", "-q", "-x"]
    assert cfg.state_file == "/var/lib/superpod-health-watcher/state.json"


def test_site_command_and_xids(tmp_path):
    node = PICK["lab"]
    out = render(tmp_path, "watcher.yml.j2", {node: host_vars("lab", node)},
                 health_watcher_scheduler="command", health_watcher_drain_xids=["79", 48],
                 health_watcher_drain_command=["/usr/local/sbin/drain", "{node}", "{reason}"],
                 health_watcher_resume_command=["/usr/local/sbin/resume", "{node}"],
                 health_watcher_node_check_enabled=False, health_watcher_pfc_url="")
    cfg = watcher_config.WatcherConfig.model_validate(yaml.safe_load(out[node]))
    assert cfg.scheduler.drain_command == ["/usr/local/sbin/drain", "{node}", "{reason}"]
    assert cfg.drain_xids == [79, 48] and cfg.node_check == [] and cfg.pfc.url == ""


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze not installed")
def test_unit_passes_systemd_analyze_verify(tmp_path):
    node = PICK["lab"]
    unit = render(tmp_path, "superpod-health-watcher.service.j2", {node: host_vars("lab", node)})[node]
    # the ExecStart binary must exist for verify: a stand-in at the rendered path under a root
    exe = unit.split("ExecStart=")[1].split()[0]
    path = tmp_path / "superpod-health-watcher.service"
    path.write_text(unit.replace(exe, "/bin/true"))
    done = subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True, text=True)
    bad = [line for line in done.stderr.splitlines() if "superpod-health-watcher.service" in line]
    assert done.returncode == 0 and not bad, done.stderr
