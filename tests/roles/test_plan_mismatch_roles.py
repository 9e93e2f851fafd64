"""Issue 33: host_network's and rail_network's "planned link missing" is drift under --check (the
task reports changed, naming each link, and the role goes on to check the rest), and still fails
the host in apply. The roles' own detect tasks read this machine's /sys/class/net, which has none
of the lab plan's NICs (the real H100 node had none either); the plan is the lab's su01-node01
(host_network's molecule inventory, the layout's rails), the expected items are the planned
netdevs this machine lacks. ansible-playbook runs them (tests/roles/playbook.py)."""

from __future__ import annotations

import os

import pytest

from tests.role_files import ROOT
from tests.roles.playbook import run_play
from tests.roles.test_host_network import NODE, POD
from tests.test_drift_verdict import lab_node

AFTER = "Checked after the detect tasks"
BAD = "Items given as one string"
TASKS = {"host_network": "host_network : Fail on planned links this host does not have",
         "rail_network": "rail_network : Fail on planned rail NICs this host does not have"}


def detect_tasks(role: str) -> list[dict]:
    """The role's variables loaded as the role does, its plan computed by its own template, then
    its detect tasks, then a task that only runs when the host went on."""
    path = ROOT / "roles" / role
    tasks = [{"name": f"{role} {f}", "ansible.builtin.include_vars": str(path / f),
              "when": f"role_under_test == '{role}'"}
             for f in ("defaults/main.yml", "vars/main.yml", "vars/Debian.yml")]
    tasks.append({"name": f"{role} plan", "when": f"role_under_test == '{role}'", "ansible.builtin.set_fact": {
        f"{role}_plan": "{{ lookup('ansible.builtin.template', '" + str(path / "templates/plan.json.j2")
        + "') | from_json }}"}})
    tasks.append({"name": f"{role} detect", "when": f"role_under_test == '{role}'",
                  "ansible.builtin.include_role": {"name": role, "tasks_from": "detect"}})
    return tasks


@pytest.fixture(scope="module")
def hosts() -> dict[str, dict]:
    return {"hn": dict(NODE, **POD, role_under_test="host_network"),
            "rn": {"rails": lab_node()["rails"], "role_under_test": "rail_network"},
            "bad": {"role_under_test": "bad"}}


def missing_here(netdevs: list[str]) -> list[str]:
    here = set(os.listdir("/sys/class/net"))
    missing = [n for n in netdevs if n not in here]
    assert missing, "this machine has the planned NICs: the test needs a node unlike its plan"
    return missing


def run(tmp_path, hosts, check: bool) -> dict[str, list[dict]]:
    tasks = detect_tasks("host_network") + detect_tasks("rail_network")
    tasks.append({"name": BAD, "superpod_plan_mismatch": {"msg": "m", "items": "a, b"},
                  "when": "role_under_test == 'bad'"})
    tasks.append({"name": AFTER, "ansible.builtin.debug": {"msg": "went on"}})
    tmp_path.mkdir()
    return run_play(tmp_path, tasks, hosts, check=check)


def by_name(results: list[dict], name: str) -> dict | None:
    return next((r for r in results if r["task"] == name), None)


@pytest.mark.timeout(240)
def test_planned_links_missing_are_drift_under_check_and_fail_apply(tmp_path, hosts):
    checked = run(tmp_path / "check", hosts, check=True)
    hn_planned = [link["netdev"] for link in by_name(checked["hn"], "host_network plan")
                  ["ansible_facts"]["host_network_plan"] if link["kind"] != "bond"]
    wanted = {"hn": [f"planned link missing: {n}" for n in missing_here(hn_planned)],
              "rn": [f"planned rail NIC missing: rail {r['rail']} netdev {r['netdev']}" for r in hosts["rn"]["rails"]
                     if r["netdev"] in missing_here([x["netdev"] for x in hosts["rn"]["rails"]])]}
    role = {"hn": "host_network", "rn": "rail_network"}

    for host in ("hn", "rn"):
        result = by_name(checked[host], TASKS[role[host]])
        assert result is not None and not result.get("failed"), checked[host][-1]
        assert result["changed"] is True and result["plan_mismatch"] == wanted[host], result
        assert by_name(checked[host], AFTER) is not None  # the host went on

    # a role that calls the action wrongly gets an error naming the argument, in drift as in apply
    bad = by_name(checked["bad"], BAD)
    assert bad["failed"] is True and "items a list" in bad["msg"] and by_name(checked["bad"], AFTER) is None

    applied = run(tmp_path / "apply", hosts, check=False)
    for host in ("hn", "rn"):
        result = by_name(applied[host], TASKS[role[host]])
        assert result is not None and result.get("failed") is True, applied[host][-1]
        assert result["plan_mismatch"] == wanted[host] and all(w.split()[-1] in result["msg"] for w in wanted[host])
        assert by_name(applied[host], AFTER) is None  # apply stops the host
