"""The appliances' 25G in-band ports (storage servers, UFM) on in-band cores whose cages break
out to 25G: cabled, configured and bought at 25G, not at the cage's 100G legs. SN5400 (roce-8k's
in-band cores) runs 256 x 100/50/25/10GbE by 4-way breakout (NVIDIA SN5000 series user manual)."""

from __future__ import annotations

from collections import Counter

from tests.conftest import stack_layout
from topology import catalog
from topology.render.switches.build import iter_intents


def _service_links(layout):
    return [lk for lk in layout.links if lk.tier == "service-inband"]


def test_25g_service_ports_run_at_25g_on_an_sn5400_core():
    layout = stack_layout("roce-8k")
    cat = catalog.load()
    links = _service_links(layout)
    assert links
    for lk in links:
        wanted = cat.appliances[layout.by_name[lk.a_device].model].inband_speed_gbps
        assert lk.speed_gbps == wanted == 25, lk
    cores = {lk.b_device for lk in links}
    ports = {(lk.b_device, lk.b_port) for lk in links}
    for sw in iter_intents(layout):
        if sw.name not in cores:
            continue
        by_name = {p.name: p for p in sw.ports}
        for dev, port in ports:
            if dev == sw.name:
                assert by_name[port].speed_gbps == 25
        cages = {port.rsplit("s", 1)[0] for dev, port in ports if dev == sw.name}
        split = {b.cage: (b.lanes, b.speed_gbps) for b in sw.breakouts}
        assert all(split[c] == (4, 25) for c in cages), split


def test_25g_service_cables_and_optics_are_25g_parts():
    layout = stack_layout("roce-8k")
    parts = Counter()
    for lk in _service_links(layout):
        parts[(lk.media, lk.a_part, lk.b_part, lk.cable_part.split("-N")[0])] += 1
        assert lk.b_shared == 4 and lk.cable_shared == 4, lk  # four 25G legs share the cage's module or splitter
        if lk.media in ("MMF", "SMF"):
            # a 100G SR4 QSFP28 in the QSFP-DD cage runs 4 x 25G on an MPO-to-4 x LC breakout fibre
            assert lk.b_part == "MMA1B00-C100D" and "100G" not in lk.a_part and "400G" not in lk.a_part, lk
        else:  # a breakout cable (DAC, AOC): one QSFP28 end in the cage, four 25G ends
            assert "-to-4x25G-" in lk.cable_part, lk
    assert parts
