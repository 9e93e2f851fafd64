#!/usr/bin/python3
"""Reads a switch's health for the rollout gate, and compares it with a reading taken before the push.

Read (on the switch, with the switch's own tools):
- BGP sessions. Cumulus: `nv show vrf default router bgp neighbor -o json` (Cumulus Linux 5.12+:
  a summary keyed by neighbor with its `state`: established, idle, connect, ...; NVIDIA's
  Cumulus Linux user guide, "Troubleshooting BGP"). SONiC: `vtysh -c 'show bgp summary json'`
  (FRR: per address family, e.g. `ipv4Unicast`, a `peers` map keyed by neighbor whose `state`
  is Established, Idle, Active, ...; FRR's bgpd/bgp_vty.c, bgp_show_summary).
- Bonds and the MLAG peer link (Cumulus): `nv show interface -o json` (keyed by interface,
  `type` bond / peerlink, `link.oper-status` or `link.state` up / down) and `nv show mlag -o json`
  (`peer-alive`, as `nv show mlag` prints it).

The gate (`baseline` given): every session Established before the push that the plan keeps
(`planned_neighbors`) is Established again, every bond or peer link up before is up again, and
an MLAG peer alive before is alive again. What was down before the push is not asked for: on a
first bring-up the far ends are not configured yet. `problems` lists what is not back yet.
"""

from __future__ import annotations

import json

from ansible.module_utils.basic import AnsibleModule

UP = "up"
ESTABLISHED = "established"
LINK_TYPES = ("bond", "peerlink")


def _json(text: str):
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        return {}


def nvue_bgp(doc) -> dict[str, str]:
    if not isinstance(doc, dict):
        return {}
    return {str(n): str(v.get("state", "")).lower() for n, v in doc.items() if isinstance(v, dict)}


def frr_bgp(doc) -> dict[str, str]:
    """FRR's `show bgp summary json`: a peer may appear under several address families; it is
    Established only where every family says so."""
    out: dict[str, str] = {}
    if not isinstance(doc, dict):
        return out
    for family in doc.values():
        peers = family.get("peers") if isinstance(family, dict) else None
        for name, peer in (peers or {}).items():
            state = str(peer.get("state", "")).lower() if isinstance(peer, dict) else ""
            if out.get(name, ESTABLISHED) == ESTABLISHED:
                out[name] = state
    return out


def nvue_links(doc) -> dict[str, str]:
    out = {}
    for name, itf in (doc or {}).items() if isinstance(doc, dict) else ():
        if isinstance(itf, dict) and (itf.get("type") in LINK_TYPES or name == "peerlink"):
            link = itf.get("link") or {}
            out[name] = str(link.get("oper-status", link.get("state", ""))).lower()
    return out


def nvue_mlag_peer(doc) -> bool | None:
    if not isinstance(doc, dict) or "peer-alive" not in doc:
        return None
    return str(doc["peer-alive"]).lower() in ("true", "yes", "on", "up")


def problems(now: dict, before: dict, planned_neighbors: list[str] | None) -> list[str]:
    out = []
    keep = None if planned_neighbors is None else set(planned_neighbors)
    for name, state in sorted((before.get("bgp") or {}).items()):
        if state == ESTABLISHED and (keep is None or name in keep) and now["bgp"].get(name) != ESTABLISHED:
            out.append(f"BGP {name}: {now['bgp'].get(name) or 'gone'} (Established before the push)")
    for name, state in sorted((before.get("links") or {}).items()):
        if state == UP and now["links"].get(name) != UP:
            out.append(f"{name}: {now['links'].get(name) or 'gone'} (up before the push)")
    if before.get("mlag_peer") and not now.get("mlag_peer"):
        out.append("MLAG peer: not alive (alive before the push)")
    return out


def read(module: AnsibleModule) -> dict:
    p = module.params

    def run(argv: list[str]):
        rc, out, _ = module.run_command(argv)
        return _json(out) if rc == 0 else {}

    if p["os"] == "cumulus":
        health = {"bgp": nvue_bgp(run([p["nv"], "show", "vrf", "default", "router", "bgp", "neighbor", "-o", "json"])),
                  "links": nvue_links(run([p["nv"], "show", "interface", "-o", "json"])),
                  "mlag_peer": nvue_mlag_peer(run([p["nv"], "show", "mlag", "-o", "json"])) if p["mlag"] else None}
    else:
        health = {"bgp": frr_bgp(run([p["vtysh"], "-c", "show bgp summary json"])), "links": {}, "mlag_peer": None}
    return health


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "os": {"type": "str", "required": True, "choices": ["cumulus", "sonic"]},
            "nv": {"type": "str", "default": "nv"},
            "vtysh": {"type": "str", "default": "vtysh"},
            "mlag": {"type": "bool", "default": False},
            "baseline": {"type": "dict"},
            "planned_neighbors": {"type": "list", "elements": "str"},
        },
        supports_check_mode=True,
    )
    health = read(module)
    base = module.params["baseline"]
    found = problems(health, base, module.params["planned_neighbors"]) if base is not None else []
    module.exit_json(changed=False, health=health, problems=found)


if __name__ == "__main__":
    main()
