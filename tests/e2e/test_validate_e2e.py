"""End-to-end: `superpod validate` on the lab pod with real lldpd on both ends of every cable.

The session's lab pod (tests/e2e/conftest.py) gives the four GPU node containers; this module adds
two rail leaves (su01-leaf-rail0/1) as containers and cables them to the nodes with veth pairs made
from build/lab/cabling.csv (the planned node netdev on the node, the planned leaf port on the leaf).
playbooks/lldp.yml's role runs on nodes and leaves through `superpod apply`, and validate collects
through its own playbook (ansible-runner), as on a real pod:

1. as cabled from the plan: every checked cable correct, exit 0;
2. su01-node01's rail 0 and rail 1 cables swapped, su01-node02's rail 1 cable pulled, a stray cable
   between the two leaves' swp40: validate names exactly a swap, a missing and an unplanned link,
   exit 1, with one work-list line each;
3. the drift corpus's rail cases (issue 33), on the same cables put back as planned: a rail link
   down, a rail MTU changed and two rail cables swapped, one node each: plain `superpod drift`
   (the record path, node_check run again) and `drift --full` both exit 1 and name the same
   node_check items; restored, both are clean (docs/operations.md, "The drift corpus").

Tests issue #18's fabric lab (tests/e2e/fabriclab.py) was not there when this was written: the
module wires its own leaves (lldpd only, no routing). On teardown the cables go and lldpd stops,
so the other labs sharing the pod see nodes as they were.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import time

import pytest
import yaml

from tests.e2e.labpod import ROOT, TIMINGS, LabPod, docker, drift_json, ensure_image, superpod

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

# node_check's own lldpctl parser, to wait until lldpd has heard a change (the verdicts come from drift)
_spec = importlib.util.spec_from_file_location(
    "superpod_node_check", ROOT / "roles/node_check/library/superpod_node_check.py")
NODE_CHECK = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(NODE_CHECK)

LEAVES = ("su01-leaf-rail0", "su01-leaf-rail1")
DEVICES = "su01-node*," + ",".join(LEAVES)
STRAY = ("swp40", "swp40")  # a cable between the two leaves that the plan does not have
PLAYBOOK = """\
- name: LLDP on the lab's nodes and leaves
  hosts: gpu_nodes:leaf_switches
  gather_facts: true
  roles:
    - role: lldp
"""


class Fabric:
    """Leaf containers and veth cables between network namespaces of running containers."""

    def __init__(self, pod: LabPod, leaves: LabPod):
        self.pod, self.leaves = pod, leaves
        self.pids = {h: docker("inspect", "-f", "{{.State.Pid}}", c).stdout.strip()
                     for h, c in {**pod.containers, **leaves.containers}.items()}

    def ip(self, host: str, *args: str, check: bool = True) -> None:
        subprocess.run(["nsenter", "-t", self.pids[host], "-n", "ip", *args], check=check, capture_output=True)

    def cable(self, a: tuple[str, str], b: tuple[str, str]) -> None:
        subprocess.run(["ip", "link", "add", a[1], "netns", self.pids[a[0]], "type", "veth",
                        "peer", "name", b[1], "netns", self.pids[b[0]]], check=True, capture_output=True)
        self.ip(a[0], "link", "set", a[1], "up")
        self.ip(b[0], "link", "set", b[1], "up")

    def unplug(self, end: tuple[str, str]) -> None:
        self.ip(end[0], "link", "del", end[1], check=False)  # its veth peer goes with it


def planned_cables() -> list[tuple[tuple[str, str], tuple[str, str]]]:
    with (ROOT / "build" / "lab" / "cabling.csv").open() as f:
        return [((r["a_device"], r["a_port"]), (r["b_device"], r["b_port"])) for r in csv.DictReader(f)
                if r["kind"] == "node-leaf" and r["b_device"] in LEAVES]


@pytest.fixture(scope="module")
def fabric(lab_pod, tmp_path_factory):
    leaves = LabPod(groups=("leaf_switches",), tag="e2e-validate")
    leaves.hosts = list(LEAVES)
    leaves.containers = {h: f"{leaves.session}-{h}" for h in LEAVES}
    tmp = tmp_path_factory.mktemp("validate")
    try:
        leaves.start(ensure_image())
        leaves.write_overlay(tmp / "leaves.yml", "docker")
        settings = tmp / "lldp.yml"  # fast LLDPDUs; the leaves send on their planned ports and the stray one
        settings.write_text(yaml.safe_dump({"all": {
            "vars": {"lldp_tx_interval": 2},
            "hosts": {leaf: {"lldp_interfaces": ["swp1", "swp2", "swp3", "swp4", STRAY[0]]} for leaf in LEAVES}}}))
        fab = Fabric(lab_pod, leaves)
        fab.cables = planned_cables()
        fab.overlays = ["-i", str(lab_pod.overlay), "-i", str(leaves.overlay), "-i", str(settings)]
        fab.playbook = tmp / "lldp-lab.yml"
        fab.playbook.write_text(PLAYBOOK)
        for a, b in fab.cables:
            fab.cable(a, b)
        yield fab
    finally:
        for host in lab_pod.hosts:  # the other labs' node_check would read these neighbors
            lab_pod.sh(host, "systemctl disable --now lldpd.service", check=False)
            pid = docker("inspect", "-f", "{{.State.Pid}}", lab_pod.containers[host]).stdout.strip()
            links = subprocess.run(["nsenter", "-t", pid, "-n", "ip", "-o", "link", "show", "type", "veth"],
                                   capture_output=True, text=True).stdout
            for name in {line.split(":")[1].strip().split("@")[0] for line in links.splitlines()} - {"eth0"}:
                subprocess.run(["nsenter", "-t", pid, "-n", "ip", "link", "del", name], capture_output=True)
        leaves.remove()


def validate(fab: Fabric) -> tuple[subprocess.CompletedProcess, dict]:
    proc = superpod("validate", "--stack", "lab", *fab.overlays, "--runs-dir", str(fab.pod.runs_dir),
                    "--devices", DEVICES, "--json", timeout=600)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc, json.loads(proc.stdout)


def validate_until(fab: Fabric, done, tries: int = 3) -> tuple[subprocess.CompletedProcess, dict]:
    """LLDP needs a few intervals after a change; a collection is a snapshot."""
    for _ in range(tries):
        time.sleep(8)  # four LLDPDUs at lldp_tx_interval 2
        proc, doc = validate(fab)
        if done(doc):
            break
    return proc, doc


def test_lldp_role_runs_on_nodes_and_leaves(fabric):
    t0 = time.monotonic()
    proc = superpod("apply", "--stack", "lab", *fabric.overlays, "--runs-dir", str(fabric.pod.runs_dir),
                    "--limit", DEVICES, "--playbook", str(fabric.playbook), "--no-progress", timeout=900)
    TIMINGS["validate_lldp_apply_s"] = round(time.monotonic() - t0, 1)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_cabled_as_planned_is_all_correct(fabric):
    t0 = time.monotonic()
    proc, doc = validate_until(fabric, lambda d: d["all_correct"])
    TIMINGS["validate_collect_and_compare_s"] = round(time.monotonic() - t0, 1)
    assert proc.returncode == 0, json.dumps(doc, indent=1)
    assert doc["counts"]["correct"] == len(fabric.cables) == 8
    assert doc["findings"] == [] and doc["work_list"] == [] and doc["not_heard"] == []


def test_swap_pull_and_stray_cable_are_named(fabric):
    n1_r0, n1_r1 = ("su01-node01", "enp24s0np0"), ("su01-node01", "enp64s0np0")
    leaf_of = dict(fabric.cables)
    fabric.unplug(n1_r0)
    fabric.unplug(n1_r1)
    fabric.cable(n1_r0, leaf_of[n1_r1])  # rail 0 into rail 1's leaf port, and the other way round
    fabric.cable(n1_r1, leaf_of[n1_r0])
    pulled = ("su01-node02", "enp64s0np0")
    fabric.unplug(pulled)
    fabric.cable((LEAVES[0], STRAY[0]), (LEAVES[1], STRAY[1]))

    proc, doc = validate_until(fabric, lambda d: sorted(f["kind"] for f in d["findings"]) == ["missing", "swap",
                                                                                            "unplanned"])
    assert proc.returncode == 1, proc.stdout
    by = {f["kind"]: f for f in doc["findings"]}
    assert sorted(by) == ["missing", "swap", "unplanned"] and len(doc["findings"]) == 3, json.dumps(doc, indent=1)
    swap = by["swap"]
    assert {(swap["planned"]["a_device"], swap["planned"]["a_port"]),
            (swap["other"]["a_device"], swap["other"]["a_port"])} == {n1_r0, n1_r1}
    assert (by["missing"]["planned"]["a_device"], by["missing"]["planned"]["a_port"]) == pulled
    assert by["missing"]["planned"]["b_device"] == leaf_of[pulled][0]
    assert by["unplanned"]["found"] == [{"a_device": LEAVES[0], "a_port": STRAY[0],
                                         "b_device": LEAVES[1], "b_port": STRAY[1]}]
    assert doc["counts"]["correct"] == 5 and doc["not_heard"] == []
    lines = {(t["device"], t["port"]): t["action"] for t in doc["work_list"]}
    assert set(lines) == {n1_r0, pulled, (LEAVES[0], STRAY[0])}, lines
    assert lines[n1_r0].startswith("swap with enp64s0np0")


# ---- rail drift (issue 33's corpus: a rail link down, its MTU changed, two rail cables swapped) ----
# The same cables, checked by node_check through `superpod drift`: plain (the record path:
# node_check runs again on every host whose record checks clean) and --full must give the same
# verdict and name the same items. Expectations come from the generated inventory's rails.
RAIL_PLAYBOOK = """\
- name: node_check on the lab's nodes, their rails 0 and 1 cabled to the leaf containers
  hosts: gpu_nodes
  gather_facts: true
  roles:
    - role: node_check
"""
# gather_facts as site.yml's first play: the record check gathers all facts and compares each the
# record holds; a record of node_check's own subset (distribution, virtual) would read as drift
# ("kernel: ..., was None") and no node would ever be clean by it.
DOWN_HOST, MTU_HOST, SWAP_HOST = "su01-node01", "su01-node02", "su01-node03"  # su01-node04 left alone
SETTLE_S = 40  # lldpd ages a lost neighbor out within its TTL (lldp_tx_interval 2 x 4)


def planned_rails(pod: LabPod) -> dict[str, dict[str, dict]]:
    """host -> netdev -> its rail as the generated inventory plans it (rail, netdev, leaf, leaf_port, mtu)."""
    nodes = yaml.safe_load((pod.inventory_dir / "hosts.yml").read_text())["all"]["children"]["gpu_nodes"]["hosts"]
    return {h: {r["netdev"]: r for r in nodes[h]["rails"]} for h in pod.hosts}


def rail_settings(pod: LabPod, path) -> str:
    """What node_check checks on these rails: each cabled rail's state, MTU (the plan's) and LLDP
    neighbor (required: lldpd runs on the nodes). Not: the speed (a veth reports a fixed 10000 Mb/s),
    the rails without a cable (only rails 0 and 1 have leaf containers: require_rail_links stays
    false, so rails 2-7 are reported skipped), the HCA ports (no /sys/class/infiniband in a
    container), the driver pin (the NVML package comes from site.yml's nvidia_driver, which this
    playbook does not run; the drift corpus checks the GPUs)."""
    node_vars = {"node_check_rail_lldp": "required", "node_check_rail_speed_check": False,
                 "node_check_expected_driver_version": None}
    path.write_text(yaml.safe_dump({"all": {"hosts": dict.fromkeys(pod.hosts, node_vars)}}))
    return str(path)


def plug(fab: Fabric, rails: dict, node_end: tuple[str, str], leaf_end: tuple[str, str]) -> None:
    """A cable at the node netdev's planned MTU (what rail_network sets on a real node; the lab
    runs no rail_network: no NICs)."""
    fab.cable(node_end, leaf_end)
    fab.ip(node_end[0], "link", "set", node_end[1], "mtu", str(rails[node_end[0]][node_end[1]]["mtu"]))


def neighbors(fab: Fabric, host: str) -> dict[str, list[tuple[str, str]]]:
    out = fab.pod.sh(host, "lldpctl -f json", check=False).stdout
    return NODE_CHECK.parse_lldp_neighbors(json.loads(out)) if out.strip() else {}


def settle(fab: Fabric, want: dict[str, dict[str, set]]) -> None:
    """Waits until each node's lldpd hears exactly `want` (host -> netdev -> {(leaf, port)}): both
    drift runs must read the same neighbors (an injection, not LLDP's timing, is what they report)."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        heard = {h: {n: set(neighbors(fab, h).get(n, [])) for n in w} for h, w in want.items()}
        if heard == want:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"LLDP did not settle in {SETTLE_S} s: heard {heard}, want {want}")
        time.sleep(2)


def as_planned(rails: dict, cables) -> dict[str, dict[str, set]]:
    return {h: {n: {(r["leaf"], r["leaf_port"])} for n, r in by_netdev.items() if (h, n) in dict(cables)}
            for h, by_netdev in rails.items()}


def rail_drift(fab: Fabric, runs: str, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    proc = superpod("drift", "--stack", "lab", *fab.rail_overlays, "--runs-dir", runs, "--limit", "gpu_nodes",
                    "--playbook", str(fab.rail_playbook), "--json", *args, timeout=600)
    return proc, drift_json(proc)


def test_rail_down_mtu_and_swap_plain_equals_full_and_restoring_cleans(fabric, tmp_path):
    pod = fabric.pod
    rails = planned_rails(pod)
    leaf_of = dict(fabric.cables)
    # back to the plan after the test above: every planned cable, at its planned MTU, no stray one
    fabric.unplug((LEAVES[0], STRAY[0]))
    for node_end, _ in fabric.cables:
        fabric.unplug(node_end)
    for node_end, leaf_end in fabric.cables:
        plug(fabric, rails, node_end, leaf_end)
    planned = as_planned(rails, fabric.cables)
    settle(fabric, planned)
    fabric.rail_playbook = tmp_path / "rail-check.yml"
    fabric.rail_playbook.write_text(RAIL_PLAYBOOK)
    fabric.rail_overlays = [*fabric.overlays, "-i", rail_settings(pod, tmp_path / "rail-check-vars.yml")]
    runs = str(tmp_path / "runs")  # a record of its own: the session's site.yml record stays as it was

    # a full apply of the playbook, cables as planned: node_check passes on every node, and the
    # converged record it leaves (node_check in it) is what the plain drift below checks against
    t0 = time.monotonic()
    # --limit gpu_nodes as the corpus: the record check then leaves the planned hosts without a
    # container (switches, storage) out, instead of sending them on to an empty check run
    proc = superpod("apply", "--stack", "lab", *fabric.rail_overlays, "--runs-dir", runs, "--limit", "gpu_nodes",
                    "--playbook", str(fabric.rail_playbook), "--no-progress", timeout=600)
    TIMINGS["rail_drift_apply_s"] = round(time.monotonic() - t0, 1)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    # the three injections, one node each (the fourth left alone), from the plan
    down_netdev, mtu_netdev = fabric.cables[0][0][1], fabric.cables[1][0][1]
    swapped = [n for (h, n), _ in fabric.cables if h == SWAP_HOST]
    assert fabric.cables[0][0][0] == DOWN_HOST and fabric.cables[1][0][0] == DOWN_HOST and len(swapped) == 2
    down, mtu, (s0, s1) = rails[DOWN_HOST][down_netdev], rails[MTU_HOST][mtu_netdev], \
        (rails[SWAP_HOST][n] for n in swapped)
    assert mtu["mtu"] != 1500
    try:
        fabric.ip(DOWN_HOST, "link", "set", down_netdev, "down")
        fabric.ip(MTU_HOST, "link", "set", mtu_netdev, "mtu", "1500")
        for n in swapped:
            fabric.unplug((SWAP_HOST, n))
        plug(fabric, rails, (SWAP_HOST, s0["netdev"]), leaf_of[(SWAP_HOST, s1["netdev"])])
        plug(fabric, rails, (SWAP_HOST, s1["netdev"]), leaf_of[(SWAP_HOST, s0["netdev"])])
        injected = {**planned, DOWN_HOST: {**planned[DOWN_HOST], down_netdev: set()},
                    SWAP_HOST: {s0["netdev"]: {(s1["leaf"], s1["leaf_port"])},
                                s1["netdev"]: {(s0["leaf"], s0["leaf_port"])}}}
        settle(fabric, injected)

        t0 = time.monotonic()
        plain_proc, plain = rail_drift(fabric, runs)
        TIMINGS["rail_drift_plain_s"] = round(time.monotonic() - t0, 1)
        t0 = time.monotonic()
        full_proc, full = rail_drift(fabric, runs, "--full")
        TIMINGS["rail_drift_full_s"] = round(time.monotonic() - t0, 1)
        dump = json.dumps({"plain": plain, "full": full}, indent=1)
        drifted = sorted({DOWN_HOST, MTU_HOST, SWAP_HOST})
        left_alone = sorted(set(pod.hosts) - set(drifted))
        codes = (plain_proc.returncode, full_proc.returncode, plain["exit_code"], full["exit_code"])
        assert codes == (1, 1, 1, 1), dump
        assert plain["drifted_hosts"] == full["drifted_hosts"] == drifted, dump
        assert plain["problem_hosts"] == full["problem_hosts"] == [], dump
        assert plain["record_clean_hosts"] == left_alone, dump  # the plain path: by the record, node_check again
        assert {h: full["hosts"][h]["status"] for h in left_alone} == dict.fromkeys(left_alone, "clean"), dump
        # each case's node_check item, as the plan words it (the speed is not compared: see rail_settings)
        # (start, end) of each item; between them the actual speed, which is not compared
        expected = {
            DOWN_HOST: [(f"link rail{down['rail']} {down_netdev} (expected up, mtu {down['mtu']}, actual down, "
                         f"mtu {down['mtu']},", "; state down)")],
            MTU_HOST: [(f"link rail{mtu['rail']} {mtu_netdev} (expected up, mtu {mtu['mtu']}, actual up, mtu 1500,",
                        "; mtu 1500)")],
            SWAP_HOST: [(f"lldp rail{a['rail']} {a['netdev']} (expected {a['leaf']} {a['leaf_port']}, "
                         f"actual {b['leaf']} {b['leaf_port']}; cable reaches rail{b['rail']}'s leaf: rails swapped)",
                         "")
                        for a, b in ((s0, s1), (s1, s0))],
        }
        touched = {DOWN_HOST: {down_netdev}, MTU_HOST: {mtu_netdev}, SWAP_HOST: set(swapped)}
        for host in drifted:
            items = {label: report["hosts"][host]["plan_mismatches"] for label, report in (("plain", plain),
                                                                                            ("full", full))}
            assert items["plain"] == items["full"], (host, dump)  # plain names what full names, nothing else
            for start, end in expected[host]:
                assert any(i.startswith(start) and i.endswith(end) for i in items["plain"]), (host, start, dump)
            # attributable: every item on the host is about the injected rail(s) there (the down
            # rail's LLDP neighbor goes with its link)
            assert all(any(f" {n} " in item for n in touched[host]) for item in items["plain"]), (host, dump)
    finally:
        fabric.ip(DOWN_HOST, "link", "set", down_netdev, "up")
        fabric.ip(MTU_HOST, "link", "set", mtu_netdev, "mtu", str(mtu["mtu"]))
        for n in swapped:
            fabric.unplug((SWAP_HOST, n))
        for n in swapped:
            plug(fabric, rails, (SWAP_HOST, n), leaf_of[(SWAP_HOST, n)])

    # restored: both clean again, the plain one by the record (node_check passing on every node)
    settle(fabric, planned)
    plain_proc, plain = rail_drift(fabric, runs)
    full_proc, full = rail_drift(fabric, runs, "--full")
    dump = json.dumps({"plain": plain, "full": full}, indent=1)
    assert (plain_proc.returncode, full_proc.returncode) == (0, 0), dump
    assert plain["record_clean_hosts"] == sorted(pod.hosts), dump
    assert plain["drifted_hosts"] == full["drifted_hosts"] == [] and full["problem_hosts"] == [], dump
    assert {h: v["status"] for h, v in full["hosts"].items()} == dict.fromkeys(pod.hosts, "clean"), dump
