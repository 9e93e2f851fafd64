"""The rollout gate's reading and comparison (roles/switch_fabric/library/switch_fabric_health.py),
on the commands' JSON as their makers document it:
- FRR `show bgp summary json`: per address family a `peers` map keyed by neighbor with `state`
  (bgpd/bgp_vty.c, bgp_show_summary: Established, Idle, Active, Connect, OpenSent, ...);
- NVUE `nv show vrf default router bgp neighbor -o json` (Cumulus Linux 5.12+: keyed by neighbor,
  `state` established / idle / connect; Cumulus Linux user guide, "Troubleshooting BGP").
"""

from __future__ import annotations

import importlib.util

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location(
    "switch_fabric_health", ROOT / "roles/switch_fabric/library/switch_fabric_health.py")
health = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(health)

FRR = {"ipv4Unicast": {"routerId": "10.255.0.0", "as": 4200000001, "peers": {
    "Ethernet0": {"remoteAs": 4200000000, "state": "Established", "peerState": "OK", "pfxRcd": 3},
    "10.0.0.3": {"remoteAs": 4200000000, "state": "Active", "peerState": "OK"}}},
    "ipv6Unicast": {"peers": {"Ethernet0": {"remoteAs": 4200000000, "state": "Idle"}}}}


def test_frr_peer_is_established_only_where_every_family_is():
    assert health.frr_bgp(FRR) == {"Ethernet0": "idle", "10.0.0.3": "active"}


def test_gate_asks_back_only_what_was_up_and_is_still_planned():
    before = {"bgp": {"swp51": "established", "swp52": "established", "swp53": "idle", "swp54": "established"},
              "links": {"bond1": "up", "bond2": "down", "peerlink": "up"}, "mlag_peer": True}
    now = {"bgp": health.nvue_bgp({"swp51": {"state": "established"}, "swp52": {"state": "connect"},
                                   "swp53": {"state": "idle"}}),
           "links": health.nvue_links({"bond1": {"type": "bond", "link": {"oper-status": "down"}},
                                       "bond2": {"type": "bond", "link": {"oper-status": "down"}},
                                       "peerlink": {"type": "peerlink", "link": {"oper-status": "up"}},
                                       "swp1": {"type": "swp", "link": {"oper-status": "down"}}}),
           "mlag_peer": health.nvue_mlag_peer({"peer-alive": "False"})}
    # swp54 the plan removes: not asked for; swp53 and bond2 were down before: not asked for
    problems = health.problems(now, before, ["swp51", "swp52", "swp53"])
    assert problems == ["BGP swp52: connect (Established before the push)",
                        "bond1: down (up before the push)", "MLAG peer: not alive (alive before the push)"]
    healthy = {"bgp": {"swp51": "established", "swp52": "established"}, "links": {"bond1": "up", "peerlink": "up"},
               "mlag_peer": True}
    assert health.problems(healthy, before, ["swp51", "swp52"]) == []
