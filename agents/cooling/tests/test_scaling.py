"""The steady-state scaling of SNMP readings (snmp.Planned.scaled) takes an integer fast path;
Python's decimal module, the path it replaces, is the judge: every reading and factor the
profiles can produce must give the same float, bit for bit."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest
from cooling_agent.profiles import load_profile
from cooling_agent.snmp import Planned

PROFILES = ("raritan", "apc", "servertech")


def _factors() -> list[Decimal]:
    """Every factor a shipped profile yields: its scales over 0-9 decimal digits (Raritan's rule)."""
    scales = {s.scale for name in PROFILES for s in load_profile(name).series}
    return sorted({scale / Decimal(10) ** d for scale in scales for d in range(10)})


@pytest.mark.parametrize("factor", _factors(), ids=str)
def test_fast_scaling_equals_decimal(factor):
    series = load_profile("apc").series[0]
    planned = Planned((1, 3), series, {}, factor, frozenset())
    rng = random.Random(39)
    readings = [0, 1, -1, 2**53 - 1, -(2**53) + 1, 2**53, 2**64 - 1, 2**31 - 1, -(2**31)]
    readings += [rng.randrange(-(2**40), 2**40) for _ in range(2000)] + [rng.randrange(0, 100_000) for _ in range(2000)]
    for num in readings:
        assert planned.scaled(num) == float(num * factor), (num, factor)
    assert planned.scaled(Decimal("12.5")) == float(Decimal("12.5") * factor)  # a DisplayString reading


def test_long_factor_stays_on_decimal():
    factor = Decimal("0.1234567890123456789")  # 19 digits: the product could round in Decimal
    planned = Planned((1, 3), load_profile("apc").series[0], {}, factor, frozenset())
    assert planned.ratio is None
    assert planned.scaled(2**52 + 1) == float((2**52 + 1) * factor)
