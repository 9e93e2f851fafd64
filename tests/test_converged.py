"""Issue 16: `superpod apply` and `superpod drift` skip the hosts a full apply converged with the
same inputs whose record (files, units, the roles' reads, facts) checks clean now; the others,
and every host with --full, get every task. Real Ansible on localhost for the runs; the pieces
(inputs digest, the converged record, declared reads, what the record keeps) on their own."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tests.conftest import ANSIBLE_STRATEGY_LINES
from tests.lab_stack_cli import superpod
from topology.operate import converged, inputs, manifest, record_key
from topology.operate.declared import is_declared_read
from topology.operate.events import HostProblem, HostTally
from topology.operate.runs import RunRequest

SKIPPED = "converged and unchanged (skipped)"


def _project(tmp_path: Path) -> tuple[Path, Path]:
    project, managed = tmp_path / "project", tmp_path / "managed"
    (project / "inventories" / "lab").mkdir(parents=True)
    (project / "roles").mkdir()
    (project / "inventories" / "lab" / "hosts.yml").write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
        "      ansible_python_interpreter: '{{ ansible_playbook_python }}'\n")
    (project / "ansible.cfg").write_text(f"[defaults]\ngathering = smart\n{ANSIBLE_STRATEGY_LINES}")
    (project / "site.yml").write_text(f"""
- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.copy: {{content: "a = 1\\n", dest: {managed}/a.conf, mode: "0644"}}
    - ansible.builtin.copy: {{content: "v1\\n", dest: {managed}/live, mode: "0644"}}
      when: not ansible_check_mode
    - name: Read the live value
      ansible.builtin.command: cat {managed}/live
      check_mode: false
      changed_when: false
""")
    managed.mkdir()
    return project, managed



def _runs(project: Path, kind: str) -> list[Path]:
    return sorted((project / ".runs" / "lab").glob(f"*-{kind}"))


def test_apply_skips_a_converged_unchanged_host_and_runs_it_when_anything_changed(tmp_path):
    project, managed = _project(tmp_path)
    base = ("--stack", "lab", "--project-dir", str(project), "--no-progress")
    assert superpod("apply", *base).exit_code == 0
    record = converged.load(project / ".runs" / "lab" / "converged.json")
    assert set(record) == {"localhost"} and record["localhost"]["run"] == _runs(project, "apply")[-1].name

    second = superpod("apply", *base)  # nothing changed: the record check, then nothing
    assert second.exit_code == 0, second.output
    assert "1 hosts converged and unchanged (skipped): localhost" in second.output
    assert "1 hosts: 1 skipped, changed=0" in second.output
    assert len(_runs(project, "apply")) == 1 and len(_runs(project, "converged-check")) == 1

    (managed / "live").write_text("v2\n")  # what a role reads changed: the host runs in full
    third = superpod("apply", *base)
    assert third.exit_code == 0 and SKIPPED not in third.output, third.output
    assert len(_runs(project, "apply")) == 2 and (managed / "live").read_text() == "v1\n"

    assert SKIPPED in superpod("apply", *base).output
    assert SKIPPED not in superpod("apply", *base, "--full").output  # every task, asked for
    assert SKIPPED not in superpod("apply", *base, "--full-after", "0").output
    assert SKIPPED not in superpod("apply", *base, "--tags", "x").output  # a partial run decides nothing
    assert len(_runs(project, "apply")) == 5

    site = project / "site.yml"  # the inputs changed: a full run, and it records the new inputs
    site.write_text(site.read_text().replace("a = 1", "a = 2"))
    assert SKIPPED not in superpod("apply", *base).output
    assert (managed / "a.conf").read_text() == "a = 2\n"
    assert SKIPPED in superpod("apply", *base).output


def test_drift_reports_a_converged_unchanged_host_clean_by_its_record_and_checks_a_changed_one(tmp_path):
    project, managed = _project(tmp_path)
    base = ("--stack", "lab", "--project-dir", str(project), "--no-progress")
    assert superpod("apply", *base).exit_code == 0
    clean = superpod("drift", *base, "--json")
    assert clean.exit_code == 0, clean.output
    report = json.loads(clean.stdout)
    assert report["record_clean_hosts"] == ["localhost"] and report["hosts"]["localhost"]["checked"] == "record"
    assert not _runs(project, "drift")  # no check run at all

    (managed / "a.conf").write_text("a = 9\n")
    found = superpod("drift", *base, "--json")
    report = json.loads(found.stdout)
    assert found.exit_code == 1 and report["drifted_hosts"] == ["localhost"], found.output
    assert report["hosts"]["localhost"]["checked"] == "full" and report["record_clean_hosts"] == []
    assert "a = 9" in report["hosts"]["localhost"]["changes"][0]["diff"]

    full = json.loads(superpod("drift", *base, "--json", "--full").stdout)  # the check run, whatever the record says
    assert full["hosts"]["localhost"]["checked"] == "full"


def test_a_host_with_a_result_the_record_cannot_replay_is_never_skipped(tmp_path):
    project, managed = _project(tmp_path)
    site = project / "site.yml"
    site.write_text(site.read_text() + f"""
    - ansible.builtin.copy: {{content: "secret\\n", dest: {managed}/token, mode: "0600"}}
      no_log: true
""")
    base = ("--stack", "lab", "--project-dir", str(project), "--no-progress")
    assert superpod("apply", *base).exit_code == 0
    again = superpod("apply", *base)
    assert again.exit_code == 0 and SKIPPED not in again.output
    assert len(_runs(project, "apply")) == 2


def _request(project: Path, **kw) -> RunRequest:
    return RunRequest(project_dir=project, stack="lab", **kw)


def test_the_inputs_digest_follows_every_input_and_nothing_else(tmp_path):
    project, _ = _project(tmp_path)
    (project / "roles" / "r" / "tasks").mkdir(parents=True)
    (project / "roles" / "r" / "tasks" / "main.yml").write_text("- ansible.builtin.ping:\n")
    overlay = tmp_path / "overlay.yml"
    overlay.write_text("all: {}\n")
    req = _request(project, overlays=(overlay,))
    env = {"ANSIBLE_STRATEGY": "linear"}
    first = inputs.digest(req, env)
    # what no run reads: byte code, a role's molecule scenario
    (project / "roles" / "r" / "__pycache__").mkdir()
    (project / "roles" / "r" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (project / "roles" / "r" / "molecule").mkdir()
    (project / "roles" / "r" / "molecule" / "converge.yml").write_text("[]\n")
    # an agent's wheel build, which the roles run on the controller in the middle of an apply
    agent = project / "agents" / "telemetry"
    agent.mkdir(parents=True)
    (agent / "pyproject.toml").write_text("[project]\nname = 't'\n")
    first = inputs.digest(req, env)
    for out in ("build/lib", "t.egg-info", "dist"):
        (agent / out).mkdir(parents=True)
        (agent / out / "PKG-INFO").write_text("x\n")
    assert inputs.digest(req, env) == first
    changes = [
        lambda: (project / "roles" / "r" / "tasks" / "main.yml").write_text("- ansible.builtin.ping: {}\n"),
        lambda: (project / "inventories" / "lab" / "group_vars").mkdir() or
        (project / "inventories" / "lab" / "group_vars" / "all.yml").write_text("x: 1\n"),
        lambda: overlay.write_text("all: {vars: {y: 2}}\n"),
        lambda: (project / "ansible.cfg").write_text("[defaults]\nforks = 5\n"),
        lambda: (project / "site.yml").write_text("[]\n"),
        lambda: (agent / "pyproject.toml").write_text("[project]\nname = 't2'\n"),  # an agent's source
    ]
    seen = {first}
    for change in changes:
        change()
        now = inputs.digest(req, env)
        assert now not in seen
        seen.add(now)
    assert inputs.digest(req, {"ANSIBLE_STRATEGY": "free"}) not in seen  # another strategy is another run
    assert inputs.digest(req, {**env, "HOME": "/elsewhere"}) in seen  # not an Ansible setting


def test_candidates_are_hosts_converged_with_these_inputs_within_the_window(tmp_path):
    path = tmp_path / "converged.json"
    now = datetime(2026, 11, 25, 12, tzinfo=timezone.utc)
    tallies = {h: HostTally(h, ok=3) for h in ("a", "b", "c")} | {"d": HostTally("d", ok=1, failed=1)}
    problems = [HostProblem("c", "unreachable", "t", None, "gone")]
    assert converged.record(path, "in1", "run1", tallies, problems, now=now) == ["a", "b"]
    assert set(converged.candidates(path, "in1", now=now + timedelta(hours=1))) == {"a", "b"}
    assert converged.candidates(path, "in2", now=now) == {}  # other inputs
    assert converged.candidates(path, "in1", now=now + timedelta(hours=25)) == {}  # past full_after
    assert converged.candidates(path, "in1", timedelta(minutes=30), now=now + timedelta(hours=1)) == {}
    assert converged.candidates(path, "in1", now=now - timedelta(hours=1)) == {}  # a clock gone back
    # a later run that fails on a takes it out; b keeps its entry; an unreadable record is empty
    converged.record(path, "in1", "run2", {"a": HostTally("a", ok=1, failed=1)}, [], now=now)
    assert set(converged.candidates(path, "in1", now=now)) == {"b"}
    path.write_text("{not json")
    assert converged.candidates(path, "in1", now=now) == {}


def test_declared_reads_are_the_tasks_with_check_mode_false_and_changed_when_false(tmp_path):
    tasks = tmp_path / "main.yml"
    tasks.write_text(
        "- name: read\n  ansible.builtin.command: uname -r\n  check_mode: false\n  changed_when: false\n"
        "- name: act\n  ansible.builtin.command: reboot\n  changed_when: false\n"
        "- block:\n    - name: nested read\n      ansible.builtin.shell: cat /proc/cmdline\n"
        "      check_mode: false\n      changed_when: false\n"
        "- name: templated\n  ansible.builtin.command: id\n  check_mode: \"{{ x }}\"\n  changed_when: false\n")
    assert [is_declared_read(f"{tasks}:{n}") for n in (1, 5, 9, 12)] == [True, False, True, False]
    assert not is_declared_read(None) and not is_declared_read(f"{tmp_path}/none.yml:1")


def _ok(action: str, res: dict, task_path: str = "", task: str = "t") -> dict:
    return {"event": "runner_on_ok", "event_data": {"host": "n1", "resolved_action": action, "res": res,
                                                    "task": task, "task_path": task_path}}


def test_the_record_keeps_what_the_run_read_and_names_what_it_cannot_replay(tmp_path):
    reads = tmp_path / "reads.yml"
    reads.write_text("- name: q\n  ansible.builtin.command: x\n  check_mode: false\n  changed_when: false\n")
    query = {"rc": 0, "stdout": "pkg\tinstalled\n", "invocation": {"module_args": {
        "argv": ["dpkg-query", "-W"], "_uses_shell": False, "chdir": None, "strip_empty_ends": True}}}
    events = [
        _ok("ansible.builtin.command", query, f"{reads}:1", task="q"),
        _ok("ansible.builtin.apt", {"changed": False}),  # covered by the packages query above
        _ok("ansible.builtin.stat", {"stat": {"exists": True, "isreg": True, "checksum": "ab"},
                                     "invocation": {"module_args": {"path": "/etc/x"}}}),
        _ok("ansible.builtin.stat", {"stat": {"exists": False}, "invocation": {"module_args": {"path": "/etc/y"}}}),
        _ok("ansible.builtin.slurp", {"source": "/etc/z", "encoding": "base64", "content": "aGk="}),
        _ok("community.general.modprobe", {"name": "nvidia-peermem", "state": "present"}),
        _ok("ansible.builtin.find", {"files": [{"path": "/a/1"}],
                                     "invocation": {"module_args": {"paths": ["/a"], "use_regex": True}}}, task="f"),
        _ok("ansible.builtin.uri", {"status": 200, "_ansible_delegated_vars": {"ansible_host": "localhost"}},
            task="bios"),
        _ok("kubernetes.core.k8s", {"changed": False}, task="k8s"),
        _ok("ansible.builtin.set_fact", {"ansible_facts": {"x": 1}}),
        _ok("ansible.builtin.command", {"rc": 0, "stdout": ""}, task="an action that ran"),
    ]
    got = manifest.entries_from_events(events)["n1"]
    probe = next(e for e in got.values() if "probe" in e)
    assert probe == {"probe": "q", "args": {"argv": ["dpkg-query", "-W"], "_uses_shell": False,
                                            "strip_empty_ends": True},
                     "rc": 0, "stdout_sha1": hashlib.sha1(b"pkg\tinstalled\n").hexdigest(),
                     "task_path": f"{reads}:1"}  # the task it came from (relative to the project when given)
    assert got["path:/etc/x"] == {"path": "/etc/x", "state": "file", "checksum": "ab"}
    assert got["path:/etc/y"] == {"path": "/etc/y", "state": "absent"}
    hi = hashlib.sha1(b"hi").hexdigest()
    assert got["path:/etc/z"] == {"path": "/etc/z", "state": "file", "checksum": hi}
    assert got["kmod:nvidia-peermem"] == {"kmod": "nvidia-peermem", "loaded": True}
    assert sorted((e["unverifiable"], e["task"]) for e in got.values() if "unverifiable" in e) == [
        ("find", "f"), ("kubernetes.core.k8s", "k8s"), ("uri", "bios")]  # find with options not replayed
    assert len(got) == 8
    # without the installed-packages query, what a package module saw cannot be checked
    alone = manifest.entries_from_events([_ok("ansible.builtin.package", {"changed": False})])["n1"]
    assert [e["unverifiable"] for e in alone.values()] == ["package"]


def test_a_full_run_replaces_a_hosts_record_and_keeps_the_facts_it_used(tmp_path):
    facts = tmp_path / "facts"
    facts.mkdir()
    (facts / "n1").write_text(json.dumps({
        "ansible_distribution": "Ubuntu", "ansible_kernel": "6.8.0", "ansible_interfaces": ["lo", "eth0", "veth1"],
        "ansible_eth0": {"ipv4": {"address": "10.0.0.5"}}, "ansible_veth1": {},
        "ansible_lo": {"ipv4": {"address": "127.0.0.1"}},
        "ansible_default_ipv4": {"interface": "eth0", "address": "10.0.0.5", "gateway": "10.0.0.1"},
        "ansible_date_time": {"epoch": "1"}}))
    manifest.record(tmp_path, [_ok("ansible.builtin.copy", {"dest": "/old", "state": "file", "checksum": "1"})])
    manifest.record(tmp_path, [_ok("ansible.builtin.copy", {"dest": "/new", "state": "file", "checksum": "2"})],
                    replace_hosts=["n1"], facts_dir=facts)
    record = manifest.load(tmp_path / "n1.json")
    assert [e.get("path") for e in record] == [None, "/new"]  # /old left with the role that wrote it
    assert record[0] == {"facts": {"distribution": "Ubuntu", "kernel": "6.8.0",
                                   "default_ipv4": {"interface": "eth0", "address": "10.0.0.5"},
                                   "ipv4_addresses": {"eth0": "10.0.0.5", "lo": "127.0.0.1"}}}


def _check_module():
    import importlib.util

    path = Path(manifest.QUICK_PLAYBOOK).parent / "library" / "superpod_manifest_check.py"
    spec = importlib.util.spec_from_file_location("superpod_manifest_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_check_replays_accounts_mounts_finds_and_facts(tmp_path):
    check = _check_module()
    assert check._account_drift({"user_account": "root", "present": True, "uid": 0, "home": "/root"}) == []
    assert check._account_drift({"user_account": "root", "present": True, "shell": "/bin/false"})[0][0] == "shell"
    assert check._account_drift({"group_account": "no-such-group-x", "present": True})[0][0] == "missing"
    assert check._account_drift({"group_account": "no-such-group-x", "present": False}) == []
    assert check._account_drift({"group_account": "root", "present": False})[0][0] == "present"
    assert [k for k, _ in check._mount_drift({"mount": "/proc", "fstype": "proc", "state": "mounted"})] == \
        (["fstab"] if not check._fstab_has("/proc", "proc") else [])  # mounted, wherever fstab says
    assert [k for k, _ in check._mount_drift({"mount": str(tmp_path), "state": "mounted"})] == ["fstab", "mounted"]
    (tmp_path / "a.conf").write_text("x = 1\n")
    (tmp_path / "b.list").write_text("deb http://example/ stable main\n")
    (tmp_path / ".hidden.conf").write_text("")
    (tmp_path / "sub").mkdir()
    args = {"paths": [str(tmp_path)], "patterns": ["*.conf", "*.list"]}
    assert check._find(args) == [str(tmp_path / "a.conf"), str(tmp_path / "b.list")]
    assert check._find({**args, "contains": "deb http"}) == [str(tmp_path / "b.list")]
    assert check._find({**args, "excludes": ["b.*"]}) == [str(tmp_path / "a.conf")]
    assert check._find({"paths": str(tmp_path), "file_type": "directory"}) == [str(tmp_path / "sub")]
    assert check._find({"paths": [str(tmp_path / "none")]}) == []
    facts = {"kernel": "6.8.0", "ipv4_addresses": {"eth0": "10.0.0.5"}}
    assert check._facts_drift({"facts": facts}, dict(facts)) == []
    assert check._facts_drift({"facts": facts}, {**facts, "kernel": "6.8.1"}) == [
        ("facts", "kernel: '6.8.1', was '6.8.0'")]
    assert check._facts_drift({"facts": facts}, None) == [("facts", "no facts to compare")]
    # a module the apply saw loaded, unloaded since (the drift corpus's "module unloaded": a
    # container shares the machine's kernel, so the lab cannot unload one; the kernel's own list here)
    loaded = sorted(p.name for p in Path("/sys/module").iterdir())[0]
    assert check._kmod_drift({"kmod": loaded, "loaded": True}) == []
    assert check._kmod_drift({"kmod": "superpod_gone_mod", "loaded": True}) == [
        ("loaded", "not loaded, expected loaded")]
    assert check._kmod_drift({"kmod": loaded.replace("_", "-"), "loaded": False}) == [
        ("loaded", "loaded, expected unloaded")]


def test_hosts_not_known_converged_run_while_the_others_are_skipped(tmp_path):
    project, managed = _project(tmp_path)
    (project / "inventories" / "lab" / "hosts.yml").write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
        "      ansible_python_interpreter: '{{ ansible_playbook_python }}'\n"
        "    other:\n      ansible_connection: local\n"
        "      ansible_python_interpreter: '{{ ansible_playbook_python }}'\n")
    base = ("--stack", "lab", "--project-dir", str(project), "--no-progress")
    assert superpod("apply", *base).exit_code == 0
    path = project / ".runs" / "lab" / "converged.json"
    record = json.loads(path.read_text())
    assert set(record) == {"localhost", "other"}
    del record["other"]  # as if its last full run had failed (signed, as superpod writes it)
    path.write_text(json.dumps(record))
    record_key.sign(path, record_key.label(path, 2))
    again = superpod("apply", *base)
    assert again.exit_code == 0, again.output
    assert "1 hosts converged and unchanged (skipped): localhost" in again.output
    ran = _runs(project, "apply")[-1]
    assert (ran / "artifacts" / "run").is_dir() and len(_runs(project, "apply")) == 2
    assert "1 hosts: ok=" in again.output and "other" in again.output  # the other one ran, alone
    assert set(json.loads(path.read_text())) == {"localhost", "other"}  # and is converged again


def test_hosts_outside_the_playbook_are_neither_checked_nor_an_error(tmp_path):
    """A playbook for some of the inventory's hosts (`--playbook playbooks/lldp.yml`, or a pod whose
    storage servers no play targets): with its hosts converged and clean, plain apply and drift
    are clean; the other hosts are not sent on to a run that matches none (exit 2 before)."""
    project, _ = _project(tmp_path)
    hosts = project / "inventories" / "lab" / "hosts.yml"
    hosts.write_text(hosts.read_text() + "    elsewhere:\n      ansible_connection: local\n")
    site = project / "site.yml"
    site.write_text(site.read_text().replace("- hosts: all", "- hosts: localhost", 1))
    base = ("--stack", "lab", "--project-dir", str(project), "--no-progress")
    assert superpod("apply", *base).exit_code == 0
    again = superpod("apply", *base)
    assert again.exit_code == 0 and SKIPPED in again.output, again.output
    drift = superpod("drift", *base, "--json")
    assert drift.exit_code == 0, drift.output
    report = json.loads(drift.stdout)
    assert report["record_clean_hosts"] == ["localhost"] and report["drifted_hosts"] == [], report
