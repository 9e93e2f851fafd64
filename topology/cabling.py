"""What each cable is: its length from the rack positions of its ends, the media its lane rate
and length allow, and the parts to order for it (a copper/AOC assembly, or a transceiver at
each end and a fiber between them). Catalog facts (`media`, `optics`) carry their sources."""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import ceil

from topology.catalog import Catalog
from topology.errors import SpecError
from topology.model import Device, Link, Rack
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
    native_gbps: int  # the cage's speed unsplit: a breakout end shares one module
    ports_per_module: int


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
            return End(sw.uplink_form or sw.form, sw.uplink_lane_gbps or sw.lane_gbps, sw.uplink_speed_gbps, 1)
        if link.tier == "device-oob" and device.name == link.a_device:  # the switch's own mgmt port
            return End("RJ45", 1, 1, 1)
        native = sw.cage_speed_gbps
        per_cage = sw.lanes.get(link.speed_gbps, 1)
        native_port = native // sw.ports_per_cage
        shared = per_cage if link.speed_gbps < native_port else 1
        return End(sw.form, sw.lane_gbps, native if shared > 1 else link.speed_gbps, shared)
    if link.speed_gbps <= 10:  # BMC, PDU and CDU management ports
        return End("RJ45", 1, link.speed_gbps, 1)
    if model in cat.nodes and link.tier == "node-leaf":
        return End(cat.nodes[model].compute_nic_form, 100, link.speed_gbps, 1)
    return End("QSFP112", 100, link.speed_gbps, 1)  # ConnectX-7 storage/in-band and appliance ports


def choose_media(cat: Catalog, link: Link, a: End, b: End, length: float) -> str:
    lane = min(a.lane_gbps, b.lane_gbps)
    if lane == 1:
        options = [m for m in cat.media if m.media == "CAT6"]
    else:
        options = [m for m in cat.media if m.lane_gbps == lane]
    for m in options:
        if length <= m.reach_m:
            return m.media
    raise SpecError(
        "racks.row_pitch_m",
        f"{link.a_device} {link.a_port} -> {link.b_device} {link.b_port}: a {length:g} m run at "
        f"{link.speed_gbps}G is beyond every medium's reach ({options[-1].reach_m if options else 0} m)",
    )


def optic(cat: Catalog, end: End, media: str) -> str:
    for o in cat.optics:
        if o.form == end.form and o.speed_gbps == end.native_gbps and o.media == media:
            return o.part
    return f"generic-{end.native_gbps}G-{media}-{end.form}"


def parts(cat: Catalog, lk: Link, end_a: End, end_b: End, length: float) -> tuple[str, str, str, str]:
    """(media, a end's part, b end's part, cable) for a link of `length` between two ends."""
    media = choose_media(cat, lk, end_a, end_b, length)
    if media in OPTICAL:
        a_part, b_part = optic(cat, end_a, media), optic(cat, end_b, media)
        cable = f"MPO-12-{media}-{length:g}m" if lk.speed_gbps >= 100 else f"LC-{media}-{length:g}m"
        return media, a_part, b_part, cable
    split = max(end_a, end_b, key=lambda e: e.ports_per_module)  # a breakout end: one splitter cable
    if split.ports_per_module > 1:
        other = end_b if split is end_a else end_a
        assembly = (f"{media}-{split.native_gbps}G-{split.form}-to-{split.ports_per_module}x"
                    f"{lk.speed_gbps}G-{other.form}-{length:g}m")
    else:
        assembly = f"{media}-{lk.speed_gbps}G-{end_a.form}-{end_b.form}-{length:g}m"
    return media, assembly, assembly, assembly


def with_cables(spec: PodSpec, cat: Catalog, links: list[Link], devices: list[Device], racks: list[Rack]) -> list[Link]:
    by_name = {d.name: d for d in devices}
    pos = {r.name: (r.row, r.position) for r in racks}
    # A pod has few kinds of cable end and of run: both lookups are memoized (at 100k GPUs,
    # working each of ~300k links out afresh was over half the build)
    ends: dict[tuple, End] = {}
    chosen: dict[tuple, tuple[str, str, str, str]] = {}
    out = []
    for lk in links:
        a, b = by_name[lk.a_device], by_name[lk.b_device]
        length = run_length(spec, a, b, pos)
        if a.rack == b.rack:
            length_class = "in_rack"
        elif pos[a.rack][0] == pos[b.rack][0]:
            length_class = "same_row"
        else:
            length_class = "cross_row"
        # end_of reads the device's model and role, the link's tier and speed, and which end it is
        key_a = (a.model, a.role, lk.tier, lk.speed_gbps, True)
        key_b = (b.model, b.role, lk.tier, lk.speed_gbps, b.name == lk.a_device)
        end_a = ends.get(key_a) or ends.setdefault(key_a, end_of(cat, a, lk))
        end_b = ends.get(key_b) or ends.setdefault(key_b, end_of(cat, b, lk))
        key = (end_a, end_b, length, lk.speed_gbps)
        if key not in chosen:
            chosen[key] = parts(cat, lk, end_a, end_b, length)
        media, a_part, b_part, cable = chosen[key]
        out.append(
            replace(
                lk,
                length_class=length_class,
                media=media,
                length_m=length,
                a_part=a_part,
                b_part=b_part,
                cable_part=cable,
                a_shared=end_a.ports_per_module,
                b_shared=end_b.ports_per_module,
            )
        )
    return out
