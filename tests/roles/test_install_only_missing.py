"""Package installs on a converged node: each is a whole apt/dnf module run (it opens the package
cache), seconds per role in a no-op apply. site.yml reads the installed packages once per run,
fresh (its GPU-node pre_task, registered as superpod_package_facts), and each role runs its
install task only when one of its packages is missing from that list. Without the fresh read (a
role run alone, molecule, or only an hour-old list from the fact cache) the task runs as before.

Run by ansible-playbook: the roles' own install tasks, conditions and variables, with site.yml's
pre_task and the package modules swapped for stand-ins (one local host per case), plain and
under --check (a missing package must still be reported as a change in a drift run: with the
fresh read, by the role's report task ("would install: ..."), never through the package module,
which in check mode needs python3-apt that a fresh Ubuntu node lacks)."""

from __future__ import annotations

import copy

import pytest

from tests.role_files import ROOT, load
from tests.roles.playbook import run_play

# the task that reports, under --check with this run's package read, what a run would install
REPORT = "Report the packages a run would install (check mode, from the package read)"
# key -> (role, tasks file, the variable (in vars/Debian.yml or vars/main.yml) naming its packages,
#         the tasks that call the package manager, in order (the last one installs), its report task)
INSTALLS = {
    "roce_qos": ("roce_qos", "packages.yml", "roce_qos_family_packages",
                 ["Install the tools the apply script uses (dcb, modprobe, python3)"], REPORT),
    "rail_network": ("rail_network", "packages.yml", "rail_network_family_packages",
                     ["Install the network tools"], REPORT),
    "host_network": ("host_network", "packages.yml", "host_network_family_packages",
                     ["Install the network tools"], REPORT),
    "hugepages": ("hugepages", "packages.yml", "hugepages_family_packages",
                  ["Install the HugePages tools (hugeadm)"], REPORT),
    # one install for both of its lists: the governor tools and pciutils
    "host_tuning": ("host_tuning", "packages.yml", ("host_tuning_family_packages", "host_tuning_pciutils_package"),
                    ["Install the governor tools and pciutils (setpci)"], REPORT),
    "fabric_telemetry": ("fabric_telemetry", "packages.yml", "fabric_telemetry_family_packages",
                         ["Find missing packages (apt, dry run)", "Refresh the package index (apt)",
                          "Install Python and virtualenv support"], None),
    "rdma": ("rdma", "packages-inbox.yml", "rdma_family_inbox_packages", ["Install the inbox RDMA stack"], REPORT),
    # its packages come from the versions list (templates/installs.json.j2), pinned when asked
    "cuda_toolkit": ("cuda_toolkit", "install.yml", None, ["Install the toolkit packages"], REPORT),
}
PACKAGE_MODULES = ("ansible.builtin.package", "ansible.builtin.apt", "ansible.builtin.dnf")
DEBIAN = {"os_family": "Debian", "distribution": "Debian", "distribution_major_version": "12",
          "kernel": "6.1.0-28-amd64"}

RECORDER = """#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule
module = AnsibleModule(argument_spec={"name": {"type": "list", "elements": "str"}, "state": {"type": "str"},
                                      "update_cache": {"type": "bool"}, "allow_downgrade": {"type": "bool"},
                                      "allow_change_held_packages": {"type": "bool"}}, supports_check_mode=True)
module.exit_json(changed=True, called_with=module.params)
"""


def _packages(key: str) -> list[str]:
    """The Debian package names the key's install task installs, as the role's vars files say."""
    role, _, var, _, _ = INSTALLS[key]
    if var is None:  # cuda_toolkit: NVIDIA's cuda-toolkit-X-Y for each default version
        versions = load(ROOT / "roles" / role / "defaults/main.yml")["cuda_toolkit_versions"]
        return ["cuda-toolkit-" + v["version"].replace(".", "-") for v in versions]
    values = {**load(ROOT / "roles" / role / "vars/main.yml"), **load(ROOT / "roles" / role / "vars/Debian.yml")}
    found = [values[v] for v in var] if isinstance(var, tuple) else [values[var]]
    return [p for f in found for p in (f if isinstance(f, list) else [f])]


EVERYTHING = sorted({p for key in INSTALLS for p in _packages(key)})
# the package each missing-<key> host lacks: the last of that install's list
GONE = {key: _packages(key)[-1] for key in INSTALLS}


def _install_tasks(key: str) -> list[dict]:
    """The role's own tasks, each package module call replaced by the recorder (same args, when, register)."""
    role, file, _, names, report = INSTALLS[key]
    by_name = {t.get("name"): t for t in load(ROOT / "roles" / role / "tasks" / file)}
    out = []
    for name in [*names, *([report] if report else [])]:
        task = copy.deepcopy(by_name[name])
        module = next((m for m in PACKAGE_MODULES if m in task), None)
        if module:
            task["recorded_package"] = task.pop(module)
        task["name"] = f"{key}: {name}"
        out.append(task)
    return out


def _site_pre_task() -> dict:
    """site.yml's package read, with the module swapped for facts the host var fresh_packages gives."""
    play = next(p for p in load(ROOT / "site.yml") if p.get("hosts") == "gpu_nodes" and "pre_tasks" in p)
    task = copy.deepcopy(next(t for t in play["pre_tasks"] if "ansible.builtin.command" in t))
    assert task["ansible.builtin.command"]["argv"] == "{{ ansible_facts['os_family'] | superpod_package_query }}"
    # the query's output, as dpkg-query prints it for the host var fresh_packages
    task["ansible.builtin.command"]["argv"] = ["printf", "%s", "{{ fresh_stdout }}"]
    task["when"] = "fresh_packages is defined"
    assert task["check_mode"] is False  # the read runs under --check too
    return task


def _installed(names, version: str = "1.0") -> dict:
    return {n: [{"name": n, "version": version, "arch": "amd64", "source": "apt"}] for n in names}


def _with_query_output(hosts: dict) -> dict:
    """Each host with fresh_packages also gets fresh_stdout: those packages as the pre_task's
    dpkg-query prints them (status, name, version, architecture; tab-separated)."""
    for hostvars in hosts.values():
        if "fresh_packages" in hostvars:
            hostvars["fresh_stdout"] = "".join(f"ii \t{name}\t{entries[0]['version']}\tamd64\n"
                                               for name, entries in hostvars["fresh_packages"].items())
    return hosts


# A toolkit pinned to a package version: installed at that version nothing runs; at another
# version the install runs (with the pin) and reports the change; above it (upgraded by hand, the
# drift corpus's "package upgraded") the install takes it back down to the pin.
CUDA_PIN = "13.0.2-1"
PINNED = {"cuda-pinned-same": CUDA_PIN, "cuda-pinned-other": "13.0.1-1", "cuda-pinned-above": "13.0.3-1"}


def _run(tmp_path, check: bool):
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "recorded_package.py").write_text(RECORDER)
    hosts = {
        "all-present": {"node_facts": DEBIAN, "fresh_packages": _installed(EVERYTHING)},
        # the fact cache lists everything, but this run did not read the packages: not trusted
        "cached-only": {"node_facts": dict(DEBIAN, packages=_installed(EVERYTHING))},
        "no-facts": {"node_facts": DEBIAN},
    }
    for key, gone in GONE.items():
        hosts[f"missing-{key}"] = {"node_facts": DEBIAN,
                                   "fresh_packages": _installed(p for p in EVERYTHING if p != gone)}
    toolkit = _packages("cuda_toolkit")
    for host, version in PINNED.items():
        hosts[host] = {"node_facts": DEBIAN, "cuda_versions": [{"version": "13.0", "package_version": CUDA_PIN}],
                       "fresh_packages": _installed(p for p in EVERYTHING if p not in toolkit)
                       | _installed(toolkit, version)}
    # the node's facts (gathered, or from the cache), also under --check
    tasks = [{"name": "Node facts", "test_facts": {"facts": "{{ node_facts }}"}, "check_mode": False},
             _site_pre_task()]
    # the roles' defaults and vars, loaded by the play (an include_vars task per file and host
    # was two thirds of the play's tasks, each a forked worker: half the test's CPU)
    role_vars = [ROOT / "roles" / role / f for role in sorted({spec[0] for spec in INSTALLS.values()})
                 for f in ("defaults/main.yml", "vars/main.yml", "vars/Debian.yml")]
    # cuda_toolkit's install list, as its main.yml computes it (a host may pin a package version)
    tasks += [{"name": "cuda_toolkit versions",
               "ansible.builtin.set_fact": {
                   "cuda_toolkit_versions": "{{ cuda_versions | default(cuda_toolkit_versions) }}"}},
              {"name": "cuda_toolkit installs", "ansible.builtin.set_fact": {"cuda_toolkit_installs": (
                  "{{ lookup('ansible.builtin.template', '%s') | from_json }}"
                  % (ROOT / "roles/cuda_toolkit/templates/installs.json.j2"))}}]
    for key in INSTALLS:
        tasks += _install_tasks(key)
    return run_play(tmp_path, tasks, _with_query_output(hosts), check=check, vars_files=role_vars)


def _ran(results: list[dict], key: str) -> list[str]:
    """Names (without the key prefix) of the key's package tasks that ran (not skipped)."""
    prefix = f"{key}: "
    return [r["task"][len(prefix):] for r in results if r["task"].startswith(prefix) and not r.get("skipped")]


@pytest.mark.timeout(600)  # ~17 hosts in one play: minutes at a loaded CI machine (a hang guard, not a speed test)
@pytest.mark.parametrize("check", [False, True], ids=["apply", "check"])
def test_install_runs_only_for_a_missing_package(tmp_path, check):
    results = _run(tmp_path, check)
    assert set(results) == {"all-present", "cached-only", "no-facts", *(f"missing-{k}" for k in INSTALLS), *PINNED}
    for host, res in results.items():
        assert not [r for r in res if r.get("failed")], (host, [r for r in res if r.get("failed")])
    for key, (_, _, _, names, report) in INSTALLS.items():
        install = names[-1]
        # every package in this run's fresh list: no package-manager call at all
        assert _ran(results["all-present"], key) == [], key
        # no fresh read (role alone; or only the fact cache's list, which can be an hour old): as before
        for host in ("no-facts", "cached-only"):
            assert install in _ran(results[host], key), (host, key)
        # one of its packages missing: it runs and reports the change; under --check the report
        # task names it from the read, and the package module is not called
        ran = [r for r in results[f"missing-{key}"] if r["task"] == f"{key}: {install}"]
        if check and report:
            said = [r for r in results[f"missing-{key}"] if r["task"] == f"{key}: {report}"]
            assert ran and ran[0].get("skipped"), (key, ran)
            assert said and said[0].get("changed") is True and GONE[key] in said[0]["msg"], (key, said)
            assert said[0]["msg"].startswith("would install: "), said
        else:
            assert ran and not ran[0].get("skipped") and ran[0].get("changed") is True, (key, ran)
        # ...and only the installs that list that package run
        for other in INSTALLS:
            if GONE[key] not in _packages(other):
                assert _ran(results[f"missing-{key}"], other) == [], (key, other)
    # a pinned toolkit: at the pinned version nothing; at another version the pinned install
    # runs (the package manager changes the version), under --check too
    install = f"cuda_toolkit: {INSTALLS['cuda_toolkit'][3][-1]}"
    assert _ran(results["cuda-pinned-same"], "cuda_toolkit") == []
    for host in ("cuda-pinned-other", "cuda-pinned-above"):
        ran = [r for r in results[host] if r["task"] == (f"cuda_toolkit: {REPORT}" if check else install)]
        assert ran and not ran[0].get("skipped") and ran[0].get("changed") is True, (host, ran)
        if check:
            assert ran[0]["msg"] == "would install: " + ", ".join(f"{p}={CUDA_PIN}" for p in _packages("cuda_toolkit"))
        else:
            called = ran[0]["called_with"]
            assert called["name"] == [f"{p}={CUDA_PIN}" for p in _packages("cuda_toolkit")]
            # back down to the pin, whatever the hold: apt refuses both without these (seen on the
            # lab's Debian 12: "Packages were downgraded and -y was used without --allow-downgrades",
            # then "Held packages were changed ... without --allow-change-held-packages")
            assert (called["allow_downgrade"], called["allow_change_held_packages"]) == (True, True), called
    for host in PINNED:
        assert all(_ran(results[host], key) == [] for key in INSTALLS if key != "cuda_toolkit"), host
    # fabric_telemetry: the apt dry run still decides the install and the index refresh (never
    # under --check: a drift run does not touch the index)
    want = ["Find missing packages (apt, dry run)", "Install Python and virtualenv support"]
    if not check:
        want.insert(1, "Refresh the package index (apt)")
    assert _ran(results["missing-fabric_telemetry"], "fabric_telemetry") == want


# nvidia_driver reads the installed packages itself (versions decide its pins and holds): with
# site.yml's fresh read of this run that read is the same list (the roles before it only add
# packages, none of its own), so it reads only when the role runs without one.
READS = {"apt": ("prerequisites-apt.yml", "Read the installed packages"),
         "dnf": ("packages-dnf.yml", "Read the installed packages")}


@pytest.mark.timeout(120)
def test_nvidia_driver_reads_packages_only_without_a_fresh_read(tmp_path):
    tasks = [{"name": "Node facts", "test_facts": {"facts": "{{ node_facts }}"}, "check_mode": False}, _site_pre_task()]
    for family, (file, name) in READS.items():
        task = copy.deepcopy(next(t for t in load(ROOT / "roles/nvidia_driver/tasks" / file) if t.get("name") == name))
        task.pop("ansible.builtin.include_tasks")
        task["ansible.builtin.debug"] = {"msg": "the role reads the packages itself"}
        task["name"] = f"{family}: {name}"
        tasks.append(task)
    results = run_play(tmp_path, tasks, _with_query_output({
        "fresh": {"node_facts": DEBIAN, "fresh_packages": _installed(["nvidia-driver"])},
        "cached-only": {"node_facts": dict(DEBIAN, packages=_installed(["nvidia-driver"]))},
        "no-facts": {"node_facts": DEBIAN}}))
    for family in READS:
        ran = {host: [r for r in res if r["task"].startswith(f"{family}: ") and not r.get("skipped")]
               for host, res in results.items()}
        assert ran["fresh"] == [], family
        assert ran["cached-only"] and ran["no-facts"], family
