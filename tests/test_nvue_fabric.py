"""The compute and rack OOB switches' NVUE text read straight off their cables
(topology/render/switches/nvue_fabric.py) is render_nvue's text of the plain path's intent, byte for
byte, over the example stacks and every switch variant; what the reader cannot write as it is goes
to the plain path."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.conftest import STACKS, stack_layout
from tests.switch_variants import VARIANTS, variant_layout
from topology.render.switches.build import IntentInputs
from topology.render.switches.credentials import render_credentials
from topology.render.switches.nvue import render_nvue
from topology.render.switches.nvue_fabric import FabricShapes
from topology.render.switches.nvue_shape import ShapeCache


def _fabric_switches(layout, fabric: str = "compute"):
    inputs = IntentInputs(layout)
    return inputs, [(d, model) for d, f, model in inputs.switches if f == fabric]


def _written_as_plain(layout) -> dict[str, tuple[int, int]]:
    """Per role: (switches the reader wrote, switches); each written one checked against render_nvue."""
    inputs = IntentInputs(layout)
    fabric = FabricShapes(inputs, ShapeCache())
    counts: dict[str, tuple[int, int]] = {}
    for d, fabric_name, model in inputs.switches:
        got = fabric.render(d, fabric_name, model)
        written, seen = counts.get(d.role, (0, 0))
        if got is not None:
            sw = inputs.intent(d, fabric_name, model)
            assert got == (render_nvue(sw), render_credentials(sw)), d.name
            written += 1
        counts[d.role] = (written, seen + 1)
    return counts


@pytest.mark.parametrize("stack", STACKS)
def test_every_switch_of_the_example_stacks_read_off_its_cables_is_render_nvues_text(stack):
    counts = _written_as_plain(stack_layout(stack))
    if stack == "lab":  # p2p rails, Cumulus: every leaf, spine, core and rack OOB switch is read off its cables
        for role in ("leaf", "spine", "oob_switch"):
            assert counts[role][0] == counts[role][1] > 0, role


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_every_switch_of_each_variant_read_off_its_cables_is_render_nvues_text(variant):
    _written_as_plain(variant_layout(variant))


def test_rail_gateways_are_left_to_the_plain_path():
    layout = variant_layout(next(v for v in VARIANTS if v.name == "per-leaf-rails"))
    inputs, switches = _fabric_switches(layout)
    fabric = FabricShapes(inputs, ShapeCache())
    leaves = [(d, model) for d, model in switches if d.role == "leaf"]
    assert leaves and all(fabric.render(d, "compute", model) is None for d, model in leaves)


def test_a_signature_whose_first_switch_the_plain_path_writes_otherwise_stays_with_the_plain_path():
    inputs, switches = _fabric_switches(stack_layout("lab"))
    plain = inputs.intent

    def odd(d, fabric, model):  # a plain intent that differs from the cables: one port's peer renamed
        sw = plain(d, fabric, model)
        return replace(sw, ports=(replace(sw.ports[0], peer="elsewhere:swp99"), *sw.ports[1:]))

    inputs.intent = odd
    fabric = FabricShapes(inputs, ShapeCache())
    d, model = next((d, model) for d, model in switches if d.role == "leaf")
    assert fabric.render(d, "compute", model) is None
    assert [sig for sig, entry in fabric.known.items() if entry is None]
    same = [(e, m) for e, m in switches if e.role == "leaf" and e is not d]
    assert same and all(fabric.render(e, "compute", m) is None for e, m in same)
