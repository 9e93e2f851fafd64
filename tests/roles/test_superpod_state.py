"""superpod_state (library/): a role's reads in one module call, run by ansible-playbook on
localhost as the roles run it, against the builtin modules it stands for on the same paths (stat's
exists and writeable, find's paths, slurp's content, command's rc and stdout), under --check too
(it reads there as well and never reports a change), and a required command that fails the task."""

from __future__ import annotations

import base64
import os

from tests.roles.playbook import run_play

HOST = {"node": {}}


def _tree(tmp_path):
    root = tmp_path / "root"
    (root / "sizes" / "hugepages-2048kB").mkdir(parents=True)
    (root / "sizes" / "hugepages-1048576kB").mkdir()
    (root / "sizes" / "hugepages-notes").write_text("a file, not a size\n")
    (root / "sizes" / "other-2048kB").mkdir()
    (root / "readonly").write_text("ro\n")
    os.chmod(root / "readonly", 0o444)
    (root / "stamp").write_bytes(b"quiet iommu=pt\n\xff")
    return root


def _reads(root) -> dict:
    return {"superpod_state": {
        "stat": [str(root / "stamp"), str(root / "readonly"), str(root / "missing")],
        "find": [{"name": "sizes", "path": str(root / "sizes"), "file_type": "directory",
                  "patterns": ["hugepages-*kB"]},
                 {"name": "absent", "path": str(root / "nowhere")}],
        "slurp": [str(root / "stamp"), str(root / "missing")],
        "commands": [{"name": "argv", "argv": ["printf", "a b\\n\\n"]},
                     {"name": "shell", "shell": "echo out; echo err >&2; exit 3", "executable": "/bin/bash"},
                     {"name": "not_there", "argv": [str(root / "no-such-command")]}]},
        "register": "state"}


def _builtin(root) -> list[dict]:
    """The same reads through the builtin modules, in this order."""
    return [
        *({"ansible.builtin.stat": {"path": str(root / p), "get_checksum": False}}
          for p in ("stamp", "readonly", "missing")),
        {"ansible.builtin.find": {"paths": str(root / "sizes"), "file_type": "directory", "patterns": "hugepages-*kB"}},
        {"ansible.builtin.slurp": {"src": str(root / "stamp")}},
        {"ansible.builtin.command": {"argv": ["printf", "a b\\n\\n"]}},
        {"ansible.builtin.shell": "echo out; echo err >&2; exit 3", "args": {"executable": "/bin/bash"},
         "failed_when": False},
    ]


def test_the_reads_match_the_builtin_modules_on_the_same_paths(tmp_path):
    root = _tree(tmp_path)
    results = run_play(tmp_path, [_reads(root), *_builtin(root)], HOST)["node"][1:]
    state, (st_stamp, st_ro, st_missing, found, slurped, argv, shell) = results[0], results[1:]
    assert state.get("changed") is False and not state.get("failed"), state
    for path, ref in ((root / "stamp", st_stamp), (root / "readonly", st_ro), (root / "missing", st_missing)):
        got = state["stat"][str(path)]
        assert got["exists"] == ref["stat"]["exists"], (path, got, ref)
        if ref["stat"]["exists"]:
            assert (got["writeable"], got["isdir"], got["mode"]) == (ref["stat"]["writeable"], ref["stat"]["isdir"],
                                                                   ref["stat"]["mode"]), (path, got, ref)
    assert state["find"]["sizes"] == sorted(f["path"] for f in found["files"])
    assert state["find"]["sizes"] == [str(root / "sizes/hugepages-1048576kB"), str(root / "sizes/hugepages-2048kB")]
    assert state["find"]["absent"] == []
    assert state["slurp"][str(root / "stamp")] == slurped["content"]
    assert base64.b64decode(state["slurp"][str(root / "stamp")]) == b"quiet iommu=pt\n\xff"
    assert state["slurp"][str(root / "missing")] is None
    for name, ref in (("argv", argv), ("shell", shell)):
        got = state["commands"][name]
        assert (got["rc"], got["stdout"], got["stderr"]) == (ref["rc"], ref["stdout"], ref["stderr"]), (name, got, ref)
    assert state["commands"]["not_there"]["rc"] != 0 and "no-such-command" in state["commands"]["not_there"]["stderr"]


def test_it_reads_under_check_mode_and_changes_nothing(tmp_path):
    root = _tree(tmp_path)
    before = sorted(os.listdir(root))
    state = run_play(tmp_path, [_reads(root)], HOST, check=True)["node"][-1]
    assert state.get("changed") is False and not state.get("skipped"), state
    assert state["commands"]["shell"]["stdout"] == "out"  # the command ran under --check: a read
    assert base64.b64decode(state["slurp"][str(root / "stamp")]).startswith(b"quiet")
    assert sorted(os.listdir(root)) == before


def test_a_required_command_that_fails_fails_the_task_naming_it(tmp_path):
    task = {"superpod_state": {"commands": [
        {"name": "fine", "argv": ["true"], "required": True},
        {"name": "pid1_limits", "shell": "echo broken >&2; exit 2", "required": True}]}}
    res = run_play(tmp_path, [task], HOST)["node"][-1]
    assert res.get("failed") is True, res
    assert "pid1_limits" in res["msg"] and "rc 2" in res["msg"] and "broken" in res["msg"] and "fine" not in res["msg"]


def test_a_malformed_entry_is_refused(tmp_path):
    task = {"superpod_state": {"commands": [{"name": "both", "argv": ["true"], "shell": "true"}]}}
    res = run_play(tmp_path, [task], HOST)["node"][-1]
    assert res.get("failed") is True and "either argv or shell" in res["msg"], res


def test_a_listing_can_read_what_it_found(tmp_path):
    """find with slurp: the matches' contents come back in the result's slurp, as slurp entries of those
    paths would (one call where a role reads the files it lists: host_network's other network files)."""
    root = tmp_path / "netplan"
    root.mkdir()
    (root / "50-cloud-init.yaml").write_text("network: {}\n")
    (root / "notes.txt").write_text("not matched\n")
    task = {"superpod_state": {"find": [{"name": "netplan", "path": str(root), "patterns": ["*.yaml"], "slurp": True},
                                        {"name": "listed", "path": str(root), "patterns": ["*.txt"]}]},
            "register": "state"}
    state = run_play(tmp_path, [task], HOST)["node"][-1]
    assert state["find"] == {"netplan": [str(root / "50-cloud-init.yaml")], "listed": [str(root / "notes.txt")]}
    assert state["slurp"] == {str(root / "50-cloud-init.yaml"): base64.b64encode(b"network: {}\n").decode()}
