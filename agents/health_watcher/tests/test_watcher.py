"""The watcher against stand-ins in the real formats: the kernel log's NVRM Xid lines, the real
H100's nvidia-smi -q -x, a sysfs tree of rail netdevs, and scontrol/kubectl that check their
arguments as the real ones do and record each call."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from health_watcher import fakes
from health_watcher.config import WatcherConfig
from health_watcher.watcher import Watcher

DATA = Path(__file__).resolve().parent / "data"
XID79 = ("NVRM: Xid (PCI:0000:18:00): 79, pid=2214, name=python3, GPU has fallen off the bus.")


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


@pytest.fixture
def node(tmp_path):
    kmsg = tmp_path / "kern.log"
    kmsg.write_text("earlier: NVRM: Xid (PCI:0000:18:00): 79, pid=1, before the watcher started\n")
    xml = tmp_path / "gpus.xml"
    xml.write_text((DATA / "nvidia-smi-q.xml").read_text())
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\ncat {xml}\n")
    smi.chmod(0o755)
    for rail in range(2):
        d = tmp_path / "net" / f"enp{rail}np0"
        d.mkdir(parents=True)
        (d / "operstate").write_text("up\n")
        (d / "carrier_changes").write_text("2\n")
    check = tmp_path / "node_check"
    check.write_text("#!/bin/sh\nexit 0\n")
    check.chmod(0o755)
    accept = tmp_path / "accept"
    accept.write_text("#!/bin/sh\nexit 0\n")
    accept.chmod(0o755)
    scontrol = fakes.write_tool(tmp_path / "scontrol", fakes.FAKE_SCONTROL, tmp_path / "scontrol.log")
    kubectl = fakes.write_tool(tmp_path / "kubectl", fakes.FAKE_KUBECTL, tmp_path / "kubectl.log")
    cfg = WatcherConfig(node="su01-node03", kernel_log=str(kmsg), nvidia_smi=[str(smi)], gpu_count=1,
                        sysfs_net=str(tmp_path / "net"), rails=[{"netdev": f"enp{r}np0", "rail": r} for r in range(2)],
                        node_check=[str(check)], acceptance=[str(accept)], return_after_s=60, gpu_interval_s=0.001,
                        node_check_interval_s=0.001, scheduler={"scontrol": str(scontrol), "kubectl": str(kubectl)},
                        state_file=str(tmp_path / "state.json"))
    return tmp_path, cfg


def scontrol_calls(tmp):
    return fakes.calls(tmp / "scontrol.log")


def test_healthy_node_is_left_alone(node):
    tmp, cfg = node
    w = Watcher(cfg, clock=Clock())
    assert w.step() is None and w.step() is None
    assert scontrol_calls(tmp) == []  # the XID logged before the start is history


def test_xid_79_drains_with_the_reason(node):
    tmp, cfg = node
    w = Watcher(cfg, clock=Clock())
    with (tmp / "kern.log").open("a") as f:
        f.write(f"[ 8123.4] {XID79}\n")
    assert w.step() == "drain"
    assert scontrol_calls(tmp) == [["update", "nodename=su01-node03", "state=drain",
                                    "reason=superpod-health: GPU XID 79 at PCI:0000:18:00: pid=2214, name=python3, "
                                    "GPU has fallen off the bus."]]
    assert w.step() is None  # drained once, not again


def test_an_application_xid_does_not_drain(node):
    tmp, cfg = node
    w = Watcher(cfg, clock=Clock())
    with (tmp / "kern.log").open("a") as f:
        f.write("NVRM: Xid (PCI:0000:18:00): 13, pid=2214, Graphics Exception: ESR 0x1\n")
    assert w.step() is None


@pytest.mark.parametrize("edit, reason", [
    (("<clocks_event_reason_hw_thermal_slowdown>Not Active", "<clocks_event_reason_hw_thermal_slowdown>Active"),
     "GPU 0 throttled: hw thermal slowdown"),
    (("<remapped_row_failure>No", "<remapped_row_failure>Yes"), "GPU 0: row remapping failed"),
    (("<dram_uncorrectable>0</dram_uncorrectable>", "<dram_uncorrectable>3</dram_uncorrectable>"),
     "GPU 0: 3 uncorrectable ECC errors"),
    (("<gpu id=", "<gone id="), "0 of 1 GPUs seen"),
])
def test_gpu_faults_drain(node, edit, reason):
    tmp, cfg = node
    xml = tmp / "gpus.xml"
    text = xml.read_text().replace(*edit)
    xml.write_text(text.replace("</gpu>", "</gone>") if edit[1] == "<gone id=" else text)
    w = Watcher(cfg, clock=Clock())
    assert w.step() == "drain"
    assert scontrol_calls(tmp)[0][3] == f"reason=superpod-health: {reason}"


def test_rail_down_and_flapping(node):
    tmp, cfg = node
    clock = Clock()
    w = Watcher(cfg, clock=clock)
    assert w.step() is None
    (tmp / "net/enp1np0/carrier_changes").write_text("6\n")  # 4 changes within the window
    clock.t += 30
    assert w.step() == "drain"
    assert "rail 1 enp1np0 flapping: 4 carrier changes in 30 s" in scontrol_calls(tmp)[0][3]
    tmp2_state = json.loads((tmp / "state.json").read_text())
    assert tmp2_state["drained"] is True


def test_rail_down_drains(node):
    tmp, cfg = node
    (tmp / "net/enp0np0/operstate").write_text("down\n")
    assert Watcher(cfg, clock=Clock()).step() == "drain"
    assert scontrol_calls(tmp)[0][3] == "reason=superpod-health: rail 0 enp0np0 is down"


def test_failing_node_check_drains(node):
    tmp, cfg = node
    (tmp / "node_check").write_text("#!/bin/sh\necho 'node_check: 1 mismatch(es): link rail1 enp64s0np0'\nexit 2\n")
    assert Watcher(cfg, clock=Clock()).step() == "drain"
    assert scontrol_calls(tmp)[0][3] == ("reason=superpod-health: node_check failed (exit 2): node_check: "
                                         "1 mismatch(es): link rail1 enp64s0np0")


def test_returns_only_after_quiet_time_and_passing_checks(node):
    tmp, cfg = node
    clock = Clock()
    w = Watcher(cfg, clock=clock)
    (tmp / "net/enp0np0/operstate").write_text("down\n")
    assert w.step() == "drain"
    (tmp / "net/enp0np0/operstate").write_text("up\n")
    clock.t += 30
    assert w.step() is None  # quiet for 30 s of 60
    (tmp / "accept").write_text("#!/bin/sh\necho 'all_reduce (node): FAIL'\nexit 1\n")
    clock.t += 31
    assert w.step() is None  # node_check passes, the acceptance does not: stays out
    (tmp / "accept").write_text("#!/bin/sh\nexit 0\n")
    clock.t += 61
    assert w.step() == "resume"
    assert scontrol_calls(tmp)[-1] == ["update", "nodename=su01-node03", "state=resume"]
    assert json.loads((tmp / "state.json").read_text()) == {}


def test_a_drain_made_by_someone_else_is_never_returned(node):
    tmp, cfg = node
    clock = Clock()
    w = Watcher(cfg, clock=clock)  # no state: whatever drained the node, it was not this watcher
    clock.t += 10_000
    assert w.step() is None and scontrol_calls(tmp) == []


def test_a_restarted_watcher_still_returns_its_own_drain(node):
    tmp, cfg = node
    clock = Clock()
    (tmp / "net/enp0np0/operstate").write_text("down\n")
    assert Watcher(cfg, clock=clock).step() == "drain"
    (tmp / "net/enp0np0/operstate").write_text("up\n")
    w = Watcher(cfg, clock=clock)  # restarted: reads its state file
    clock.t += 61
    w.state["last_fault"] = clock.t - 61
    assert w.step() == "resume"


def scontrol(tmp: Path, *args: str) -> None:
    """Someone else's scontrol call (Slurm's health check, an operator) on the same node."""
    subprocess.run([str(tmp / "scontrol"), *args], check=True, capture_output=True)


def test_a_node_returned_by_someone_else_is_forgotten_not_resumed(node):
    """Slurm's health check (roles/slurm) saw the same fault, drained the node over the watcher's drain
    and resumed it once it passed: slurmctld refuses a resume of a node that is not drained, and the
    watcher must not keep a drain Slurm no longer has (it would never drain that node again)."""
    tmp, cfg = node
    clock = Clock()
    w = Watcher(cfg, clock=clock)
    (tmp / "net/enp0np0/operstate").write_text("down\n")
    assert w.step() == "drain"
    scontrol(tmp, "update", "nodename=su01-node03", "state=drain", "reason=superpod-healthcheck: rail0 down")
    (tmp / "net/enp0np0/operstate").write_text("up\n")
    scontrol(tmp, "update", "nodename=su01-node03", "state=resume")  # the health check's own return
    clock.t += 61
    assert w.step() is None
    assert json.loads((tmp / "state.json").read_text()) == {}
    assert [c[2] for c in scontrol_calls(tmp)] == ["state=drain", "state=drain", "state=resume"]
    with (tmp / "kern.log").open("a") as f:
        f.write(f"[ 8123.4] {XID79}\n")
    assert w.step() == "drain"  # watching again


def test_a_node_an_operator_drained_over_the_watchers_drain_is_not_returned(node):
    tmp, cfg = node
    clock = Clock()
    w = Watcher(cfg, clock=clock)
    (tmp / "net/enp0np0/operstate").write_text("down\n")
    assert w.step() == "drain"
    scontrol(tmp, "update", "nodename=su01-node03", "state=drain", "reason=replace PSU (ticket 4711)")
    (tmp / "net/enp0np0/operstate").write_text("up\n")
    clock.t += 61
    assert w.step() is None
    assert scontrol_calls(tmp)[-1] == ["update", "nodename=su01-node03", "state=drain",
                                       "reason=replace PSU (ticket 4711)"]  # not resumed
    assert json.loads((tmp / "state.json").read_text()) == {}


def test_kubernetes_cordon_and_uncordon(node):
    tmp, cfg = node
    cfg = cfg.model_copy(update={"scheduler": cfg.scheduler.model_copy(update={"kind": "kubernetes"})})
    clock = Clock()
    w = Watcher(cfg, clock=clock)
    (tmp / "net/enp0np0/operstate").write_text("down\n")
    assert w.step() == "drain"
    (tmp / "net/enp0np0/operstate").write_text("up\n")
    clock.t += 61
    assert w.step() == "resume"
    assert [c[:2] for c in fakes.calls(tmp / "kubectl.log")] == [["cordon", "su01-node03"],
                                                                   ["annotate", "--overwrite"],
                                                                   ["uncordon", "su01-node03"], ["annotate", "node"]]


def test_alert_reaches_alertmanager(node):
    tmp, cfg = node
    got = []

    class H(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            got.append((self.path, json.loads(self.rfile.read(int(self.headers["Content-Length"])))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = HTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    cfg = cfg.model_copy(update={"alert": cfg.alert.model_copy(update={"url": f"http://127.0.0.1:{srv.server_port}"})})
    (tmp / "net/enp0np0/operstate").write_text("down\n")
    Watcher(cfg, clock=Clock()).step()
    srv.shutdown()
    (path, body), = got
    assert path == "/api/v2/alerts"
    assert body[0]["labels"] == {"alertname": "SuperpodNodeUnhealthy", "node": "su01-node03", "severity": "critical"}
    assert "endsAt" not in body[0]


def test_the_fake_scontrol_refuses_a_drain_without_reason(tmp_path):
    tool = fakes.write_tool(tmp_path / "scontrol", fakes.FAKE_SCONTROL, tmp_path / "log")
    done = subprocess.run([str(tool), "update", "nodename=x", "state=drain"], capture_output=True, text=True)
    assert done.returncode == 1 and "You must specify a reason" in done.stderr


def test_a_site_command_drains_and_returns(node):
    """scheduler kind 'command': the site's own argv, {node} and {reason} filled in, one argument each."""
    tmp, cfg = node
    tool = fakes.write_tool(tmp / "site-drain", fakes.FAKE_KUBECTL, tmp / "site.log")  # records its argv
    cfg = cfg.model_copy(update={"scheduler": type(cfg.scheduler).model_validate({
        "kind": "command", "drain_command": [str(tool), "out", "{node}", "--why={reason}"],
        "resume_command": [str(tool), "back", "{node}"]})})
    clock = Clock()
    w = Watcher(cfg, clock=clock)
    (tmp / "net/enp0np0/operstate").write_text("down\n")
    assert w.step() == "drain"
    (tmp / "net/enp0np0/operstate").write_text("up\n")
    clock.t += 61
    assert w.step() == "resume"
    assert fakes.calls(tmp / "site.log") == [["out", "su01-node03", "--why=superpod-health: rail 0 enp0np0 is down"],
                                             ["back", "su01-node03"]]
    assert scontrol_calls(tmp) == []


@pytest.mark.parametrize("scheduler, rule", [
    ({"kind": "command", "drain_command": ["x"]}, "needs drain_command and resume_command"),
    ({"kind": "command", "drain_command": ["x", "{host}"], "resume_command": ["y"]}, "only {node} and {reason}"),
])
def test_bad_site_commands_are_refused(scheduler, rule):
    with pytest.raises(ValueError, match=re.escape(rule)):
        WatcherConfig(node="n", scheduler=scheduler)


NODE_CHECK = Path(__file__).resolve().parents[3] / "roles" / "node_check" / "library" / "superpod_node_check.py"


def node_check_argv(tmp: Path, links: list[dict]) -> list[str]:
    """node_check's own module run on its own, as Slurm's health check runs it (roles/slurm)."""
    args = tmp / "node_check_args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {
        "expected": {"host": "su01-node03", "links": links}, "require_gpu": False, "host_kernel_checks": False,
        "rail_lldp": "off", "bootloader_stamp": str(tmp / "none")}}))
    return [sys.executable, str(NODE_CHECK), str(args)]


def test_node_check_module_mismatch_drains_and_its_pass_returns(node):
    """The module exits 0 whatever it finds: its JSON's mismatches are what drain the node."""
    pytest.importorskip("ansible.module_utils.basic")
    tmp, cfg = node
    missing = [{"name": "rail0", "netdev": "enp24s0np0", "mtu": None, "speed": None}]  # no such netdev here
    cfg = cfg.model_copy(update={"node_check": node_check_argv(tmp, missing), "rails": []})
    clock = Clock()
    w = Watcher(cfg, clock=clock)
    assert w.step() == "drain"
    assert scontrol_calls(tmp)[0][3] == ("reason=superpod-health: node_check: 1 mismatch(es): link rail0 enp24s0np0 "
                                         "expected up actual no such netdev")
    cfg.node_check[:] = node_check_argv(tmp, [])  # the plan met (nothing missing): passes
    clock.t += 61
    assert w.step() == "resume"
