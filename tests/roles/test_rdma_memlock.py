"""Locked-memory limits have one owner: the hugepages role writes them (PAM limits.d and the
systemd default for services) and records them in its local fact; rdma, which needs them for
registered memory, reads that fact and reports what is in force instead of writing a second
limits file (the two files used to disagree silently: the later one won for PAM, the systemd
default kept the other's value)."""

import json
import re

from tests.role_files import ROOT
from tests.roles.playbook import debug_values, run_play

ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks/main.yml").is_file())
LIMIT_LINE = re.compile(r"\bsoft\s+memlock\b|\bhard\s+memlock\b|LimitMEMLOCK=")


def test_one_role_writes_memlock_limits():
    writers = sorted(role for role in ROLES
                     if any(LIMIT_LINE.search(t.read_text()) for t in (ROOT / "roles" / role).glob("templates/*.j2")))
    assert writers == ["hugepages"]


# what hugepages' report reads from its detect step, given here instead of read from this machine;
# PID 1 cannot take the raised default, so the handler that re-executes systemd is not run here
HUGEPAGES_REPORT_VARS = {
    "hugepages_cmdline_missing": [], "hugepages_cmdline_params": [], "hugepages_can_sysctl": True,
    "hugepages_sysctl_pending": [], "hugepages_runtime_pages": [], "hugepages_can_sysfs": True,
    "hugepages_memlock_raisable": False, "hugepages_pid1_limits": {"hard": "65536", "cap_sys_resource": False},
}


def test_rdma_reports_the_limits_hugepages_recorded(tmp_path):
    facts = tmp_path / "facts.d"
    limits = tmp_path / "limits.d"
    (tmp_path / "pam").mkdir()  # as /etc/security/limits.d is on a node
    # hugepages writes its report with the limits (tasks/memlock.yml), all of it under tmp_path here
    tasks = [{"ansible.builtin.include_role": {"name": "hugepages", "tasks_from": "memlock.yml"}},
             {"ansible.builtin.include_role": {"name": "rdma", "tasks_from": "detect.yml", "public": True}},
             {"ansible.builtin.debug": {"msg": "{{ rdma_memlock }}"}}]
    hosts = {"limited": {"hugepages_memlock_soft": 4096, "hugepages_memlock_hard": 8192},
             "unmanaged": {"hugepages_memlock_enabled": False}}
    for hostvars in hosts.values():  # detect.yml's read looks for the running kernel's module tree
        hostvars["test_facts"] = {"kernel": "6.1.0"}
    extra = dict(HUGEPAGES_REPORT_VARS,
                 hugepages_facts_file=f"{facts}/{{{{ inventory_hostname }}}}/superpod_hugepages.fact",
                 hugepages_limits_file=f"{tmp_path}/pam/{{{{ inventory_hostname }}}}.conf",
                 hugepages_systemd_memlock_file=f"{tmp_path}/system.conf.d/{{{{ inventory_hostname }}}}.conf",
                 rdma_hugepages_facts_file=f"{facts}/{{{{ inventory_hostname }}}}/superpod_hugepages.fact",
                 # where rdma wrote its own limits file before: nothing may appear there
                 rdma_limits_file=f"{limits}/{{{{ inventory_hostname }}}}.conf",
                 rdma_legacy_limits_file=f"{limits}/{{{{ inventory_hostname }}}}.conf")
    results = run_play(tmp_path, tasks, hosts, extra)
    for host in hosts:
        assert not [r for r in results[host] if r.get("failed")], results[host]
    assert not limits.exists() or not list(limits.iterdir())
    recorded = json.loads((facts / "limited/superpod_hugepages.fact").read_text())["memlock"]
    assert recorded == {"managed": True, "domain": "*", "soft": "4096", "hard": "8192", "systemd": True}
    assert debug_values(results["limited"])[-1] == recorded
    assert debug_values(results["unmanaged"])[-1] == {"managed": False}
