"""End-to-end: Slurm on the shared lab pod through `superpod apply`, proven with the real daemons
(Debian 12's slurm-wlm 22.05 and munge).

The lab pod's GPU nodes (tests/e2e/conftest.py, already converged by test_apply_drift_e2e's first
apply) get slurmd; one more container stands in for the plan's first management node and runs
slurmctld. Slurm is switched on by a second inventory overlay, as a site switches it on in
overrides.yml; the MUNGE key is made by the test and reaches the inventory only encrypted with
ansible-vault (inline `!vault`), its password in a 0600 file of the session.

What the expectations come from: the plan (topology.render.slurm_plan over the lab's layout): node
names, features, GPUs and the switch tree. What stands in for hardware, and the overlay says so:
the GPUs are character device nodes /dev/nvidia0-7 (major 195) without GPUs behind them; each node
is configured with one core and 256 MB (the containers share the host's CPUs); GRES without
`Cores`; processes tracked per Linux process (no cgroup delegation in these containers); the
plan's in-band addresses are not on the containers, so the Slurm addresses are the containers'.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import stack_layout
from tests.e2e import fake_gpus
from tests.e2e.labpod import ROOT, TIMINGS, LabPod, ensure_image, last_run, superpod
from topology.operate.events import load_events
from topology.render.slurm_plan import slurm_plan

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

ANSIBLE_VAULT = Path(sys.executable).parent / "ansible-vault"
# The lab's stand-ins (module docstring); the health check every few seconds so the drain shows quickly.
HEALTHCHECK_INTERVAL = 5
BOOTLOADER_STAMP = "/var/lib/superpod/bootloader-cmdline"  # node_check_bootloader_stamp's default


def _vault_inline(value: str, password_file: Path) -> str:
    """`ansible-vault encrypt_string`: the value goes in on stdin, never in argv."""
    out = subprocess.run([str(ANSIBLE_VAULT), "encrypt_string", "--vault-password-file", str(password_file),
                          "--stdin-name", "vault_munge_key"], input=value, capture_output=True, text=True,
                         check=True).stdout
    return out.split(":", 1)[1].strip()  # `vault_munge_key: !vault |` + the indented cipher text


class _Vault(yaml.SafeDumper):
    pass


class _Cipher(str):
    pass


def _cipher_block(dumper: yaml.SafeDumper, value: _Cipher):
    lines = [line.strip() for line in value.split("|", 1)[1].strip().splitlines()]
    return dumper.represent_scalar("!vault", "\n".join(lines) + "\n", style="|")


_Vault.add_representer(_Cipher, _cipher_block)


def _overlay(pod: LabPod, controller: str, plan, cipher: str) -> dict:
    ip = {h: pod.ip(h) for h in [*pod.hosts, controller]}
    override = {
        "sockets": 1, "cores_per_socket": 1, "threads_per_core": 1, "real_memory_mb": 256,
        "gres": [{"index": g.index, "file": g.file, "cores": ""} for g in plan.gres],
        "controllers": [{"name": controller, "address": ip[controller]}],
        "node_groups": [{**g.model_dump(), "addresses": [ip[h] for h in g.hosts]} for g in plan.node_groups],
    }
    slurm_vars = {
        "superpod_slurm_enabled": True,
        "slurm_hardware_override": override,
        "slurm_proctrack_type": "proctrack/linuxproc",
        "slurm_task_plugin": "task/affinity",
        "slurm_healthcheck_interval": HEALTHCHECK_INTERVAL,
    }
    hosts = pod.overlay_hosts([controller])
    return {"all": {"hosts": hosts, "vars": {**slurm_vars, "vault_munge_key": _Cipher(cipher)}}}


@pytest.fixture(scope="module")
def slurm_work(tmp_path_factory) -> Path:
    """The Slurm overlay, its vault password and the runs: shared by the later applies (health watcher)."""
    return tmp_path_factory.mktemp("slurm")


@pytest.fixture(scope="module")
def slurm(lab_pod: LabPod, slurm_work: Path):
    """The lab pod with Slurm applied: (pod, controller host, plan)."""
    pod = lab_pod
    plan = slurm_plan(stack_layout(pod.stack))
    controller = plan.controllers[0].name
    work = slurm_work
    t0 = time.monotonic()
    pod.add_host(controller, ensure_image())
    try:
        for host in pod.hosts:  # the GPUs' stand-ins: device files, NVIDIA's major 195
            pod.sh(host, " && ".join(f"{{ test -e {g.file} || mknod -m 0666 {g.file} c 195 {g.index}; }}"
                                     for g in plan.gres))
        password = work / "vault-pass"
        password.touch(mode=0o600)
        password.write_text(secrets.token_urlsafe(32))
        key = base64.b64encode(secrets.token_bytes(256)).decode()
        overlay = work / "slurm.yml"
        overlay.write_text("# e2e: Slurm on (the MUNGE key only vault-encrypted)\n"
                           + yaml.dump(_overlay(pod, controller, plan, _vault_inline(key, password)), Dumper=_Vault))
        assert key not in overlay.read_text()
        runs = work / "runs"  # its own records: the apply/drift tests' records stay theirs
        # In the e2e session the pod is converged (test_apply_drift_e2e's first apply); run alone, the
        # health check's node_check also needs the kernel command line host_tuning and hugepages record,
        # and the driver (its version is node_check's: without it every node drains "actual n/a").
        tags = "nccl,slurm" if all(pod.sh(h, f"test -s {BOOTLOADER_STAMP}", check=False).returncode == 0
                                   for h in pod.hosts) else "hugepages,host_tuning,nvidia_driver,nccl,slurm"
        proc = superpod("apply", "--stack", pod.stack, "-i", str(pod.overlay), "-i", str(overlay),
                        "--runs-dir", str(runs), "--limit", f"{controller}:gpu_nodes", "--tags", tags,
                        "--playbook", str(pod.playbook), "--vault-password-file", str(password), "--no-progress")
        TIMINGS["slurm_apply_s"] = round(time.monotonic() - t0, 1)
        assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
        assert not any(key in p.read_text(errors="replace") for p in runs.rglob("*") if p.is_file())
        yield pod, controller, plan
    finally:
        for host in pod.hosts:  # leave the nodes as the other lab tests know them
            pod.sh(host, "systemctl disable --now slurmd munge 2>/dev/null", check=False)
        pod.remove_host(controller)
        TIMINGS["slurm_total_s"] = round(time.monotonic() - t0, 1)


def _ctl(pod: LabPod, controller: str, command: str) -> str:
    proc = pod.sh(controller, command, check=False)
    assert proc.returncode == 0, f"{command}: {proc.stdout}{proc.stderr}"
    return proc.stdout


def _sinfo(pod: LabPod, controller: str) -> dict[str, list[str]]:
    rows = _ctl(pod, controller, "sinfo -N -h -o '%N|%t|%f|%G'").split()
    return {f[0]: f[1:] for f in (r.split("|") for r in rows)}


def _wait(what: str, check, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(2)


def test_sinfo_lists_every_planned_node_idle_with_its_features_and_gpus(slurm):
    pod, controller, plan = slurm
    rows = _wait("idle", lambda: (r := _sinfo(pod, controller)) and all(v[0] == "idle" for v in r.values()) and r)
    planned = {h: ",".join(g.features) for g in plan.node_groups for h in g.hosts}
    assert rows, _sinfo(pod, controller)
    assert sorted(rows) == sorted(pod.hosts) == sorted(planned)
    assert rows == {h: ["idle", planned[h], f"gpu:{plan.gpu_type}:{plan.gpu_count}"] for h in planned}


def test_a_job_runs_once_on_every_node(slurm):
    pod, controller, _ = slurm
    out = _ctl(pod, controller, f"srun -N{len(pod.hosts)} --time=1 hostname")
    assert sorted(out.split()) == sorted(pod.hosts)


def test_a_job_asking_for_two_gpus_sees_two(slurm):
    pod, controller, _ = slurm
    out = _ctl(pod, controller, "srun -N1 --gres=gpu:2 --time=1 sh -c 'echo $CUDA_VISIBLE_DEVICES'")
    assert out.strip() == "0,1"


def test_the_loaded_topology_is_the_plans(slurm):
    pod, controller, plan = slurm
    seen = {}
    for line in _ctl(pod, controller, "scontrol show topology").splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        seen[fields["SwitchName"]] = (fields.get("Nodes", ""), fields.get("Switches", ""))
    assert seen == {s.name: (s.nodes, s.switches) for s in plan.switches}


def test_a_failing_node_check_drains_the_node_and_a_fixed_node_returns(slurm):
    """The bootloader loses a planned kernel argument: node_check's module (run by slurmd's health
    check) reports it, the node is drained with that reason; restored, it returns to idle."""
    pod, controller, _ = slurm
    node = pod.hosts[1]
    stamp = pod.sh(node, f"cat {BOOTLOADER_STAMP}").stdout
    argument = next(a for a in stamp.split() if a.startswith("iommu="))
    broken = " ".join(a for a in stamp.split() if a != argument)
    t0 = time.monotonic()
    _write(pod, node, BOOTLOADER_STAMP, broken)
    try:
        shown = _wait("drain", lambda: (o := _ctl(pod, controller, f"scontrol show node {node} -o")) and
                      re.search(r"State=\S*DRAIN", o) and o)
        TIMINGS["slurm_drain_s"] = round(time.monotonic() - t0, 1)
        assert shown, _ctl(pod, controller, f"scontrol show node {node} -o")
        assert re.search(r"Reason=superpod-healthcheck: kernel cmdline \(bootloader\) expected .* actual missing "
                         + re.escape(argument), shown), shown
        # the others keep taking jobs
        others = sorted(set(pod.hosts) - {node})
        assert sorted(_ctl(pod, controller, f"srun -N{len(others)} --time=1 hostname").split()) == others
    finally:
        _write(pod, node, BOOTLOADER_STAMP, stamp)
    t1 = time.monotonic()
    back = _wait("idle", lambda: _ctl(pod, controller, f"sinfo -h -n {node} -o %t").strip() == "idle")
    TIMINGS["slurm_return_s"] = round(time.monotonic() - t1, 1)
    assert back, _ctl(pod, controller, f"scontrol show node {node} -o")


def _write(pod: LabPod, host: str, path: str, text: str) -> None:
    pod.sh(host, f"echo {base64.b64encode(text.encode()).decode()} | base64 -d > {path}")


def test_the_nodes_got_slurm_without_the_optional_plugins(slurm):
    """The role installs without recommends: slurm-wlm-plugins (HDF5, ROCm SMI, IPMI, ... with their
    -dev packages, cairo and fonts) is nothing this configuration loads."""
    pod, controller, _ = slurm
    for host in [*pod.hosts, controller]:
        assert pod.sh(host, "dpkg-query -W -f '${Status}' slurm-wlm-plugins", check=False).stdout \
            in ("", "unknown ok not-installed"), host
        assert pod.sh(host, "dpkg-query -W -f '${Status}' slurm-wlm-basic-plugins").stdout == "install ok installed"


# ---- The health watcher (roles/health_watcher) on the same nodes, draining in the real slurmctld ----
# Its stand-ins, said in the overlay: the kernel log is a file per node (the containers share the
# host's /dev/kmsg: an XID written there would reach every node, and the host); nvidia-smi is the
# lab's stand-in (its `-q -x` from the real H100's); no rail netdevs in the containers (as
# node_check_require_rail_links: false); no fabric telemetry exporter on the in-band address.
# Return after 10 s quiet and node_check every 10 s (defaults 600 s and 300 s) so a run takes seconds.
WATCHER_KERNEL_LOG = "/var/log/superpod-e2e-kern.log"
WATCHER_STATE = "/var/lib/superpod-health-watcher/state.json"
WATCHER_RETURN_AFTER = 10
WATCHER_NODE_CHECK_INTERVAL = 10
DRAIN_GOAL_S = 30  # issue #36: event to drain under 30 s (a goal, reported: not asserted under load)


def _watcher_overlay(pod: LabPod) -> dict:
    switches = {
        "health_watcher_kernel_log": WATCHER_KERNEL_LOG,
        "health_watcher_nvidia_smi": [fake_gpus.SMI_PATH, "-q", "-x"],
        "health_watcher_rails": [],
        "health_watcher_pfc_url": "",
        "health_watcher_return_after_s": WATCHER_RETURN_AFTER,
        "health_watcher_node_check_interval_s": WATCHER_NODE_CHECK_INTERVAL,
    }
    return {"all": {"hosts": {h: dict(switches) for h in pod.hosts}}}


@pytest.fixture(scope="module")
def watcher(slurm, slurm_work: Path):
    """The health watcher applied on the GPU nodes through `superpod apply` with the Slurm overlay
    (scheduler slurm: the node's scontrol, munge-authenticated, as root)."""
    pod, controller, plan = slurm
    t0 = time.monotonic()
    for host in pod.hosts:
        pod.sh(host, f"touch {WATCHER_KERNEL_LOG}")
    overlay = slurm_work / "health-watcher.yml"
    overlay.write_text("# e2e: the health watcher's stand-ins\n" + yaml.safe_dump(_watcher_overlay(pod)))
    try:
        proc = superpod("apply", "--stack", pod.stack, "-i", str(pod.overlay), "-i", str(slurm_work / "slurm.yml"),
                        "-i", str(overlay), "--runs-dir", str(slurm_work / "runs"), "--limit", "gpu_nodes",
                        "--playbook", str(ROOT / "playbooks/health_watcher.yml"),
                        "--vault-password-file", str(slurm_work / "vault-pass"), "--no-progress")
        TIMINGS["health_watcher_apply_s"] = round(time.monotonic() - t0, 1)
        assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
        builds = wheel_builds(last_run(slurm_work / "runs", pod.stack, "apply") / "artifacts/run/job_events")
        assert len(builds) <= 1, builds  # the lab's nodes share one image: one Python and CPU, one wheelhouse
        yield pod, controller, plan
    finally:
        for host in pod.hosts:
            pod.sh(host, "systemctl disable --now superpod-health-watcher 2>/dev/null", check=False)
        TIMINGS["health_watcher_total_s"] = round(time.monotonic() - t0, 1)


def wheel_builds(job_events: Path) -> list[str]:
    """The hosts the controller built the watcher's wheel for in that run (none when it was built before)."""
    return [e["event_data"]["host"] for e in load_events(job_events)
            if e.get("event") == "runner_on_ok" and e["event_data"].get("task") == "Build the watcher wheel"]


def _drained(pod: LabPod, controller: str) -> dict[str, str]:
    """sinfo -R: each drained (or down) node and its reason."""
    rows = _ctl(pod, controller, "sinfo -R -N -h -o '%N|%E'").splitlines()
    return dict(r.split("|", 1) for r in rows if r.strip())


def _watcher_state(pod: LabPod, host: str) -> dict:
    return json.loads(pod.sh(host, f"cat {WATCHER_STATE} 2>/dev/null || echo '{{}}'").stdout)


def _journal(pod: LabPod, host: str) -> str:
    return pod.sh(host, "journalctl -u superpod-health-watcher --no-pager -q | tail -20", check=False).stdout


def test_the_watcher_leaves_healthy_nodes_in_service(watcher):
    """Its first passes (node_check's module included) find nothing on the healthy lab nodes."""
    pod, controller, _ = watcher
    for host in pod.hosts:
        assert pod.sh(host, "systemctl is-active superpod-health-watcher", check=False).stdout.strip() == "active", \
            _journal(pod, host)
    idle = _wait("idle", lambda: (r := _sinfo(pod, controller)) and all(v[0] == "idle" for v in r.values()))
    assert idle, _sinfo(pod, controller)
    time.sleep(WATCHER_NODE_CHECK_INTERVAL + 2)  # one node_check pass of every watcher after the start
    assert _drained(pod, controller) == {}
    assert all(_watcher_state(pod, h) == {} for h in pod.hosts), {h: _journal(pod, h) for h in pod.hosts}


def test_a_gpu_xid_drains_the_node_in_slurm_and_the_watcher_returns_it(watcher, capsys):
    """The driver's NVRM line for XID 79 on the lab's first GPU of one node (its PCI address as the
    lab's GPU stand-in reports it): slurmctld drains that node alone, with the XID as its reason;
    quiet and node_check passing, the watcher resumes it (idle) by itself. The seconds from the
    event to the drain slurmctld shows (sinfo polled every 0.25 s) are reported against the goal."""
    pod, controller, _ = watcher
    node = pod.hosts[0]
    bus = fake_gpus.healthy(1)[0]["pci.bus_id"]  # 00000000:18:00.0, NVRM names it PCI:0000:18:00
    pci = f"PCI:{bus[4:].rsplit('.', 1)[0]}"
    line = f"[ 8123.456789] NVRM: Xid ({pci}): 79, pid=2214, name=python3, GPU has fallen off the bus."
    t0 = time.monotonic()
    pod.sh(node, f"echo '{line}' >> {WATCHER_KERNEL_LOG}")
    deadline = t0 + 120
    while time.monotonic() < deadline and node not in (drained := _drained(pod, controller)):
        time.sleep(0.25)
    drain_s = round(time.monotonic() - t0, 1)
    TIMINGS["watcher_xid_drain_s"] = drain_s
    assert drained == {node: f"superpod-health: GPU XID 79 at {pci}: pid=2214, name=python3, GPU has fallen "
                             "off the bus."}, _journal(pod, node)
    with capsys.disabled():
        print(f"\nhealth watcher, GPU XID 79 on {node}: event to drain in slurmctld {drain_s} s "
              f"(goal < {DRAIN_GOAL_S} s)")
    shown = _ctl(pod, controller, f"scontrol show node {node} -o")
    assert re.search(r"State=IDLE\+DRAIN\b", shown), shown
    t1 = time.monotonic()
    back = _wait("idle", lambda: _ctl(pod, controller, f"sinfo -h -n {node} -o %t").strip() == "idle", timeout=180)
    TIMINGS["watcher_xid_return_s"] = round(time.monotonic() - t1, 1)
    assert back, _ctl(pod, controller, f"scontrol show node {node} -o") + _journal(pod, node)
    assert _drained(pod, controller) == {}
    assert _watcher_state(pod, node) == {}
    assert "resume: returned to service" in _journal(pod, node)  # the watcher's resume, no one else's


def test_a_failing_node_check_drains_through_the_watcher_and_it_returns(watcher):
    """The bootloader loses a planned kernel argument: the watcher's node_check (its own module and
    plan, every 10 s here) drains the node with the mismatch; Slurm's health check sees the same.
    Restored, the node is idle again and the watcher holds no drain of its own (its next fault
    drains again)."""
    pod, controller, _ = watcher
    node = pod.hosts[2]
    stamp = pod.sh(node, f"cat {BOOTLOADER_STAMP}").stdout
    argument = next(a for a in stamp.split() if a.startswith("iommu="))
    t0 = time.time()
    _write(pod, node, BOOTLOADER_STAMP, " ".join(a for a in stamp.split() if a != argument))
    try:
        state = _wait("watcher drain", lambda: (s := _watcher_state(pod, node)).get("drained") and s)
        assert state, _journal(pod, node)
        TIMINGS["watcher_node_check_drain_s"] = round(state["since"] - t0, 1)
        assert re.fullmatch(r"superpod-health: node_check: 1 mismatch\(es\): kernel cmdline \(bootloader\) "
                            r"expected .* actual missing " + re.escape(argument), state["reason"]), state
        assert node in _drained(pod, controller)
    finally:
        _write(pod, node, BOOTLOADER_STAMP, stamp)
    back = _wait("returned", lambda: _ctl(pod, controller, f"sinfo -h -n {node} -o %t").strip() == "idle"
                 and _watcher_state(pod, node) == {}, timeout=180)
    assert back, (_ctl(pod, controller, f"scontrol show node {node} -o"), _watcher_state(pod, node),
                  _journal(pod, node))
    # the watcher took up watching again: a GPU XID drains the node once more, and it returns
    line = "[ 9001.000001] NVRM: Xid (PCI:0000:18:00): 48, pid=1, name=python3, An uncorrectable double bit error"
    pod.sh(node, f"echo '{line}' >> {WATCHER_KERNEL_LOG}")
    assert _wait("drain", lambda: node in _drained(pod, controller), timeout=60), _journal(pod, node)
    assert _wait("idle", lambda: _ctl(pod, controller, f"sinfo -h -n {node} -o %t").strip() == "idle"
                 and _watcher_state(pod, node) == {}, timeout=180), _journal(pod, node)
