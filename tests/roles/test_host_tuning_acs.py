"""PCIe ACS for GPUDirect P2P (NCCL troubleshooting guide, "PCI Access Control Services"): ACS
on a PCIe switch or root port redirects peer-to-peer traffic up to the root complex, so GPU<->NIC
and GPU<->GPU transfers lose bandwidth or hang. host_tuning disables it on bare metal (ACSCtl =
0000 through setpci on every PCI bridge with an ACS capability), keeps it in a VM, persists the
change with a boot unit, and reports the state for node_check. Run by ansible-playbook against a
stand-in sysfs PCI tree and a stand-in `setpci` that keeps config space in a JSON file."""

import json
import sys
from pathlib import Path

import pytest
import yaml

from tests.role_files import ROOT
from tests.roles.playbook import run_play

TASKS = ROOT / "roles/host_tuning/tasks"

FAKE_SETPCI = '''#!{python}
import json, os, sys
base = os.path.dirname(os.path.abspath(__file__))
state_file = os.path.join(base, "config.json")
state = json.load(open(state_file))
args = sys.argv[1:]
with open(os.path.join(base, "setpci.calls"), "a") as f:
    f.write(json.dumps(args) + "\\n")
bdf, reg = args[args.index("-s") + 1], args[-1]
dev = state.get(bdf)
if dev is None or "acs" not in dev:
    print("setpci: Extended capability ACS not found on " + bdf, file=sys.stderr)
    sys.exit(1)
if reg == "ECAP_ACS+0x6.w":
    print(dev["acs"])
elif reg.startswith("ECAP_ACS+0x6.w="):
    if not dev.get("stuck"):
        dev["acs"] = reg.split("=")[1]
    json.dump(state, open(state_file, "w"))
else:
    sys.exit(2)
'''

TREE = {
    "0000:00:01.0": {"class": "0x060400", "acs": "001d"},   # root port, ACS on
    "0000:17:00.0": {"class": "0x060400", "acs": "005f"},   # PCIe switch downstream port, ACS on
    "0000:17:01.0": {"class": "0x060400", "acs": "0000"},   # already off
    "0000:30:00.0": {"class": "0x060400"},                  # bridge without an ACS capability
    "0000:00:1f.0": {"class": "0x060100", "acs": "001d"},   # ISA bridge: not a PCI bridge
    "0000:18:00.0": {"class": "0x020000", "acs": "0011"},   # ConnectX function: not a bridge
}


def prepare(tmp, host, tree):
    base = tmp / host
    for bdf, dev in tree.items():
        (base / "pci" / bdf).mkdir(parents=True)
        (base / "pci" / bdf / "class").write_text(dev["class"] + "\n")
    (base / "config.json").write_text(json.dumps(tree))
    tool = base / "setpci"
    tool.write_text(FAKE_SETPCI.format(python=sys.executable))
    tool.chmod(0o755)


def acs(tmp, host):
    return {bdf: d.get("acs") for bdf, d in json.loads((tmp / host / "config.json").read_text()).items()}


HOSTS = {
    "bare-metal": ({"virtualization_role": "host", "virtualization_type": "kvm"}, {}),
    "vm": ({"virtualization_role": "guest", "virtualization_type": "kvm"}, {}),
    "stuck-bridge": ({"virtualization_role": "host", "virtualization_type": "kvm"}, {}),
    # DGX OS ships nvidia-acs-disable: host_tuning leaves ACS to it, still reads it, node_check still expects it off
    "dgx-os": ({"virtualization_role": "host", "virtualization_type": "kvm"}, {}),
}
DGX_RELEASE = """DGX_NAME="DGX Server"
DGX_PRETTY_NAME="NVIDIA DGX Server"
DGX_SWBUILD_DATE="2024-07-18-17-08-42"
DGX_SWBUILD_VERSION="6.3.1"
DGX_COMMIT_ID="a1b2c3d"
DGX_PLATFORM="DGX Server for DGX H100"
DGX_SERIAL_NUMBER="1234567890123"
"""


# main.yml's include of the runtime changes (tasks/apply.yml), its own condition and file
APPLY = "Apply now what differs on the running node"


def apply_include() -> dict:
    """The include with main.yml's own condition, through include_role (the role's script is found
    in its files/, as in a role run)."""
    task = next(t for t in yaml.safe_load((TASKS / "main.yml").read_text()) if t.get("name") == APPLY)
    include = {"name": "host_tuning", "tasks_from": task["ansible.builtin.include_tasks"]}
    return {"name": APPLY, "when": task["when"], "ansible.builtin.include_role": include}


def running_numa_balancing() -> bool:
    """This machine's NUMA balancing, planned as it is: the runtime include then has no sysctl to apply."""
    path = Path("/proc/sys/kernel/numa_balancing")
    return path.exists() and path.read_text().strip() != "0"


def run(tmp, check=False, runs=1):
    for host in HOSTS:
        tree = json.loads(json.dumps(TREE))
        if host == "stuck-bridge":
            tree["0000:17:00.0"]["stuck"] = True
        if not (tmp / host).exists():
            prepare(tmp, host, tree)
            if host == "dgx-os":
                (tmp / host / "dgx-release").write_text(DGX_RELEASE)
    # no governor, the bootloader left to provisioning: only ACS is under test
    plan = {"host_tuning_cpu_governor": "", "host_tuning_bootloader_method": "none",
            "host_tuning_numa_balancing": running_numa_balancing()}
    hosts = {h: dict(v, test_facts=f, **plan) for h, (f, v) in HOSTS.items()}
    # the role's one read, main.yml's include of the runtime changes (ACS off where planned), the state
    tasks = [{"ansible.builtin.include_role": {"name": "host_tuning", "tasks_from": "read.yml", "public": True}},
             apply_include(),
             {"name": "State", "ansible.builtin.debug": {"msg": "{{ host_tuning_pcie_acs }}"}},
             {"name": "DGX OS", "ansible.builtin.debug": {"msg": "{{ host_tuning_dgx_os }}"}}] * runs
    extra = {"host_tuning_pci_devices_dir": f"{tmp}/{{{{ inventory_hostname }}}}/pci",
             "host_tuning_pcie_acs_script": f"{tmp}/{{{{ inventory_hostname }}}}/superpod-pcie-acs",
             "host_tuning_setpci": f"{tmp}/{{{{ inventory_hostname }}}}/setpci",
             "host_tuning_dgx_release_file": f"{tmp}/{{{{ inventory_hostname }}}}/dgx-release"}
    return run_play(tmp, tasks, hosts, extra, check=check)


def states(results, task="State"):
    return [r["msg"] for r in results if r["task"] == task]


@pytest.fixture(scope="module")
def applied(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("acs")
    return tmp, run(tmp, runs=2)


def test_bare_metal_disables_acs_on_every_bridge_once(applied):
    tmp, results = applied
    assert not [r for r in results["bare-metal"] if r.get("failed")], results["bare-metal"]
    after = acs(tmp, "bare-metal")
    assert after["0000:00:01.0"] == after["0000:17:00.0"] == "0000"
    assert after["0000:00:1f.0"] == "001d" and after["0000:18:00.0"] == "0011"  # not PCI bridges: untouched
    first, second = states(results["bare-metal"])
    assert first == second == {"disable": True, "managed_by": "host_tuning", "tool": True, "enabled": [],
                               "bridges": {"0000:00:01.0": "0000", "0000:17:00.0": "0000", "0000:17:01.0": "0000"}}
    # written by the first run; the second finds every bridge off and skips the runtime include
    writers = [r for r in results["bare-metal"] if "Disable PCIe ACS" in r["task"]]
    assert [bool(r.get("changed")) for r in writers] == [True], writers
    assert [bool(r.get("skipped")) for r in results["bare-metal"] if r["task"] == APPLY] == [False, True]


def test_vm_keeps_acs_and_reports_it(applied):
    tmp, results = applied
    assert acs(tmp, "vm") == {k: v.get("acs") for k, v in TREE.items()}
    assert states(results["vm"])[0]["disable"] is False
    assert states(results["vm"])[0]["enabled"] == ["0000:00:01.0", "0000:17:00.0"]
    # nothing written to the bridges, nothing changed (the read runs the role's script, no installed copy)
    assert [r["task"] for r in results["vm"] if r.get("changed")] == []


def test_dgx_os_leaves_acs_to_its_own_package(applied):
    tmp, results = applied
    assert acs(tmp, "dgx-os") == {k: v.get("acs") for k, v in TREE.items()}  # nothing written
    state = states(results["dgx-os"])[0]
    assert state["disable"] is True and state["managed_by"] == "dgx-os (nvidia-acs-disable)"
    assert state["enabled"] == ["0000:00:01.0", "0000:17:00.0"]  # what node_check will flag
    dgx = states(results["dgx-os"], "DGX OS")[0]
    assert dgx["dgx_swbuild_version"] == "6.3.1"
    assert "dgx_serial_number" not in dgx
    assert states(results["bare-metal"], "DGX OS")[0] == {}


def test_a_bridge_that_keeps_acs_fails_naming_it(applied):
    _, results = applied
    failed = [r for r in results["stuck-bridge"] if r.get("failed")]
    assert failed and "0000:17:00.0" in json.dumps(failed[0])


def test_check_mode_reports_and_writes_nothing(tmp_path):
    results = run(tmp_path, check=True)
    assert acs(tmp_path, "bare-metal")["0000:00:01.0"] == "001d"
    writers = [r for r in results["bare-metal"] if "Disable PCIe ACS" in r["task"]]
    assert writers and writers[0].get("changed")
    assert states(results["bare-metal"])[0]["enabled"] == ["0000:00:01.0", "0000:17:00.0"]


def test_boot_unit_disables_acs_before_the_gpu_services(tmp_path):
    src = ROOT / "roles/host_tuning/templates/superpod-pcie-acs.service.j2"
    tasks = [{"ansible.builtin.template": {"src": str(src), "dest": str(tmp_path / "unit"), "mode": "0644"}}]
    unit_vars = {"host_tuning_pcie_acs_script": "/usr/local/sbin/superpod-pcie-acs", "host_tuning_setpci": "setpci"}
    results = run_play(tmp_path, tasks, {"node": {}}, unit_vars)
    assert not [r for r in results["node"] if r.get("failed")], results["node"]
    unit = (tmp_path / "unit").read_text()
    assert "ExecStart=/usr/local/sbin/superpod-pcie-acs --disable --setpci setpci" in unit
    assert "Type=oneshot" in unit and "WantedBy=multi-user.target" in unit
    assert "Before=nvidia-persistenced.service nvidia-fabricmanager.service" in unit


# ----------------------------------------------------------------------------- node_check's report

def node_check_module():
    import importlib.util
    spec = importlib.util.spec_from_file_location("superpod_node_check",
                                                  ROOT / "roles/node_check/library/superpod_node_check.py")
    nc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nc)
    return nc


class StandInModule:
    """The two AnsibleModule methods read_pcie_acs uses, running the stand-in setpci."""

    def get_bin_path(self, name):
        return None

    def run_command(self, argv):
        import subprocess
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr


def test_node_check_reads_and_judges_acs(tmp_path):
    nc = node_check_module()
    prepare(tmp_path, "node", TREE)
    acs, reason = nc.read_pcie_acs(StandInModule(), str(tmp_path / "node/pci"), str(tmp_path / "node/setpci"))
    assert reason == "" and acs == {"0000:00:01.0": "001d", "0000:17:00.0": "005f", "0000:17:01.0": "0000"}
    [bad] = nc.compare_pcie_acs(acs, True, True)
    assert bad["status"] == nc.MISMATCH and bad["actual"] == "on at 0000:00:01.0, 0000:17:00.0"
    [good] = nc.compare_pcie_acs({k: "0000" for k in acs}, True, True)
    assert good["status"] == nc.OK and good["actual"] == "off on 3 bridge(s)"
    assert nc.compare_pcie_acs(acs, False, True)[0]["status"] == nc.OK          # a VM keeps it
    assert nc.compare_pcie_acs(acs, None, True)[0]["status"] == nc.NOT_PLANNED  # host_tuning did not run
    assert nc.compare_pcie_acs(None, True, False)[0]["status"] == nc.SKIPPED     # container
    missing = nc.read_pcie_acs(StandInModule(), str(tmp_path / "node/pci"), str(tmp_path / "nope"))
    assert missing == (None, "setpci (pciutils) not installed")
