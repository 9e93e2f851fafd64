"""ConnectX firmware settings (rdma/tasks/firmware.yml) by ansible-playbook against a stand-in
`mlxconfig` that prints the real query format (MFT's `mlxconfig -d <dev> -e query`: Default /
Current / Next Boot columns, '*' on values changed from the default; `set` answers with the Next
Boot / New table and "Please reboot machine to load new configurations") and keeps its state in
a JSON file. Rail HCAs are found through a stand-in /sys/class/infiniband (mlx5_N/device -> the PCI
function). A pending change (Current != wanted) is a reboot reason in the report, never a reboot."""

import json
import sys

import pytest
import yaml

from tests.role_files import ROOT
from tests.roles.playbook import run_play

FIRMWARE_STEP = "ConnectX firmware settings of the rail HCAs (mlxconfig / mstconfig)"


def firmware_tasks() -> list[dict]:
    """The role's one read (detect.yml; public: its vars/main.yml, where what the read means is
    derived, stay visible to the play) and main.yml's own firmware step, with its condition."""
    main = yaml.safe_load((ROOT / "roles/rdma/tasks/main.yml").read_text())
    step = next(t for t in main if t.get("name") == FIRMWARE_STEP)
    # the host's stand-in facts also under --check (the read looks for the running kernel's module tree)
    return [{"name": "Facts under --check too", "test_facts": {"facts": "{{ test_facts }}"}, "check_mode": False},
            {"ansible.builtin.include_role": {"name": "rdma", "tasks_from": "detect.yml", "public": True}},
            {"name": FIRMWARE_STEP, "when": step["when"],
             "ansible.builtin.include_role": {"name": "rdma", "tasks_from": step["ansible.builtin.include_tasks"]}}]

FAKE_MLXCONFIG = '''#!{python}
import json, os, sys
base = os.path.dirname(os.path.abspath(__file__))
state_file, log = os.path.join(base, "mlxconfig.json"), os.path.join(base, "mlxconfig.calls")
state = json.load(open(state_file))
args = sys.argv[1:]
with open(log, "a") as f:
    f.write(json.dumps(args) + "\\n")
dev = args[args.index("-d") + 1]
if dev not in state:
    print("-E- Failed to open device: " + dev + ". No such file or directory", file=sys.stderr)
    sys.exit(1)
card = state[dev]
LABELS = {{"LINK_TYPE": {{"1": "IB(1)", "2": "ETH(2)"}}, "ATS_ENABLED": {{"0": "False(0)", "1": "True(1)"}}}}
def label(name, num):
    return LABELS["ATS_ENABLED" if name == "ATS_ENABLED" else "LINK_TYPE"][str(num)]
print("\\nDevice #1:\\n----------\\n")
print("Device type:        " + card["type"])
print("Name:               MCX75310AAS-NEA_Ax")
print("Description:        NVIDIA ConnectX-7 HHHL Adapter card; 400GbE / NDR IB (default mode); Single-port OSFP")
print("Device:             " + dev + "\\n")
if "set" in args:
    print("Configurations:                                      Next Boot       New")
    for kv in args[args.index("set") + 1:]:
        name, num = kv.split("=")
        print("         %-44s%-16s%s" % (name, label(name, card["params"][name]["next"]), label(name, num)))
        card["params"][name]["next"] = int(num)
    print("\\n Apply new Configuration? (y/n) [n] : y")
    print("Applying... Done!")
    print("-I- Please reboot machine to load new configurations.")
    json.dump(state, open(state_file, "w"))
else:
    print("Configurations:                                      Default         Current         Next Boot")
    print("         MEMIC_BAR_SIZE                              0               0               0")
    for name, p in card["params"].items():
        star = "*" if p["next"] != p["default"] else " "
        print("%s        %-44s%-16s%-16s%s" % (star, name, label(name, p["default"]), label(name, p["current"]),
                                            label(name, p["next"])))
    print("         LOG_MAX_QUEUE                               17              17              17")
'''


def card(link_current, link_next, ats=0, dual=False):
    params = {"LINK_TYPE_P1": {"default": 1, "current": link_current, "next": link_next}}
    if dual:
        params["LINK_TYPE_P2"] = {"default": 1, "current": 1, "next": 1}
    params["ATS_ENABLED"] = {"default": 0, "current": ats, "next": ats}
    return {"type": "ConnectX7", "params": params}


CASES = {
    # host: (fabric, virtualised, {bdf: card}, rail hcas -> bdf (None = not present))
    "roce-from-ib": ("roce", False, {"0000:18:00.0": card(1, 1), "0000:40:00.0": card(1, 1, dual=True)},
                     {"mlx5_0": "0000:18:00.0", "mlx5_3": "0000:40:00.0"}),
    "ib-as-planned": ("infiniband", False, {"0000:18:00.0": card(1, 1)}, {"mlx5_0": "0000:18:00.0"}),
    "vm-needs-ats": ("roce", True, {"0000:18:00.0": card(2, 2)}, {"mlx5_0": "0000:18:00.0"}),
    "hca-missing": ("roce", False, {}, {"mlx5_0": None}),
}


def prepare(tmp, host, cards, hcas):
    base = tmp / host
    (base / "pci").mkdir(parents=True)
    (base / "ib").mkdir()
    for hca, bdf in hcas.items():
        if bdf:
            (base / "pci" / bdf).mkdir(exist_ok=True)
            (base / "ib" / hca).mkdir()
            (base / "ib" / hca / "device").symlink_to(base / "pci" / bdf)
    tool = base / "mlxconfig"
    tool.write_text(FAKE_MLXCONFIG.format(python=sys.executable))
    tool.chmod(0o755)
    (base / "mlxconfig.json").write_text(json.dumps(cards))


def calls(tmp, host):
    path = tmp / host / "mlxconfig.calls"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def run(tmp, check=False, runs=1):
    hosts = {}
    for host, (fabric, vm, _cards, hcas) in CASES.items():
        hosts[host] = {"superpod_fabric_kind": fabric, "rails": [{"rail": i, "hca": h} for i, h in enumerate(hcas)],
                       "test_facts": {"virtualization_role": "guest" if vm else "host",
                                      "virtualization_type": "kvm", "kernel": "6.1.0"}}
    reasons_task = {"name": "Reasons", "ansible.builtin.debug": {"msg": "{{ rdma_firmware_reboot_reasons }}"}}
    tasks = (firmware_tasks() + [reasons_task]) * runs
    extra = {"rdma_firmware_tool": f"{tmp}/{{{{ inventory_hostname }}}}/mlxconfig",
             "rdma_infiniband_class_dir": f"{tmp}/{{{{ inventory_hostname }}}}/ib"}
    return run_play(tmp, tasks, hosts, extra, check=check)


@pytest.fixture(scope="module")
def applied(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fw-apply")
    for host, (_, _, cards, hcas) in CASES.items():
        prepare(tmp, host, cards, hcas)
    return tmp, run(tmp, runs=2)


def reasons(results):
    return [r["msg"] for r in results if r["task"] == "Reasons"]


def sets(tmp, host):
    return [c[c.index("set") + 1:] for c in calls(tmp, host) if "set" in c]


def test_roce_pod_sets_eth_on_the_rail_ports_once(applied):
    tmp, results = applied
    assert not [r for r in results["roce-from-ib"] if r.get("failed")], results["roce-from-ib"]
    # only the port that is a rail (P1 of each card); the dual card's P2 is left alone; one set per card
    assert sets(tmp, "roce-from-ib") == [["LINK_TYPE_P1=2"], ["LINK_TYPE_P1=2"]]
    assert all(c[c.index("-d") + 2:c.index("-d") + 4] == ["-e", "query"] for c in calls(tmp, "roce-from-ib")
               if "set" not in c)
    first, second = reasons(results["roce-from-ib"])
    want = ["ConnectX firmware: mlx5_0 (0000:18:00.0) LINK_TYPE_P1 IB(1) -> ETH(2) waits for a reboot (or mlxfwreset)",
            "ConnectX firmware: mlx5_3 (0000:40:00.0) LINK_TYPE_P1 IB(1) -> ETH(2) waits for a reboot (or mlxfwreset)"]
    assert first == want and second == want  # pending until the card restarts: still a reason, not re-set
    setters = [r for r in results["roce-from-ib"] if "Set the ConnectX firmware" in r["task"]]
    assert [bool(r.get("changed")) for r in setters] == [True, False]


def test_ib_pod_as_planned_changes_nothing(applied):
    tmp, results = applied
    assert not [r for r in results["ib-as-planned"] if r.get("failed")]
    assert sets(tmp, "ib-as-planned") == [] and reasons(results["ib-as-planned"]) == [[], []]


def test_virtualised_node_enables_ats(applied):
    tmp, results = applied
    assert sets(tmp, "vm-needs-ats") == [["ATS_ENABLED=1"]]
    assert reasons(results["vm-needs-ats"])[1] == [
        "ConnectX firmware: mlx5_0 (0000:18:00.0) ATS_ENABLED False(0) -> True(1) waits for a reboot (or mlxfwreset)"]


def test_missing_rail_hca_is_reported_not_queried(applied):
    tmp, results = applied
    assert calls(tmp, "hca-missing") == []
    assert not [r for r in results["hca-missing"] if r.get("failed")]


def test_check_mode_reports_the_change_and_sets_nothing(tmp_path):
    for host, (_, _, cards, hcas) in CASES.items():
        prepare(tmp_path, host, cards, hcas)
    results = run(tmp_path, check=True)
    assert sets(tmp_path, "roce-from-ib") == []
    assert len([c for c in calls(tmp_path, "roce-from-ib") if "query" in c]) == 2  # read-only probe still runs
    changed = [r for r in results["roce-from-ib"] if r.get("changed")]
    assert changed and all("LINK_TYPE_P1=2" in json.dumps(r) for r in changed)
    assert not [r for r in results["ib-as-planned"] if r.get("changed")]


@pytest.mark.parametrize("loaded,installed,reason", [
    ("A1B2C3D4E5F6A7B8C9D0E1F", "A1B2C3D4E5F6A7B8C9D0E1F", False),   # running what is installed
    ("A1B2C3D4E5F6A7B8C9D0E1F", "0F1E2D3C4B5A69788796A5B", True),    # DOCA's ib_core installed, inbox one loaded
    (None, "0F1E2D3C4B5A69788796A5B", False),                       # ib_core not loaded (no RDMA NIC)
])
def test_rdma_core_replaced_under_the_running_kernel_is_a_reboot_reason(tmp_path, loaded, installed, reason):
    srcversion = tmp_path / "srcversion"
    if loaded:
        srcversion.write_text(loaded + "\n")
    modinfo = tmp_path / "modinfo"
    modinfo.write_text(f"#!/bin/sh\n[ \"$1 $2 $3\" = '-F srcversion ib_core' ] && echo {installed}\n")
    modinfo.chmod(0o755)
    # public: the reasons are a role var (vars/main.yml), visible after the include only so
    tasks = [{"ansible.builtin.include_role": {"name": "rdma", "tasks_from": "detect.yml", "public": True}},
             {"name": "Reasons", "ansible.builtin.debug": {"msg": "{{ rdma_core_reboot_reasons }}"}}]
    results = run_play(tmp_path, tasks, {"node": {"test_facts": {"kernel": "6.1.0"}}},
                       {"rdma_ib_core_srcversion_file": str(srcversion), "rdma_modinfo_command": str(modinfo)})
    [got] = reasons(results["node"])
    assert (got != []) == reason
    if reason:
        assert got == [f"RDMA core: the loaded ib_core (srcversion {loaded}) is not the installed one ({installed}; "
                       "DOCA or a kernel update replaced it): reboot (or restart openibd)"]


def firmware_report_play(tmp_path, host: str, **facts) -> tuple[list[dict], dict]:
    """The read, the firmware step, then report.yml on `host` (prepared by prepare()), with its report
    shown as task "Report"; `facts` stand for what the rest of the read found."""
    tasks = firmware_tasks() + [
        {"ansible.builtin.include_role": {"name": "rdma", "tasks_from": "report.yml", "public": True}},
        {"name": "Report", "ansible.builtin.debug": {"msg": "{{ rdma_report }}"}}]
    extra = {"rdma_firmware_tool": f"{tmp_path}/{host}/mlxconfig",
             "rdma_infiniband_class_dir": f"{tmp_path}/{host}/ib",
             "rdma_facts_file": f"{tmp_path}/{host}/superpod_rdma.fact",
             "rdma_modules_file": f"{tmp_path}/{host}/superpod-rdma.conf",
             "rdma_legacy_limits_file": f"{tmp_path}/{host}/limits.conf",
             "rdma_stack": "inbox", "rdma_memlock": {"managed": True, "hard": "unlimited"}, **facts}
    return tasks, extra


def test_check_mode_without_a_firmware_tool_says_not_readable(tmp_path):
    """A fresh node under --check has no mlxconfig/mstconfig yet (a run installs mstflint): nothing
    can be read, and the report must say so (state, not_applied_now) and the drift must list it as a
    change, never an empty settings list that reads as 'firmware as planned'."""
    prepare(tmp_path, "fresh", {}, {"mlx5_0": "0000:18:00.0"})
    (tmp_path / "fresh" / "mlxconfig").unlink()
    tasks, extra = firmware_report_play(tmp_path, "fresh", rdma_devices=["0000:18:00.0"], rdma_can_load_modules=True,
                                        rdma_module_list=["mlx5_ib"], rdma_core_reboot_reasons=[])
    results = run_play(tmp_path, tasks, {"fresh": {"superpod_fabric_kind": "roce",
                                                    "rails": [{"rail": 0, "hca": "mlx5_0"}],
                                                    "test_facts": {"kernel": "6.1.0"}}}, extra, check=True,
                       mitogen=False)  # the package task's apt respawns under the system Python
    res = results["fresh"]
    assert not [r for r in res if r.get("failed")], res
    [report] = [r["msg"] for r in res if r["task"] == "Report"]
    fw = report["firmware"]
    assert fw["state"] == "not readable: no mlxconfig/mstconfig" and fw["settings"] == []
    assert ["firmware: mlx5_0 (0000:18:00.0): not readable: no mlxconfig/mstconfig (a run installs mstflint, "
            "then reads and sets LINK_TYPE_P1=ETH(2))"] == [m for m in report["not_applied_now"] if "firmware" in m]
    flagged = [r for r in res if r.get("changed") and "not readable" in json.dumps(r.get("msg", ""))]
    assert flagged, [r["task"] for r in res if r.get("changed")]


def test_firmware_read_is_reported_as_read(applied):
    tmp, _ = applied
    tasks = firmware_tasks() + [{"name": "State", "ansible.builtin.debug": {"msg": "{{ rdma_fw_state }}"}}]
    results = run_play(tmp, tasks, {"ib-as-planned": {"superpod_fabric_kind": "infiniband",
                                                      "rails": [{"rail": 0, "hca": "mlx5_0"}],
                                                      "test_facts": {"kernel": "6.1.0"}}},
                       {"rdma_firmware_tool": f"{tmp}/ib-as-planned/mlxconfig",
                        "rdma_infiniband_class_dir": f"{tmp}/ib-as-planned/ib"})
    assert [r["msg"] for r in results["ib-as-planned"] if r["task"] == "State"] == ["read"]


def test_no_rail_hca_present_is_reported_with_one_warning(tmp_path):
    """Where no planned rail HCA is present (containers, a card missing) the rail-HCA steps
    (firmware.yml) are not loaded at all, and the report still says why nothing was read;
    what could not be applied and what waits for a reboot come in one warning task."""
    prepare(tmp_path, "bare", {}, {"mlx5_0": None})
    reason = "RDMA core: a stand-in reason"
    tasks, extra = firmware_report_play(tmp_path, "bare", rdma_devices=[], rdma_can_load_modules=False,
                                        rdma_module_list=[], rdma_core_reboot_reasons=[reason])
    hosts = {"bare": {"superpod_fabric_kind": "roce", "rails": [{"rail": 0, "hca": "mlx5_0"}],
                      "test_facts": {"kernel": "6.1.0"}}}
    results = run_play(tmp_path, tasks, hosts, extra, check=True)
    res = results["bare"]
    assert not [r for r in res if r.get("failed")], res
    assert calls(tmp_path, "bare") == []  # nothing queried
    assert not [r for r in res if "Query the firmware settings" in r["task"]]  # not even loaded
    [report] = [r["msg"] for r in res if r["task"] == "Report"]
    fw = report["firmware"]
    assert (fw["state"], fw["settings"], fw["missing_hcas"], fw["hcas"]) == ("no rail HCA present", [], ["mlx5_0"], {})
    assert report["reboot_reasons"] == [reason] and report["reboot_required"] is True
    warnings = [r for r in res if "Warn about" in r["task"] and not r.get("skipped")]
    assert len(warnings) == 1, [r["task"] for r in res]
    msg = warnings[0]["msg"]
    assert "firmware: rail HCA(s) mlx5_0 not present: firmware settings not checked" in msg
    assert msg[msg.index(reason) - 1].startswith("REBOOT REQUIRED on bare") and msg[-1].startswith("Use playbooks/")
