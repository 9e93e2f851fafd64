"""node_check's GPU health and rail port checks (issue 34): NVLink fabric registration and row
remapping read from the real H100 node's `nvidia-smi -q -x` (testdata/h100-node/nvidia-smi-q.xml,
driver 580.159.04), XIDs from kernel log lines, the GPUDirect RDMA path nvidia_driver chose, and
each rail HCA's port state and rate in the kernel's sysfs formats. Expectations come from the
generated inventory of the lab pod (superpod_nvswitch, rails[].hca, superpod_rail_speed_gbps,
superpod_fabric_kind), never from the output under test."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from tests.conftest import spec_with
from tests.role_files import ROOT
from tests.roles.playbook import debug_values, run_play
from topology.layout.build import build
from topology.render.inventory import render_inventory

MODULE = ROOT / "roles/node_check/library/superpod_node_check.py"
spec = importlib.util.spec_from_file_location("superpod_node_check_health", MODULE)
nc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nc)

REAL_XML = (ROOT / "testdata/h100-node/nvidia-smi-q.xml").read_text()
BUS = "00000000:00:06.0"  # the real node's GPU (<gpu id=...>)


def fabric_block(state: str, status: str) -> str:
    """The real XML with the <fabric> state and status of an NVSwitch node (only those two texts change)."""
    old = "<fabric>\n\t\t\t<state>N/A</state>\n\t\t\t<status>N/A</status>"
    assert old in REAL_XML
    return REAL_XML.replace(old, f"<fabric>\n\t\t\t<state>{state}</state>\n\t\t\t<status>{status}</status>")


def remap(pending: str = "No", failure: str = "No") -> str:
    text = REAL_XML
    for tag, value in (("remapped_row_pending", pending), ("remapped_row_failure", failure)):
        assert f"<{tag}>No</{tag}>" in text
        text = text.replace(f"<{tag}>No</{tag}>", f"<{tag}>{value}</{tag}>")
    return text


@pytest.fixture(scope="module")
def node_vars() -> dict:
    """A GPU node's host vars as `superpod plan` writes them for the lab pod."""
    files = render_inventory(build(spec_with("lab")), Path("/inv"))
    nodes = yaml.safe_load(files[Path("/inv/hosts.yml")])["all"]["children"]["gpu_nodes"]["hosts"]
    return nodes[sorted(nodes)[0]]


# ------------------------------------------------------------------ nvidia-smi -q -x (real output)


def test_real_xml_parses_per_gpu():
    gpus = nc.parse_smi_xml(REAL_XML)
    assert gpus == [{"bus_id": BUS, "fabric_state": None, "fabric_status": None, "remap_pending": "No",
                     "remap_failure": "No", "remap_uncorrectable": "0"}]


def test_other_xml_is_refused():
    with pytest.raises(ValueError, match="not nvidia-smi -q -x"):
        nc.parse_smi_xml("<something/>")


def test_fabric_must_be_registered_on_an_nvswitch_node(node_vars):
    nvswitch = node_vars["superpod_nvswitch"]
    assert nvswitch is True  # a DGX H100: its model has NVSwitches
    # the real node is a one-GPU VM: no fabric (N/A), which on an NVSwitch node is a failure
    bad = nc.compare_fabric(nc.parse_smi_xml(REAL_XML), nvswitch)[0]
    assert bad["status"] == nc.MISMATCH and BUS in bad["actual"] and "fabric manager" in bad["detail"]
    good = nc.compare_fabric(nc.parse_smi_xml(fabric_block("Completed", "Success")), nvswitch)[0]
    assert good["status"] == nc.OK and good["actual"] == "Completed/Success on 1/1"
    training = nc.compare_fabric(nc.parse_smi_xml(fabric_block("In Progress", "N/A")), nvswitch)[0]
    assert training["status"] == nc.MISMATCH and training["actual"] == f"In Progress/n/a on {BUS}"
    failed = nc.compare_fabric(nc.parse_smi_xml(fabric_block("Completed", "Failure")), nvswitch)[0]
    assert failed["status"] == nc.MISMATCH and "NVLink" in failed["detail"]
    # a node without NVSwitches (PCIe GPUs) has no fabric to register with: N/A is right there
    assert nc.compare_fabric(nc.parse_smi_xml(REAL_XML), False)[0]["status"] == nc.OK
    assert nc.compare_fabric(nc.parse_smi_xml(REAL_XML), None)[0]["status"] == nc.NOT_PLANNED
    # nvidia-smi -q -x failing on an NVSwitch node is not a pass
    assert nc.compare_fabric(None, True, "rc=9")[0]["status"] == nc.MISMATCH


def test_row_remap_pending_and_failure():
    ok = nc.compare_row_remap(nc.parse_smi_xml(REAL_XML))[0]
    assert ok["status"] == nc.OK and ok["actual"] == "none on 1 GPU(s)"
    pending = nc.compare_row_remap(nc.parse_smi_xml(remap(pending="Yes")))[0]
    assert pending["status"] == nc.MISMATCH and pending["actual"] == f"pending on {BUS}"
    assert "reset" in pending["detail"]
    failed = nc.compare_row_remap(nc.parse_smi_xml(remap(failure="Yes")))[0]
    assert failed["status"] == nc.MISMATCH and "replace the GPU" in failed["detail"]


# ------------------------------------------------------------------ XIDs (kernel log)

# Kernel log lines in the driver's formats: R570+ adds pid/name
# (github.com/NVIDIA/NVSentinel issue 155), older drivers print the XID's own fields directly.
KERNEL_LOG = """\
[    5.101] mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link ACTIVE
[ 1843.308] NVRM: Xid (PCI:0000:44:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
[ 2001.000] NVRM: Xid (PCI:0000:18:00): 13, pid=4242, name=python, Graphics Exception: ESR 0x50
[ 2002.000] NVRM: Xid (PCI:0000:18:00): 13, pid=4242, name=python, Graphics Exception: ESR 0x50
[ 3000.000] NVRM: Xid (PCI:0000:b3:00): 48, An uncorrectable double bit error (DBE) has been detected
"""


def test_xids_are_counted_per_gpu():
    assert nc.parse_xids(KERNEL_LOG) == {"PCI:0000:44:00": {79: 1}, "PCI:0000:18:00": {13: 2},
                                         "PCI:0000:b3:00": {48: 1}}


def test_xids_outside_the_allowed_list_fail():
    allowed = yaml.safe_load((ROOT / "roles/node_check/defaults/main.yml").read_text())["node_check_xid_allowed"]
    rows = nc.compare_xids(nc.parse_xids(KERNEL_LOG), allowed, True)
    assert rows[0]["status"] == nc.MISMATCH and "Xid 48, 79" in rows[0]["detail"]
    # only application XIDs: counted, not a node fault
    app = nc.parse_xids("".join(line + "\n" for line in KERNEL_LOG.splitlines() if "): 13," in line))
    assert nc.compare_xids(app, allowed, True)[0]["status"] == nc.OK
    assert nc.compare_xids({}, allowed, True)[0]["actual"] == "none"
    # no kernel log: XIDs cannot be ruled out; in a container the log is the host's
    assert nc.compare_xids(None, allowed, True, "dmesg rc=1")[0]["status"] == nc.MISMATCH
    assert nc.compare_xids(None, allowed, False)[0]["status"] == nc.SKIPPED


# ------------------------------------------------------------------ GPUDirect RDMA


# /proc/driver/nvidia/version's first line (the banner the driver also logs at load,
# github.com/NVIDIA/NVSentinel issue 155): open modules say "Open Kernel Module".
OPEN_BANNER = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release Build  "
               "(dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025\n")
PROPRIETARY_BANNER = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\n")


def gpudirect_state(tmp_path, banner, peermem, kernel="6.8.0-49-generic"):
    sys_module = tmp_path / "module"
    (sys_module / "nvidia").mkdir(parents=True)
    if peermem:
        (sys_module / "nvidia_peermem").mkdir()
    version = tmp_path / "version"
    if banner:
        version.write_text(banner)
    return dict(nc.read_gpudirect(str(sys_module), str(version)), kernel=kernel)


def test_gpudirect_follows_nvidia_drivers_choice(tmp_path):
    peermem_ok = gpudirect_state(tmp_path / "a", PROPRIETARY_BANNER, peermem=True)
    assert nc.compare_gpudirect("peermem", peermem_ok, True)[0]["status"] == nc.OK
    no_peermem = gpudirect_state(tmp_path / "b", PROPRIETARY_BANNER, peermem=False)
    assert nc.compare_gpudirect("peermem", no_peermem, True)[0]["status"] == nc.MISMATCH
    dmabuf = gpudirect_state(tmp_path / "c", OPEN_BANNER, peermem=False)
    assert nc.compare_gpudirect("dmabuf", dmabuf, True)[0]["status"] == nc.OK
    bad = nc.compare_gpudirect("dmabuf", no_peermem, True)[0]
    assert bad["status"] == nc.MISMATCH and "not the open one" in bad["actual"]
    old_kernel = gpudirect_state(tmp_path / "d", OPEN_BANNER, peermem=False, kernel="5.4.0-150-generic")
    assert "kernel < 5.12" in nc.compare_gpudirect("dmabuf", old_kernel, True)[0]["actual"]
    unloaded = gpudirect_state(tmp_path / "e", None, peermem=False)
    assert nc.compare_gpudirect("dmabuf", unloaded, True)[0]["actual"] == "nvidia module not loaded"
    assert nc.compare_gpudirect(None, dmabuf, True)[0]["status"] == nc.NOT_PLANNED
    assert nc.compare_gpudirect("peermem", no_peermem, False)[0]["status"] == nc.SKIPPED


# ------------------------------------------------------------------ rail HCA ports (sysfs)


def sysfs(root: Path, hca: str, state="4: ACTIVE", phys="5: LinkUp", rate="400 Gb/sec (4X NDR)",
          layer="InfiniBand"):
    """One HCA port as the kernel's drivers/infiniband/core/sysfs.c prints it ("%d: %s", "%d Gb/sec (%dX%s)")."""
    port = root / hca / "ports" / "1"
    port.mkdir(parents=True)
    for name, value in (("state", state), ("phys_state", phys), ("rate", rate), ("link_layer", layer)):
        (port / name).write_text(value + "\n")


def test_rail_ports_against_the_plan(tmp_path, node_vars):
    rails = [{"name": f"rail{r['rail']}", "netdev": r["netdev"], "hca": r["hca"]} for r in node_vars["rails"]]
    speed, kind = node_vars["superpod_rail_speed_gbps"], node_vars["superpod_fabric_kind"]
    layer = nc.LINK_LAYER[kind]
    rate = f"{speed} Gb/sec (4X NDR)"
    healthy, faulty = tmp_path / "healthy", tmp_path / "faulty"
    for r in rails:
        sysfs(healthy, r["hca"], rate=rate, layer=layer)
    # faulty: rail 1 trained at half speed, rail 2 polling (cable out), rail 3's HCA in the other
    # link layer, rail 4's HCA missing
    for i, r in enumerate(rails):
        if i == 1:
            sysfs(faulty, r["hca"], rate=f"{speed // 2} Gb/sec (2X NDR)", layer=layer)
        elif i == 2:
            sysfs(faulty, r["hca"], state="1: DOWN", phys="2: Polling", rate="10 Gb/sec (4X SDR)", layer=layer)
        elif i == 3:
            sysfs(faulty, r["hca"], rate=rate, layer="Ethernet" if layer == "InfiniBand" else "InfiniBand")
        elif i != 4:
            sysfs(faulty, r["hca"], rate=rate, layer=layer)
    hcas = [r["hca"] for r in rails]
    ok = nc.compare_rail_ports(nc.read_rail_ports(hcas, str(healthy)), rails, kind, speed, True, True)
    assert len(ok) == len(rails) and {r["status"] for r in ok} == {nc.OK}
    rows = nc.compare_rail_ports(nc.read_rail_ports(hcas, str(faulty)), rails, kind, speed, True, True)
    bad = {r["check"]: r for r in rows if r["status"] == nc.MISMATCH}
    names = [f"port {r['name']} {r['hca']}" for r in rails]
    assert sorted(bad) == sorted(names[1:5])
    assert bad[names[1]]["detail"] == f"rate {speed // 2} Gb/sec (2X NDR)"
    assert bad[names[2]]["detail"].startswith("state DOWN; phys_state Polling")
    assert bad[names[3]]["detail"].startswith("link layer ")
    assert bad[names[4]]["actual"] == "no such HCA port"
    # a container's HCAs are the host's
    assert nc.compare_rail_ports({}, rails, kind, speed, True, False)[0]["status"] == nc.SKIPPED


def test_inventory_carries_the_rail_speed_of_the_node_model(node_vars):
    from topology import catalog

    model = catalog.load().nodes[node_vars["superpod_node_model"]]
    assert node_vars["superpod_rail_speed_gbps"] == model.compute_nic_speed_gbps


# ------------------------------------------------------------------ the plan node_check builds


@pytest.mark.timeout(120)
def test_plan_takes_the_new_expectations_from_the_inventory(tmp_path, node_vars):
    base = ROOT / "roles/node_check"
    tasks = [{"name": f"node_check {f}", "ansible.builtin.include_vars": str(base / f)}
             for f in ("defaults/main.yml", "vars/main.yml")]
    tasks.append({"name": "Plan", "ansible.builtin.debug": {
        "msg": "{{ lookup('ansible.builtin.template', '%s') | from_json }}" % (base / "templates/plan.json.j2")}})
    host = dict(node_vars, node_check_in_container=False)
    host.pop("ansible_host", None)
    plan = debug_values(run_play(tmp_path, tasks, {"node": host}, extra_vars={"role_path": str(base)})["node"])[-1]
    exp = plan["expected"]
    assert exp["nvswitch"] is node_vars["superpod_nvswitch"]
    # nvidia_driver's recorded GPUDirect path is read on the node by the module itself
    # (recorded_plans: tests/roles/test_node_check_recorded.py), not planned here
    assert exp.get("gpudirect_rdma") is None
    assert exp["fabric_kind"] == node_vars["superpod_fabric_kind"]
    assert exp["rail_speed_gbps"] == node_vars["superpod_rail_speed_gbps"]
    assert [link["hca"] for link in exp["links"]] == [r["hca"] for r in node_vars["rails"]]


# ------------------------------------------------------------------ the molecule scenario's recordings

# DGX H100 GPU PCI buses in nvidia-smi's order; the molecule scenario replays 8-GPU recordings
# built from the real node's one <gpu> element (only ids and the fabric/remap texts change).
DGX_H100_BUSES = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]
RECORDINGS = ROOT / "roles/node_check/molecule/default/files"


def dgx_recording(faulty: bool) -> str:
    head, rest = REAL_XML.split('\t<gpu id="', 1)
    gpu, tail = rest.split("\t</gpu>\n", 1)
    gpu = gpu.split(">", 1)[1]
    gpus = []
    for i, bus in enumerate(DGX_H100_BUSES):
        state, status, pending = "Completed", "Success", "No"
        if faulty and i == 6:
            state, status = "In Progress", "N/A"  # the fabric manager has not registered GPU 6
        if faulty and i == 1:
            pending = "Yes"  # GPU 1 waits for a reset to remap a row
        body = gpu.replace("<state>N/A</state>\n\t\t\t<status>N/A</status>",
                           f"<state>{state}</state>\n\t\t\t<status>{status}</status>", 1)
        body = body.replace("<remapped_row_pending>No</remapped_row_pending>",
                            f"<remapped_row_pending>{pending}</remapped_row_pending>", 1)
        body = body.replace("<minor_number>0</minor_number>", f"<minor_number>{i}</minor_number>", 1)
        gpus.append(f'\t<gpu id="00000000:{bus}:00.0">{body}\t</gpu>\n')
    return head.replace("<attached_gpus>1</attached_gpus>", "<attached_gpus>8</attached_gpus>") + "".join(gpus) + tail


@pytest.mark.parametrize("faulty", [False, True], ids=["ok", "bad"])
def test_molecule_recordings_are_the_real_xml_with_eight_gpus(faulty):
    import os

    want = dgx_recording(faulty)
    path = RECORDINGS / f"h100-{'bad' if faulty else 'ok'}.xml"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(want)
    assert path.read_text() == want, "regenerate with UPDATE_GOLDEN=1"
    gpus = nc.parse_smi_xml(want)
    assert [g["bus_id"] for g in gpus] == [f"00000000:{b}:00.0" for b in DGX_H100_BUSES]
    rows = nc.compare_fabric(gpus, True) + nc.compare_row_remap(gpus)
    assert {r["status"] for r in rows} == ({nc.MISMATCH} if faulty else {nc.OK})
