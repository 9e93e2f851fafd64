"""The NVUE templates by shape (topology/render/switches/nvue_shape.py) write every switch's
startup.yaml byte for byte as render_nvue does: over the example stacks and every switch variant
(tests/switch_variants.py), where values need quotes, where a name repeats among a mapping's keys,
and across two plans in one process."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import STACKS, spec_with, stack_layout
from tests.switch_variants import VARIANTS, variant_layout
from topology.layout.build import build
from topology.render.switches import iter_switch_configs
from topology.render.switches.build import build_intents
from topology.render.switches.nvue import render_nvue
from topology.render.switches.nvue_shape import ShapeCache


def _cumulus(layout):
    return [sw for sw in build_intents(layout) if sw.os == "cumulus"]


def _same_as_render_nvue(intents) -> ShapeCache:
    shapes = ShapeCache()  # one cache for all: a later switch is written from an earlier one's template
    for sw in intents:
        assert shapes.render(sw) == render_nvue(sw), sw.name
    return shapes


@pytest.mark.parametrize("stack", STACKS)
def test_every_switch_of_the_example_stacks_is_written_as_render_nvue_writes_it(stack):
    intents = _cumulus(stack_layout(stack))
    shapes = _same_as_render_nvue(intents)
    if len(intents) > 100:  # a pod's switches of a role share their shape: far fewer templates than switches
        assert len(shapes.templates) < len(intents) / 4


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_every_switch_of_each_variant_is_written_as_render_nvue_writes_it(variant):
    _same_as_render_nvue(_cumulus(variant_layout(variant)))


def _leaves():
    return [sw for sw in _cumulus(stack_layout("lab")) if sw.role == "leaf" and sw.bgp and sw.bgp.neighbors][:2]


def test_values_yaml_must_quote_are_quoted_in_the_template():
    a, b = _leaves()
    odd = replace(b.ports[0], peer="on", address="2001:db8::1/127")  # a YAML keyword, an IPv6 prefix
    b = replace(b, ports=(odd, *b.ports[1:]), bgp=replace(b.bgp, neighbors=(
        replace(b.bgp.neighbors[0], remote_as="external"), *b.bgp.neighbors[1:])))
    _same_as_render_nvue([a, b])
    assert "description: 'on'" in ShapeCache().render(b)


def test_a_name_to_quote_or_a_key_twice_is_written_by_render_nvue():
    a, b = _leaves()
    short = replace(b, name="yes")  # the header writes the name bare, the hostname quoted
    nbrs = b.bgp.neighbors
    twice = replace(b, bgp=replace(b.bgp, neighbors=(nbrs[0], replace(nbrs[1], address=nbrs[0].address), *nbrs[2:])))
    _same_as_render_nvue([a, short, twice])


def test_two_plans_in_one_process_each_get_their_own_numbers():
    """A pod and its twin with other addresses: the same shapes, every number the second pod's own."""
    first = build(spec_with("lab"))
    second = build(spec_with("lab", addressing={"rails": "100.80.0.0/13", "fabric_p2p": "100.112.0.0/14"}))
    for layout in (first, second):
        written = dict(iter_switch_configs(layout, Path("/out")))
        for sw in _cumulus(layout):
            assert written[Path("/out/switches") / sw.name / "startup.yaml"] == render_nvue(sw)


def test_a_marker_word_in_the_specs_own_text_is_not_taken_for_a_field():
    a, b = _leaves()
    ntp = ("swtextfield000001q",)  # a (strange) server name: constant text of the shape
    a, b = (replace(sw, services=replace(sw.services, ntp=ntp)) for sw in (a, b))
    _same_as_render_nvue([a, b])
