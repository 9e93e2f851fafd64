"""RHEL 9 (issue 34): nvidia_driver's dnf path enables the driver module stream before it reads the
versions, and installs only the pinned packages: never the stream's default profile
(`dnf install @nvidia-driver:<stream>`), which installs the stream's newest driver before the pin.

Run by ansible-playbook: the role's own packages-dnf.yml on a host with RHEL 9 facts (the roles'
stand-in facts, tests/roles/playbook.py), a stand-in `dnf` on PATH that hides the packages of
streams that are not enabled (dnf's modular filtering: with no stream enabled it shows the
module's default stream) and refuses to switch an enabled stream without a reset, and the dnf and
versionlock modules swapped for recorders. Every call goes to one log, in order."""

from __future__ import annotations

import copy
import json
import sys

import pytest

from tests.role_files import ROOT, load
from tests.roles.playbook import run_play

ROLE = ROOT / "roles/nvidia_driver"
RHEL9 = {"os_family": "RedHat", "distribution": "RedHat", "distribution_major_version": "9",
         "kernel": "5.14.0-427.13.1.el9_4.x86_64"}
# NVIDIA's CUDA repository as dnf sees it: module nvidia-driver, default stream latest-dkms (the
# newest branch); each stream carries its branch's versions of the driver and the fabric manager.
STREAMS = {
    "latest-dkms": {"nvidia-driver-cuda": ["580.95.05-1.el9", "580.105.08-1.el9"],
                    "nvidia-fabric-manager": ["580.95.05-1", "580.105.08-1"]},
    "550-dkms": {"nvidia-driver-cuda": ["550.127.05-1.el9", "550.163.01-1.el9"],
                 "nvidia-fabric-manager": ["550.127.05-1", "550.163.01-1"]},
    "535-dkms": {"nvidia-driver-cuda": ["535.183.01-1.el9"], "nvidia-fabric-manager": ["535.183.01-1"]},
}
DEFAULT_STREAM = "latest-dkms"

FAKE_DNF = r'''#!PYTHON
"""Stand-in dnf: module streams with modular filtering, one JSON state file ($FAKE_DNF_STATE)."""
import json, os, sys
path = os.environ["FAKE_DNF_STATE"]
state = json.load(open(path))
args = [a for a in sys.argv[1:] if a not in ("-q", "-y")]
state["calls"].append("dnf " + " ".join(args))
rc, out = 0, ""
if args[:3] == ["module", "list", "--enabled"]:
    if state["enabled"]:
        out = ("Name           Stream            Profiles        Summary\n"
               f"nvidia-driver  {state['enabled']} [e]  default [d], fm  Nvidia driver\n\n"
               "Hint: [d]efault, [e]nabled, [x]disabled, [i]nstalled\n")
    else:
        rc, out = 1, "Error: No matching Modules to list\n"
elif args[:2] == ["module", "reset"]:
    state["enabled"] = None
elif args[:2] == ["module", "enable"]:
    stream = args[2].split(":", 1)[1]
    if state["enabled"] and state["enabled"] != stream:
        rc, out = 1, "Error: It is not possible to switch enabled streams of a module\n"
    else:
        state["enabled"] = stream
elif args[0] == "repoquery":
    visible = state["streams"][state["enabled"] or state["default"]]  # modular filtering
    out = "".join(v + "\n" for v in visible.get(args[-1], []))
else:
    rc, out = 2, "stand-in dnf: unexpected " + " ".join(args) + "\n"
json.dump(state, open(path, "w"))
sys.stdout.write(out)
sys.exit(rc)
'''

RECORDER = """#!/usr/bin/python
import json, os
from ansible.module_utils.basic import AnsibleModule
module = AnsibleModule(argument_spec={"name": {"type": "list", "elements": "str"}, "state": {"type": "str"},
                                      "allow_downgrade": {"type": "bool"}}, supports_check_mode=True)
path = os.environ["FAKE_DNF_STATE"]
state = json.load(open(path))
state["calls"].append("%s %s %s" % ("MODULE", module.params["state"], " ".join(module.params["name"])))
json.dump(state, open(path, "w"))
module.exit_json(changed=True)
"""


def _tasks() -> list[dict]:
    """packages-dnf.yml with the package modules recorded; the package reads come from host vars."""
    out = []
    for task in load(ROLE / "tasks/packages-dnf.yml"):
        task = copy.deepcopy(task)
        if "ansible.builtin.include_tasks" in task:  # read-packages.yml: the host var is the read
            continue
        for module, kind in (("ansible.builtin.dnf", "dnf"), ("community.general.dnf_versionlock", "versionlock")):
            if module in task:
                args = task.pop(module)
                task["recorded"] = {"name": args["name"], "state": f"{kind}:{args.get('state', 'present')}"}
                if "allow_downgrade" in args:
                    task["recorded"]["allow_downgrade"] = args["allow_downgrade"]
        out.append(task)
    return out


def _host(branch: str, installed: dict | None = None) -> dict:
    family = load(ROLE / "vars/RedHat-9.yml")
    defaults = load(ROLE / "defaults/main.yml")
    kernel_set = family["nvidia_driver_family_kernel_packages"]["proprietary"]
    return {
        "test_facts": RHEL9, **defaults, **{k: v for k, v in family.items() if "{{" not in str(v)},
        "nvidia_driver_version": "", "nvidia_driver_branch": branch, "nvidia_driver_branch_effective": branch,
        "nvidia_driver_kernel_set": kernel_set, "nvidia_driver_fabricmanager": True,
        "nvidia_driver_fm_package": family["nvidia_driver_family_fabricmanager_package"],
        "nvidia_driver_fabric_pinned_packages": [],
        "nvidia_driver_pinned_packages": family["nvidia_driver_family_packages"] + kernel_set["pinned"],
        "nvidia_driver_unpinned_packages": family["nvidia_driver_family_helper_packages"],
        "nvidia_driver_packages": installed or {},
    }


def _run(tmp_path, monkeypatch, branch: str, enabled: str | None, check: bool = False,
         installed: dict | None = None) -> tuple[list[dict], list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dnf").write_text(FAKE_DNF.replace("PYTHON", sys.executable, 1))
    (bin_dir / "dnf").chmod(0o755)
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "recorded.py").write_text(RECORDER)
    state = tmp_path / "dnf-state.json"
    state.write_text(json.dumps({"enabled": enabled, "default": DEFAULT_STREAM, "streams": STREAMS, "calls": []}))
    monkeypatch.setenv("PATH", f"{bin_dir}:{sys.exec_prefix}/bin:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_DNF_STATE", str(state))
    results = run_play(tmp_path, _tasks(), {"rhel": _host(branch, installed)}, check=check)["rhel"]
    return results, json.loads(state.read_text())["calls"]


def _failed(results):
    return [r for r in results if r.get("failed")]


@pytest.mark.timeout(180)
def test_stream_enabled_before_the_versions_are_read_and_only_pinned_packages_installed(tmp_path, monkeypatch):
    results, calls = _run(tmp_path, monkeypatch, "550", enabled=None)
    assert not _failed(results), _failed(results)
    enable = calls.index("dnf module enable nvidia-driver:550-dkms")
    first_query = next(i for i, c in enumerate(calls) if c.startswith("dnf repoquery"))
    assert enable < first_query, calls
    installs = [c for c in calls if c.startswith("MODULE dnf:")]
    # one install, every driver package at the newest 550 version the stream offers; no @stream
    assert len(installs) == 1 and "@" not in installs[0], calls
    assert "nvidia-driver-cuda-550.163.01-1.el9" in installs[0].split()
    assert "nvidia-fabric-manager-550.163.01-1" in installs[0].split()
    lock = calls.index(next(c for c in calls if c.startswith("MODULE versionlock:present")))
    assert lock > calls.index(installs[0])


@pytest.mark.timeout(180)
def test_a_branch_change_resets_the_enabled_stream_first(tmp_path, monkeypatch):
    results, calls = _run(tmp_path, monkeypatch, "550", enabled="535-dkms")
    assert not _failed(results), _failed(results)
    assert calls.index("dnf module reset nvidia-driver") < calls.index("dnf module enable nvidia-driver:550-dkms")


@pytest.mark.timeout(180)
def test_the_enabled_stream_is_left_alone(tmp_path, monkeypatch):
    results, calls = _run(tmp_path, monkeypatch, "550", enabled="550-dkms")
    assert not _failed(results), _failed(results)
    assert not [c for c in calls if c.startswith("dnf module reset") or c.startswith("dnf module enable")], calls
    assert not [r for r in results if r.get("changed") and r["task"].startswith(("Reset", "Enable"))]


@pytest.mark.timeout(180)
def test_check_mode_reports_the_stream_it_would_enable(tmp_path, monkeypatch):
    results, calls = _run(tmp_path, monkeypatch, "550", enabled=None, check=True)
    assert not _failed(results), _failed(results)
    assert not [c for c in calls if c.startswith(("dnf module enable", "MODULE"))], calls
    said = [r for r in results if r["task"].startswith("Report the stream") and not r.get("skipped")]
    assert said and said[0]["changed"] is True and "would enable nvidia-driver:550-dkms" in said[0]["msg"]
