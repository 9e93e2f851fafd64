"""Router-ids from a fixed per-switch position: growing a pod within its planned end state
(`max_scalable_units`) keeps every existing switch's BGP router-id, so an expansion does not
reset the sessions of the switches already running (a changed router-id restarts BGP)."""

from __future__ import annotations

import pytest

from tests.conftest import spec_with
from topology.layout.build import build
from topology.render.switches.build import iter_intents

GROWTH = [
    ("roce-1k", 8, 9, {}),  # the case: oob-agg-05 moved to a new rack's lower /31
    ("roce-1k", 4, 8, {}),
    ("dgx-h100-ib", 4, 8, {}),
    ("lab", 1, 2, {}),
    ("roce-1k", 4, 5, {"management": {"inband": {"border_uplinks": 0}}}),  # the in-band cores on OOB sessions only
]


def _router_ids(stack: str, sus: int, end_state: int, changes: dict) -> dict[str, str]:
    layout = build(spec_with(stack, scalable_units=sus, max_scalable_units=end_state, **changes))
    return {sw.name: sw.bgp.router_id for sw in iter_intents(layout) if sw.bgp}


@pytest.mark.parametrize(("stack", "sus", "end_state", "changes"), GROWTH)
def test_growth_keeps_every_existing_switchs_router_id(stack, sus, end_state, changes):
    before = _router_ids(stack, sus, end_state, changes)
    after = _router_ids(stack, sus + 1, end_state, changes)
    kept = before.keys() & after.keys()
    assert len(kept) == len(before) and len(after) > len(before)
    moved = {name: (before[name], after[name]) for name in kept if before[name] != after[name]}
    assert not moved


@pytest.mark.parametrize("stack", ["lab", "roce-1k"])
def test_router_ids_are_unique(stack):
    ids = _router_ids(stack, *{"lab": (1, 2), "roce-1k": (4, 4)}[stack], {})
    assert len(set(ids.values())) == len(ids)
