"""A run no medium reaches is refused naming the floor-plan field to change and a value with which
the same pod plans (issue 15 items 14/15): a row pitch when one no tighter than a real aisle
allows fits, else fewer, longer rows."""

from __future__ import annotations

import re

import pytest

from tests.conftest import spec_with
from topology.errors import SpecError
from topology.layout.build import build


def _column(end_state: int, aggregation_uplinks: int = 2, **racks):
    """Two SUs of a larger end state, one rack a row: the racks the end state reserves put the
    in-band cores hundreds of rows from the first SU (past the 2 km of single-mode)."""
    return spec_with("roce-8k", scalable_units=2, max_scalable_units=end_state,
                     management={"oob": {"aggregation_uplinks": aggregation_uplinks}},
                     racks={"racks_per_row": 1, **racks})


def test_too_wide_a_row_pitch_names_one_that_plans():
    with pytest.raises(SpecError) as e:
        build(_column(32, row_pitch_m=20.0))
    assert e.value.field == "racks.row_pitch_m"
    found = re.search(r"racks\.row_pitch_m: ([0-9.]+) reaches", e.value.rule)
    assert found, e.value.rule
    pitch = float(found.group(1))
    assert 2.4 <= pitch < 20
    assert build(_column(32, row_pitch_m=pitch)).links
    with pytest.raises(SpecError):  # the largest on its 0.1 m grid
        build(_column(32, row_pitch_m=round(pitch + 0.1, 1)))


def test_rows_too_far_apart_for_any_aisle_name_racks_per_row():
    # a run no pitch of a real aisle (2.4 m) brings within reach: one long column of racks
    with pytest.raises(SpecError) as e:
        # 64 SUs: three in-band tiers, the aggregation uplinks on the services pair (one each fits)
        build(_column(64, aggregation_uplinks=1, row_pitch_m=20.0))
    assert e.value.field == "racks.row_pitch_m"
    assert "racks.racks_per_row" in e.value.rule, e.value.rule
