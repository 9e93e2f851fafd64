"""A run no medium reaches is refused naming the floor-plan field to change and a value with which
the same pod plans (issue 15 items 14/15): a row pitch when one no tighter than a real aisle
allows fits, else fewer, longer rows."""

from __future__ import annotations

import re

import pytest

from tests.conftest import spec_with
from topology.build import build
from topology.errors import SpecError


def test_too_wide_a_row_pitch_names_one_that_plans():
    # one rack a row at 20 m pitch: leaf-spine runs of 800 m, past single-mode's 500 m
    with pytest.raises(SpecError) as e:
        build(spec_with("roce-1k", racks={"racks_per_row": 1, "row_pitch_m": 20.0}))
    assert e.value.field == "racks.row_pitch_m"
    found = re.search(r"racks\.row_pitch_m: ([0-9.]+) reaches", e.value.rule)
    assert found, e.value.rule
    pitch = float(found.group(1))
    assert 2.4 <= pitch < 20
    assert build(spec_with("roce-1k", racks={"racks_per_row": 1, "row_pitch_m": pitch})).links
    with pytest.raises(SpecError):  # the largest on its 0.1 m grid
        build(spec_with("roce-1k", racks={"racks_per_row": 1, "row_pitch_m": round(pitch + 0.1, 1)}))


def test_rows_too_far_apart_for_any_aisle_name_racks_per_row():
    # a 500 m run no pitch of a real aisle (2.4 m) brings within reach: one long column of racks
    with pytest.raises(SpecError) as e:
        build(spec_with("roce-8k", racks={"racks_per_row": 1, "row_pitch_m": 20.0}))
    assert e.value.field == "racks.row_pitch_m"
    assert "racks.racks_per_row" in e.value.rule, e.value.rule
