"""End-to-end: the lab pod's GPU nodes on Debian 12 systemd containers, driven by `superpod
apply` / `superpod drift` exactly as a user runs them, through an inventory overlay (the
generated inventory is not touched).

Scope: the `gpu_nodes` play (the 4 planned GPU nodes) with whatever roles site.yml enables;
the management node (cooling_monitor) is left out with `--limit gpu_nodes` (it would need its
agent's PyPI install and PDU/CDU endpoints in a container; the agent has its own tests).

The steps share the session's lab pod (tests/e2e/conftest.py, reached over SSH) and run in
order: first apply, no-op apply of every task (--full: changed=0), a plain apply and a plain
drift that skip every node (converged, its record clean), hand-made drift on two nodes -> a plain
drift that checks only those two, then one whole-pod `drift --fix --full` whose check names
exactly those hosts and tasks (exit code 1 in its report) and
finds the two untouched nodes clean, and whose fix restores them; a drift check of the fixed
hosts and roles is clean; last (it breaks the pod, then restarts the node), a node killed in the
middle of an apply: the others finish and the report names it. Timings go to build/e2e-timings.json.
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

# Hand-made drift: (what is done in the container, the (role, task) drift must report).
DRIFT = {
    "su01-node02": [
        ("sed -i 's/= 0/= 1/' /etc/sysctl.d/60-superpod-host-tuning.conf",  # a sysctl changed while debugging
         ("host_tuning", "Persist the tuning sysctls")),
        ("rm /etc/security/limits.d/90-superpod-memlock.conf",  # a deleted config file
         ("hugepages", "Set the PAM locked-memory limits")),
    ],
    "su01-node03": [
        ("systemctl disable --quiet superpod-cpu-governor.service",  # a unit disabled by hand
         ("host_tuning", "Enable the governor unit at boot")),
        ("sed -i 's/iommu=pt/iommu=pt debug/' /etc/default/grub.d/60-superpod-host-tuning.cfg",  # kernel cmdline file
         ("host_tuning", "Write the kernel command line drop-in")),
    ],
}
# What `drift --quick` must name for DRIFT: (host, path or unit, kind) against the last apply's record.
QUICK_DRIFT = {
    ("su01-node02", "/etc/sysctl.d/60-superpod-host-tuning.conf", "content"),
    ("su01-node02", "/etc/security/limits.d/90-superpod-memlock.conf", "missing"),
    ("su01-node03", "superpod-cpu-governor.service", "enabled"),
    ("su01-node03", "/etc/default/grub.d/60-superpod-host-tuning.cfg", "content"),
    # and what the roles read: the effective command line they compute from every grub.d drop-in
    ("su01-node03", "Compute the effective kernel command line", "output"),
}
# Tasks that follow from a drifted kernel command line file: the effective command line (all
# grub.d drop-ins together) differs from the one each role last handed to the bootloader, so
# both roles would regenerate it and record the new one. (The regeneration is a command task:
# skipped in check mode; the record is a file both roles would rewrite, and drift shows it.)
CMDLINE_CONSEQUENCES = {
    ("host_tuning", "Record the command line handed to the bootloader"),
    ("hugepages", "Record the command line handed to the bootloader"),
}


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


def test_drift_names_exactly_the_changed_hosts_and_tasks_and_fix_restores_them(pod):
    """One `drift --fix`: the check run reports the hand-made drift (as `drift` alone would), then
    the fix run re-applies only the drifted hosts' drifted roles. The check covers the whole pod,
    so it is also the no-false-drift proof: the hosts left alone must be clean and the drifted
    ones must show nothing beyond what was done to them (a separate whole-pod check of the
    untouched pod would repeat this run; the scoped check after the fix proves a clean exit 0)."""
    for host, changes in DRIFT.items():
        for script, _ in changes:
            pod.sh(host, script)
    quick = timed("quick_drift_found_s", pod, "drift", "--quick", "--json")  # first the quick check: names them
    quick_report = drift_json(quick)
    assert quick.returncode == 1 and quick_report["drifted_hosts"] == sorted(DRIFT), json.dumps(quick_report, indent=1)
    found = {(h, d["what"], d["kind"]) for h, v in quick_report["hosts"].items() for d in v["drift"]}
    assert found == QUICK_DRIFT, json.dumps(quick_report, indent=1)
    # the plain drift: the record check names the two nodes, and only they get the check run
    plain = timed("drift_found_fast_s", pod, "drift", "--json")
    plain_report = drift_json(plain)
    assert plain.returncode == 1 and plain_report["drifted_hosts"] == sorted(DRIFT), json.dumps(plain_report, indent=1)
    assert plain_report["record_clean_hosts"] == sorted(set(pod.hosts) - set(DRIFT))
    plain_found = {h: {(c["role"], c["task"]) for c in v["changes"]} for h, v in plain_report["hosts"].items()
                   if v["checked"] == "full"}
    assert plain_found == {h: {task for _, task in DRIFT[h]} | (CMDLINE_CONSEQUENCES if h == "su01-node03" else set())
                           for h in DRIFT}
    # --full: the check runs on every node (the untouched ones too: no false drift), then the fix
    proc = timed("drift_check_and_fix_s", pod, "drift", "--json", "--fix", "--full")
    report = drift_json(proc)
    assert report["exit_code"] == 1, json.dumps(report, indent=1)  # what `drift` alone exits with
    assert report["drifted_hosts"] == sorted(DRIFT) and report["problem_hosts"] == []
    untouched = sorted(set(pod.hosts) - set(DRIFT))
    assert untouched and {h: report["hosts"][h]["status"] for h in untouched} == dict.fromkeys(untouched, "clean")
    for host in pod.hosts:
        reported = {(c["role"], c["task"]) for c in report["hosts"][host]["changes"]}
        expected = {task for _, task in DRIFT.get(host, [])}
        if host == "su01-node03":
            expected |= CMDLINE_CONSEQUENCES
        assert reported == expected, f"{host}: reported {sorted(reported)}"
    # diffs a person can act on: the sysctl line and the kernel parameter
    node02 = {c["task"]: c["diff"] for c in report["hosts"]["su01-node02"]["changes"]}
    assert "-kernel.numa_balancing = 1" in node02["Persist the tuning sysctls"]
    assert "+kernel.numa_balancing = 0" in node02["Persist the tuning sysctls"]
    node03 = {c["task"]: c["diff"] for c in report["hosts"]["su01-node03"]["changes"]}
    assert "iommu=pt debug" in node03["Write the kernel command line drop-in"]
    assert report["fix"] == {"limit": sorted(DRIFT), "tags": ["host_tuning", "hugepages"]}
    # the fix
    assert proc.returncode == 0 and report["fix_exit_code"] == 0, proc.stdout + proc.stderr
    fixed = tallies_of(pod, "fix")
    assert sorted(fixed) == sorted(DRIFT)  # only the drifted hosts were touched
    assert pod.sh("su01-node03", "systemctl is-enabled superpod-cpu-governor.service").stdout.strip() == "enabled"
    assert "kernel.numa_balancing = 0" in pod.sh("su01-node02", "cat /etc/sysctl.d/60-superpod-host-tuning.conf").stdout
    pod.sh("su01-node02", "test -s /etc/security/limits.d/90-superpod-memlock.conf")


def test_drift_after_fix_is_clean(pod):
    """The fixed hosts and roles check clean (the fix touched nothing else, so a check of the
    whole pod would only repeat the clean drift above)."""
    proc = timed("drift_check_after_fix_s", pod, "drift", "--json", "--limit", ",".join(sorted(DRIFT)),
                 "--tags", "host_tuning,hugepages")
    report = drift_json(proc)
    assert proc.returncode == 0, json.dumps(report, indent=1)
    assert report["drifted_hosts"] == [] and report["problem_hosts"] == []
    assert {h: v["status"] for h, v in report["hosts"].items()} == dict.fromkeys(sorted(DRIFT), "clean")


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
