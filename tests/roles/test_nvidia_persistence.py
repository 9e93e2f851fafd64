"""Persistence mode: the packaged nvidia-persistenced units run the daemon with
--no-persistence-mode, node_check requires persistence mode on. nvidia_driver's drop-in
replaces ExecStart; rendered here by ansible-playbook per family into tmp_path."""

import pytest

from tests.role_files import FAMILIES, ROOT, load
from tests.roles.playbook import run_play


@pytest.fixture(scope="module")
def dropins(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("persistence")
    hosts = {fam: dict(load(ROOT / "roles/nvidia_driver/vars" / f"{fam}.yml")) for fam in FAMILIES}
    extra = {"nvidia_driver_persistenced_dropin": f"{tmp}/{{{{ inventory_hostname }}}}/persistence.conf"}
    tasks = [{"ansible.builtin.include_role": {"name": "nvidia_driver", "tasks_from": "persistence.yml"}},
             {"ansible.builtin.include_role": {"name": "nvidia_driver", "tasks_from": "persistence.yml"}}]
    return tmp, run_play(tmp, tasks, hosts, extra)


@pytest.mark.parametrize("family", FAMILIES)
def test_dropin_turns_persistence_mode_on(dropins, family):
    tmp, results = dropins
    assert not [r for r in results[family] if r.get("failed")], results[family]
    text = (tmp / family / "persistence.conf").read_text()
    assert text.count("ExecStart=") == 2 and "\nExecStart=\n" in text  # reset, then ours
    cmd = text.strip().splitlines()[-1].removeprefix("ExecStart=").split()
    assert cmd[0] == "/usr/bin/nvidia-persistenced" and "--persistence-mode" in cmd
    assert "--no-persistence-mode" not in cmd
    assert ("--user" in cmd) == (family != "RedHat-9")
    changed = [r for r in results[family] if r.get("changed")]  # one call for both, first run only
    assert len(changed) == 1
    assert changed[0]["changed_files"] == [str(tmp / family), str(tmp / family / "persistence.conf")]
