"""The inventory tells site.yml which switches switch_fabric pushes to: `ethernet_switches`
(every switch the plan renders a configuration for) with each one's `superpod_switch_os`;
InfiniBand switches are never in it. site.yml runs the role there, over the OOB address, with become."""

from __future__ import annotations

import pytest
import yaml
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.vars.manager import VariableManager

from tests.conftest import ROOT, spec_with, stack_layout
from topology.layout.build import build
from topology.render.artifacts import render_artifacts
from topology.render.files import write_all
from topology.render.switches import render_switch_configs

init_plugin_loader()


def _inventory(layout, tmp_path):
    write_all(render_artifacts(layout, tmp_path / "out", tmp_path / "inv"))
    loader = DataLoader()
    im = InventoryManager(loader=loader, sources=[str(tmp_path / "inv")])
    return im, VariableManager(loader=loader, inventory=im)


def _rendered(layout, tmp_path) -> dict[str, set[str]]:
    files = render_switch_configs(layout, tmp_path / "render")
    out: dict[str, set[str]] = {}
    for path in files:
        if path.parent.name != "subnet-manager":
            out.setdefault(path.parent.name, set()).add(path.name)
    return out


@pytest.mark.parametrize("layout_of", [
    lambda: stack_layout("lab"),
    lambda: stack_layout("dgx-h100-ib"),
    lambda: build(spec_with("lab", compute_fabric={"switch_os": "sonic"})),
], ids=["lab", "dgx-h100-ib", "lab-compute-on-sonic"])
def test_ethernet_switches_are_exactly_the_rendered_ones_with_their_os(layout_of, tmp_path):
    layout = layout_of()
    im, vm = _inventory(layout, tmp_path)
    rendered = _rendered(layout, tmp_path)
    group = {h.name for h in im.groups["ethernet_switches"].get_hosts()}
    assert group == set(rendered)
    for name, files in rendered.items():
        hv = vm.get_vars(host=im.get_host(name))
        want = "sonic" if files == {"config_db.json", "frr.conf"} else "cumulus"
        assert files in ({"startup.yaml"}, {"config_db.json", "frr.conf"})
        assert hv["superpod_switch_os"] == want, name
        assert hv["ansible_host"], f"{name}: no OOB address to reach it on"


def test_infiniband_switches_are_not_pushed_to(tmp_path):
    layout = stack_layout("dgx-h100-ib")
    im, vm = _inventory(layout, tmp_path)
    ib = [h for g in ("leaf_switches", "spine_switches") for h in im.groups[g].get_hosts()]
    assert ib, "the IB pod has IB leaves and spines"
    group = set(im.groups["ethernet_switches"].get_hosts())
    for host in ib:
        assert host not in group
        assert vm.get_vars(host=host)["superpod_switch_os"] is None
    assert group, "its storage, in-band and OOB switches are Ethernet"


def test_site_runs_switch_fabric_on_ethernet_switches_with_become(tmp_path):
    """One play per rollout batch (canary, switch_rollout_1..6, then any switch in no batch): each
    with become, no facts, and stopping the whole run at the first failure; over the lab's
    inventory they take every Ethernet switch exactly once."""
    plays = yaml.safe_load((ROOT / "site.yml").read_text())
    switch_plays = [p for p in plays if any((r.get("role") if isinstance(r, dict) else r) == "switch_fabric"
                                            for r in p.get("roles", []))]
    assert len(switch_plays) == 8
    for play in switch_plays:
        assert play["become"] is True
        assert play["gather_facts"] is False  # a switch's Python may be missing or old: the role needs no facts
        # a push stops the run at the first failure; a drift run (check mode) reports every switch
        assert play["max_fail_percentage"] == "{{ 0 if not ansible_check_mode else 100 }}"
        assert "strategy" not in play  # linear: a batch's pushes, then its gates, in step
        [role] = [r for r in play["roles"] if r["role"] == "switch_fabric"]
        assert role["tags"] == ["switch_fabric"]
    im, _ = _inventory(stack_layout("lab"), tmp_path)
    taken = [h.name for play in switch_plays for h in im.get_hosts(play["hosts"])]
    assert sorted(taken) == sorted(h.name for h in im.groups["ethernet_switches"].get_hosts())
