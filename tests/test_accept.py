"""superpod accept's parsers and verdicts on what real tools printed on a real H100 node
(testdata/h100-node/), and its expectations from the catalog and the spec."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from topology import catalog
from topology.operate.accept import parse
from topology.operate.accept.figures import Figures
from topology.operate.accept.judge import FAIL, PASS, SKIP, judge, node_checks
from topology.operate.accept.plan import AcceptPlan, NodePlan, Rail, load_cables
from topology.spec import AcceptanceSpec

H100 = Path(__file__).resolve().parents[1] / "testdata" / "h100-node"


def read(name: str) -> str:
    return (H100 / name).read_text(encoding="utf-8")


# ---- parsers on real output ------------------------------------------------------------------
def test_all_reduce_one_gpu_real_output():
    r = parse.nccl_tests(read("nccl-tests-all_reduce_perf-1gpu-8G.txt"))
    assert (r.test, r.ranks) == ("all_reduce_perf", 1)
    assert r.peak.size == 8 * 2**30 and r.peak.busbw == 0.0  # one GPU: nothing crosses a link
    assert r.peak.algbw == 1516.3 and r.wrong == 0 and r.oob_ok
    assert len(r.rows) == 31  # 8 B .. 8 GiB, factor 2


def test_sendrecv_real_output_has_na_wrong_column():
    r = parse.nccl_tests(read("nccl-tests-sendrecv_perf-1gpu.txt"))
    assert r.test == "sendrecv_perf" and r.peak.busbw == 1367.1 and r.avg_busbw == 87234.9


def test_nccl_output_cut_short_is_an_error():
    text = read("nccl-tests-all_reduce_perf-1gpu.txt")
    with pytest.raises(parse.ParseError, match="cut short"):
        parse.nccl_tests(text[: text.index("# Out of bounds")])
    with pytest.raises(parse.ParseError, match="did not run"):
        parse.nccl_tests("Test CUDA failure common.cu:1026 'invalid device ordinal'\n")


def test_nvbandwidth_json_real_output():
    cases = parse.nvbandwidth(read("nvbandwidth-j.json"))
    assert cases["host_to_device_memcpy_ce"].status == "Passed"
    assert cases["host_to_device_memcpy_ce"].per_column() == {0: 55.2265}
    assert cases["device_to_host_memcpy_ce"].per_column() == {0: 55.1889}
    assert cases["device_to_device_memcpy_read_ce"].status == "Waived"  # one GPU


def test_nvidia_smi_xml_real_output_is_healthy():
    (gpu,) = parse.nvidia_smi_xml(read("nvidia-smi-q.xml"))
    assert (gpu.index, gpu.bus_id, gpu.name) == (0, "00000000:00:06.0", "NVIDIA H100 80GB HBM3")
    assert gpu.faults() == []  # idle is a clock event reason, not a throttle


def test_nvidia_smi_xml_faults_from_the_real_layout():
    xml = read("nvidia-smi-q.xml")
    xml = xml.replace("<clocks_event_reason_sw_power_cap>Not Active", "<clocks_event_reason_sw_power_cap>Active")
    xml = xml.replace("<remapped_row_failure>No", "<remapped_row_failure>Yes")
    xml = xml.replace("<dram_uncorrectable>0</dram_uncorrectable>", "<dram_uncorrectable>2</dram_uncorrectable>", 1)
    (gpu,) = parse.nvidia_smi_xml(xml)
    assert gpu.throttled == ("power cap",)
    assert gpu.faults() == ["throttled: power cap", "2 uncorrectable ECC errors (volatile)", "row remapping failed"]


def test_ib_write_bw_in_perftest_layout():
    # perftest's client output (its RDMA_Write BW Test layout; the real H100 VM has no ConnectX to run it)
    text = (" Dual-port       : OFF\t\tDevice         : mlx5_4\n Link type       : IB\n"
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
            "Conflicting CPU frequency values detected: 3295.212000 != 5003.410000. CPU Frequency is not max.\n"
            " 65536      1000             392.64             391.61 \t\t     0.626777\n")
    bw = parse.ib_write_bw(text)
    assert (bw.device, bw.link, bw.average_gbps) == ("mlx5_4", "IB", 391.61)
    with pytest.raises(parse.ParseError, match="no result table"):
        parse.ib_write_bw(" Couldn't connect to 10.16.0.3:18515\nUnable to open file descriptor for socket connection")


# ---- expectations ------------------------------------------------------------------------------
def test_every_catalog_figure_has_a_source_and_every_nvlink_gpu_figures():
    cat = catalog.load()
    figures = [f for g in cat.acceptance.gpus.values() for f in (g.hbm_gbs, g.nvlink_gbs, g.pcie_gbs) if f]
    assert all(f.source.strip() for f in [*figures, *cat.acceptance.efficiency.values()])
    used = {m.gpu for m in cat.nodes.values()}
    assert used <= set(cat.acceptance.gpus), f"node models' GPUs without figures: {used - set(cat.acceptance.gpus)}"


def test_expectations_follow_the_node_model_and_spec_overrides():
    f = Figures("dgx-h100")
    assert f.network_all_reduce(8).value == 0.8 * 8 * 400 / 8  # rails x NIC rate x efficiency
    assert f.rail_write_bw().value == 0.9 * 400
    assert f.nvlink().value == 0.8 * 450 and f.hbm_copy().value == 0.8 * 3350 / 2
    o = Figures("dgx-h100", AcceptanceSpec(efficiency={"rail_write_bw": 0.95}, expected={"hbm_copy_gbs": 1500.0}))
    assert o.rail_write_bw().value == 380.0 and "spec acceptance.efficiency.rail_write_bw" in o.rail_write_bw().how
    assert o.hbm_copy().value == 1500.0


# ---- verdicts on the real node's outputs -----------------------------------------------------
ONE_GPU = NodePlan("su01-node01", 1, "rack-a02", "hgx-h100-8x400g", 1,
                   (Rail(0, 0, "mlx5_0", "enp24s0np0", "su01-leaf-rail0", "swp1"),))


def results_from(tmp_path: Path, files: dict[str, str]) -> Path:
    node = tmp_path / "node" / "su01-node01"
    node.mkdir(parents=True)
    for dest, src in files.items():
        shutil.copy(H100 / src, node / dest)
    (node / "node_check.json").write_text(json.dumps({"mismatches": []}))
    (node / "dcgmi.absent").write_text("dcgmi not found\n")
    return tmp_path


def test_real_one_gpu_node_passes_scaled(tmp_path):
    folder = results_from(tmp_path, {"gpus.xml": "nvidia-smi-q.xml", "nvbandwidth.json": "nvbandwidth-j.json",
                                     "all_reduce.txt": "nccl-tests-all_reduce_perf-1gpu-8G.txt"})
    checks = {c.check: c for c in node_checks(ONE_GPU, folder, Figures("hgx-h100-8x400g"))}
    assert checks["all_reduce (node)"].verdict == PASS
    assert "one GPU" in checks["all_reduce (node)"].measured
    assert checks["nvbandwidth host->GPU copy (PCIe)"].verdict == PASS
    assert checks["nvbandwidth GPU->host copy (PCIe)"].verdict == PASS
    assert checks["GPU health"].verdict == PASS
    assert checks["dcgmi diag"].verdict == SKIP  # said, not hidden


def test_nvbandwidth_dash_t_equals_output_fails(tmp_path):
    folder = results_from(tmp_path, {"gpus.xml": "nvidia-smi-q.xml",
                                     "nvbandwidth.json": "nvbandwidth-j-dash-t-equals.json",
                                     "all_reduce.txt": "nccl-tests-all_reduce_perf-1gpu-8G.txt"})
    bad = [c for c in node_checks(ONE_GPU, folder, Figures("hgx-h100-8x400g")) if c.verdict == FAIL]
    assert [c.check for c in bad] == ["nvbandwidth host->GPU copy (PCIe)", "nvbandwidth GPU->host copy (PCIe)"]


def test_the_plan_of_eight_gpus_fails_a_one_gpu_node(tmp_path):
    folder = results_from(tmp_path, {"gpus.xml": "nvidia-smi-q.xml", "nvbandwidth.json": "nvbandwidth-j.json",
                                     "all_reduce.txt": "nccl-tests-all_reduce_perf-1gpu-8G.txt"})
    eight = NodePlan("su01-node01", 1, "rack-a02", "hgx-h100-8x400g", 8, ONE_GPU.rails)
    checks = {c.check: c for c in node_checks(eight, folder, Figures("hgx-h100-8x400g"))}
    assert checks["GPU health"].verdict == FAIL and "GPU 1 missing" in checks["GPU health"].detail
    assert any("GPU 7" in w.part for w in checks["GPU health"].work)
    assert checks["all_reduce (node)"].verdict == FAIL


def test_missing_outputs_are_fails_not_skips(tmp_path):
    (tmp_path / "node" / "su01-node01").mkdir(parents=True)
    plan = AcceptPlan({"su01-node01": ONE_GPU}, {})
    checks = judge(plan, tmp_path, rails=False)
    assert {c.verdict for c in checks} == {FAIL}
    assert all("no output" in c.detail for c in checks)


def test_cable_ids_from_labels_csv(tmp_path):
    labels = tmp_path / "labels.csv"
    labels.write_text("cable_id,a_device,a_port,b_device,b_port\nNL-000001,su01-node01,enp24s0np0,su01-leaf-rail0,"
                      "swp1\nLS-000007.1,su01-leaf-rail0,swp33,spine-01,swp1\n")
    cables = load_cables(labels)
    assert cables[("su01-node01", "enp24s0np0")] == "NL-000001" and cables[("spine-01", "swp1")] == "LS-000007"


# ---- bad input --------------------------------------------------------------------------------
def test_accept_bad_input_names_the_field(tmp_path):
    from typer.testing import CliRunner

    from tests.conftest import ROOT
    from topology.cli import app

    runner = CliRunner()
    r = runner.invoke(app, ["accept", "--stack", "nosuch", "-C", str(tmp_path)])
    assert r.exit_code == 2 and "--stack" in r.stderr and "superpod plan" in r.stderr
    for name in ("ansible.cfg", "roles", "playbooks", "Pulumi.lab.yaml"):
        (tmp_path / name).symlink_to(ROOT / name)
    assert runner.invoke(app, ["plan", "--stack", "lab", "-C", str(tmp_path)]).exit_code == 0
    r = runner.invoke(app, ["accept", "--stack", "lab", "-C", str(tmp_path), "--limit", "spine-*"])
    assert r.exit_code == 2 and "--limit: selects no GPU node of stack lab" in r.stderr
    assert not (tmp_path / ".runs").exists()  # nothing half-written


def test_rail_pairs_cover_every_node_of_an_odd_su():
    rails = tuple(Rail(r, r, f"mlx5_{r}", f"enp{r}", f"su01-leaf-rail{r}", "swp1") for r in range(2))
    nodes = {f"su01-node0{i}": NodePlan(f"su01-node0{i}", 1, "rack-a02", "dgx-h100", 8, rails) for i in (1, 2, 3)}
    pairs = AcceptPlan(nodes, {}).rail_pairs()
    # node01 serves node03 in a second round: one pair per NIC at a time
    assert pairs == [(1, 0, "su01-node01", "su01-node02", 0), (1, 0, "su01-node01", "su01-node03", 1),
                     (1, 1, "su01-node01", "su01-node02", 0), (1, 1, "su01-node01", "su01-node03", 1)]


def test_dcgmi_failing_exit_still_names_the_failed_test(tmp_path):
    # the layout is DCGM's -j JSON as this parser reads it (no DCGM on the real node to capture it)
    folder = results_from(tmp_path, {"gpus.xml": "nvidia-smi-q.xml", "nvbandwidth.json": "nvbandwidth-j.json",
                                     "all_reduce.txt": "nccl-tests-all_reduce_perf-1gpu-8G.txt"})
    node = folder / "node" / "su01-node01"
    (node / "dcgmi.absent").unlink()
    (node / "dcgmi.json.failed").write_text("exit 226: \n" + json.dumps({"DCGM GPU Diagnostic": {"test_categories": [
        {"category": "Hardware", "tests": [{"name": "Memory", "results": [{"gpu_id": "0", "status": "Fail",
                                                                           "info": "DBE detected"}]}]}]}}))
    (check,) = [c for c in node_checks(ONE_GPU, folder, Figures("hgx-h100-8x400g")) if c.check == "dcgmi diag"]
    assert check.verdict == FAIL and "Memory: DBE detected" in check.detail
    assert [w.action for w in check.work] == ["dcgmi diag Memory failed: DBE detected"]


def test_second_real_node_run_rejudged_here_gives_the_nodes_verdicts(tmp_path):
    """`superpod accept` on the real H100 node after the `-t NAME` fix (testdata/h100-node/accept-run-2/:
    the raw outputs the role collected there and the verdicts the node's run printed). Judged again
    here from the raw outputs, the verdicts must be the node's: the nvbandwidth checks PASS now, and
    node_check's mismatches (no fabric, no rail NICs in a VM) FAIL by name."""
    run = H100 / "accept-run-2"
    node = tmp_path / "node" / "su01-node01"
    shutil.copytree(run / "results", node)
    here = [c.as_json() for c in node_checks(ONE_GPU, tmp_path, Figures("hgx-h100-8x400g"))]
    there = json.loads((run / "verdicts.json").read_text())["checks"]
    key = ("check", "verdict", "measured", "expected")
    assert [tuple(c[k] for k in key) for c in here] == [tuple(c[k] for k in key) for c in there]
    verdicts = {c["check"]: c["verdict"] for c in there}
    assert verdicts["nvbandwidth host->GPU copy (PCIe)"] == verdicts["nvbandwidth GPU->host copy (PCIe)"] == PASS
    assert verdicts["node_check"] == FAIL and verdicts["dcgmi diag"] == SKIP
