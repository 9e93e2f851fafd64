"""SONiC: which ConfigDB changes a JSON Patch (`config apply-patch`, the Generic Config Updater)
can make in place, and which need `config reload`.

A patch is the difference between the running tables the plan owns and the planned ones
(community.general.json_diff, RFC 6902). It cannot carry:
- a changed create-only field of an entry that stays: GCU refuses to replace such a field
  or to add or remove it while its entry remains (sonic-utilities,
  generic_config_updater/patch_sorter.py, CreateOnlyMoveValidator: PORT lanes,
  LOOPBACK_INTERFACE vrf_name, BGP_NEIGHBOR holdtime/keepalive/name/asn/local_addr/nhopself/
  rrclient, every BGP_PEER_RANGE field). A port's lanes change with a breakout: the port is
  another port, which is what `config reload` rebuilds;
- DEVICE_METADATA|localhost docker_routing_config_mode: the bgp container reads it once, when it
  starts, to choose how FRR's files are made (sonic-buildimage dockers/docker-fpm-frr/
  docker_init.sh), so only a restart of bgp, i.e. a reload, applies it.
"""

from __future__ import annotations

import json
import re

CREATE_ONLY = {
    "PORT": ("lanes",),
    "LOOPBACK_INTERFACE": ("vrf_name",),
    "BGP_NEIGHBOR": ("holdtime", "keepalive", "name", "asn", "local_addr", "nhopself", "rrclient"),
    "BGP_PEER_RANGE": None,  # every field
}
READ_AT_START = (("DEVICE_METADATA", "localhost", "docker_routing_config_mode"),)


def switch_fabric_sonic_reload_reasons(running: dict, planned: dict) -> list[str]:
    """Why the change from `running` to `planned` (whole ConfigDB tables) needs `config reload`;
    empty when `config apply-patch` can make it."""
    out = []
    for table, fields in CREATE_ONLY.items():
        now, then = running.get(table) or {}, planned.get(table) or {}
        for key in sorted(set(now) & set(then)):
            names = fields if fields is not None else sorted(set(now[key]) | set(then[key]))
            for field in names:
                if now[key].get(field) != then[key].get(field):
                    out.append(f"{table}|{key} {field}: {now[key].get(field)} -> {then[key].get(field)} "
                               "(create-only for the config updater)")
    for table, key, field in READ_AT_START:
        old = ((running.get(table) or {}).get(key) or {}).get(field)
        new = ((planned.get(table) or {}).get(key) or {}).get(field)
        if table in planned and old != new:
            out.append(f"{table}|{key} {field}: {old} -> {new} (read when bgp starts)")
    return out


# `neighbor <address|interface> [interface] remote-as ...` or `... peer-group <group>`: a session
# (a peer-group's own lines, `neighbor FABRIC peer-group` and its settings, are not)
_SESSION = re.compile(r"^\s*neighbor (\S+) (?:interface )?(?:remote-as|peer-group \S)", re.M)


def switch_fabric_frr_neighbors(frr_conf: str) -> list[str]:
    """The BGP sessions an frr.conf configures, by neighbor (address or interface), for the
    rollout gate: the sessions the plan keeps."""
    return sorted(set(_SESSION.findall(frr_conf)))


def switch_fabric_sonic_change(running_text: str, planned: dict, patching: bool = True) -> dict:
    """What the push must do, computed in one Python call (Jinja over a whole ConfigDB, every
    platform port listed, took minutes of CPU per switch in ansible-core 2.19): the running tables
    the plan owns, the JSON Patch from them to the plan's (RFC 6902, jsonpatch: what `config
    apply-patch` takes) and why a reload is needed instead, if it is."""
    import jsonpatch  # the controller's (the `ansible` extra), as community.general.json_diff needs

    # plain data first: jsonpatch deep-copies its inputs, and a deep copy of ansible-core 2.19's lazy
    # template containers walks each value through the templar (py-spy: minutes per ConfigDB)
    planned = json.loads(json.dumps(planned))
    running = {k: v for k, v in json.loads(running_text).items() if k in planned}
    return {"patch": jsonpatch.make_patch(running, planned).patch,
            "reload_why": switch_fabric_sonic_reload_reasons(running, planned) if patching
            else ["switch_fabric_sonic_patching is false"]}


SITE_BEGIN = "! BEGIN site lines (switch_fabric_extra_frr: the inventory's, not the plan's)"
SITE_END = "! END site lines"


def switch_fabric_frr_with_site_lines(planned: str, lines: list[str]) -> str:
    """The planned frr.conf with the site's own lines appended in a marked block (what is pushed,
    compared and checked with `vtysh -C`); the plan alone when there are none."""
    if not lines:
        return planned
    return planned.rstrip("\n") + "\n" + "\n".join([SITE_BEGIN, *[str(x) for x in lines], SITE_END]) + "\n"


class FilterModule:
    def filters(self):
        return {"switch_fabric_sonic_reload_reasons": switch_fabric_sonic_reload_reasons,
                "switch_fabric_sonic_change": switch_fabric_sonic_change,
                "switch_fabric_frr_neighbors": switch_fabric_frr_neighbors,
                "switch_fabric_frr_with_site_lines": switch_fabric_frr_with_site_lines}
