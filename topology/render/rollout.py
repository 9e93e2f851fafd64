"""The switch rollout: which switches `switch_fabric` may change together, from the plan.

A push can take a switch down for a while (SONiC's `config reload` restarts every service; a
refused or wrong configuration cuts it off until it is rolled back). So switches that back each
other up never go together: the batches run tier by tier (access, then aggregation, then core:
the smallest blast radius first) and, within a tier, side A before side B, where a switch's side
is its place among the switches that stand in for it:

- an in-band pair (MLAG / EVPN-MH) and the in-band cores: the pair's side (pairing.side);
- rail leaves: the rail's parity, so a node never loses all its rails at once;
- spines of a group (a three-tier block), storage spines, in-band spines, cores, OOB
  aggregation switches and single-homed leaves: their position's parity, so never all of a
  group at once (a group of one has nothing to fall back on either way).

Each batch is an inventory group `switch_rollout_<n>` (site.yml runs one play per batch, with a
health gate after each push, stopping at the first failure); the number of batches does not depend on the
pod's size, so site.yml stays static, and `--limit` only ever removes switches from a batch.
"""

from __future__ import annotations

from topology.layout.model import Device
from topology.render.switches.pairing import side as pair_side

# The tiers, in rollout order: access switches first (a wrong configuration there costs the
# fewest hosts), the tiers that carry whole fabrics last.
TIERS = (
    ("leaf", "storage_leaf", "inband_switch", "oob_switch"),
    ("spine", "storage_spine", "inband_spine", "oob_aggregation"),
    ("core", "inband_core"),
)
SIDES = 2
BATCH_GROUP = "switch_rollout_{}"
BATCHES = tuple(BATCH_GROUP.format(n) for n in range(1, len(TIERS) * SIDES + 1))
CANARY_GROUP = "switch_canary"  # empty in the plan; `superpod apply --canary` fills it


def tier(role: str) -> int:
    for i, roles in enumerate(TIERS):
        if role in roles:
            return i
    raise ValueError(f"{role}: no rollout tier for this switch role")


def sides(switches: list[Device]) -> dict[str, int]:
    """Each switch's side (0: A, 1: B)."""
    out: dict[str, int] = {}
    groups: dict[tuple, list[Device]] = {}
    for d in switches:
        if d.role in ("inband_switch", "inband_core"):
            out[d.name] = pair_side(d)
        elif d.rail is not None:
            out[d.name] = d.rail % SIDES
        else:  # alternate within the switches of one role, SU and block (a spine group)
            groups.setdefault((d.role, d.su or 0, d.block or 0), []).append(d)
    for members in groups.values():
        for i, d in enumerate(sorted(members, key=lambda d: d.slot)):
            out[d.name] = i % SIDES
    return out


def batches(switches: list[Device]) -> dict[str, list[str]]:
    """Every batch group (empty ones too: site.yml names each) with its switches, in order."""
    side = sides(switches)
    out: dict[str, list[str]] = {g: [] for g in BATCHES}
    for d in switches:
        out[BATCHES[tier(d.role) * SIDES + side[d.name]]].append(d.name)
    return out
