"""OwnAddresses: the per-device view the switch intents read their own and their peers' addresses from."""

from bench.bench_plan import CASES
from topology.layout.build import build
from topology.layout.model import Address
from topology.render.switches.own_addresses import OwnAddresses
from topology.spec import parse


def test_a_device_own_addresses_leave_out_pod_gateways_and_keep_the_last_of_an_interface():
    addrs = [Address("leaf", "vlan101", "10.0.0.1/24", "10.0.0.0/24", "rails"),
             Address("leaf", "vlan101", "10.9.0.1/24", "10.9.0.0/24", "rail_pods"),
             Address("leaf", "swp1", "10.1.0.0/31", "10.1.0.0/31", "rails"),
             Address("leaf", "swp1", "10.2.0.0/31", "10.2.0.0/31", "fabric_p2p")]
    own = OwnAddresses({"leaf": addrs})
    assert own["leaf"] == {"vlan101": addrs[0], "swp1": addrs[3]}
    assert own.pods("leaf") == [addrs[1]]
    assert own["nobody"] == {} and own.pods("nobody") == []


def test_it_answers_as_a_dict_over_every_cable_end_would():
    layout = build(parse(dict(CASES)["1k"]))
    by_end = {(a.device, a.interface): a for a in layout.addresses if a.pool != "rail_pods"}
    own = OwnAddresses(layout.addresses_by_device)
    assert {(d, i): a for d in layout.addresses_by_device for i, a in own[d].items()} == by_end
