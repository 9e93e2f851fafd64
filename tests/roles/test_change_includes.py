"""roce_qos, fabric_telemetry and cuda_toolkit read the node in one superpod_state call and put
every change behind one include whose condition is a vars/main.yml expression over that read
(issue 39: a converged node goes through one skipped task). The expression must be false only
where the modules behind it would change nothing: each case below is a converged read with one
thing changed, and the include must run for it. The values are the roles' own vars files,
templated by ansible-playbook over a recorded read (no node needed)."""

from __future__ import annotations

import copy
import json

import pytest

from tests.role_files import ROOT
from tests.roles.playbook import run_play

DEBIAN = {"os_family": "Debian", "distribution": "Debian", "distribution_major_version": "12",
          "architecture": "x86_64"}


def installed(*names: str) -> dict:
    """site.yml's package read, as superpod_missing_packages takes it."""
    return {"ansible_facts": {"packages": {n: [{"name": n, "version": "1", "arch": "amd64", "source": "apt"}]
                                           for n in names}}}


def role_files(role: str) -> list:
    return [ROOT / "roles" / role / f for f in ("defaults/main.yml", "vars/main.yml", "vars/Debian.yml")]


def pending(tmp_path, role: str, var: str, hosts: dict[str, dict]) -> dict[str, bool]:
    tasks = [{"name": "pending", "ansible.builtin.debug": {"msg": f"{{{{ {var} }}}}"}}]
    results = run_play(tmp_path, tasks, {h: dict(v, test_facts=DEBIAN) for h, v in hosts.items()},
                       vars_files=role_files(role))
    out = {}
    for host, res in results.items():
        [r] = [r for r in res if r["task"] == "pending"]
        assert not r.get("failed"), r
        out[host] = r["msg"]
    return out


def variants(base: dict, changes: dict) -> dict[str, dict]:
    """Host name -> host vars: the converged base, and one host per change (a function of a copy)."""
    hosts = {"converged": base}
    for name, change in changes.items():
        host = copy.deepcopy(base)
        change(host)
        hosts[name] = host
    return hosts


# ---------------------------------------------------------------- cuda_toolkit
CUDA_DISPLAY = ("cuda - manual mode\n  link best version is /usr/local/cuda-13.0\n"
                "  link currently points to /usr/local/cuda-12.4\n  link cuda is /usr/local/cuda\n"
                "/usr/local/cuda-12.4 - priority 1204\n/usr/local/cuda-13.0 - priority 1300")
CUDA = {
    "cuda_toolkit_installs": [
        {"version": "12.4", "packages": ["cuda-toolkit-12-4"], "install": ["cuda-toolkit-12-4"],
         "prefix": "/usr/local/cuda-12.4", "priority": 1204},
        {"version": "13.0", "packages": ["cuda-toolkit-13-0"], "install": ["cuda-toolkit-13-0"],
         "prefix": "/usr/local/cuda-13.0", "priority": 1300}],
    "cuda_toolkit_selected": "12.4",
    "superpod_package_facts": installed("cuda-toolkit-12-4", "cuda-toolkit-13-0"),
    "cuda_toolkit_state": {
        "stat": {"/usr/local/cuda-12.4": {"exists": True, "isdir": True},
                 "/usr/local/cuda-13.0": {"exists": True, "isdir": True}},
        "commands": {"held": {"rc": 0, "stdout": "cuda-toolkit-12-4\ncuda-toolkit-13-0:amd64"},
                     "alternatives": {"rc": 0, "stdout": CUDA_DISPLAY}}},
}


def _alt(host, old, new):
    cmd = host["cuda_toolkit_state"]["commands"]["alternatives"]
    cmd["stdout"] = cmd["stdout"].replace(old, new)


CUDA_CHANGES = {
    "package-missing": lambda h: h["superpod_package_facts"]["ansible_facts"]["packages"].pop("cuda-toolkit-13-0"),
    "not-held": lambda h: h["cuda_toolkit_state"]["commands"]["held"].update(stdout="cuda-toolkit-12-4"),
    "prefix-missing": lambda h: h["cuda_toolkit_state"]["stat"].update({"/usr/local/cuda-13.0": {"exists": False}}),
    "link-elsewhere": lambda h: _alt(h, "points to /usr/local/cuda-12.4", "points to /usr/local/cuda-13.0"),
    "priority-differs": lambda h: _alt(h, "priority 1300", "priority 50"),
    "not-registered": lambda h: _alt(h, "\n/usr/local/cuda-13.0 - priority 1300", ""),
    "no-alternative": lambda h: h["cuda_toolkit_state"]["commands"]["alternatives"].update(rc=2, stdout=""),
}


@pytest.mark.timeout(180)
def test_cuda_toolkit_include_runs_for_each_difference(tmp_path):
    got = pending(tmp_path, "cuda_toolkit", "cuda_toolkit_changes_pending", variants(CUDA, CUDA_CHANGES))
    assert got == {"converged": False, **dict.fromkeys(CUDA_CHANGES, True)}


# ---------------------------------------------------------------- roce_qos
PLAN = {"connectx_devices": ["0000:18:00.0"], "changes": [], "errors": [], "notes": [], "ecn_control": {},
        "tool": "dcb", "message": ""}
UNIT = "/etc/systemd/system/superpod-roce-qos.service"
ROCE = {
    "superpod_fabric_kind": "roce",
    "rails": [{"rail": 0, "hca": "mlx5_0", "netdev": "enp24s0np0"}],
    "superpod_package_facts": installed("iproute2", "kmod", "python3"),
    "roce_qos_files": {"changed_files": []},
    "roce_qos_state": {
        "stat": {"/usr/local/libexec/superpod-roce-qos": {"exists": True},
                 "/etc/superpod/roce-qos.json": {"exists": True}, UNIT: {"exists": True}},
        "commands": {"dry_run": {"rc": 0, "stdout": PLAN}, "unit_enabled": {"rc": 0, "stdout": ""}}},
}


def _plan(host, **change):
    host["roce_qos_state"]["commands"]["dry_run"]["stdout"] = dict(PLAN, **change)


ROCE_CHANGES = {
    "unit-disabled": lambda h: h["roce_qos_state"]["commands"]["unit_enabled"].update(rc=1),
    "unit-rewritten": lambda h: h["roce_qos_files"].update(changed_files=[UNIT]),
    "settings-differ": lambda h: _plan(h, changes=["enp24s0np0 pfc: '0' -> '1'"]),
    "errors": lambda h: _plan(h, errors=["enp24s0np0: no such netdev"]),
    "ib-leftover": lambda h: h.update(superpod_fabric_kind="infiniband"),
}
# settings that differ where no ConnectX device is found: nothing to apply (as before the fold)
ROCE_SAME = {
    "no-connectx": lambda h: _plan(h, connectx_devices=[], changes=["x"]),
    "ib-clean": lambda h: (h.update(superpod_fabric_kind="infiniband"),
                           h["roce_qos_state"]["stat"].update(dict.fromkeys(h["roce_qos_state"]["stat"],
                                                                            {"exists": False}))),
}


@pytest.mark.timeout(180)
def test_roce_qos_include_runs_for_each_difference(tmp_path):
    hosts = variants(ROCE, {**ROCE_CHANGES, **ROCE_SAME})
    for host in hosts.values():  # the dry run's stdout is JSON text
        cmd = host["roce_qos_state"]["commands"]["dry_run"]
        cmd["stdout"] = json.dumps(cmd["stdout"])
    got = pending(tmp_path, "roce_qos", "roce_qos_changes_pending", hosts)
    assert got == {"converged": False, **dict.fromkeys(ROCE_CHANGES, True), **dict.fromkeys(ROCE_SAME, False)}


# ---------------------------------------------------------------- fabric_telemetry
HOME = "/opt/superpod-fabric-telemetry"
FT_ID = "abc-cp311-x86_64"
FABRIC = {
    "rails": [{"rail": 0, "netdev": "enp24s0np0"}],
    "superpod_storage_nics": [{"netdev": "enp41s0f0np0"}],
    "superpod_package_facts": installed("python3", "python3-venv", "python3-packaging", "ethtool"),
    "fabric_telemetry_source_fingerprint": "abc",
    "fabric_telemetry_state": {
        "find": {"nics": ["/sys/class/net/enp24s0np0", "/sys/class/net/enp41s0f0np0"]},
        "stat": {HOME: {"exists": True, "isdir": True, "mode": "0755", "uid": 0, "gid": 0},
                 f"{HOME}/wheelhouse-{FT_ID}/.copied": {"exists": True}},
        "commands": {"account": {"rc": 0, "stdout": f"superpod-fabric:x:998:998::{HOME}:/usr/sbin/nologin"},
                     "installed": {"rc": 0, "stdout": "0.1.0"},
                     "link": {"rc": 0, "stdout": f"{HOME}/venv-{FT_ID}"}}},
}


def _ft(host, what, **change):
    host["fabric_telemetry_state"]["commands"][what].update(change)


FABRIC_CHANGES = {
    "nic-missing": lambda h: h["fabric_telemetry_state"]["find"]["nics"].pop(),
    "package-missing": lambda h: h["superpod_package_facts"]["ansible_facts"]["packages"].pop("ethtool"),
    "no-account": lambda h: _ft(h, "account", rc=2, stdout=""),
    "account-shell": lambda h: _ft(h, "account", stdout=f"superpod-fabric:x:998:998::{HOME}:/bin/sh"),
    "home-mode": lambda h: h["fabric_telemetry_state"]["stat"][HOME].update(mode="0700"),
    "home-owner": lambda h: h["fabric_telemetry_state"]["stat"][HOME].update(uid=1000),
    "not-unpacked": lambda h: h["fabric_telemetry_state"]["stat"].update({f"{HOME}/wheelhouse-{FT_ID}/.copied":
                                                                           {"exists": False}}),
    "not-installed": lambda h: _ft(h, "installed", rc=1, stdout=""),
    "link-elsewhere": lambda h: _ft(h, "link", stdout=f"{HOME}/venv-old-cp311-x86_64"),
}


@pytest.mark.timeout(180)
def test_fabric_telemetry_include_runs_for_each_difference(tmp_path):
    got = pending(tmp_path, "fabric_telemetry", "fabric_telemetry_host_changes_pending",
                  variants(FABRIC, FABRIC_CHANGES))
    assert got == {"converged": False, **dict.fromkeys(FABRIC_CHANGES, True)}
