"""Issue 33: drift that cannot lie. A plain `apply`/`drift` never calls a host clean where the
full check would not (node_check runs on every host the record check passes; a switch re-plan
is an input), and the record is data, never code: signed with a key kept outside `.runs/`, its
reads run only as the tasks in today's role files declare them. Real Ansible on localhost, the
real node_check role with an `nvidia-smi` that answers in the real query format."""

from __future__ import annotations

import hashlib
import json
import re
import stat
from pathlib import Path

import pytest

from tests.conftest import ANSIBLE_STRATEGY_LINES, ROOT
from tests.lab_stack_cli import drift_json, lab_args, superpod
from topology.operate import converged, inputs, manifest, record_key, trusted_record
from topology.operate.runs import RunRequest

SKIPPED = "converged and unchanged (skipped)"
# `nvidia-smi --query-gpu=index,name,driver_version,persistence_mode,ecc.mode.current,pstate,
#  pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,
#  mig.mode.current --format=csv,noheader,nounits` on a DGX H100 (the rows
#  tests/roles/test_node_check.py parses)
GPU_ROW = "{i}, NVIDIA H100 80GB HBM3, 535.183.01, {pm}, Enabled, P0, 5, 5, 16, 16, Disabled\n"


@pytest.fixture(autouse=True)
def _record_key(tmp_path, monkeypatch):
    monkeypatch.setenv(record_key.KEY_ENV, str(tmp_path / "config" / "record.key"))


def _gpus(smi_state: Path, lost: tuple[int, ...] = (), persistence_off: tuple[int, ...] = ()) -> None:
    smi_state.write_text("".join(GPU_ROW.format(i=i, pm="Disabled" if i in persistence_off else "Enabled")
                                 for i in range(8) if i not in lost))


def _project(tmp_path: Path) -> tuple[Path, Path]:
    project, managed = tmp_path / "project", tmp_path / "managed"
    (project / "inventories" / "lab").mkdir(parents=True)
    (project / "roles").mkdir()
    (project / "roles" / "node_check").symlink_to(ROOT / "roles" / "node_check")
    managed.mkdir()
    smi = managed / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\nexec cat {managed}/gpus.csv\n")
    smi.chmod(0o755)
    _gpus(managed / "gpus.csv")
    (project / "inventories" / "lab" / "hosts.yml").write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
        "      ansible_python_interpreter: '{{ ansible_playbook_python }}'\n"
        f"      node_check_nvidia_smi: {smi}\n"
        "      superpod_gpu_count: 8\n      superpod_gpu_model: h100-sxm5-80gb\n      nvidia_driver_branch: '535'\n"
        "      node_check_require_rail_links: false\n      node_check_host_kernel_checks: false\n"
        "      node_check_rail_lldp: 'off'\n")
    # the repository's shared action (ansible.cfg's action_plugins): node_check's superpod_plan_mismatch
    (project / "ansible.cfg").write_text(f"[defaults]\ngathering = smart\naction_plugins = {ROOT / 'action_plugins'}\n"
                                         f"{ANSIBLE_STRATEGY_LINES}")
    (project / "site.yml").write_text(f"""
- hosts: all
  gather_facts: true  # as site.yml's first play: node_check reads these facts
  tasks:
    - ansible.builtin.copy: {{content: "a = 1\\n", dest: {managed}/a.conf, mode: "0644"}}
    - name: Read the live value
      ansible.builtin.command: cat {managed}/a.conf
      check_mode: false
      changed_when: false
- hosts: all
  gather_facts: false
  roles:
    - node_check
""")
    return project, managed


def _only_addresses_changed(stderr: str) -> bool:
    """The record check found only that localhost's IPv4 addresses changed since its apply: the
    suite's other jobs make and remove docker networks (a bridge with an address) on this machine,
    and a host whose addresses changed is rightly checked in full."""
    line = " ".join(stderr.split())
    found = re.search(r"changed since its full apply localhost \(runs in full\): (.*?)(?: \d+ hosts|$)", line)
    return bool(found) and all(f.startswith("facts: ipv4_addresses: ") for f in found.group(1).split("; "))


def _applied_and_clean_by_record(project: Path) -> None:
    """A full apply, a plain apply that skips the host (node_check passed in the record check
    too), and a plain drift that calls it clean by its record."""
    for _ in range(3):
        first = superpod("apply", *lab_args(project))
        assert first.exit_code == 0, first.output
        assert {"node_check": "superpod_node_check"} in manifest.load(
            project / ".runs" / "lab" / "manifest" / "localhost.json")  # that the run checked the node
        assert SKIPPED in superpod("apply", *lab_args(project)).output
        code, report = drift_json(project)
        assert code == 0, report
        if report["record_clean_hosts"] == ["localhost"]:
            return
        assert _only_addresses_changed(report["stderr"]), report["stderr"]
    pytest.fail("this machine's addresses changed under each of three drift runs")


@pytest.mark.timeout(900)  # seven superpod runs, more when the machine's addresses changed under one
def test_a_lost_gpu_is_never_clean_by_the_record_plain_and_full_agree(tmp_path):
    project, managed = _project(tmp_path)
    _applied_and_clean_by_record(project)

    _gpus(managed / "gpus.csv", lost=(3,), persistence_off=(0,))  # GPU 3 fell off the bus, GPU 0 persistence off
    plain_code, plain = drift_json(project)
    full_code, full = drift_json(project, "--full")
    # node_check's mismatches: drift naming each (issue 33), in the plain path as in the full check
    assert (plain_code, full_code) == (1, 1), (plain, full)
    assert plain["record_clean_hosts"] == [] and plain["hosts"]["localhost"]["checked"] == "full"
    for report in (plain, full):
        host = report["hosts"]["localhost"]
        assert host["status"] == "drift" and host["problems"] == [], host
        assert sum(m.startswith("gpu count (expected 8, actual 7") for m in host["plan_mismatches"]) == 1, host
        assert any("persistence mode (expected Enabled on all, actual Disabled on GPU 0)" in m
                   for m in host["plan_mismatches"]), host
    assert plain["hosts"]["localhost"]["plan_mismatches"] == full["hosts"]["localhost"]["plan_mismatches"]
    again = superpod("apply", *lab_args(project))
    assert again.exit_code == 1 and SKIPPED not in again.output, again.output  # runs in full, and fails


def _inject(record: Path, probe: dict) -> None:
    entries = json.loads(record.read_text())
    record.write_text(json.dumps([*entries, probe]))


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_an_entry_injected_into_the_record_never_runs(tmp_path):
    project, managed = _project(tmp_path)
    assert superpod("apply", *lab_args(project)).exit_code == 0
    runs = project / ".runs" / "lab"
    record = runs / "manifest" / "localhost.json"
    # the records and the runs: the operator's only; the key that signs them outside `.runs/`
    assert _mode(runs.parent) == _mode(runs) == _mode(runs / "manifest") == 0o700
    for path in (runs / "converged.json", record):
        assert _mode(path) == 0o600 and _mode(Path(f"{path}.hmac")) == 0o600
    key = record_key.key_path()
    assert _mode(key) == 0o600 and not key.is_relative_to(runs.parent)
    events = next(runs.glob("*-apply")) / "artifacts" / "run" / "job_events"
    assert all(_mode(p) == 0o600 for p in events.iterdir())
    pwned = tmp_path / "pwned"
    injected = {"probe": "x", "args": {"_raw_params": f"id > {pwned}", "_uses_shell": True}, "rc": 0,
                "stdout_sha1": hashlib.sha1(b"").hexdigest()}

    _inject(record, injected)  # unsigned: the record no longer verifies
    quick = superpod("drift", *lab_args(project), "--quick", "--json")
    assert quick.exit_code == 2 and "signature does not verify" in json.loads(quick.stdout)["hosts"]["localhost"][
        "problem"]
    plain = superpod("apply", *lab_args(project))  # runs in full (and writes a record of its own)
    assert plain.exit_code == 0 and SKIPPED not in plain.output, plain.output
    assert "not checked by its record" in plain.output and "signature does not verify" in plain.output
    assert not pwned.exists()

    # with the key in hand (signed as superpod would): still no task in today's tree reads this
    real_read = next(e for e in manifest.load(record) if "probe" in e)
    # (the other refusals: test_a_read_runs_only_as_todays_task_declares_it)
    _inject(record, {**injected, "task_path": real_read["task_path"]})
    record_key.sign(record, record_key.label(record, 3))
    plain = superpod("apply", *lab_args(project))
    assert plain.exit_code == 0 and SKIPPED not in plain.output and "arguments differ" in plain.output, plain.output
    assert not pwned.exists()

    key.chmod(0o644)  # a key others can read is no secret: nothing runs until it is fixed
    for command in (("apply",), ("drift",), ("drift", "--quick")):
        refused = superpod(*command, *lab_args(project))
        assert refused.exit_code == 2 and f"record key {key}: must be a regular file only its owner can read" \
            in refused.output, refused.output


def test_converged_record_edited_by_hand_converges_nothing(tmp_path):
    path = tmp_path / "lab" / "converged.json"
    path.parent.mkdir()
    converged.record(path, "d1", "run1", {}, [])
    data = json.loads(path.read_text())
    data["n1"] = {"inputs": "d1", "at": "2999-01-01T00:00:00+00:00", "run": "forged"}
    path.write_text(json.dumps(data))
    assert converged.load(path) == {}


def _tasks(tmp_path: Path, text: str) -> Path:
    (tmp_path / "roles" / "r" / "tasks").mkdir(parents=True, exist_ok=True)
    path = tmp_path / "roles" / "r" / "tasks" / "main.yml"
    path.write_text(text)
    return path


def test_a_read_runs_only_as_todays_task_declares_it(tmp_path):
    _tasks(tmp_path, """\
- name: Read one sysctl
  ansible.builtin.command: sysctl -n {{ item.key }}
  loop: "{{ wanted | dict2items }}"
  check_mode: false
  changed_when: false
- name: Read the command line
  ansible.builtin.shell: "{{ effective_cmdline_command }}"
  check_mode: false
  changed_when: false
- name: Query
  ansible.builtin.command:
    argv: ["{{ tool }}", -d, "{{ item }}", -e, query]
  check_mode: false
  changed_when: false
- name: Not a read
  ansible.builtin.command: sysctl -w x=1
- name: Probe with a block
  ansible.builtin.shell: |
    echo a
    {% if probe_more %}
    echo {{ more }}
    {% endif %}
    true
  check_mode: false
  changed_when: false
""")

    def read(line: int, **args) -> dict:
        return {"probe": "p", "task_path": f"roles/r/tasks/main.yml:{line}", "args": args}

    ok = [read(1, _raw_params="sysctl -n vm.swappiness", _uses_shell=False, strip_empty_ends=True),
          read(6, _raw_params="cat /proc/cmdline", _uses_shell=True),
          read(10, argv=["mstconfig", "-d", "0000:17:00.0", "-e", "query"]),
          # as Ansible renders a block (trim_blocks: the newline after a block tag goes), either way
          read(17, _raw_params="echo a\necho b\ntrue\n", _uses_shell=True),
          read(17, _raw_params="echo a\ntrue\n", _uses_shell=True)]
    assert [trusted_record.refusal(e, tmp_path) for e in ok] == [None] * len(ok)
    refused = {
        "names no task": {"probe": "p", "args": {"_raw_params": "id"}},
        "no declared read at": read(15, _raw_params="sysctl -w x=1"),  # a task that writes
        "arguments differ": read(1, _raw_params="id > /tmp/p"),  # not the task's literal text
        "_uses_shell True": read(1, _raw_params="sysctl -n x", _uses_shell=True),  # a command task run by a shell
        "argv": read(10, argv=["mstconfig", "-d", "x", "-e", "set"]),
        "arguments differ from the task at roles/r/tasks/main.yml:17": read(
            17, _raw_params="echo a\nid\n", _uses_shell=True),  # `true` is the task's literal end
        "the check does not replay": read(1, _raw_params="sysctl -n x", creates="/y"),
        "outside the project": {"probe": "p", "task_path": "../../etc/tasks.yml:1", "args": {}},
    }
    for why, entry in refused.items():
        assert why in (trusted_record.refusal(entry, tmp_path) or ""), why

    # a playbook outside the project (the e2e lab's): its own tasks are beside it, an input too
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "site.yml").write_text((tmp_path / "roles" / "r" / "tasks" / "main.yml").read_text())
    beside = {**ok[0], "task_path": f"{elsewhere / 'site.yml'}:1"}
    assert "outside the project" in trusted_record.refusal(beside, tmp_path / "roles")
    assert trusted_record.refusal(beside, tmp_path / "roles", playbook_dir=elsewhere) is None

    _tasks(tmp_path, "- name: Something else\n  ansible.builtin.debug: {msg: hi}\n")  # the task is gone today
    assert "no declared read at" in trusted_record.refusal(ok[0], tmp_path)


def test_a_switch_replan_is_a_new_input(tmp_path):
    project = tmp_path / "project"
    (project / "inventories" / "lab").mkdir(parents=True)
    (project / "site.yml").write_text("- hosts: all\n")
    switch = project / "build" / "lab" / "switches" / "leaf-01" / "startup.yaml"
    switch.parent.mkdir(parents=True)
    switch.write_text("- set: {interface: {swp1: {link: {mtu: 9000}}}}\n")
    req = RunRequest(project_dir=project, stack="lab")
    before = inputs.digest(req, environ={})
    switch.write_text("- set: {interface: {swp1: {link: {mtu: 4200}}}}\n")  # re-planned: MTU 9000 -> 4200
    assert inputs.digest(req, environ={}) != before
    (project / "build" / "lab" / "cabling.csv").write_text("a,b\n")  # what no role reads: not an input
    after = inputs.digest(req, environ={})
    assert inputs.digest(req, environ={}) == after


def test_every_plan_file_a_role_reads_on_the_controller_is_an_input():
    """Roles find the plan's files through playbook_dir (build/<stack>/...): each such path is
    under a root of the inputs digest (the wheelhouse is built from agents/, itself an input)."""
    req = RunRequest(project_dir=ROOT, stack="lab")
    roots = [p.resolve() for p in inputs.sources(req)]
    found = []
    for defaults in sorted(ROOT.glob("roles/*/defaults/main.yml")):
        for line in defaults.read_text().splitlines():
            if "{{ playbook_dir }}/build/" in line:
                rel = line.split("{{ playbook_dir }}/", 1)[1].split('"')[0]
                path = (ROOT / rel.replace("{{ superpod_pod }}", "lab")).resolve()
                found.append(path)
                assert any(path.is_relative_to(r) for r in roots), f"{defaults}: {rel} is read but not an input"
    assert found  # switch_fabric's plan at least


def test_superpod_state_reads_are_recorded_as_the_reads_they_stand_for_and_vetted(tmp_path):
    """library/superpod_state.py folds stat, slurp, find and declared command reads into one task:
    its result must give the record the same entries (so a converged host is still skipped by the
    plain path: an unverifiable entry would never let it be), and a recorded command runs again only
    as today's task names it."""
    from topology.operate.record_entries import entries_from_events

    tasks = _tasks(tmp_path, """\
- name: Read the state
  superpod_state:
    stat: [/proc/sys/vm/nr_hugepages]
    slurp: ["{{ stamp }}"]
    find:
      - {name: sizes, path: /sys/kernel/mm/hugepages, file_type: directory, patterns: ["hugepages-*kB"]}
    commands:
      - name: limits
        executable: /bin/bash
        shell: |
          awk '/^Cap/' /proc/1/status
      - {name: uname, argv: [uname, "{{ flag }}"]}
      - {name: versions, argv: "{{ ['apt-cache', 'show'] + packages }}"}
  register: state
  changed_when: false
  check_mode: false
""")
    res = {"changed": False,
           "stat": {"/proc/sys/vm/nr_hugepages": {"exists": True, "isreg": True, "isdir": False, "writeable": False}},
           "slurp": {"/var/lib/superpod/bootloader-cmdline": None},
           "find": {"sizes": ["/sys/kernel/mm/hugepages/hugepages-2048kB"]},
           "commands": {"limits": {"rc": 0, "stdout": "CapEff:\t0"}, "uname": {"rc": 0, "stdout": "6.1.0"},
                        "versions": {"rc": 0, "stdout": "Version: 1"}},
           "invocation": {"module_args": {
               "stat": ["/proc/sys/vm/nr_hugepages"], "slurp": ["/var/lib/superpod/bootloader-cmdline"],
               "find": [{"name": "sizes", "path": "/sys/kernel/mm/hugepages", "file_type": "directory",
                         "patterns": ["hugepages-*kB"]}],
               "commands": [{"name": "limits", "executable": "/bin/bash", "shell": "awk '/^Cap/' /proc/1/status\n"},
                            {"name": "uname", "argv": ["uname", "-r"]},
                            {"name": "versions", "argv": ["apt-cache", "show", "libcuda1", "nvlsm"]}]}}}
    event = {"event": "runner_on_ok", "event_data": {"host": "n1", "task": "Read the state", "res": res,
                                                     "resolved_action": "superpod_state",
                                                     "task_path": f"{tasks}:1"}}
    entries = list(entries_from_events([event], tmp_path)["n1"].values())
    assert not [e for e in entries if "unverifiable" in e], entries
    assert {"path": "/proc/sys/vm/nr_hugepages", "state": "file"} in entries
    assert {"path": "/var/lib/superpod/bootloader-cmdline", "state": "absent"} in entries
    assert {"find": "Read the state [sizes]", "matched": ["/sys/kernel/mm/hugepages/hugepages-2048kB"],
            "args": {"paths": ["/sys/kernel/mm/hugepages"], "patterns": ["hugepages-*kB"],
                     "file_type": "directory"}} in entries
    probes = {e["state_command"]: e for e in entries if "probe" in e}
    assert probes["limits"]["args"] == {"_raw_params": "awk '/^Cap/' /proc/1/status\n", "_uses_shell": True,
                                        "executable": "/bin/bash"}
    assert probes["uname"]["args"] == {"argv": ["uname", "-r"]}
    assert probes["uname"]["task_path"] == "roles/r/tasks/main.yml:1"
    # an argv the task writes as one expression (a list of packages decided by the run) is any list
    assert probes["versions"]["args"] == {"argv": ["apt-cache", "show", "libcuda1", "nvlsm"]}
    assert [trusted_record.refusal(p, tmp_path) for p in probes.values()] == [None, None, None]

    forged = {**probes["limits"], "args": {**probes["limits"]["args"], "_raw_params": "id > /tmp/p"}}
    assert "arguments differ" in trusted_record.refusal(forged, tmp_path)
    assert "superpod_state task with the command 'other'" in trusted_record.refusal(
        {**probes["uname"], "state_command": "other"}, tmp_path)
    # commands the task writes as one expression (decided by the run, as roce_qos's and
    # cuda_toolkit's reads do): any recorded command of it, as an argv of one expression
    state_task = tasks.read_text()
    tasks.write_text(state_task.replace("    commands:\n", "    commands: \"{{ reads }}\"\n    unused:\n"))
    assert [trusted_record.refusal(p, tmp_path) for p in probes.values()] == [None, None, None]
    tasks.write_text(state_task)
    # the same task without changed_when: false is no declared read: its commands are not replayed
    tasks.write_text(tasks.read_text().replace("  changed_when: false\n", ""))
    event["event_data"]["task_path"] = f"{tasks}:1"
    entries = list(entries_from_events([event], tmp_path)["n1"].values())
    assert [e for e in entries if "unverifiable" in e] == [{"unverifiable": "superpod_state", "task": "Read the state"}]
    assert "no declared read at" in trusted_record.refusal(probes["limits"], tmp_path)
