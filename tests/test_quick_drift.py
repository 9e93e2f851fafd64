"""`superpod drift --quick` (issue 16): each apply records what it left on each host (files,
removed paths, units) from its own events; the quick check compares the host with that record in
one module call and names exactly what changed. Real Ansible on localhost (files only: no systemd
here; the lab pod's e2e checks a unit disabled by hand)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ANSIBLE_STRATEGY_LINES, ROOT
from tests.lab_stack_cli import superpod
from topology.operate import manifest


def _ok(task_action: str, res: dict, host: str = "n1") -> dict:
    return {"event": "runner_on_ok", "event_data": {"host": host, "resolved_action": task_action, "res": res}}


def test_record_keeps_files_removed_paths_and_units_and_skips_what_it_must_not_hold():
    events = [
        _ok("ansible.builtin.template", {"dest": "/etc/a.conf", "path": "/etc/a.conf", "state": "file",
                                          "checksum": "aa", "mode": "0644", "owner": "root", "group": "root"}),
        _ok("ansible.builtin.file", {"results": [{"path": "/etc/d", "state": "directory", "mode": "0755"},
                                                 {"skipped": True}, {"path": "/etc/gone", "state": "absent"}]}),
        _ok("ansible.builtin.systemd_service", {"name": "x.service", "enabled": True, "state": "started"}),
        _ok("ansible.builtin.systemd_service", {"name": "y.service", "state": "started"}),  # no enabled: not ours
        _ok("ansible.builtin.copy", {"censored": "the output has been hidden"}),  # no_log
        _ok("ansible.builtin.file", {"path": "/srv/cache", "state": "directory",
                                     "_ansible_delegated_vars": {"ansible_host": "localhost"}}),  # the controller's
        _ok("ansible.builtin.command", {"cmd": "true"}),
        _ok("ansible.builtin.template", {"dest": "/etc/a.conf", "state": "file", "checksum": "bb"}),  # later wins
        _ok("ansible.builtin.file", {"path": "/etc/b.conf", "state": "file", "mode": "0600"}, host="n2"),
    ]
    got = manifest.entries_from_events(events)
    assert got["n1"] == {
        "path:/etc/a.conf": {"path": "/etc/a.conf", "state": "file", "checksum": "bb"},
        "path:/etc/d": {"path": "/etc/d", "state": "directory", "mode": "0755"},
        "path:/etc/gone": {"path": "/etc/gone", "state": "absent"},
        "unit:x.service": {"unit": "x.service", "enabled": True},
        # what the checks also keep: the units' running state; a result hidden by no_log, as
        # something the check cannot replay (such a host is never skipped as converged)
        "unit_active:x.service": {"unit_active": "x.service", "active": True},
        "unit_active:y.service": {"unit_active": "y.service", "active": True},
        "unverifiable:no_log:": {"unverifiable": "no_log", "task": ""},
    }
    assert got["n2"] == {"path:/etc/b.conf": {"path": "/etc/b.conf", "state": "file", "mode": "0600"}}


def test_record_merges_per_entry(tmp_path):
    manifest.record(tmp_path, [_ok("ansible.builtin.copy", {"dest": "/a", "state": "file", "checksum": "1"}),
                               _ok("ansible.builtin.copy", {"dest": "/b", "state": "file", "checksum": "2"})])
    manifest.record(tmp_path, [_ok("ansible.builtin.copy", {"dest": "/b", "state": "file", "checksum": "3"})])
    assert manifest.load(tmp_path / "n1.json") == [{"path": "/a", "state": "file", "checksum": "1"},
                                                   {"path": "/b", "state": "file", "checksum": "3"}]


def _project(tmp_path: Path) -> tuple[Path, Path]:
    project, managed = tmp_path / "project", tmp_path / "managed"
    (project / "inventories" / "lab").mkdir(parents=True)
    (project / "inventories" / "lab" / "hosts.yml").write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
        "      ansible_python_interpreter: '{{ ansible_playbook_python }}'\n")
    (project / "ansible.cfg").write_text(f"[defaults]\nlibrary = {ROOT / 'roles/rail_network/library'}\n"
                                        f"{ANSIBLE_STRATEGY_LINES}")
    (project / "site.yml").write_text(f"""
- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.file: {{path: {managed}/conf.d, state: directory, mode: "0755"}}
    - ansible.builtin.copy: {{content: "a = 1\\n", dest: {managed}/conf.d/a.conf, mode: "0644"}}
    - ansible.builtin.copy: {{content: "b = 2\\n", dest: "{managed}/conf.d/{{{{ item }}}}.conf", mode: "0600"}}
      loop: [b, c]
    - ansible.builtin.file: {{path: {managed}/conf.d/old.conf, state: absent}}
    - ansible.builtin.copy: {{content: "secret\\n", dest: {managed}/token, mode: "0600"}}
      no_log: true
    - ansible.builtin.file: {{path: {managed}/rails, state: directory, mode: "0755"}}
    - rail_network_files:  # several files in one call: each reported as `managed`
        dir: {managed}/rails
        prefix: "rail"
        files: {{rail0.network: "[Match]\\nName=rail0\\n", rail1.network: "[Match]\\nName=rail1\\n"}}
        owner: root
        group: root
        mode: "0644"
    - ansible.builtin.copy: {{content: "v1\n", dest: {managed}/live, mode: "0644"}}
      when: not ansible_check_mode
    - name: Read the live value  # a declared read: the record keeps it and the check runs it again
      ansible.builtin.command: cat {managed}/live
      check_mode: false
      changed_when: false
    - name: Find the drop-ins
      ansible.builtin.find: {{paths: {managed}/conf.d, patterns: "*.conf"}}
""")
    return project, managed



def test_quick_drift_is_clean_after_apply_and_names_exactly_what_changed(tmp_path):
    project, managed = _project(tmp_path)
    base = ("--stack", "lab", "--project-dir", str(project), "--no-progress")
    quick = superpod("drift", *base, "--quick", "--json")
    assert quick.exit_code == 2 and "--quick: no record of an apply" in quick.output  # nothing recorded yet
    assert superpod("apply", *base).exit_code == 0
    record = manifest.load(project / ".runs" / "lab" / "manifest" / "localhost.json")
    assert {e["path"] for e in record if "path" in e} == {
        f"{managed}/conf.d", *(f"{managed}/conf.d/{n}.conf" for n in "abc"), f"{managed}/conf.d/old.conf",
        f"{managed}/rails", *(f"{managed}/rails/rail{n}.network" for n in "01"), f"{managed}/live"}  # not the token
    no_log = {"unverifiable": "no_log", "task": "ansible.builtin.copy"}
    reads = [{k: e[k] for k in ("probe", "rc") if k in e} | {k: e[k] for k in ("find", "matched") if k in e}
             for e in record if "probe" in e or "find" in e]
    assert sorted(reads, key=str) == sorted([
        {"probe": "Read the live value", "rc": 0},
        {"find": "Find the drop-ins", "matched": [f"{managed}/conf.d/{n}.conf" for n in "abc"]}], key=str)
    assert no_log in record  # the no_log task's result is not kept, only that it could not be
    clean = superpod("drift", *base, "--quick", "--json")
    assert clean.exit_code == 0, clean.output
    assert json.loads(clean.stdout)["hosts"] == {"localhost": {
        "status": "clean", "drift": [], "problem": "", "not_checked": [{"what": "no_log", "task": no_log["task"]}]}}

    (managed / "conf.d" / "a.conf").write_text("a = 9\n")  # edited by hand
    (managed / "conf.d" / "b.conf").chmod(0o644)  # loosened
    (managed / "conf.d" / "c.conf").unlink()  # deleted
    (managed / "conf.d" / "old.conf").write_text("back\n")  # a removed file come back
    (managed / "token").write_text("changed\n")  # not recorded: not reported
    (managed / "rails" / "rail1.network").write_text("[Match]\nName=eth9\n")
    (managed / "live").write_text("v2\n")  # what a read reads
    found = superpod("drift", *base, "--quick", "--json")
    assert found.exit_code == 1, found.output
    report = json.loads(found.stdout)
    assert report["drifted_hosts"] == ["localhost"]
    assert {(d["what"].removeprefix(f"{managed}/"), d["kind"]) for d in report["hosts"]["localhost"]["drift"]} == {
        ("conf.d/a.conf", "content"), ("conf.d/b.conf", "mode"), ("conf.d/c.conf", "missing"),
        ("conf.d/old.conf", "present"), ("rails/rail1.network", "content"), ("live", "content"),
        ("Read the live value", "output"), ("Find the drop-ins", "matches")}
    find = next(d for d in report["hosts"]["localhost"]["drift"] if d["kind"] == "matches")
    assert find["detail"] == f"new: {managed}/conf.d/old.conf; gone: {managed}/conf.d/c.conf"

    assert superpod("apply", *base).exit_code == 0  # re-applied: clean again
    assert superpod("drift", *base, "--quick").exit_code == 0


def test_quick_refuses_fix_and_tags(tmp_path):
    project, _ = _project(tmp_path)
    for extra in (("--fix",), ("--tags", "x")):
        result = superpod("drift", "--stack", "lab", "--project-dir", str(project), "--quick", *extra)
        assert result.exit_code == 2 and "--quick" in result.output
