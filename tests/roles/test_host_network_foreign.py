"""host_network finds other netplan, NetworkManager and systemd-networkd files that define the links
it configures (an installer's 50-cloud-init.yaml with DHCP on a bond member, a 10-*.network that
networkd would match first): they still apply beside the role's files, so the role names them in
its report, or fails with host_network_foreign_config: fail. Files as the installers write them."""

from __future__ import annotations

import pytest

from tests.roles.playbook import debug_values, run_play

PLAN = [{"kind": "bond", "netdev": "bond0", "members": ["enp41s0f1np1", "enp170s0f1np1"]},
        {"kind": "member", "netdev": "enp41s0f1np1"}, {"kind": "member", "netdev": "enp170s0f1np1"},
        {"kind": "storage", "netdev": "enp41s0f0np0"}]
CLOUD_INIT = """network:
  version: 2
  ethernets:
    enp41s0f1np1:
      dhcp4: true
    eno3:
      dhcp4: true
"""
NM = "[connection]\nid=Wired connection 1\ntype=ethernet\ninterface-name=enp170s0f1np1\n\n[ipv4]\nmethod=auto\n"
NETWORKD = "[Match]\nName=enp41s0f0*\n\n[Network]\nDHCP=yes\n"
OURS = "network:\n  version: 2\n  ethernets:\n    enp41s0f1np1: {dhcp4: false}\n"
UNRELATED = "[Match]\nName=eno3\n\n[Network]\nDHCP=yes\n"
# this role's own keyfile on RHEL (its own prefix, not the netplan/networkd files' one): not another file
OURS_NM = "[connection]\nid=superpod-host-bond0\ntype=bond\ninterface-name=bond0\n"


def run(tmp_path, mode="warn"):
    dirs = {d: tmp_path / d for d in ("netplan", "nm", "networkd")}
    for d in dirs.values():
        d.mkdir()
    (dirs["netplan"] / "50-cloud-init.yaml").write_text(CLOUD_INIT)
    (dirs["netplan"] / "60-superpod-host-bond0.yaml").write_text(OURS)
    (dirs["nm"] / "Wired connection 1.nmconnection").write_text(NM)
    (dirs["nm"] / "superpod-host-bond0.nmconnection").write_text(OURS_NM)
    (dirs["networkd"] / "10-storage.network").write_text(NETWORKD)
    (dirs["networkd"] / "20-eno3.network").write_text(UNRELATED)
    # the role's read (tasks/detect.yml) of these directories, then its checks of what it found
    extra = {"host_network_plan": PLAN, "host_network_family_backend": "netplan", "host_network_require_links": False,
             "host_network_netplan_dir": str(dirs["netplan"]), "host_network_nm_dir": str(dirs["nm"]),
             "host_network_networkd_dir": str(dirs["networkd"]), "host_network_foreign_config": mode}
    tasks = [{"ansible.builtin.include_role": {"name": "host_network", "tasks_from": "detect.yml", "public": True}},
             {"name": "show", "ansible.builtin.debug": {"msg": "{{ host_network_foreign }}"}}]
    return run_play(tmp_path, tasks, {"node": {}}, extra)["node"]


def test_other_files_defining_the_planned_links_are_named(tmp_path):
    found = debug_values(run(tmp_path))[-1]
    by_file = {f["file"].rsplit("/", 1)[-1]: f["links"] for f in found}
    assert by_file == {"50-cloud-init.yaml": ["enp41s0f1np1"],
                       "Wired connection 1.nmconnection": ["enp170s0f1np1"],
                       "10-storage.network": ["enp41s0f0np0"]}


@pytest.mark.parametrize("mode", ["fail"])
def test_fail_mode_stops_naming_the_files(tmp_path, mode):
    results = run(tmp_path, mode)
    failed = [r for r in results if r.get("failed")]
    assert failed and "50-cloud-init.yaml" in failed[0]["msg"] and "enp41s0f1np1" in failed[0]["msg"]
