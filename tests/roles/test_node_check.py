"""node_check's comparison logic on recorded nvidia-smi output (DGX H100), no GPU needed."""

import importlib.util
from pathlib import Path

import pytest

MODULE = Path(__file__).resolve().parents[2] / "roles/node_check/library/superpod_node_check.py"
spec = importlib.util.spec_from_file_location("superpod_node_check", MODULE)
nc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nc)

# `nvidia-smi --query-gpu=index,name,driver_version,persistence_mode,ecc.mode.current,pstate,
#  pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,
#  mig.mode.current --format=csv,noheader,nounits` on a DGX H100 with driver 535.183.01.
H100_OK = """\
0, NVIDIA H100 80GB HBM3, 535.183.01, Enabled, Enabled, P0, 5, 5, 16, 16, Disabled
1, NVIDIA H100 80GB HBM3, 535.183.01, Enabled, Enabled, P0, 5, 5, 16, 16, Disabled
2, NVIDIA H100 80GB HBM3, 535.183.01, Enabled, Enabled, P0, 5, 5, 16, 16, Disabled
3, NVIDIA H100 80GB HBM3, 535.183.01, Enabled, Enabled, P0, 5, 5, 16, 16, Disabled
4, NVIDIA H100 80GB HBM3, 535.183.01, Enabled, Enabled, P0, 5, 5, 16, 16, Disabled
5, NVIDIA H100 80GB HBM3, 535.183.01, Enabled, Enabled, P0, 5, 5, 16, 16, Disabled
6, NVIDIA H100 80GB HBM3, 535.183.01, Enabled, Enabled, P0, 5, 5, 16, 16, Disabled
7, NVIDIA H100 80GB HBM3, 535.183.01, Enabled, Enabled, P0, 5, 5, 16, 16, Disabled
"""
# Same node after a bad day: GPU 5 fell off the bus, GPU 3 lost persistence and trained at x8,
# GPU 2 was left in MIG mode, GPU 6 trained at Gen4 in a Gen5 slot.
H100_BAD = """\
0, NVIDIA H100 80GB HBM3, 535.183.01, Enabled, Enabled, P0, 5, 5, 16, 16, Disabled
1, NVIDIA H100 80GB HBM3, 535.183.01, Enabled, Enabled, P0, 5, 5, 16, 16, Disabled
2, NVIDIA H100 80GB HBM3, 535.183.01, Enabled, Enabled, P0, 5, 5, 16, 16, Enabled
3, NVIDIA H100 80GB HBM3, 535.183.01, Disabled, Enabled, P0, 5, 5, 8, 16, Disabled
4, NVIDIA H100 80GB HBM3, 535.183.01, Enabled, Enabled, P0, 5, 5, 16, 16, Disabled
6, NVIDIA H100 80GB HBM3, 535.183.01, Enabled, Enabled, P0, 4, 5, 16, 16, Disabled
7, NVIDIA H100 80GB HBM3, 535.183.01, Enabled, Enabled, P0, 5, 5, 16, 16, Disabled
"""
# A PCIe L40S has no MIG: nvidia-smi prints [N/A]; idle (P8) at Gen1 of its Gen4.
L40S = "0, NVIDIA L40S, 550.90.07, Enabled, Enabled, P8, 1, 4, 16, 16, [N/A]\n"

PLAN = {
    "gpu_count": 8,
    "gpu_model": "h100-sxm5-80gb",
    "driver_version": "535",
    "persistence_mode": True,
    "ecc": True,
    "mig": False,
    "pcie_gen": 5,
    "pcie_width": 16,
}


def by_check(rows):
    return {r["check"]: r for r in rows}


def test_parse_recorded_h100_output():
    gpus = nc.parse_gpu_csv(H100_OK)
    assert len(gpus) == 8
    assert gpus[7] == {
        "index": "7", "name": "NVIDIA H100 80GB HBM3", "driver_version": "535.183.01",
        "persistence_mode": "Enabled", "ecc.mode.current": "Enabled", "pstate": "P0",
        "pcie.link.gen.current": "5", "pcie.link.gen.max": "5", "pcie.link.width.current": "16",
        "pcie.link.width.max": "16", "mig.mode.current": "Disabled",
    }
    assert nc.parse_gpu_csv(L40S)[0]["mig.mode.current"] is None


def test_parse_rejects_output_of_another_query():
    with pytest.raises(ValueError, match="6 fields, expected 11"):
        nc.parse_gpu_csv("0, NVIDIA H100 80GB HBM3, 535.183.01, Enabled, Enabled, 5\n")


def test_matching_h100_node_is_all_ok():
    rows = nc.compare_gpus(nc.parse_gpu_csv(H100_OK), PLAN, require_gpu=True)
    assert {r["status"] for r in rows} == {nc.OK}
    checks = by_check(rows)
    assert checks["gpu count"]["actual"] == "8"
    assert checks["driver version"]["actual"] == "535.183.01"
    assert checks["persistence mode"]["actual"] == "Enabled on 8/8"


def test_bad_h100_node_names_each_fault():
    rows = by_check(nc.compare_gpus(nc.parse_gpu_csv(H100_BAD), PLAN, require_gpu=True))
    mism = {k for k, r in rows.items() if r["status"] == nc.MISMATCH}
    assert mism == {"gpu count", "persistence mode", "MIG mode", "PCIe link width", "PCIe link generation"}
    assert rows["gpu count"]["actual"] == "7"
    assert rows["persistence mode"]["actual"] == "Disabled on GPU 3"
    assert rows["MIG mode"]["actual"] == "Enabled on GPU 2"
    assert rows["PCIe link width"]["actual"] == "16 of 16, 8 of 16"
    assert rows["PCIe link width"]["detail"] == "trained below its capability on GPU 3"
    assert rows["PCIe link generation"]["actual"] == "4 of 5, 5 of 5"
    assert rows["PCIe link generation"]["detail"] == "trained below its capability on GPU 6"
    assert rows["ECC mode"]["status"] == nc.OK


@pytest.mark.parametrize(
    ("pin", "status"),
    [("535", nc.OK), ("535.183", nc.OK), ("535.183.01", nc.OK), ("535.18", nc.MISMATCH),
     ("550", nc.MISMATCH), ("535.183.06", nc.MISMATCH)],
)
def test_driver_pin_is_a_branch_or_exact_version(pin, status):
    rows = by_check(nc.compare_gpus(nc.parse_gpu_csv(H100_OK), {**PLAN, "driver_version": pin}, True))
    assert rows["driver version"]["status"] == status


def test_gpu_model_family_must_appear_in_the_name():
    rows = by_check(nc.compare_gpus(nc.parse_gpu_csv(L40S), {**PLAN, "gpu_count": 1}, True))
    assert rows["gpu model"]["status"] == nc.MISMATCH
    assert rows["gpu model"]["actual"] == "NVIDIA L40S"
    assert rows["MIG mode"] == {**rows["MIG mode"], "status": nc.OK, "actual": "n/a (no MIG support)"}
    # its Gen4 capability is below the plan's 5: no retraining fixes that (idle at Gen1 aside)
    assert rows["PCIe link generation"]["status"] == nc.MISMATCH
    assert rows["PCIe link generation"]["detail"] == "capability below the plan on GPU 0 (slot or riser)"


def test_an_idle_gpu_below_p0_may_lower_its_link_speed():
    idle = H100_OK.replace("P0, 5, 5", "P8, 1, 5", 1)  # GPU 0 resting at Gen1
    rows = by_check(nc.compare_gpus(nc.parse_gpu_csv(idle), PLAN, True))
    assert rows["PCIe link generation"]["status"] == nc.OK
    assert "GPU 0 idle below P0" in rows["PCIe link generation"]["detail"]
    busy = H100_OK.replace("P0, 5, 5", "P0, 1, 5", 1)  # in P0 the same reading is a link that trained down
    rows = by_check(nc.compare_gpus(nc.parse_gpu_csv(busy), PLAN, True))
    assert rows["PCIe link generation"]["status"] == nc.MISMATCH


def test_the_real_h100_node_passes_as_it_reported_itself():
    """The values the real H100 node printed (testdata/h100-node/nvidia-smi-q.xml), 8 of them."""
    from tests.e2e.fake_gpus import healthy

    gpus = [{**g, "driver_version": "535.183.01"} for g in healthy(8)]
    line = "".join(", ".join(g[f] for f in nc.GPU_FIELDS) + "\n" for g in gpus)
    assert {r["status"] for r in nc.compare_gpus(nc.parse_gpu_csv(line), PLAN, True)} == {nc.OK}


def test_unplanned_values_are_reported_not_guessed():
    plan = {"persistence_mode": None, "ecc": None, "mig": None}
    rows = nc.compare_gpus(nc.parse_gpu_csv(H100_OK), plan, True)
    # the PCIe links are still held to their own capability (the GPU's and slot's max), plan or not
    assert {r["status"] for r in rows if not r["check"].startswith("PCIe")} == {nc.NOT_PLANNED}
    assert {r["status"] for r in rows if r["check"].startswith("PCIe")} == {nc.OK}
    assert by_check(rows)["driver version"]["actual"] == "535.183.01"


@pytest.mark.parametrize(("require", "status"), [(True, nc.MISMATCH), (False, nc.SKIPPED)])
def test_no_gpu_says_so(require, status):
    for gpus in (None, []):
        (only,) = nc.compare_gpus(gpus, PLAN, require, "nvidia-smi not installed")
        assert only["status"] == status
        assert only["actual"] == "no NVIDIA GPU found (nvidia-smi not installed)"


MEMINFO = "MemTotal:       2113389012 kB\nHugePages_Total:    1024\nHugepagesize:       2048 kB\n"
POOLS = {2048: {"total": 1024, "nodes": {0: 512, 1: 512}}, 1048576: {"total": 16, "nodes": {0: 8, 1: 8}}}


def test_hugepages_totals_and_per_node():
    rows = by_check(nc.compare_hugepages(nc.parse_meminfo(MEMINFO), POOLS,
                                         {"2M": {"count": 1024}, "1G": {"per_node": {"0": 8, "1": 4}}}, True))
    assert rows["hugepages 2M total"]["status"] == nc.OK
    assert rows["hugepages 1G node0"]["status"] == nc.OK
    assert (rows["hugepages 1G node1"]["expected"], rows["hugepages 1G node1"]["actual"]) == ("4", "8")
    assert rows["hugepages 1G node1"]["status"] == nc.MISMATCH


def test_hugepages_missing_pool_unplanned_and_container():
    (row,) = nc.compare_hugepages({}, {2048: POOLS[2048]}, {"1G": {"count": 4}}, True)
    assert row["status"] == nc.MISMATCH and "lacks 1048576kB" in row["actual"]
    assert nc.compare_hugepages({"HugePages_Total": 0}, POOLS, {}, True)[0]["status"] == nc.NOT_PLANNED
    assert nc.compare_hugepages({}, POOLS, {"2M": {"count": 1}}, False)[0]["status"] == nc.SKIPPED


CMDLINE = ("BOOT_IMAGE=/vmlinuz-6.1.0-28-amd64 root=UUID=1 ro quiet "
           "intel_idle.max_cstate=0 processor.max_cstate=1 iommu=pt")
PLANNED_CMDLINE = ["intel_idle.max_cstate=0", "processor.max_cstate=1", "iommu=pt", "hugepagesz=1G", "hugepages=16"]


def test_cmdline_configured_but_not_booted_is_a_pending_reboot():
    stamp = nc.parse_cmdline(" ".join(PLANNED_CMDLINE))
    rows = by_check(nc.compare_cmdline(nc.parse_cmdline(CMDLINE), stamp, PLANNED_CMDLINE, True))
    assert rows["kernel cmdline (bootloader)"]["status"] == nc.OK
    running = rows["kernel cmdline (running)"]
    assert (running["status"], running["actual"], running["detail"]) == (
        nc.MISMATCH, "missing hugepagesz=1G hugepages=16", "reboot pending")


def test_cmdline_without_stamp_and_in_container():
    rows = by_check(nc.compare_cmdline([], None, ["iommu=pt"], False))
    assert rows["kernel cmdline (bootloader)"]["status"] == nc.MISMATCH
    assert rows["kernel cmdline (running)"]["status"] == nc.SKIPPED


def test_governor():
    assert nc.compare_governor(["performance"] * 224, "performance", True)[0]["status"] == nc.OK
    bad = nc.compare_governor(["performance", "powersave"], "performance", True)[0]
    assert (bad["status"], bad["actual"]) == (nc.MISMATCH, "powersave on some CPUs")
    absent = nc.compare_governor(None, "performance", True)[0]
    assert absent["status"] == nc.SKIPPED and absent["actual"] == "no cpufreq interface"


def test_cstates():
    limited = {"driver": "acpi_idle", "enabled": ["POLL", "C1"]}
    deep = {"driver": "intel_idle", "enabled": ["POLL", "C1", "C1E", "C6"]}
    assert nc.compare_cstates(limited, True, True)[0]["status"] == nc.OK
    row = nc.compare_cstates(deep, True, True)[0]
    assert (row["status"], row["detail"]) == (nc.MISMATCH, "deep states enabled: C1E C6")
    assert nc.compare_cstates(None, True, True)[0]["status"] == nc.SKIPPED
    assert nc.compare_cstates(deep, None, True)[0]["status"] == nc.NOT_PLANNED


RAILS = [{"name": "rail0", "netdev": "ibp24s0", "mtu": 4092, "speed": 400000},
         {"name": "rail1", "netdev": "ibp64s0", "mtu": 4092, "speed": 400000}]


@pytest.mark.parametrize(("require", "status"), [(True, nc.MISMATCH), (False, nc.SKIPPED)])
def test_links(require, status):
    live = {"ibp24s0": {"operstate": "up", "mtu": 4092, "speed": 400000}, "ibp64s0": None}
    rows = by_check(nc.compare_links(live, RAILS, require))
    assert rows["link rail0 ibp24s0"]["status"] == nc.OK
    assert (rows["link rail1 ibp64s0"]["status"], rows["link rail1 ibp64s0"]["actual"]) == (status, "no such netdev")
    down = {"ibp24s0": {"operstate": "down", "mtu": 2044, "speed": None}, "ibp64s0": live["ibp24s0"]}
    row = by_check(nc.compare_links(down, RAILS, require))["link rail0 ibp24s0"]
    assert (row["status"], row["detail"]) == (nc.MISMATCH, "state down; mtu 2044; speed None")


def test_a_link_whose_speed_is_switched_off_says_so_and_still_checks_state_and_mtu():
    rails = [{**r, "speed": None, "speed_unchecked": "node_check_rail_speed_check is false"} for r in RAILS]
    veth = {"operstate": "up", "mtu": 4092, "speed": 10000}  # every veth reports 10000 Mb/s
    row = by_check(nc.compare_links({"ibp24s0": veth}, rails[:1], True))["link rail0 ibp24s0"]
    assert (row["status"], row["expected"], row["detail"]) == (
        nc.OK, "up, mtu 4092", "speed not checked: node_check_rail_speed_check is false")
    down = {"ibp24s0": {**veth, "operstate": "down", "mtu": 1500, "speed": None}}
    row = by_check(nc.compare_links(down, rails[:1], True))["link rail0 ibp24s0"]
    assert (row["status"], row["detail"]) == (nc.MISMATCH, "state down; mtu 1500")


def test_report_table_counts_and_aligns():
    rows = nc.compare_gpus(nc.parse_gpu_csv(H100_BAD), PLAN, True) + nc.compare_links({}, [], True)
    lines = nc.render_table("su01-node01", rows)
    assert lines[0] == "node_check su01-node01: 5 MISMATCH, 3 ok, 0 skipped, 1 not planned"
    assert lines[1].split() == ["CHECK", "EXPECTED", "ACTUAL", "STATUS"]
    status_col = lines[1].index("STATUS")
    assert all(line[status_col - 2:status_col] == "  " for line in lines[2:])
    assert any(line.startswith("persistence mode") and line.endswith("MISMATCH") for line in lines)


# ---- rail LLDP: each rail's neighbor is its planned leaf port --------------------------------------
def lldp_json(neighbors):
    """`lldpctl -f json` as lldpd prints it: one interface an object, several a list."""
    items = [{ifname: {"via": "LLDP", "rid": "1",
                       "chassis": {name: {"id": {"type": "mac", "value": "9c:05:91:00:00:01"}, "ttl": "120"}},
                       "port": {"id": {"type": "ifname", "value": port}, "descr": port, "ttl": "120"}}}
             for ifname, (name, port) in neighbors.items()]
    return {"lldp": {"interface": items[0] if len(items) == 1 else items}}


LLDP_RAILS = [{"name": f"rail{i}", "netdev": nd, "mtu": None, "speed": None, "leaf": f"su01-leaf-rail{i}",
               "leaf_port": "swp1"} for i, nd in enumerate(["enp24s0np0", "enp64s0np0", "enp79s0np0", "enp94s0np0"])]


def test_lldp_parses_json_and_json0():
    one = nc.parse_lldp_neighbors(lldp_json({"enp24s0np0": ("su01-leaf-rail0", "swp1")}))
    assert one == {"enp24s0np0": [("su01-leaf-rail0", "swp1")]}
    json0 = {"lldp": [{"interface": [{"name": "enp64s0np0", "via": "LLDP",
                                      "chassis": [{"id": [{"type": "mac", "value": "aa"}],
                                                   "name": [{"value": "su01-leaf-rail1"}]}],
                                      "port": [{"id": [{"type": "ifname", "value": "swp1"}]}]}]}]}
    assert nc.parse_lldp_neighbors(json0) == {"enp64s0np0": [("su01-leaf-rail1", "swp1")]}
    assert nc.parse_lldp_neighbors({"lldp": {}}) == {}


def test_rail_lldp_all_on_their_planned_leaf_port():
    seen = nc.parse_lldp_neighbors(lldp_json({r["netdev"]: (r["leaf"], "swp1") for r in LLDP_RAILS}))
    rows = nc.compare_rail_lldp(seen, LLDP_RAILS, "auto")
    assert [r["status"] for r in rows] == [nc.OK] * 4
    assert rows[0]["check"] == "lldp rail0 enp24s0np0" and rows[0]["expected"] == "su01-leaf-rail0 swp1"


def test_rail_lldp_names_swapped_rails_wrong_port_and_silence():
    seen = nc.parse_lldp_neighbors(lldp_json({
        "enp24s0np0": ("su01-leaf-rail0", "swp1"),
        "enp64s0np0": ("su01-leaf-rail2", "swp1"),  # rails 1 and 2 swapped at the node
        "enp79s0np0": ("su01-leaf-rail1", "swp1"),
    }))
    seen["enp24s0np0"] = [("su01-leaf-rail0", "swp3")]  # one port off
    rows = by_check(nc.compare_rail_lldp(seen, LLDP_RAILS, "auto"))
    assert rows["lldp rail1 enp64s0np0"]["status"] == nc.MISMATCH
    assert rows["lldp rail1 enp64s0np0"]["actual"] == "su01-leaf-rail2 swp1"
    assert rows["lldp rail1 enp64s0np0"]["detail"] == "cable reaches rail2's leaf: rails swapped"
    assert rows["lldp rail2 enp79s0np0"]["detail"] == "cable reaches rail1's leaf: rails swapped"
    assert rows["lldp rail0 enp24s0np0"]["detail"] == "wrong port on su01-leaf-rail0: move to swp1"
    assert (rows["lldp rail3 enp94s0np0"]["status"], rows["lldp rail3 enp94s0np0"]["actual"]) == (
        nc.MISMATCH, "no LLDP neighbor")


@pytest.mark.parametrize(("mode", "status"), [("auto", nc.SKIPPED), ("required", nc.MISMATCH)])
def test_rail_lldp_without_lldpd(mode, status):
    (r,) = nc.compare_rail_lldp(None, LLDP_RAILS, mode, "lldpctl not installed")
    assert (r["check"], r["actual"], r["status"]) == ("rail LLDP", "lldpctl not installed", status)
    (off,) = nc.compare_rail_lldp(None, LLDP_RAILS, "off")
    assert off["status"] == nc.SKIPPED
    (unplanned,) = nc.compare_rail_lldp({}, [dict(LLDP_RAILS[0], leaf=None)], "auto")
    assert unplanned["status"] == nc.NOT_PLANNED


@pytest.mark.parametrize(("require", "status"), [(True, nc.MISMATCH), (False, nc.SKIPPED)])
def test_rail_lldp_on_a_missing_netdev_follows_require_rail_links(require, status):
    seen = nc.parse_lldp_neighbors(lldp_json({"enp24s0np0": ("su01-leaf-rail0", "swp1")}))
    rows = by_check(nc.compare_rail_lldp(seen, LLDP_RAILS[:2], "auto", "", {"enp64s0np0"}, require))
    assert rows["lldp rail0 enp24s0np0"]["status"] == nc.OK
    assert (rows["lldp rail1 enp64s0np0"]["actual"], rows["lldp rail1 enp64s0np0"]["status"]) == (
        "no such netdev", status)


@pytest.mark.parametrize("firmware,status,actual", [
    (None, nc.NOT_PLANNED, "no rdma report"),
    ({"state": "not managed"}, nc.NOT_PLANNED, "not managed"),
    ({"state": "no rail HCA present", "missing_hcas": ["mlx5_0"]}, nc.SKIPPED, "no rail HCA present"),
    ({"state": "not readable: no mlxconfig/mstconfig", "settings": []}, nc.SKIPPED,
     "not readable: no mlxconfig/mstconfig"),
    ({"state": "read", "settings": [{"hca": "mlx5_0", "param": "LINK_TYPE_P1", "want": 2, "current": "ETH(2)",
                                     "next": "ETH(2)", "set": False, "pending": False}]}, nc.OK, "as planned"),
    ({"state": "read", "settings": [{"hca": "mlx5_0", "param": "LINK_TYPE_P1", "want": 2, "current": "IB(1)",
                                     "next": "ETH(2)", "set": False, "pending": True}]}, nc.MISMATCH,
     "mlx5_0 LINK_TYPE_P1 IB(1) (next boot ETH(2))"),
])
def test_connectx_firmware_row_from_the_rdma_report(firmware, status, actual):
    """rdma records what it read (or why it could not): node_check says it, never a silent ok."""
    [got] = nc.compare_firmware(firmware)
    assert got["check"] == "connectx firmware" and got["status"] == status and got["actual"] == actual
    if status == nc.SKIPPED:
        assert got["detail"]
