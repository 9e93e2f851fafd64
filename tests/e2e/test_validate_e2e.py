"""End-to-end: `superpod validate` on the lab pod with real lldpd on both ends of every cable.

The session's lab pod (tests/e2e/conftest.py) gives the four GPU node containers; this module adds
two rail leaves (su01-leaf-rail0/1) as containers and cables them to the nodes with veth pairs made
from build/lab/cabling.csv (the planned node netdev on the node, the planned leaf port on the leaf).
playbooks/lldp.yml's role runs on nodes and leaves through `superpod apply`, and validate collects
through its own playbook (ansible-runner), as on a real pod:

1. as cabled from the plan: every checked cable correct, exit 0;
2. su01-node01's rail 0 and rail 1 cables swapped, su01-node02's rail 1 cable pulled, a stray cable
   between the two leaves' swp40: validate names exactly a swap, a missing and an unplanned link,
   exit 1, with one work-list line each.

Tests issue #18's fabric lab (tests/e2e/fabriclab.py) was not there when this was written: the
module wires its own leaves (lldpd only, no routing). On teardown the cables go and lldpd stops,
so the other labs sharing the pod see nodes as they were.
"""

from __future__ import annotations

import csv
import json
import subprocess
import time

import pytest
import yaml

from tests.e2e.labpod import ROOT, TIMINGS, LabPod, docker, ensure_image, superpod

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

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
