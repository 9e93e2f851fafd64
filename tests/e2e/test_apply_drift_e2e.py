"""End-to-end: the lab pod's GPU nodes on Debian 12 systemd containers, driven by `superpod
apply` / `superpod drift` exactly as a user runs them, through an inventory overlay (the
generated inventory is not touched).

Scope: the `gpu_nodes` play (the 4 planned GPU nodes) with whatever roles site.yml enables;
the management node (cooling_monitor) is left out with `--limit gpu_nodes` (it would need its
agent's PyPI install and PDU/CDU endpoints in a container; the agent has its own tests).

The steps share the session's lab pod (tests/e2e/conftest.py, reached over SSH) and run in
order: first apply, no-op apply of every task (--full: changed=0), a plain apply and a plain
drift that skip every node (converged, its record clean), a quick drift that finds them clean;
last (it breaks the pod, then restarts the node), a node killed in the middle of an apply: the
others finish and the report names it. Timings go to build/e2e-timings.json.

Hand-made drift (a sysctl file, a deleted limits file, a disabled unit, a kernel command line
drop-in on two nodes: drift --quick, plain drift and drift --fix --full name exactly those, the
fix restores them) is in the drift corpus (test_drift_corpus_e2e.py), in its one injection
round: one check of the pod for both.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import warnings
from pathlib import Path

import pytest

from tests.e2e.labpod import ROOT, SUPERPOD, TIMINGS, LabPod, docker, drift_json, last_run, superpod
from topology.operate.events import host_tallies, load_events

# Each step is a whole superpod run on a shared 2-core machine: far over the suite's 300 s default.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

LIMIT = "gpu_nodes"


@pytest.fixture
def pod(lab_pod):
    """The session's lab pod (tests/e2e/conftest.py): brought up once, shared with the other labs."""
    return lab_pod


# community.docker's exec transport now and then answers an exec with nothing on a loaded
# machine (community.docker#644): a task then fails with this message, whatever the role does.
TRANSPORT_FLAKE = "returned empty string"


def run(pod: LabPod, command: str, *extra: str) -> subprocess.CompletedProcess:
    """One superpod command (over the whole pod unless `extra` has its own --limit); run again
    once (with a warning) when only the docker exec transport failed."""
    limit = () if "--limit" in extra else ("--limit", LIMIT)
    args = (command, "--stack", pod.stack, "-i", str(pod.overlay), "--runs-dir", str(pod.runs_dir),
            *limit, "--playbook", str(pod.playbook), "--no-progress", *extra)
    before = set((pod.runs_dir / pod.stack).glob("*"))
    proc = superpod(*args)
    if proc.returncode != 0:
        outputs = [f for d in set((pod.runs_dir / pod.stack).glob("*")) - before for f in d.glob("artifacts/*/stdout")]
        if any(TRANSPORT_FLAKE in f.read_text(errors="replace") for f in outputs):
            warnings.warn(f"superpod {command}: docker exec transport returned nothing; ran it again", stacklevel=2)
            proc = superpod(*args)
    return proc


def timed(name: str, pod: LabPod, command: str, *extra: str) -> subprocess.CompletedProcess:
    t0 = time.monotonic()
    proc = run(pod, command, *extra)
    TIMINGS[name] = round(time.monotonic() - t0, 1)
    return proc


def tallies_of(pod: LabPod, kind: str):
    return host_tallies(load_events(last_run(pod.runs_dir, pod.stack, kind) / "artifacts/run/job_events"))


@pytest.mark.timeout(2700)  # package downloads and dkms on a loaded machine: 654 s in CI, over 1800 s seen
def test_first_apply_converges_every_node(pod):
    proc = timed("first_apply_s", pod, "apply")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tallies = tallies_of(pod, "apply")
    assert sorted(tallies) == pod.hosts
    assert all(t.failed == 0 and t.unreachable == 0 and t.changed > 0 for t in tallies.values()), tallies
    # the lab's nodes share one image (one Python and CPU): the exporter's wheelhouse is built once at most
    events = load_events(last_run(pod.runs_dir, pod.stack, "apply") / "artifacts/run/job_events")
    builds = [e["event_data"]["host"] for e in events
              if e.get("event") == "runner_on_ok" and e["event_data"].get("task") == "Build the exporter wheel"]
    assert len(builds) <= 1, builds


def test_second_apply_changes_nothing(pod):
    """Every task again (--full: no node is skipped as converged): the idempotence proof."""
    proc = timed("noop_apply_s", pod, "apply", "--full")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tallies = tallies_of(pod, "apply")
    assert sorted(tallies) == pod.hosts
    assert {h: t.changed for h, t in tallies.items()} == dict.fromkeys(pod.hosts, 0), proc.stdout
    assert f"{len(pod.hosts)} hosts: " in proc.stdout and " changed=0 failed=0 unreachable=0" in proc.stdout


def test_a_plain_apply_skips_the_converged_unchanged_nodes(pod):
    """Nothing changed since the full apply: each node's record (files, units, modules, the roles'
    reads run again, the facts they decide on) checks clean, so no node gets site.yml."""
    before = set((pod.runs_dir / pod.stack).glob("*-apply"))
    proc = timed("noop_apply_fast_s", pod, "apply")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    n = len(pod.hosts)
    assert f"{n} hosts: {n} skipped, changed=0 failed=0 unreachable=0" in proc.stdout, proc.stdout
    assert set((pod.runs_dir / pod.stack).glob("*-apply")) == before  # no site.yml run
    record = json.loads((pod.runs_dir / pod.stack / "manifest" / "su01-node01.json").read_text())
    kinds = {k for e in record for k in ("probe", "find", "kmod", "unit_active", "facts") if k in e}
    assert kinds >= {"probe", "find", "unit_active", "facts"}, kinds  # the reads, not only files
    assert not [e for e in record if "unverifiable" in e]  # nothing on a lab node escapes the check


def test_a_plain_drift_finds_the_untouched_pod_clean_by_its_record(pod):
    proc = timed("drift_clean_fast_s", pod, "drift", "--json")
    report = drift_json(proc)
    assert proc.returncode == 0, json.dumps(report, indent=1)
    assert report["record_clean_hosts"] == pod.hosts and report["drifted_hosts"] == []


def test_quick_drift_after_the_noop_apply_is_clean(pod):
    """`drift --quick` compares every node with what the applies recorded (files, units): the
    untouched pod is clean, in one task per host."""
    proc = timed("quick_drift_clean_s", pod, "drift", "--quick", "--json")
    report = drift_json(proc)
    assert proc.returncode == 0, json.dumps(report, indent=1)
    assert {h: v["status"] for h, v in report["hosts"].items()} == dict.fromkeys(pod.hosts, "clean")
    record = json.loads((pod.runs_dir / pod.stack / "manifest" / "su01-node01.json").read_text())
    assert len(record) > 50 and any(e.get("unit") for e in record)  # the roles' files and units, not a token few


@pytest.mark.breaks_pod
def test_node_lost_mid_run_does_not_stop_the_others(pod):
    victim = pod.hosts[-1]
    # one role is enough to be killed in the middle of (the whole site.yml would only repeat the no-op apply)
    cmd = [*SUPERPOD, "apply", "--stack", pod.stack, "-i", str(pod.overlay), "--runs-dir", str(pod.runs_dir),
           "--limit", LIMIT, "--playbook", str(pod.playbook), "--no-progress", "--fresh-facts", "--tags", "hugepages"]
    before = set((pod.runs_dir / pod.stack).glob("*-apply"))
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"})
    try:
        _wait_for_role_task_on(victim, pod, before)
        docker("kill", pod.containers[victim])
        out, _ = proc.communicate(timeout=1800)
    finally:
        if proc.poll() is None:
            proc.kill()
        pod.restart(victim)  # later tests (and other labs) see a whole pod
    assert proc.returncode == 1, out
    tallies = tallies_of(pod, "apply")
    assert tallies[victim].unreachable + tallies[victim].failed > 0, out
    for host in pod.hosts[:-1]:  # the others ran to the end, clean
        assert tallies[host].failed == 0 and tallies[host].unreachable == 0 and tallies[host].ok > 0, out
    assert victim in out and "unreachable" in out
    retry = last_run(pod.runs_dir, pod.stack, "apply") / "retry.txt"
    assert retry.read_text().split() == [victim]
    assert f"--limit @{retry}" in out.replace("\n", "")


def _wait_for_role_task_on(host: str, pod: LabPod, before: set[Path], timeout: float = 900) -> None:
    """Until the run has finished a role task on `host` (facts gathered, roles under way)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = set((pod.runs_dir / pod.stack).glob("*-apply")) - before
        for run_dir in runs:
            for f in (run_dir / "artifacts/run/job_events").glob("*.json"):
                try:
                    event = json.loads(f.read_text())
                except (json.JSONDecodeError, OSError):
                    continue
                data = event.get("event_data") or {}
                if event.get("event") == "runner_on_ok" and data.get("host") == host and data.get("role"):
                    return
        time.sleep(0.5)
    raise AssertionError(f"no role task finished on {host} within {timeout}s")
