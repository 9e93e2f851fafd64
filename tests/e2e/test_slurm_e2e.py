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
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import stack_layout
from tests.e2e.labpod import TIMINGS, LabPod, ensure_image, superpod
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
def slurm(lab_pod: LabPod, tmp_path_factory):
    """The lab pod with Slurm applied: (pod, controller host, plan)."""
    pod = lab_pod
    plan = slurm_plan(stack_layout(pod.stack))
    controller = plan.controllers[0].name
    work = tmp_path_factory.mktemp("slurm")
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
        # health check's node_check also needs the kernel command line host_tuning and hugepages record.
        tags = "nccl,slurm" if all(pod.sh(h, f"test -s {BOOTLOADER_STAMP}", check=False).returncode == 0
                                   for h in pod.hosts) else "hugepages,host_tuning,nccl,slurm"
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
