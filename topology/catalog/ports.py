"""Port, cage, lane and breakout arithmetic: the one home of it (layout/ stages ask here).

A switch model (catalog) has cages; a cage runs at one speed, split into `lanes[speed]` ports
(a breakout); trunks between switches run unsplit at the slower end's native speed. Sizing asks
whether groups of ports fit the cages, how uplinks split by an oversubscription ratio, and how a
leaf set's uplinks spread evenly over spines; placing asks which cages a switch's cabled ports
already hold."""

from __future__ import annotations

from math import ceil, gcd

from topology.catalog import SwitchModel
from topology.errors import SpecError
from topology.spec import ratio


def smallest_divisor_at_least(n: int, lo: int) -> int | None:
    """Smallest d with d | n and d >= lo, or None when lo > n."""
    for d in range(max(lo, 1), n + 1):
        if n % d == 0:
            return d
    return None



def split_ports(
    sw: SwitchModel, down_speed: int, up_speed: int, oversubscription: str, down_used: int, field: str, what: str,
    at_least: int | None = None,
) -> tuple[int, int]:
    """(first uplink port index at `up_speed`, uplinks) for a leaf with `down_used` host ports at
    `down_speed`. The ratio is of bandwidth (down Gb/s : up Gb/s); host ports fill the bottom
    cages, uplinks run unsplit at `up_speed` in the top cages. With `at_least`, the ratio is a
    ceiling: uplinks round up to a multiple of `at_least` (the spines each leaf must reach)."""
    d, u = ratio(oversubscription)
    up_bw = down_used * down_speed * u
    if at_least is not None:
        up = ceil(up_bw / (d * up_speed) / at_least) * at_least
    elif up_bw % (d * up_speed):
        works = next(n for n in range(down_used + 1, down_used + d * up_speed + 1)
                     if n * down_speed * u % (d * up_speed) == 0)
        raise SpecError(
            field,
            f"{down_used} x {down_speed}G down at {oversubscription} (down:up Gb/s) need "
            f"{up_bw / d / up_speed:g} uplinks of {up_speed}G: not a whole number of ports "
            f"(e.g. {works} down ports: nodes_per_su {works})",
        )
    else:
        up = up_bw // (d * up_speed)
    if not cages_fit(sw, down_speed, up_speed, down_used, up):
        # from the leaf's radix down, not from down_used: a hostile count (10**12) must not loop
        most = next((n for n in range(min(down_used - 1, sw.radix(down_speed)), 0, -1)
                     if cages_fit(sw, down_speed, up_speed, n, ceil(n * down_speed * u / (d * up_speed)))), 0)
        raise SpecError(
            what,
            f"{down_used} x {down_speed}G down + {up} x {up_speed}G uplinks at {oversubscription} exceed the "
            f"leaf's {sw.radix(up_speed)} ports ({sw.cages} {sw.form} cages; at most {most} down)",
        )
    return sw.radix(up_speed) - up, up



def cages_fit(sw: SwitchModel, down_speed: int, up_speed: int, down: int, up: int) -> bool:
    """`down` host ports at `down_speed` and `up` uplinks at `up_speed` fit the switch's cages and port limit."""
    return ports_fit(sw, (down, down_speed), (up, up_speed))


def cages_fit_peers(sw: SwitchModel, speed: int, up_speed: int, peer_speed: int, hosts: int, up: int,
                    peers: int) -> bool:
    """As cages_fit, with `peers` links at `peer_speed` to the switch's pair (in-band MLAG)."""
    return ports_fit(sw, (hosts, speed), (up, up_speed), (peers, peer_speed))


def ports_fit(sw: SwitchModel, *groups: tuple[int, int]) -> bool:
    """Groups of (ports, speed) fit: each group fills whole cages of its own breakout (a cage runs
    at one speed), and the model's port limit (a switch ASIC's logical ports) holds."""
    cages = sum(ceil(ports / sw.lanes[speed]) for ports, speed in groups)
    return cages <= sw.cages and (sw.max_ports is None or sum(p for p, _ in groups) <= sw.max_ports)



def most_down(sw: SwitchModel, down_speed: int, up_speed: int, d: int, u: int) -> int:
    """Most host ports a leaf takes at d:u (bandwidth) with a whole number of unsplit uplinks."""
    for n in range(sw.radix(down_speed), 0, -1):
        up = n * down_speed * u
        if up % (d * up_speed) == 0 and cages_fit(sw, down_speed, up_speed, n, up // (d * up_speed)):
            return n
    return 0



def trunk_speed(a: SwitchModel, b: SwitchModel) -> int:
    """Switch-to-switch links run unsplit: at the slower end's native port speed (the faster
    end breaks out only when the two models differ); only host-facing ports follow the NIC."""
    return min(a.native_gbps, b.native_gbps)


def switch_speed(switch: SwitchModel, speed: int, field: str, model: str) -> int:
    radix = switch.radix(speed)
    if not radix:
        raise SpecError(
            field, f"{model} has no {speed}G ports (speeds: {', '.join(f'{s}G' for s in sorted(switch.lanes))})"
        )
    return radix



def two_tier_spines(uplinks: list[int], radix: int, min_spines: int, field: str) -> int:
    """Spine count for a two-tier leaf set: divides every leaf's uplinks, fits the ports."""
    need = max(min_spines, ceil(sum(uplinks) / radix))
    common = 0
    for u in uplinks:
        common = gcd(common, u)
    spines = smallest_divisor_at_least(common, need)
    if spines is None:
        raise SpecError(
            field,
            f"leaf uplinks ({', '.join(map(str, sorted(set(uplinks))))}) cannot be "
            f"spread evenly over {need} or more spines of {radix} ports",
        )
    return spines


_CAGES_OF: dict[int, tuple[SwitchModel, dict[str, set[int]]]] = {}  # id(model) -> (model, port -> cages)


def _cages_of(sw: SwitchModel) -> dict[str, set[int]]:
    """Each port name of the model, at every speed it supports, and its cage (0-based); built once
    per model (the catalog is loaded once; the model is kept so its id stays its own)."""
    hit = _CAGES_OF.get(id(sw))
    if hit is None:
        names: dict[str, set[int]] = {}
        for speed, lanes in sw.lanes.items():
            for i in range(sw.radix(speed)):
                names.setdefault(sw.port(i, speed), set()).add(i // lanes)
        hit = _CAGES_OF[id(sw)] = (sw, names)
    return hit[1]


def cages_used(sw: SwitchModel, ports: set[str]) -> set[int]:
    """The cages (0-based) that the switch's cabled `ports` sit in, whatever their speed."""
    cages_of = _cages_of(sw)
    return set().union(*(cages_of[p] for p in ports if p in cages_of))


def cage_of(sw: SwitchModel, port: str) -> int:
    """The cage (0-based) a port name sits in: a name is one cage's at every speed it runs
    (swp3 and its breakout legs swp3s0.. are cage 2); tests/test_catalog_ports.py checks every packaged model."""
    (cage,) = _cages_of(sw)[port]
    return cage
