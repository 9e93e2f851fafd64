"""The switch rollout batches (topology/render/rollout.py, inventory groups switch_rollout_<n>)
checked against the plan's cabling, not against the batching rule: whatever a device is cabled
to for redundancy must never be changed all at once.

- the two ends of an in-band peer link (an MLAG pair) are never in one batch;
- a device cabled to two or more switches of a higher tier of one fabric (a node's bond
  members or rails, a leaf's spines, a spine's cores, an OOB switch's aggregation pair) never has
  all of them in one batch;
- the spines of a three-tier block (the plan's spine group) are never all in one batch;
- every switch `superpod plan` renders a configuration for is in exactly one batch, and the
  batches run tier by tier.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
import yaml

from tests.conftest import STACKS, stack_layout
from tests.e2e.labpod import plan, superpod
from topology.render import rollout
from topology.render.inventory import ETHERNET_SWITCHES, render_inventory


def _inventory_batches(layout, tmp_path) -> tuple[dict[str, str], dict]:
    files = render_inventory(layout, tmp_path)
    doc = yaml.safe_load(files[tmp_path / "hosts.yml"])["all"]["children"]
    where = {}
    for group in rollout.BATCHES:
        for host in (doc[group] or {}).get("hosts") or {}:
            assert host not in where, f"{host} in {where.get(host)} and {group}"
            where[host] = group
    return where, doc


@pytest.mark.parametrize("stack", STACKS)
def test_batches_never_take_down_what_backs_a_device_up(stack, tmp_path):
    layout = stack_layout(stack)
    where, doc = _inventory_batches(layout, tmp_path)
    switches = set((doc[ETHERNET_SWITCHES] or {}).get("hosts") or {})
    assert set(where) == switches  # every rendered switch, once
    assert doc[rollout.CANARY_GROUP] == {}  # filled by `superpod apply --canary` only

    by_name = layout.by_name
    tier_of = {name: rollout.tier(by_name[name].role) for name in switches}
    pairs = [(lk.a_device, lk.b_device) for lk in layout.links if lk.tier == "inband-peer"]
    for a, b in pairs:
        assert where[a] != where[b], f"{stack}: MLAG pair {a}, {b} both in {where[a]}"

    upstream: dict[tuple[str, str], set[str]] = defaultdict(set)
    for lk in layout.links:
        if lk.tier == "inband-peer":
            continue
        for here, there in ((lk.a_device, lk.b_device), (lk.b_device, lk.a_device)):
            if there in switches and (here not in switches or tier_of[there] > tier_of[here]):
                upstream[(here, lk.fabric)].add(there)
    checked = 0
    for (device, fabric), ups in upstream.items():
        if len(ups) >= 2:
            checked += 1
            assert len({where[u] for u in ups}) > 1, f"{stack}: all of {device}'s {fabric} uplinks {sorted(ups)} " \
                                                    f"in {where[next(iter(ups))]}"
    assert checked  # the property was exercised on this pod

    blocks: dict[int, list[str]] = defaultdict(list)
    for d in layout.devices:
        if d.role == "spine" and d.block is not None and d.name in switches:
            blocks[d.block].append(d.name)
    for block, spines in blocks.items():
        if len(spines) >= 2:
            assert len({where[s] for s in spines}) > 1, f"{stack}: every spine of block {block} in one batch"

    order = [rollout.BATCHES.index(where[n]) // rollout.SIDES for n in switches]
    assert all(tier_of[n] == i for n, i in zip(switches, order, strict=True))  # a batch holds one tier


def test_an_mlag_pod_splits_each_pair_and_the_lab_has_both_sides(tmp_path):
    """roce-1k's in-band SU pairs are cabled with peer links (the plan's pairs): some exist."""
    layout = stack_layout("roce-1k")
    assert any(lk.tier == "inband-peer" for lk in layout.links)
    where, _ = _inventory_batches(stack_layout("lab"), tmp_path)
    assert where["su01-inband-a"] != where["su01-inband-b"]
    assert where["su01-leaf-rail0"] != where["su01-leaf-rail1"]


def test_a_canary_that_is_no_ethernet_switch_is_refused_before_anything_runs(tmp_path):
    plan("lab")
    proc = superpod("apply", "--stack", "lab", "--canary", "su01-node01", "--runs-dir", str(tmp_path), timeout=120)
    assert proc.returncode == 2
    assert "--canary: su01-node01 is not an Ethernet switch" in " ".join(proc.stdout.split() + proc.stderr.split())
    assert not list(tmp_path.rglob("*-apply"))  # no run was started
