"""DGX OS keeps its own repositories and driver packages (DGX OS 7 user guide: nvidia-system-core
installs cuda-compute-repo, dgx-repo and dgx-release; the driver branch and module flavour are
installed as its "Installing the GPU Driver" chapter says). nvidia_driver then adds no repository,
installs, removes, pins or holds nothing, and reads the version DGX OS installed (ansible-playbook
against a stand-in dpkg-query); cuda_toolkit's and dcgm_exporter's repository comes through
nvidia_repo, which adds no source there (tests/roles/test_nvidia_repo.py)."""

import sys

import jinja2
import pytest
import yaml
from ansible.module_utils.parsing.convert_bool import boolean

from tests.role_files import ROOT, load
from tests.roles.playbook import run_play

DPKG_QUERY = """#!{python}
import sys
# dpkg-query -W -f '<fmt>' PATTERN...: the packages DGX OS installed, as dpkg prints them
rows = {rows!r}
print("".join(f"{{p}}\\t{{v}}\\t{{s}}\\n" for p, v, s in rows), end="")
sys.exit(0 if rows else 1)
"""

DGX_OS = {"dgx_name": "DGX Server", "dgx_swbuild_version": "7.2.1"}
# DGX H100 on DGX OS 7 with the R580 open modules and its fabric manager; an old branch removed
# but not purged ("config-files") must not count.
DGX_H100 = [("nvidia-driver-580-open", "580.95.05-0ubuntu0.24.04.1", "installed"),
            ("nvidia-fabricmanager-580", "580.95.05-1", "installed"),
            ("nvidia-driver-570-server", "570.172.08-0ubuntu1", "config-files")]


def run(tmp_path, rows, check=False):
    tool = tmp_path / "dpkg-query"
    tool.write_text(DPKG_QUERY.format(python=sys.executable, rows=rows))
    tool.chmod(0o755)
    tasks = [{"ansible.builtin.include_role": {"name": "nvidia_driver", "tasks_from": "packages-dgx-os.yml"}},
             {"name": "Read", "ansible.builtin.debug": {"msg": {
                 "driver": "{{ nvidia_driver_installed_version }}",
                 "fm": "{{ nvidia_driver_installed_fabricmanager_version }}",
                 "held": "{{ nvidia_driver_held_packages }}"}}}]
    host = {"nvidia_repo_dgx_os": DGX_OS, "nvidia_driver_fabricmanager": True}
    return run_play(tmp_path, tasks, {"dgx": host}, {"nvidia_driver_dpkg_query_command": str(tool)}, check=check)["dgx"]


def test_dgx_os_driver_is_read_not_managed(tmp_path):
    res = run(tmp_path, DGX_H100)
    assert not [r for r in res if r.get("failed")], res
    [read] = [r["msg"] for r in res if r["task"] == "Read"]
    assert read == {"driver": "580.95.05-0ubuntu0.24.04.1", "fm": "580.95.05-1", "held": []}
    assert not [r for r in res if r.get("changed")]
    # nothing but the read-only query ran: no apt, dpkg_selections, template or file module
    skip = {None, "test_facts", "ansible.builtin.debug", "ansible.builtin.include_role"}
    actions = {r.get("action") for r in res} - skip
    assert actions <= {"ansible.builtin.command", "ansible.builtin.set_fact", "ansible.builtin.fail"}


def test_dgx_os_without_a_driver_fails_naming_the_way_out(tmp_path):
    res = run(tmp_path, [])
    [failed] = [r for r in res if r.get("failed")]
    assert "DGX OS (7.2.1) manages the driver, and none is installed" in failed["msg"]
    assert "nvidia_driver_defer_to_dgx_os: false" in failed["msg"]


@pytest.mark.parametrize("manager", ["apt", "dnf"])
def test_repositories_and_package_changes_are_skipped_on_dgx_os(manager):
    """The repository, install/remove (flavour swap), pin and hold steps all live in
    driver-<manager>.yml (repos-, then packages-<manager>.yml); on DGX OS the one include
    takes the read-only file instead."""
    tasks = yaml.safe_load((ROOT / "roles/nvidia_driver/tasks/main.yml").read_text())
    [include] = [t for t in tasks if "packages-dgx-os.yml" in str(t.get("ansible.builtin.include_tasks"))]
    assert "when" not in include
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["bool"] = boolean
    for defers, want in ((True, "packages-dgx-os.yml"), (False, f"driver-{manager}.yml"),
                         ("false", f"driver-{manager}.yml")):
        got = env.from_string(include["ansible.builtin.include_tasks"]).render(
            nvidia_driver_dgx_os_defers=defers, nvidia_driver_family_pkg_manager=manager)
        assert got.strip() == want, (defers, got)
    wrapper = yaml.safe_load((ROOT / "roles/nvidia_driver/tasks" / f"driver-{manager}.yml").read_text())
    assert [t["ansible.builtin.import_tasks"] for t in wrapper] == [f"repos-{manager}.yml", f"packages-{manager}.yml"]
    detect = next(t for t in tasks if t.get("ansible.builtin.import_tasks") == "detect.yml")
    assert tasks.index(detect) < tasks.index(include)


def test_dgx_os_is_told_by_the_roles_one_read(tmp_path):
    """/etc/dgx-release comes with the role's one read (detect.yml), where no earlier role of the play
    said it already: its keys, lower-cased and unquoted, the serial number left out (as nvidia_repo's
    dgx_os.yml reads them); no such file, no DGX OS."""
    (tmp_path / "dgx.release").write_text('DGX_NAME="DGX Server"\nDGX_SWBUILD_VERSION="7.2.1"\n'
                                          'DGX_SERIAL_NUMBER="1234"\nNOT_DGX=1\n')
    tasks = [{"ansible.builtin.include_role": {"name": "nvidia_driver", "tasks_from": "detect.yml", "public": True}},
             {"name": "Told", "ansible.builtin.debug": {"msg": {"os": "{{ nvidia_driver_dgx_os }}",
                                                                "defers": "{{ nvidia_driver_dgx_os_defers }}"}}}]
    release = {"dgx": str(tmp_path / "dgx.release"), "plain": str(tmp_path / "absent")}
    family = load(ROOT / "roles/nvidia_driver/vars/Debian.yml")  # as include_vars gives them
    hosts = {name: dict(family, test_facts={"kernel": "6.8.0-49-generic"}) for name in release}
    given = {"nvidia_driver_dgx_release_file": "{{ paths[inventory_hostname] }}", "paths": release}
    (tmp_path / "play").mkdir()
    results = run_play(tmp_path / "play", tasks, hosts, given)
    told = {host: next(r["msg"] for r in res if r["task"] == "Told") for host, res in results.items()}
    assert told["dgx"] == {"os": DGX_OS, "defers": True}, told
    assert told["plain"] == {"os": {}, "defers": False}, told


def test_cuda_toolkit_on_dgx_os_adds_no_source_and_no_driver():
    """cuda_toolkit gets NVIDIA's repository only through nvidia_repo (which adds none on DGX OS)
    and installs cuda-toolkit-X-Y, which carries no driver: nothing DGX OS manages is swapped."""
    tasks = yaml.safe_load((ROOT / "roles/cuda_toolkit/tasks/main.yml").read_text())
    repo = [t for t in tasks if (t.get("ansible.builtin.include_role") or {}).get("name") == "nvidia_repo"]
    assert len(repo) == 1 and "tasks_from" not in repo[0]["ansible.builtin.include_role"]
    template = (ROOT / "roles/cuda_toolkit/templates/installs.json.j2").read_text()
    assert "default(['cuda-toolkit-' ~ dashed])" in template
    assert not any(p in template for p in ("'cuda-drivers", "'cuda'", "nvidia-driver"))
