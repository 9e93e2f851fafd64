"""Management reachability, the rest of issue 15 item 12: the OOB switch's own vlan1 address
names no gateway of its own (it routes upward over its /31s), the in-band core routes north-south
to the site over `management.inband.border_uplinks` addressed links with eBGP to
`addressing.border_asn`, and UFM appliances and storage servers get bonded in-band Ethernet."""

from __future__ import annotations

import pytest

from tests.conftest import stack_layout


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "dgx-h100-ib"])
def test_an_oob_switch_is_not_its_own_gateway(stack):
    layout = stack_layout(stack)
    switches = {d.name for d in layout.devices if d.role == "oob_switch"}
    own = {}
    for a in layout.addresses:
        own.setdefault(a.device, set()).add(a.address.split("/")[0])
    for a in layout.addresses:
        if a.device in switches and a.interface == "vlan1":
            assert a.peer not in own[a.device], f"{a.device} vlan1 names its own {a.peer} as gateway"
