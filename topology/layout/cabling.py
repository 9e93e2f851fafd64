"""What each cable is: its length from the rack positions of its ends, the media its lane rate
and length allow, and the parts to order for it (a copper/AOC assembly, or a transceiver at
each end and a fiber between them). Catalog facts (`media`, `optics`) carry their sources."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from math import ceil

from topology.catalog import Catalog, Optic
from topology.errors import SpecError
from topology.layout.model import Device, Link, Rack
from topology.spec import PodSpec

# Lengths cables are sold in (m); a run is rounded up to the next one.
STOCK_LENGTHS = (0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 7, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 100, 150, 200, 300, 500)
RACK_UNIT_M = 0.0445
SERVICE_LOOP_M = 1.0  # slack at a cable inside one rack
OPTICAL = ("MMF", "SMF")


@dataclass(frozen=True)
class End:
    form: str  # cage form factor (OSFP, QSFP112, QSFP28, RJ45)
    lane_gbps: int
    native_gbps: int  # the module's speed: a switch cage's whole speed, whatever its ports run at
    ports_per_module: int  # links that share this end's module (a twin-port cage's ports, a breakout's legs)
    switch: bool = False  # a switch cage: it takes switch optics (NVIDIA's adapter optics are not for switches)
    optical_lane_gbps: int = 0  # its transceivers' optical lanes (0: as lane_gbps)

    @property
    def optical_lane(self) -> int:
        return self.optical_lane_gbps or self.lane_gbps


@dataclass(frozen=True)
class Choice:
    media: str
    a_part: str
    b_part: str
    cable: str
    count: int = 1  # cables per link
    shared: int = 1  # links per cable


def stock_length(metres: float) -> float:
    for length in STOCK_LENGTHS:
        if metres <= length + 1e-9:
            return float(length)
    return float(ceil(metres / 100) * 100)


def run_length(spec: PodSpec, a: Device, b: Device, pos: dict[str, tuple[int, int]]) -> float:
    """Metres of cable between two devices: within a rack by units, between racks up to the
    overhead tray at each end, along the row and across rows, plus slack."""
    r = spec.racks
    if a.rack == b.rack:
        units = abs((a.rack_unit or 1) - (b.rack_unit or 1))
        return stock_length(units * RACK_UNIT_M + SERVICE_LOOP_M)
    (row_a, pos_a), (row_b, pos_b) = pos[a.rack], pos[b.rack]
    path = 2 * r.cable_tray_drop_m + abs(pos_a - pos_b) * r.rack_width_m + abs(row_a - row_b) * r.row_pitch_m
    return stock_length(path * (1 + r.cable_slack_percent / 100))


def end_of(cat: Catalog, device: Device, link: Link) -> End:
    """The cage a link's end plugs into."""
    model = device.model
    if model in cat.switches:
        sw = cat.switches[model]
        if link.tier == "oob-agg" and device.role == "oob_switch":  # the SN2201's uplink cages
            return End(sw.uplink_form or sw.form, sw.uplink_lane_gbps or sw.lane_gbps, sw.uplink_speed_gbps, 1, True)
        if link.tier == "device-oob" and device.name == link.a_device:  # the switch's own mgmt port
            return End("RJ45", 1, 1, 1)
        # one module fills the cage and serves every port of it: a twin-port OSFP's two 400G
        # ports, a breakout's legs
        legs = sw.lanes.get(link.speed_gbps, 1)
        if sw.form == "QSFP-DD" and link.speed_gbps < sw.lane_gbps:
            # legs slower than the cage's lanes (SN5400 at 25G): a QSFP28 module, 4 x 25G NRZ
            return End("QSFP28", link.speed_gbps, link.speed_gbps * legs, legs, True)
        return End(sw.form, sw.lane_gbps, sw.cage_speed_gbps, legs, True, sw.optical_lane_gbps or 0)
    if link.speed_gbps <= 10:  # BMC, PDU and CDU management ports
        return End("RJ45", 1, link.speed_gbps, 1)
    if model in cat.nodes and link.tier == "node-leaf":
        node = cat.nodes[model]
        per_cage = node.compute_nics_per_cage  # a twin-port cage: one module for two NICs
        return End(node.compute_nic_form, 100, link.speed_gbps * per_cage, per_cage)
    return End("QSFP112", 100, link.speed_gbps, 1)  # ConnectX-7 storage/in-band and appliance ports


HOST_CAGE_LANES = 4  # ConnectX-7 / BlueField-3 cages: 4 electrical lanes


def _plug_form(end: End, lane: int) -> str:
    """The form a cable end or module takes in this cage at `lane`: a QSFP112 cage runs 25G and
    50G lanes with QSFP28 and QSFP56 plugs."""
    if end.form == "QSFP112" and lane in (25, 50):
        return "QSFP28" if lane == 25 else "QSFP56"
    return end.form


def assembly_lane(a: End, b: End, speed: int) -> int | None:
    """The electrical lane rate a direct cable (DAC, ACC, AOC) would run at, or None where its
    ends cannot share one: a switch's lanes are fixed, a host NIC also runs slower lanes when its
    four carry the port (ConnectX-7 at 100G on 4 x 25G, 200G on 4 x 50G; not 400G on 50G lanes)."""
    if a.lane_gbps == b.lane_gbps:
        return a.lane_gbps
    hi, lo = (a, b) if a.lane_gbps > b.lane_gbps else (b, a)
    return lo.lane_gbps if not hi.switch and speed <= lo.lane_gbps * HOST_CAGE_LANES else None


def choose_media(cat: Catalog, link: Link, a: End, b: End, length: float, optical_only: bool = False) -> str:
    if min(a.lane_gbps, b.lane_gbps) == 1:
        options = [m for m in cat.media if m.media == "CAT6"]
    else:
        # a copper or AOC assembly needs one electrical lane rate at both ends and splits at one
        # end only (shared cages at both ends, a twin-port cage's ports to different switches,
        # need a transceiver at each end); optics need one optical lane rate
        lane = assembly_lane(a, b, link.speed_gbps)
        direct = lane is not None and min(a.ports_per_module, b.ports_per_module) == 1 and not optical_only and all(
            e.switch or e.ports_per_module == 1 for e in (a, b))  # a host's twin-port cage takes its module
        optical = min(a.optical_lane, b.optical_lane)
        options = [m for m in cat.media if direct and m.media not in OPTICAL and m.lane_gbps == lane]
        # a reach only switch optics have (FR4) where one serves each end at this speed (CWDM4
        # takes no splitter, so a split cage's slower legs stay within DR4's reach)
        options += [m for m in cat.media if m.media in OPTICAL and m.lane_gbps == optical and (
            not m.switches_only or a.switch and b.switch
            and all(optic_pair(cat, a, b, m.media, link.speed_gbps, optical, min(length, m.reach_m))))]
    for m in options:
        if length <= m.reach_m:
            return m.media
    raise SpecError(
        "racks.row_pitch_m",
        f"{link.a_device} {link.a_port} -> {link.b_device} {link.b_port}: a {length:g} m run at "
        f"{link.speed_gbps}G is beyond every medium's reach ({options[-1].reach_m if options else 0} m)",
    )


def optic(cat: Catalog, end: End, media: str, speed: int, lane: int, length: float,
          connector: str | None = None) -> Optic | None:
    """The transceiver for this end: a switch cage's module at the cage's speed, a host's at the
    link's speed (or a faster module that runs it on a splitter leg), the first that reaches
    (with `connector`: the first of that connector)."""
    form = _plug_form(end, lane)
    for o in cat.optics:
        if o.form != form or o.media != media or o.use not in ("any", "switch" if end.switch else "host"):
            continue
        if (o.reach_m is not None and length > o.reach_m) or (connector and o.connector != connector):
            continue
        if speed < o.connector_gbps and not o.splitter:  # a slower link needs a splitter fibre
            continue
        whole_cage = end.switch or end.ports_per_module > 1  # one module serves the cage's ports
        if (whole_cage and o.speed_gbps == end.native_gbps) or (
            not whole_cage and (o.speed_gbps == speed or speed in o.also_gbps)
        ):
            return o
    return None


def optic_pair(cat: Catalog, a: End, b: End, media: str, speed: int, lane: int,
               length: float) -> tuple[Optic | None, Optic | None]:
    """Both ends' transceivers on one optical interface (an MPO DR4 never meets a duplex-LC FR4):
    the first connector both ends have a part for, else what each end has on its own."""
    alone = (optic(cat, a, media, speed, lane, length), optic(cat, b, media, speed, lane, length))
    for connector in dict.fromkeys(o.connector for o in alone if o):
        pair = (optic(cat, a, media, speed, lane, length, connector),
                optic(cat, b, media, speed, lane, length, connector))
        if pair[0] and pair[1]:
            return pair
    return alone


def fibre(
    cat: Catalog, media: str, connector: str, connector_gbps: int, speed: int, length: float
) -> tuple[str, int, int]:
    """(part, fibres per link, links per fibre): one straight fibre per connector the link fills
    (an 800G twin-port link: two), or a 1:n splitter when the link takes part of a connector."""
    if speed >= connector_gbps:
        split, count = 1, speed // connector_gbps
    else:
        split, count = connector_gbps // speed, 1
    for f in cat.fibres:
        if (f.media, f.connector, f.split) == (media, connector, split):
            return f.part_for(length), count, split
    kind = f"1to{split}-" if split > 1 else ""
    return f"generic-{connector}-{kind}{media}-{length:g}m", count, split


def parts(cat: Catalog, lk: Link, end_a: End, end_b: End, length: float, optical_only: bool = False) -> Choice:
    """The media, each end's part and the cables for a link of `length` between two ends."""
    media = choose_media(cat, lk, end_a, end_b, length, optical_only)
    if media in OPTICAL:
        lane = min(end_a.optical_lane, end_b.optical_lane)
        o_a, o_b = optic_pair(cat, end_a, end_b, media, lk.speed_gbps, lane, length)
        known = [o for o in (o_a, o_b) if o]
        connector = known[0].connector if known else "MPO-12"
        per_connector = max((o.connector_gbps for o in known), default=lk.speed_gbps)
        cable, count, shared = fibre(cat, media, connector, per_connector, lk.speed_gbps, length)

        def part(o: Optic | None, end: End) -> str:
            return o.part if o else f"generic-{end.native_gbps}G-{media}-{_plug_form(end, lane)}"

        return Choice(media, part(o_a, end_a), part(o_b, end_b), cable, count, shared)
    lane = assembly_lane(end_a, end_b, lk.speed_gbps) or 1
    split = max(end_a, end_b, key=lambda e: e.ports_per_module)  # a breakout end: one splitter cable
    form_a, form_b = _plug_form(end_a, lane), _plug_form(end_b, lane)
    if split.ports_per_module > 1:
        other = end_b if split is end_a else end_a
        key = (media, _plug_form(split, lane), split.ports_per_module, lk.speed_gbps, _plug_form(other, lane))
        known = next((x for x in cat.assemblies if (x.media, x.form, x.legs, x.leg_gbps, x.leg_form) == key), None)
        assembly = known.part_for(length) if known else (
            f"{media}-{split.native_gbps}G-{key[1]}-to-{key[2]}x{key[3]}G-{key[4]}-{length:g}m")
    else:
        assembly = f"{media}-{lk.speed_gbps}G-{form_a}-{form_b}-{length:g}m"
    return Choice(media, assembly, assembly, assembly, 1, split.ports_per_module)


def _cage_names(cat: Catalog, model: str, speed: int) -> dict[str, int]:
    """Each switch port's cage (its name at `speed` back to the cage it was made from)."""
    sw = cat.switches[model]
    per_cage = sw.lanes.get(speed, 1)
    return {sw.port(i, speed): i // per_cage for i in range(sw.radix(speed))}


def _split_end(end_a: End, end_b: End) -> int:
    """Which end (0: a, 1: b) is the one split switch cage of a link, whose module or splitter it
    shares with the cage's other links with a direct cable in mind; -1 for none or both (split
    switch cages at both ends always take optics). The far end may be a host's twin-port cage: it
    takes optics, and so do the other links of that switch cage."""
    split = [k for k, end in enumerate((end_a, end_b)) if end.switch and end.ports_per_module > 1]
    return split[0] if len(split) == 1 else -1


def _per_cage(cat: Catalog, links: list[Link], groups: dict[tuple, list[tuple]],
              kinds: list[tuple]) -> Iterator[tuple[int, int, tuple[float, str], bool]]:
    """One choice per split cage (`groups`: each cage's links as (index, run, kind number)): a
    splitter cable is one part of one length, so the cage's links share the media and the longest
    run (length and class); links whose far ends differ (a node and a UFM on one twin-port cage)
    or that no direct cable reaches take optics, each its own fibre. Yields each link's index,
    kind number, run and whether it takes optics only."""
    media: dict[tuple, str] = {}  # keyed by the kind of link (its ends and speed) and length
    for members in groups.values():
        if len(members) < 2:
            i, run, number = members[0]
            yield i, number, run, False
            continue
        i, longest, number = max(members, key=_run_length)
        direct = False
        # far ends by value, not by kind of link: a UFM's and a storage server's ends are alike
        if len({kinds[m[2]][3] for m in members}) == 1:
            key = (number, longest)
            if key not in media:
                media[key] = choose_media(cat, links[i], kinds[number][0], kinds[number][1], longest[0])
            direct = media[key] not in OPTICAL
        for i, run, number in members:
            yield (i, number, longest, False) if direct else (i, number, run, True)


def _run_length(member: tuple) -> float:
    return member[1][0]


# _with_cables builds each cabled Link positionally (dataclasses.replace was a tenth of a 100k-GPU
# build), in this order of Link's fields (tests/test_plan_speed_paths.py holds them to it).
CABLED_FIELDS = ("a_device", "a_port", "b_device", "b_port", "fabric", "tier", "speed_gbps", "slot", "length_class",
                 "media", "length_m", "a_part", "b_part", "cable_part", "a_shared", "b_shared", "cable_count",
                 "cable_shared")


def with_cables(spec: PodSpec, cat: Catalog, links: list[Link], devices: list[Device], racks: list[Rack]) -> list[Link]:
    try:
        return _with_cables(spec, cat, links, devices, racks)
    except SpecError as e:
        if e.field != "racks.row_pitch_m":
            raise
        raise SpecError(e.field, e.rule + _floor_plan_hint(spec, cat, links, devices, racks)) from None


MIN_ROW_PITCH_M = 2.4  # a 1.2 m deep rack and a 1.2 m aisle: no floor plan puts rows closer


def _fits(spec: PodSpec, pitch: float, *args) -> bool:
    trial = spec.model_copy(update={"racks": spec.racks.model_copy(update={"row_pitch_m": pitch})})
    try:
        _with_cables(trial, *args)
    except SpecError:
        return False
    return True


def _floor_plan_hint(spec: PodSpec, cat: Catalog, *args) -> str:
    """What to change when a run is out of reach (worked out on the refusal path only): the
    widest row pitch on a 0.1 m grid at which every run reaches, else the rows' length."""
    r = spec.racks
    lo, hi = round(MIN_ROW_PITCH_M * 10), int(r.row_pitch_m * 10 + 1e-6) - 1  # tenths of a metre
    if hi >= lo and _fits(spec, lo / 10, cat, *args):
        while lo < hi:  # runs only shorten with the pitch: bisect for the widest that fits
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if _fits(spec, mid / 10, cat, *args) else (lo, mid - 1)
        return f"; racks.row_pitch_m: {lo / 10:g} reaches (now {r.row_pitch_m:g})"
    if _fits(spec, 0.1, cat, *args):
        return (f"; no row pitch of {MIN_ROW_PITCH_M:g} m or more reaches across the rows: fewer, longer rows "
                f"(a larger racks.racks_per_row, now {r.racks_per_row}) or a longer-reach medium in the catalog")
    return (f"; the run is within a row: shorter rows (a smaller racks.racks_per_row, now {r.racks_per_row}) "
            "or a longer-reach medium in the catalog")


def _with_cables(spec: PodSpec, cat: Catalog, links: list[Link], devices: list[Device],
                 racks: list[Rack]) -> list[Link]:
    by_name = {d.name: d for d in devices}
    pos = {r.name: (r.row, r.position) for r in racks}
    # A pod has few kinds of link (its ends' models and roles, tier, speed) and of run (the racks,
    # or the units apart in one): ends, runs and parts are worked out once per kind and run, and
    # each link is two lookups (at 100k GPUs, working each of ~300k links out afresh was over
    # half the build)
    model_role: dict[tuple[str, str], int] = {}
    place = {d.name: (d.rack, d.rack_unit or 1, model_role.setdefault((d.model, d.role), len(model_role)))
             for d in devices}
    ends: dict[tuple, End] = {}
    far: dict[tuple, int] = {}  # a kind's (ends, speed) by value -> its number
    kind_of: dict[tuple, tuple] = {}  # -> number, split end (_split_end), its port -> cage names
    kinds: list[tuple] = []  # by number: its ends, speed, far number
    run_of: dict[tuple, tuple[float, str]] = {}  # -> length, length class
    runs: dict[tuple, tuple[float, str]] = {}  # one tuple per (length, class), whatever the racks
    groups: dict[tuple, list[tuple]] = {}  # a split switch cage -> its links' (index, run, kind number)
    keys: list[tuple | None] = []  # each link's (kind number, run, optics only) (a split cage's: once settled)
    for i, lk in enumerate(links):
        rack_a, unit_a, kind_a = place[lk.a_device]
        rack_b, unit_b, kind_b = place[lk.b_device]
        key = (None, abs(unit_a - unit_b)) if rack_a == rack_b else (rack_a, rack_b)
        run = run_of.get(key)
        if run is None:
            run = _run(spec, by_name[lk.a_device], by_name[lk.b_device], pos)
            run = run_of[key] = runs.setdefault(run, run)
        # end_of reads the device's model and role, the link's tier and speed, and which end it is
        kind = (kind_a, kind_b, lk.tier, lk.speed_gbps, lk.b_device == lk.a_device)
        number_split = kind_of.get(kind)
        if number_split is None:
            number_split = kind_of[kind] = _kind(cat, ends, far, kinds, by_name[lk.a_device], by_name[lk.b_device], lk)
        number, split_end, cage_of = number_split
        if split_end < 0:
            keys.append((number, run, False))
            continue
        dev, port = (lk.b_device, lk.b_port) if split_end else (lk.a_device, lk.a_port)
        groups.setdefault((dev, cage_of.get(port, -1)), []).append((i, run, number))
        keys.append(None)
    for i, number, run, optical_only in _per_cage(cat, links, groups, kinds):
        keys[i] = (number, run, optical_only)
    # parts() in link order, as each key first comes: a refusal names the link it always named
    tails: dict[tuple, tuple] = {}
    out = []
    for lk, key in zip(links, keys, strict=True):
        tail = tails.get(key)
        if tail is None:
            number, (length, length_class), optical_only = key
            end_a, end_b = kinds[number][:2]
            c = parts(cat, lk, end_a, end_b, length, optical_only)
            tail = tails[key] = (length_class, c.media, length, c.a_part, c.b_part, c.cable, end_a.ports_per_module,
                                 end_b.ports_per_module, c.count, c.shared)
        out.append(Link(lk.a_device, lk.a_port, lk.b_device, lk.b_port, lk.fabric, lk.tier, lk.speed_gbps, lk.slot,
                        *tail))
    return out


def _kind(cat: Catalog, ends: dict[tuple, End], far: dict[tuple, int], kinds: list[tuple], a: Device, b: Device,
          lk: Link) -> tuple[int, int, dict[str, int]]:
    """A new kind of link: its ends (one object per kind of end), its number, which end is a split
    switch cage and that cage's port -> cage names, and the number of its (ends, speed) by value."""
    key_a = (a.model, a.role, lk.tier, lk.speed_gbps, True)
    key_b = (b.model, b.role, lk.tier, lk.speed_gbps, b.name == lk.a_device)
    end_a = ends.get(key_a) or ends.setdefault(key_a, end_of(cat, a, lk))
    end_b = ends.get(key_b) or ends.setdefault(key_b, end_of(cat, b, lk))
    split_end = _split_end(end_a, end_b)
    cage_of = _cage_names(cat, (a, b)[split_end].model, lk.speed_gbps) if split_end >= 0 else {}
    kinds.append((end_a, end_b, lk.speed_gbps, far.setdefault((end_a, end_b, lk.speed_gbps), len(far))))
    return len(kinds) - 1, split_end, cage_of


def _run(spec: PodSpec, a: Device, b: Device, pos: dict[str, tuple[int, int]]) -> tuple[float, str]:
    """A run's length and length class."""
    if a.rack == b.rack:
        length_class = "in_rack"
    elif pos[a.rack][0] == pos[b.rack][0]:
        length_class = "same_row"
    else:
        length_class = "cross_row"
    return run_length(spec, a, b, pos), length_class
