"""`superpod apply` on switches goes batch by batch with a health gate after each push.

Seven lab switches (both in-band SU switches, two rail leaves, the spine, both in-band cores) run
switch_fabric through site.yml and the CLI, each over a local connection with its own stand-in
`nv` (tests/switch_standins/nv: its own state folder; every push and health read appended to one
shared log). The stand-ins answer the gate's reads with the JSON NVUE documents; what each
switch's sessions are comes from its planned configuration. Expectations come from the plan:
the pairs are the cabling's in-band peer links, a device's redundancy its uplinks; the batches are
the inventory groups `superpod plan` wrote.

Asserted: the canary is pushed and gated before any other switch; batches run in order; a pair's
second switch is pushed only after the first one's gate read; a gate that fails (sessions left
idle after the push) stops the rollout: the switches of later batches are never pushed, and the
report names what changed and what was left untouched; a drift run reads every switch past a failing
one. Local connections, no containers: ~2 min on 2 loaded cores.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import stack_layout
from tests.e2e.labpod import ROOT, plan, superpod
from topology.render.rollout import BATCHES

pytestmark = pytest.mark.timeout(900)

HOSTS = ("su01-inband-a", "su01-inband-b", "su01-leaf-rail0", "su01-leaf-rail1", "spine-01",
         "inband-core-01", "inband-core-02")
STANDIN = ROOT / "tests" / "switch_standins" / "nv"
CANARY = "su01-inband-b"  # side B: without the canary it would go in the second batch


def _health(startup: Path) -> dict:
    """What the switch reports once healthy, in NVUE's JSON: every planned BGP session
    established, every planned bond and the peer link up, the MLAG peer alive."""
    planned = yaml.safe_load(startup.read_text())[0]["set"]
    neighbors = planned.get("vrf", {}).get("default", {}).get("router", {}).get("bgp", {}).get("neighbor", {})
    links = {n: {"type": "bond", "link": {"oper-status": "up"}} for n, i in planned.get("interface", {}).items()
             if "bond" in i}
    doc = {"bgp": {n: {"remote-as": v.get("remote-as"), "state": "established"} for n, v in neighbors.items()},
           "interface": links}
    if "mlag" in planned:
        links["peerlink"] = {"type": "peerlink", "link": {"oper-status": "up"}}
        doc["mlag"] = {"peer-alive": "True", "peer-interface": "peerlink.4094"}
    return doc


class Lab:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.log = tmp / "pushes.log"
        self.runs = tmp / "runs"
        self.overlay = tmp / "overlay.yml"
        self.inventory = yaml.safe_load((plan("lab") / "hosts.yml").read_text())["all"]["children"]
        self.batch = {h: g for g in BATCHES for h in (self.inventory[g].get("hosts") or {})}
        hosts = {}
        for h in HOSTS:
            wrapper = tmp / h / "nv"
            wrapper.parent.mkdir()
            wrapper.write_text(f"#!/bin/sh\nFAKE_NVUE_STATE={tmp / h / 'nvue'} FAKE_HOST={h} FAKE_PUSH_LOG={self.log} "
                               f"exec {sys.executable} {STANDIN} \"$@\"\n")
            wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
            hosts[h] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                        "ansible_become": False, "switch_fabric_nv": str(wrapper),
                        "switch_fabric_state_dir": str(tmp / h / "state"),
                        "switch_fabric_gate_retries": 2, "switch_fabric_gate_delay": 1}
        self.overlay.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))

    def reset(self) -> None:
        """Every switch as shipped (its default revision), healthy as its plan says, log empty."""
        for h in HOSTS:
            state = self.tmp / h / "nvue"
            state.mkdir(exist_ok=True)
            for f in state.iterdir():
                f.unlink()
            (state / "health.json").write_text(json.dumps(_health(ROOT / "build/lab/switches" / h / "startup.yaml")))
        self.log.write_text("")

    def run(self, command: str, *extra: str):
        return superpod(command, "--stack", "lab", "-i", str(self.overlay), "--runs-dir", str(self.runs),
                        "--limit", ",".join(HOSTS), "--no-progress", "--full", *extra, timeout=800)

    def apply(self, *extra: str):
        return self.run("apply", *extra)

    def events(self) -> list[tuple[str, str]]:
        return [tuple(line.split(" ", 1)) for line in self.log.read_text().splitlines()]


def _pushed(events) -> list[str]:
    return [h for h, what in events if what == "apply"]


def _gated_before(events, first: str, second: str) -> bool:
    """`first` was pushed and then read by its gate before `second` was pushed."""
    i = events.index((first, "apply"))
    j = events.index((second, "apply"))
    return any(h == first and what.startswith("show") for h, what in events[i + 1:j])


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return Lab(tmp_path_factory.mktemp("rollout"))


def test_rollout_canary_first_then_batches_and_pairs_apart(lab):
    lab.reset()
    proc = lab.apply("--canary", CANARY)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for h in HOSTS:
        assert (lab.tmp / h / "nvue/applied.yaml").read_text() == (ROOT / "build/lab/switches" / h / "startup.yaml") \
            .read_text()
    events = lab.events()
    pushed = _pushed(events)
    assert sorted(pushed) == sorted(HOSTS)
    assert pushed[0] == CANARY and all(_gated_before(events, CANARY, h) for h in pushed[1:])
    order = [BATCHES.index(lab.batch[h]) for h in pushed[1:]]
    assert order == sorted(order), pushed  # batch after batch, never back
    layout = stack_layout("lab")
    pairs = [(lk.a_device, lk.b_device) for lk in layout.links if lk.tier == "inband-peer"
             and lk.a_device in HOSTS and lk.b_device in HOSTS]
    assert pairs  # the lab's in-band pair is among these switches
    for a, b in pairs:
        first, second = sorted((a, b), key=pushed.index)
        assert _gated_before(events, first, second), f"{a} and {b} pushed without a gate between them"
    # the in-band cores back each SU pair up (their uplinks): never both at once either
    cores = sorted({lk.b_device for lk in layout.links if lk.a_device == "su01-inband-a" and lk.fabric == "inband"
                    and lk.b_device in HOSTS and lk.tier != "inband-peer"})
    assert len(cores) == 2
    assert _gated_before(events, *sorted(cores, key=pushed.index))


def test_a_failed_gate_stops_the_rollout_and_leaves_the_rest_untouched(lab):
    lab.reset()
    broken = "su01-leaf-rail0"  # batch 1: its sessions stay idle after the push
    (lab.tmp / broken / "nvue/break-on-apply").write_text("")
    proc = lab.apply()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    events = lab.events()
    pushed = _pushed(events)
    first_batch = {h for h in HOSTS if lab.batch[h] == lab.batch[broken]}
    assert set(pushed) == first_batch, pushed  # the batch ran together; nothing after it
    later = [h for h in HOSTS if BATCHES.index(lab.batch[h]) > BATCHES.index(lab.batch[broken])]
    assert later
    for h in later:  # not pushed, not even read: the stand-in never ran there
        assert not (lab.tmp / h / "nvue/applied.yaml").exists() and not any(e[0] == h for e in events)
    out = " ".join(proc.stdout.split())
    assert f"rollout stopped at {broken}" in out, proc.stdout
    assert "rollout gate failed after the push" in out and "BGP" in out
    untouched = out.split("left untouched: ")[1].split(f" {len(first_batch)} hosts:")[0].split(", ")
    assert sorted(untouched) == sorted(later), out  # the run's scope (--limit), none of it reached


def test_a_drift_run_reads_every_switch_past_a_failing_one(lab):
    """Check mode changes nothing: there a failed switch stops no batch (site.yml's switch plays
    stop an apply only)."""
    lab.reset()
    failing = "su01-leaf-rail0"  # batch 1
    (lab.tmp / failing / "nvue/fail-show").write_text("")
    proc = lab.run("drift")
    assert proc.returncode == 2, proc.stdout + proc.stderr  # an error on one switch
    events = lab.events()
    assert {h for h, what in events if what == "config show"} == set(HOSTS)  # every batch was read
    assert not _pushed(events)
