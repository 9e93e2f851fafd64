"""Racks: placement by power and space, PDUs on A/B feeds, CDUs, and the OOB network.

Placement is positional like everything else: SU s always occupies the same rack
positions, pod-wide gear fills rows after the last SU row of the end state, so growing a
pod moves nothing. Nodes per rack follow the rack power budget and the node's draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import ceil, floor
from operator import attrgetter

from topology.catalog import Catalog
from topology.errors import SpecError
from topology.layout.model import Device, Link, Rack
from topology.layout.names import Names
from topology.spec import PodSpec

SU_NETWORK_ROLES = ("leaf", "storage_leaf", "inband_switch", "ufm")
PLACED_FIELDS = ("name", "role", "model", "su", "rack", "rail", "block", "power_kw", "rack_units", "slot", "rack_unit")
INFRA_ROLES = ("spine", "core", "storage_spine", "storage_leaf", "storage_server", "inband_spine", "inband_core",
               "inband_switch", "mgmt_node")  # pod-wide in-band switches: the services pair


@dataclass(frozen=True)
class Slot:
    name: str
    power_kw: float
    rack_units: int


def pack(items: list[Slot], budget_kw: float, units: int) -> list[list[Slot]]:
    """First-fit in order: fills a rack until power or space runs out, then opens the next."""
    bins: list[list[Slot]] = []
    kw = ru = 0.0
    for item in items:
        if item.power_kw > budget_kw or item.rack_units > units:
            raise SpecError(
                "racks.power_budget_kw",
                f"{item.name} ({item.power_kw} kW, {item.rack_units}U) does not fit one rack "
                f"({budget_kw} kW, {units}U usable)",
            )
        if not bins or kw + item.power_kw > budget_kw + 1e-9 or ru + item.rack_units > units:
            bins.append([])
            kw = ru = 0.0
        bins[-1].append(item)
        kw += item.power_kw
        ru += item.rack_units
    return bins


class Placement:
    """Where every device goes, computed for the end state (`max_scalable_units`)."""

    def __init__(self, spec: PodSpec, cat: Catalog, names: Names, devices: list[Device]):
        self.spec, self.cat, self.names = spec, cat, names
        r = spec.racks
        node = cat.nodes[spec.node_model]
        self.oob_model = cat.switches[spec.management.oob.switch_model]
        self.cdu_model = self._cdu_model()
        per_rack_cdu = r.cooling == "liquid" and r.cdu == "per_rack"
        self.usable_ru = r.rack_units - r.reserved_units - (self.cdu_model.rack_units if per_rack_cdu else 0)
        if r.cooling == "liquid" and node.cooling != "liquid":
            raise SpecError(
                "racks.cooling",
                f"{spec.node_model} is air-cooled (no cold plates); liquid cooling needs a liquid-cooled "
                f"node model ({', '.join(k for k, n in cat.nodes.items() if n.cooling == 'liquid')})",
            )
        # A rack may draw what its budget allows, and what one feed carries alone (2N) when the
        # other fails: nodes whose PSUs on one feed cannot carry them draw only what those give.
        self.feed_kw = r.pdus_per_feed * cat.pdus[r.pdu_model].continuous_kw
        self.usable_kw = min(r.power_budget_kw, self.feed_kw) - self.oob_model.power_kw
        oob_kw = self.oob_model.power_kw
        by_power = floor(
            min((r.power_budget_kw - oob_kw) / node.power_kw, (self.feed_kw - oob_kw) / node.kw_on_one_feed()) + 1e-9
        )
        by_space = self.usable_ru // node.rack_units
        self.nodes_per_rack = min(by_power, by_space)
        if self.nodes_per_rack < 1:
            raise SpecError(
                "racks.power_budget_kw",
                f"a rack of {r.power_budget_kw} kW and {r.rack_units}U cannot hold one "
                f"{spec.node_model} ({node.power_kw} kW, {node.rack_units}U) beside its OOB switch",
            )
        self.compute_racks_per_su = ceil(spec.nodes_per_su / self.nodes_per_rack)

        # Network racks of an SU are packed from the SU's own switches; SU 1 may carry the
        # UFM, so every SU reserves as many network racks as the fullest SU needs.
        by_su: dict[int, list[Slot]] = {}
        infra: list[Slot] = []
        for d in devices:
            slot = Slot(d.name, d.power_kw, d.rack_units)
            if d.su is not None and d.role in SU_NETWORK_ROLES:
                by_su.setdefault(d.su, []).append(slot)
            elif d.su is None and d.role in INFRA_ROLES:
                infra.append(slot)
        network_bins = {su: pack(slots, self.usable_kw, self.usable_ru) for su, slots in by_su.items()}
        self.network_racks_per_su = max(len(b) for b in network_bins.values())
        self.racks_per_su = self.compute_racks_per_su + self.network_racks_per_su
        self.sus_per_row = r.racks_per_row // self.racks_per_su

        # Pod-wide gear is packed at its end-state size (spines of blocks not built yet keep
        # their places) in rows after the last SU row.
        infra = self._with_unbuilt_spines(infra, devices)
        infra = self._with_unbuilt_inband_spines(infra, devices)
        self.infra_bins = pack(infra, self.usable_kw, self.usable_ru)
        self.first_infra_row = self._su_position(spec.max_su, self.racks_per_su - 1)[0] + 1

        self.rack_of: dict[str, tuple[int, int]] = {}
        # units above the rack's floor (a per-rack CDU's units), filled bottom-up in packing order,
        # so a device's unit, like its rack, depends only on its place in the end state
        self.floor_ru = self.cdu_model.rack_units if per_rack_cdu else 0
        self.unit_of: dict[str, int] = {}
        for su, bins in network_bins.items():
            for k, b in enumerate(bins):
                self._stack(b)
                for slot in b:
                    self.rack_of[slot.name] = self._su_position(su, k)
        for k, b in enumerate(self.infra_bins):
            self._stack(b)
            for slot in b:
                self.rack_of[slot.name] = self._infra_position(k)
        for d in devices:
            if d.role == "gpu_node":
                n = int(d.name.rsplit("node", 1)[1]) - 1
                self.rack_of[d.name] = self._su_position(d.su, self.network_racks_per_su + n // self.nodes_per_rack)
                self.unit_of[d.name] = self.floor_ru + 1 + (n % self.nodes_per_rack) * node.rack_units

    def _stack(self, rack: list[Slot]) -> None:
        unit = self.floor_ru + 1
        for slot in rack:
            self.unit_of[slot.name] = unit
            unit += slot.rack_units

    def _cdu_model(self):
        r = self.spec.racks
        key = r.cdu_model or ("cdu-in-rack-100" if r.cdu == "per_rack" else "cdu-in-row-1300")
        return self.cat.cdus[key]

    def _with_unbuilt_spines(self, infra: list[Slot], devices: list[Device]) -> list[Slot]:
        spines = [d for d in devices if d.role == "spine"]
        if not spines or all(d.block is None for d in spines):
            return infra
        from topology.layout.fabric import size_compute  # sizes are needed only for three tiers

        sz = size_compute(self.spec, self.cat)
        built = {d.name for d in spines}
        sw = self.cat.switches[self.spec.compute_fabric.switch_model]
        extra = [
            Slot(self.names.spine(i), sw.power_kw, sw.rack_units)
            for i in range(sz.spines_max)
            if self.names.spine(i) not in built
        ]
        # keep spines in index order ahead of the rest of the infra gear
        spine_slots = sorted([s for s in infra if s.name in built] + extra, key=lambda s: s.name)
        return spine_slots + [s for s in infra if s.name not in built]

    def _with_unbuilt_inband_spines(self, infra: list[Slot], devices: list[Device]) -> list[Slot]:
        """A three-tier in-band fabric's spines at their end-state places, as compute spines."""
        built = {d.name for d in devices if d.role == "inband_spine"}
        if not built:
            return infra
        from topology.layout.inband import size_inband

        sz = size_inband(self.spec, self.cat)
        ib = self.spec.management.inband
        sw = self.cat.switches[ib.core_switch_model or ib.switch_model]
        at = next(i for i, s in enumerate(infra) if s.name in built)
        rest = [s for s in infra if s.name not in built]
        every = [Slot(Names.numbered("inband-spine", i, sz.spines_max), sw.power_kw, sw.rack_units)
                 for i in range(sz.spines_max)]
        return rest[:at] + every + rest[at:]

    def _su_position(self, su: int, k: int) -> tuple[int, int]:
        if self.sus_per_row:
            row, col = divmod(su - 1, self.sus_per_row)
            return row, col * self.racks_per_su + k + 1
        idx = (su - 1) * self.racks_per_su + k
        row, pos = divmod(idx, self.spec.racks.racks_per_row)
        return row, pos + 1

    def _infra_position(self, k: int) -> tuple[int, int]:
        row, pos = divmod(k, self.spec.racks.racks_per_row)
        return self.first_infra_row + row, pos + 1

    def rows_max(self, extra_racks: int = 0) -> int:
        return self.first_infra_row + ceil((len(self.infra_bins) + extra_racks) / self.spec.racks.racks_per_row)

    @cached_property  # read for every rack's ordinal
    def row_width(self) -> int:
        """Rack positions in a row: the racks plus room for in-row CDUs at its end."""
        r = self.spec.racks
        cdus = ceil(r.racks_per_row * r.power_budget_kw / self.cdu_model.capacity_kw) if r.cooling == "liquid" else 0
        cdus += 1 if cdus and r.cdu_redundancy == "n+1" else 0
        return r.racks_per_row + cdus

    def rack_index(self, row: int, position: int) -> int:
        """A rack's ordinal in the end state: stable under growth, used for OOB uplink ports."""
        return row * self.row_width + position - 1


def agg_access_ports(spec: PodSpec, cat: Catalog) -> int:
    """OOB aggregation ports for the racks' OOB switches: every cage but the top ones, which
    carry the aggregation switch's uplinks to the in-band network."""
    oob = spec.management.oob
    agg = cat.switches[oob.aggregation_model]
    speed = cat.switches[oob.switch_model].uplink_speed_gbps
    return (agg.cages - oob.aggregation_uplinks) * agg.lanes.get(speed, 0)


def oob_port_of(cat: Catalog, d: Device) -> str:
    if d.role == "gpu_node":
        return cat.nodes[d.model].bmc_port
    if d.model in cat.switches:
        return cat.switches[d.model].mgmt_port
    if d.model in cat.appliances:
        return cat.appliances[d.model].bmc_port
    if d.model in cat.pdus:
        return cat.pdus[d.model].mgmt_port
    return cat.cdus[d.model].mgmt_port


def place_racks(
    spec: PodSpec, cat: Catalog, names: Names, devices: list[Device]
) -> tuple[list[Device], list[Link], list[Rack], int]:
    """Assigns racks, adds PDUs, CDUs and OOB switches with their cables; checks budgets.
    Steps, in order: place the planned gear, CDUs, OOB aggregation racks, PDUs, the OOB
    switches of every rack with their cables, then each rack's power and cooling record."""
    pl = Placement(spec, cat, names, devices)
    floor = _Floor(spec, cat, pl, devices)
    floor.add_cdus()
    agg_racks, agg_slots, slots = floor.add_oob_aggregation()
    floor.add_pdus()
    links = floor.add_oob_switches(agg_slots, slots)
    racks = [floor.rack_record(name) for name in sorted(floor.racks, key=lambda n: floor.position[n])]
    return floor.placed + floor.extra, links, racks, pl.rows_max(agg_racks) * pl.row_width


class _Floor:
    """The racks as they fill: members, positions and SU of each; the steps of place_racks."""

    def __init__(self, spec: PodSpec, cat: Catalog, pl: Placement, devices: list[Device]):
        self.spec, self.cat, self.pl = spec, cat, pl
        self.node = cat.nodes[spec.node_model]
        rack_names: dict[tuple[int, int], str] = {}  # a rack's name once, not once per device in it
        for position in pl.rack_of.values():
            if position not in rack_names:
                rack_names[position] = Names.rack(*position)
        # each placed Device built positionally (dataclasses.replace was a quarter of the stage at 100k
        # GPUs), in this order of Device's fields (tests/test_layout_speed_paths.py holds them to it)
        self.placed = [
            Device(d.name, d.role, d.model, d.su, rack_names[pl.rack_of[d.name]], d.rail, d.block, d.power_kw,
                   d.rack_units, d.slot, pl.unit_of[d.name]) for d in devices
        ]
        self.racks: dict[str, list[Device]] = {}
        for d in self.placed:
            self.racks.setdefault(d.rack, []).append(d)
        self.position = {name: pl.rack_of[members[0].name] for name, members in self.racks.items()}
        self.su_of = {
            name: next((d.su for d in members if d.su is not None), None) for name, members in self.racks.items()
        }
        self.extra: list[Device] = []  # gear the plan adds here: CDUs, PDUs, OOB switches

    def _add(self, devices: list[Device]) -> None:
        for d in devices:
            self.racks.setdefault(d.rack, []).append(d)
        self.extra += devices

    def add_cdus(self) -> None:
        """A CDU per liquid-cooled rack, or in-row CDUs at each row's end sized for its end state."""
        r, pl, node = self.spec.racks, self.pl, self.node
        if r.cooling != "liquid":
            return
        cdu = pl.cdu_model
        cdu_key = next(k for k, v in self.cat.cdus.items() if v is cdu)
        row_liquid: dict[int, float] = {}
        added: list[Device] = []
        for name, members in self.racks.items():
            lq = sum(d.power_kw * node.liquid_capture for d in members if d.role == "gpu_node")
            if not lq:
                continue
            if r.cdu == "per_rack":
                if lq > cdu.capacity_kw:
                    raise SpecError(
                        "racks.cdu_model",
                        f"{name} needs {lq:.1f} kW of liquid cooling; {cdu_key} removes {cdu.capacity_kw} kW",
                    )
                added.append(
                    Device(
                        f"{name}-cdu", "cdu", cdu_key, su=self.su_of[name], rack=name, rack_units=cdu.rack_units,
                        rack_unit=1,
                    )
                )
            else:
                row_liquid[self.position[name][0]] = row_liquid.get(self.position[name][0], 0.0) + lq
        spare = 1 if r.cdu_redundancy == "n+1" else 0
        for row in sorted(row_liquid):
            full_row = _row_liquid_at_max(self.spec, pl, node, row)
            for i in range(ceil(full_row / cdu.capacity_kw) + spare):
                rack = Names.rack(row, r.racks_per_row + 1 + i)
                self.position[rack] = (row, r.racks_per_row + 1 + i)
                self.su_of[rack] = None
                self.racks[rack] = []
                added.append(
                    Device(
                        f"cdu-{rack.removeprefix('rack-')}", "cdu", cdu_key, rack=rack, rack_units=cdu.rack_units,
                        rack_unit=1,
                    )
                )
        self._add(added)

    def add_oob_aggregation(self) -> tuple[int, list[Slot], int]:
        """Aggregation switches for the OOB switches of every rack position of the end state;
        returns (their rack count, the switches in order, OOB ordinals per rack position)."""
        oob, r, pl, cat = self.spec.management.oob, self.spec.racks, self.pl, self.cat
        oob_sw = cat.switches[oob.switch_model]
        if oob.uplinks_per_switch > oob_sw.uplink_cages:
            raise SpecError(
                "management.oob.uplinks_per_switch", f"{oob.switch_model} has {oob_sw.uplink_cages} uplink ports"
            )
        access = oob_sw.radix(oob_sw.cage_speed_gbps)
        agg_model = cat.switches[oob.aggregation_model]
        agg_radix = agg_access_ports(self.spec, cat)
        if agg_radix <= 0:
            raise SpecError(
                "management.oob.aggregation_model",
                f"OOB fabric: {oob.aggregation_model} has no {oob_sw.uplink_speed_gbps}G ports beside its "
                f"{oob.aggregation_uplinks} uplink cages",
            )
        pdus_per_rack = 2 * r.pdus_per_feed
        slots = max(ceil((len(m) + pdus_per_rack) / access) for m in self.racks.values())
        agg_racks = 1
        for _ in range(4):  # aggregation racks are rack positions too: settle their count
            count = ceil(pl.rows_max(agg_racks) * pl.row_width * slots / agg_radix) * oob.uplinks_per_switch
            agg_slots = [
                Slot(Names.numbered("oob-agg", i, count), agg_model.power_kw, agg_model.rack_units)
                for i in range(count)
            ]
            agg_bins = pack(agg_slots, pl.usable_kw, pl.usable_ru)
            if len(agg_bins) <= agg_racks:
                break
            agg_racks = len(agg_bins)
        added = []
        for k, b in enumerate(agg_bins):
            pos = pl._infra_position(len(pl.infra_bins) + k)
            rack = Names.rack(*pos)
            self.position[rack], self.su_of[rack] = pos, None
            pl._stack(b)
            added += [
                Device(a.name, "oob_aggregation", oob.aggregation_model, rack=rack, power_kw=a.power_kw,
                       rack_units=a.rack_units, rack_unit=pl.unit_of[a.name])
                for a in b
            ]
        self._add(added)
        return agg_racks, agg_slots, slots

    def add_pdus(self) -> None:
        r = self.spec.racks
        pdus = []
        for name in sorted(self.racks):
            for feed in ("a", "b"):
                for i in range(r.pdus_per_feed):
                    suffix = feed if r.pdus_per_feed == 1 else f"{feed}{i + 1}"
                    pdus.append(Device(f"{name}-pdu-{suffix}", "pdu", r.pdu_model, su=self.su_of[name], rack=name))
        self._add(pdus)

    def add_oob_switches(self, agg_slots: list[Slot], slots: int) -> list[Link]:
        """SN2201-class switches in every rack, one per 48 managed devices, each dual-homed to
        aggregation switches. Every rack position of the end state owns `slots` OOB ordinals;
        ordinal o uses port o % radix on the aggregation switches of group o // radix (one per
        uplink), so ports never move when the pod grows."""
        oob, r, pl, cat = self.spec.management.oob, self.spec.racks, self.pl, self.cat
        oob_sw = cat.switches[oob.switch_model]
        access = oob_sw.radix(oob_sw.cage_speed_gbps)
        agg_model = cat.switches[oob.aggregation_model]
        agg_speed = oob_sw.uplink_speed_gbps
        agg_radix = agg_access_ports(self.spec, cat)
        links: list[Link] = []
        oob_devices: list[Device] = []
        speed = oob_sw.cage_speed_gbps
        access_ports = [oob_sw.port(p, speed) for p in range(access)]  # every OOB switch's, once
        uplink_ports = [oob_sw.uplink_port(j) for j in range(oob.uplinks_per_switch)]
        mgmt_port: dict[tuple[str, str], str] = {}  # a device's management port, by its role and model
        for name in sorted(self.racks):
            managed = sorted(self.racks[name], key=attrgetter("name"))
            count = ceil(len(managed) / access)
            top = _top_of_equipment(self.racks[name])
            for i in range(count):
                sw_name = f"{name}-oob" if count == 1 else f"{name}-oob{i + 1}"
                unit = r.rack_units - (i + 1) * oob_sw.rack_units + 1  # top of rack, in the reserved units
                if unit <= top:
                    raise SpecError(
                        "racks.reserved_units",
                        f"{name} has no room for its OOB switch {sw_name} above its gear (units 1-{top} of "
                        f"{r.rack_units}); reserve {count * oob_sw.rack_units} units or more",
                    )
                oob_devices.append(
                    Device(sw_name, "oob_switch", oob.switch_model, su=self.su_of[name], rack=name,
                           power_kw=oob_sw.power_kw, rack_units=oob_sw.rack_units, rack_unit=unit)
                )
                for p, d in enumerate(managed[i * access : (i + 1) * access]):
                    port = mgmt_port.get((d.role, d.model))
                    if port is None:
                        port = mgmt_port[(d.role, d.model)] = oob_port_of(cat, d)
                    links.append(Link(d.name, port, sw_name, access_ports[p], "oob", "device-oob", speed))
                ordinal = pl.rack_index(*self.position[name]) * slots + i
                group, agg_port = divmod(ordinal, agg_radix)
                for j in range(oob.uplinks_per_switch):
                    links.append(
                        Link(sw_name, uplink_ports[j], agg_slots[group * oob.uplinks_per_switch + j].name,
                             agg_model.port(agg_port, agg_speed), "oob", "oob-agg", agg_speed,
                             slot=ordinal * oob.uplinks_per_switch + j)
                    )
        self._add(oob_devices)
        return links

    def rack_record(self, name: str) -> Rack:
        """The rack's power and cooling against its budget, its feeds and its kind."""
        r, pl, node = self.spec.racks, self.pl, self.node
        members = self.racks[name]
        budget = r.power_budget_kw
        planned = round(sum(d.power_kw for d in members), 3)
        if planned > budget + 1e-9:
            raise SpecError("racks.power_budget_kw", f"{name} plans {planned:.1f} kW, over its {budget} kW budget")
        node_on_one_feed = node.kw_on_one_feed()
        feed_loss_kw = round(sum(node_on_one_feed if d.role == "gpu_node" else d.power_kw for d in members), 3)
        if feed_loss_kw > pl.feed_kw + 1e-9:
            raise SpecError(
                "racks.pdus_per_feed",
                f"{name} draws {feed_loss_kw:.1f} kW from one feed when the other fails, but one feed of "
                f"{r.pdus_per_feed} x {r.pdu_model} carries {pl.feed_kw:.1f} kW continuously (80% rating); "
                f"add PDUs per feed or lower racks.power_budget_kw",
            )
        capped = sum(1 for d in members if d.role == "gpu_node") if node_on_one_feed < node.power_kw else 0
        on_feed_loss = (
            f"{capped} nodes power-capped: {node.psus // 2} of {node.psus} PSUs left, {node.psus_required} needed"
            if capped
            else "full load"
        )
        liquid = r.cooling == "liquid"
        lq = round(sum(d.power_kw * node.liquid_capture for d in members if d.role == "gpu_node"), 3) if liquid else 0.0
        row, pos = self.position[name]
        return Rack(
            name, row, pos, _rack_kind(members, self.su_of[name]), self.su_of[name], budget, planned, lq,
            round(planned - lq, 3), r.cooling, sum(d.rack_units for d in members), pl.rack_index(row, pos),
            round(pl.feed_kw, 3), feed_loss_kw, on_feed_loss,
        )


def _rack_kind(members: list[Device], su: int | None) -> str:
    kinds = {d.role for d in members}
    if "gpu_node" in kinds:
        return "compute"
    if kinds <= {"cdu", "pdu", "oob_switch"}:
        return "cdu"
    return "network" if su else "infra"


def _top_of_equipment(members: list[Device]) -> int:
    """The highest unit a rack's gear occupies (0 when it holds only zero-U gear)."""
    return max((d.rack_unit + d.rack_units - 1 for d in members if d.rack_unit), default=0)


def _row_liquid_at_max(spec: PodSpec, pl: Placement, node, row: int) -> float:
    """Liquid load of a row's compute racks when every SU of the end state is built."""
    total = 0.0
    for su in range(1, spec.max_su + 1):
        for k in range(pl.compute_racks_per_su):
            if pl._su_position(su, pl.network_racks_per_su + k)[0] == row:
                n = min(pl.nodes_per_rack, spec.nodes_per_su - k * pl.nodes_per_rack)
                total += n * node.power_kw * node.liquid_capture
    return total
