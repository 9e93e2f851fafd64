"""Each switch model's ports, breakout limits and names are the vendor's (catalog `source`):
SN5600 breaks out to at most 256 ports; Quantum-2 splits a twin-port cage's ports as
1/<cage>/<port>/<split>; every planned port is a valid, unique name for its model."""

from __future__ import annotations

import re

import pytest

from tests.conftest import stack_layout
from topology import catalog


def test_every_switch_model_names_its_source():
    for key, sw in catalog.load().switches.items():
        assert sw.source.startswith(("NVIDIA", "https://")), key


def test_sn5600_breaks_out_to_at_most_256_ports():
    sw = catalog.load().switches["sn5600"]
    assert sw.radix(100) == sw.radix(200) == 256
    assert sw.radix(400) == 128 and sw.radix(800) == 64


def test_quantum2_ndr200_split_ports_are_named_cage_port_split():
    sw = catalog.load().switches["qm9700"]
    assert [sw.port(i, 400) for i in range(3)] == ["1/1/1", "1/1/2", "1/2/1"]
    assert [sw.port(i, 200) for i in range(5)] == ["1/1/1/1", "1/1/1/2", "1/1/2/1", "1/1/2/2", "1/2/1/1"]
    names = {sw.port(i, 200) for i in range(sw.radix(200))}
    assert len(names) == 128 and all(re.fullmatch(r"1/([1-9]|[12]\d|3[0-2])/[12]/[12]", n) for n in names)


@pytest.mark.parametrize("model,speed", [("sn5400", 100), ("sn5600", 200), ("sn4600c", 25), ("qm9700", 200)])
def test_port_names_are_unique_at_every_speed(model, speed):
    sw = catalog.load().switches[model]
    names = [sw.port(i, speed) for i in range(sw.radix(speed))]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "dgx-h100-ib"])
def test_planned_ports_are_valid_names_for_their_model(stack):
    layout = stack_layout(stack)
    cat = catalog.load()
    for lk in layout.links:
        for dev, port in ((lk.a_device, lk.a_port), (lk.b_device, lk.b_port)):
            model = layout.by_name[dev].model
            if model in cat.switches and lk.tier not in ("device-oob", "oob-agg"):
                sw = cat.switches[model]
                assert port in {sw.port(i, lk.speed_gbps) for i in range(sw.radix(lk.speed_gbps))}, (dev, port)



def test_infiniband_without_a_subnet_manager_is_refused():
    from tests.conftest import spec_with
    from topology.errors import SpecError, SpecErrors

    with pytest.raises((SpecError, SpecErrors)) as e:
        spec_with("dgx-h100-ib", compute_fabric={"fabric_manager": False})
    assert "compute_fabric.switch_subnet_manager: an InfiniBand fabric needs a subnet manager" in str(e.value)
    assert spec_with("dgx-h100-ib", compute_fabric={"fabric_manager": False, "switch_subnet_manager": True})
