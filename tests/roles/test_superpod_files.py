"""superpod_files (action_plugins/ + library/): a role's file writes in one round trip, run by
ansible-playbook on localhost as the roles run it: rendered as ansible.builtin.template renders,
written only where different, check mode and diff per file, owner and mode, handlers per entry,
a bad template failing before anything is written, and the record's and drift report's reading
of its result."""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import stat
from pathlib import Path

from tests.roles.playbook import run_play
from topology.operate.events import changed_tasks
from topology.operate.record_entries import entries_from_events

HOST = {"node": {}}
STATIC = "#!/bin/sh\necho '{{ copied as it is }}'\n"
TEMPLATE = "# {{ ansible_managed }}\nport={{ port }}\n{% if extra %}\nextra\n{% endif %}\nname={{ name }}\n"


def _files_task(root: Path, **extra) -> dict:
    return {"name": "Write the files", "superpod_files": {"files": [
        {"dest": str(root / "etc"), "state": "directory", "owner": "root", "group": "root", "mode": "0755"},
        {"dest": str(root / "etc/a.conf"), "src": "a.conf.j2", "vars": {"name": "alpha"}, "mode": "0644",
         "owner": "root", "group": "root"},
        {"dest": str(root / "etc/b.json"), "content": "{{ {'k': port} | to_nice_json }}\n", "mode": "0600"},
        {"dest": str(root / "etc/skipped.conf"), "content": "never\n", "enabled": "{{ extra }}"},
        {"dest": str(root / "etc/static.sh"), "file_src": "static.sh", "mode": "0755"},
        {"dest": str(root / "old.conf"), "state": "absent"},
    ]}, "register": "written", **extra}


def _setup(tmp_path: Path) -> Path:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "a.conf.j2").write_text(TEMPLATE)
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "static.sh").write_text(STATIC)
    root = tmp_path / "root"
    root.mkdir()
    (root / "old.conf").write_text("stale\n")
    return root


def _template_reference(tmp_path: Path, root: Path) -> str:
    """What ansible.builtin.template writes from the same template and variables."""
    res = run_play(tmp_path, [{"ansible.builtin.template": {"src": "a.conf.j2", "dest": str(root / "ref.conf")},
                               "vars": {"name": "alpha"}}], HOST, {"port": 7, "extra": False})
    assert res["node"][-1].get("changed") is True, res["node"][-1]
    return (root / "ref.conf").read_text()


def test_writes_each_file_as_template_and_copy_would_then_nothing(tmp_path):
    root = _setup(tmp_path)
    first = run_play(tmp_path, [_files_task(root)], HOST, {"port": 7, "extra": False})["node"][-1]
    assert first.get("changed") is True, first
    assert first["changed_files"] == [str(root / "etc"), str(root / "etc/a.conf"), str(root / "etc/b.json"),
                                      str(root / "etc/static.sh"), str(root / "old.conf")]
    assert (root / "etc/static.sh").read_text() == STATIC
    assert (root / "etc/a.conf").read_text() == _template_reference(tmp_path, root)
    assert "port=7\nname=alpha\n" in (root / "etc/a.conf").read_text()  # trim_blocks as the template module
    assert (root / "etc/b.json").read_text() == '{\n    "k": 7\n}\n'
    assert not (root / "etc/skipped.conf").exists() and not (root / "old.conf").exists()
    assert stat.S_IMODE((root / "etc/b.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((root / "etc").stat().st_mode) == 0o755
    second = run_play(tmp_path, [_files_task(root)], HOST, {"port": 7, "extra": False})["node"][-1]
    assert second.get("changed") is False and second["changed_files"] == [], second
    assert [f["changed"] for f in second["files"]] == [False] * 5


def test_check_mode_writes_nothing_and_diffs_each_file_by_path(tmp_path):
    root = _setup(tmp_path)
    run_play(tmp_path, [_files_task(root)], HOST, {"port": 7, "extra": False})
    (root / "etc/a.conf").write_text("edited by hand\n")
    os.chmod(root / "etc/b.json", 0o644)
    res = run_play(tmp_path, [_files_task(root, diff=True)], HOST, {"port": 8, "extra": False}, check=True)["node"][-1]
    assert res.get("changed") is True and res["changed_files"] == [str(root / "etc/a.conf"), str(root / "etc/b.json")]
    assert (root / "etc/a.conf").read_text() == "edited by hand\n"  # nothing written
    assert stat.S_IMODE((root / "etc/b.json").stat().st_mode) == 0o644
    assert '"k": 7' in (root / "etc/b.json").read_text()
    headers = [(d.get("before_header"), d.get("after_header")) for d in res["diff"]]
    assert (str(root / "etc/a.conf"), str(root / "etc/a.conf")) in headers
    a_diff = next(d for d in res["diff"] if d.get("after_header") == str(root / "etc/a.conf"))
    assert a_diff["before"] == "edited by hand\n" and "port=8" in a_diff["after"]
    modes = [d for d in res["diff"] if isinstance(d["before"], dict) and "mode" in d["before"]
             and d["before"].get("path") == str(root / "etc/b.json")]
    assert modes and modes[0]["before"]["mode"] == "0644" and modes[0]["after"]["mode"] == "0600", res["diff"]


def test_check_mode_on_a_new_host_reports_every_file_and_creates_nothing(tmp_path):
    root = _setup(tmp_path)
    res = run_play(tmp_path, [_files_task(root)], HOST, {"port": 7, "extra": True}, check=True)["node"][-1]
    assert res.get("changed") is True, res
    assert str(root / "etc/skipped.conf") in res["changed_files"]  # enabled: the entry is in
    assert not (root / "etc").exists() and (root / "old.conf").exists()


def test_owner_and_mode_are_set_and_reported(tmp_path):
    root = _setup(tmp_path)
    nobody = pwd.getpwnam("nobody")
    task = {"superpod_files": {"files": [{"dest": str(root / "owned"), "content": "x\n", "owner": "nobody",
                                          "mode": "0640"}]}}
    res = run_play(tmp_path, [task], HOST)["node"][-1]
    assert res.get("changed") is True, res
    st = (root / "owned").stat()
    assert st.st_uid == nobody.pw_uid and stat.S_IMODE(st.st_mode) == 0o640
    assert res["managed"] == [{"path": str(root / "owned"), "state": "file", "mode": "0640", "owner": "nobody",
                               "group": "root", "checksum": hashlib.sha1(b"x\n").hexdigest()}]
    os.chown(root / "owned", 0, 0)
    again = run_play(tmp_path, [task], HOST)["node"][-1]
    assert again.get("changed") is True and again["changed_files"] == [str(root / "owned")]
    assert (root / "owned").stat().st_uid == nobody.pw_uid


def test_a_bad_template_fails_naming_the_file_and_writes_nothing(tmp_path):
    root = _setup(tmp_path)
    (tmp_path / "templates" / "bad.j2").write_text("{{ undefined_variable_here }}\n")
    task = {"superpod_files": {"files": [
        {"dest": str(root / "good.conf"), "content": "fine\n"},
        {"dest": str(root / "bad.conf"), "src": "bad.j2"}]}}
    res = run_play(tmp_path, [task], HOST)["node"][-1]
    assert res.get("failed") is True
    assert str(root / "bad.conf") in res["msg"] and "bad.j2" in res["msg"] and "undefined_variable_here" in res["msg"]
    assert not (root / "good.conf").exists() and not (root / "bad.conf").exists()


def test_each_entry_notifies_its_own_handlers_only_when_it_changed(tmp_path):
    root = _setup(tmp_path)
    (root / "same.conf").write_text("same\n")
    task = {"name": "Write", "superpod_files": {"files": [
        {"dest": str(root / "new.conf"), "content": "new\n", "notify": ["Handler new"]},
        {"dest": str(root / "same.conf"), "content": "same\n", "notify": "Handler same"}]}}
    handlers = [{"name": n, "ansible.builtin.debug": {"msg": n}} for n in ("Handler new", "Handler same")]
    ran = [r["task"] for r in run_play(tmp_path, [task], HOST, handlers=handlers)["node"]]
    assert "Handler new" in ran and "Handler same" not in ran, ran


def test_the_record_keeps_each_file_and_the_drift_report_names_it(tmp_path):
    root = _setup(tmp_path)
    res = run_play(tmp_path, [_files_task(root)], HOST, {"port": 7, "extra": False})["node"][-1]
    event = {"event": "runner_on_ok", "event_data": {"host": "node", "task": "Write the files", "res": res,
                                                     "resolved_action": res["action"]}}
    entries = entries_from_events([event])["node"]
    assert entries[f"path:{root / 'etc/a.conf'}"]["checksum"] == res["managed"][1]["checksum"]
    assert entries[f"path:{root / 'etc'}"] == {"path": str(root / "etc"), "state": "directory", "mode": "0755",
                                                "owner": "root", "group": "root"}
    assert entries[f"path:{root / 'old.conf'}"] == {"path": str(root / "old.conf"), "state": "absent"}
    os.chmod(root / "etc/a.conf", 0o666)
    drift = run_play(tmp_path, [_files_task(root, diff=True)], HOST, {"port": 7, "extra": False}, check=True)
    res = drift["node"][-1]
    event["event_data"]["res"] = res
    change, = changed_tasks([event])
    assert change.files == (str(root / "etc/a.conf"),)


def test_the_result_holds_no_file_content_outside_a_diff(tmp_path):
    """The contents travel to the node as module arguments; the module's `invocation` echoes its
    arguments, and ansible-runner keeps whole results in the run's events on disk. A file's content
    must reach them only where a template task's would: in a --diff."""
    root = _setup(tmp_path)
    secret = "Pl41n-Pa55-in-a-file"
    task = {"name": "Write a file", "superpod_files": {"files": [
        {"dest": str(root / "secret.conf"), "content": f"password={secret}\n", "mode": "0600"}]}}
    res = run_play(tmp_path, [task], HOST)["node"][-1]
    assert res.get("changed") is True, res
    assert "invocation" not in res
    assert secret not in json.dumps(res)
