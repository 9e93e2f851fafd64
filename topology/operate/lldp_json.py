"""Neighbor records from `lldpctl -f json` (or `-f json0`) output, as lldpd prints it on Linux
nodes, Cumulus Linux and SONiC alike.

Shapes handled (lldpd's JSON writer collapses one-element lists into objects):
- json:  {"lldp": {"interface": {"eth0": {...}}}} for one neighbor, or a list of such
  one-key objects for several; chassis keyed by system name ({"leaf1": {"id": ...}}), or bare
  ({"id": ...}) when the neighbor sends none; values are plain strings.
- json0: every level a list and every value {"value": ...}: {"lldp": [{"interface": [{"name":
  "eth0", "chassis": [{"name": [{"value": "leaf1"}]}], "port": [{"id": [{"type": "ifname",
  "value": "swp1"}]}]}]}]}.
"""

from __future__ import annotations

import re
from functools import lru_cache

from topology.errors import SpecError
from topology.operate.neighbors import Neighbor

_MAU_GBPS = re.compile(r"(\d+)\s*G(?:ig)?\s*base", re.IGNORECASE)
_MAU_MBPS = re.compile(r"^(\d+)\s*base", re.IGNORECASE)


def _listed(v) -> list:
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def _plain(v):
    """json0 wraps values as [{"value": x}]; json gives x."""
    while isinstance(v, list):
        v = v[0] if v else None
    if isinstance(v, dict) and "value" in v:
        return v["value"]
    return v


@lru_cache(maxsize=256)  # a pod has a handful of MAU types, each seen thousands of times
def mau_speed_gbps(text: str | None) -> int | None:
    """Speed of an 802.3 MAU type as lldpd names it ('400GbaseCR8', '10GigBaseR', '1000BaseTFD')."""
    if not text:
        return None
    if m := _MAU_GBPS.search(text):
        return int(m.group(1))
    if m := _MAU_MBPS.match(text):
        return max(int(m.group(1)) // 1000, 0) or None
    return None


def _interfaces(doc: dict) -> list[tuple[str, dict]]:
    """(local interface, its record) pairs from either shape."""
    out = []
    for lldp in _listed(doc.get("lldp")):
        if not isinstance(lldp, dict):
            continue
        for item in _listed(lldp.get("interface")):
            if not isinstance(item, dict):
                continue
            if "name" in item and ("chassis" in item or "port" in item):  # json0
                out.append((_plain(item["name"]), item))
            else:  # json: {"eth0": {...}} (one or several keys)
                out += [(name, rec) for name, rec in item.items() if isinstance(rec, dict)]
    return out


def _system_name(chassis) -> str | None:
    for ch in _listed(chassis):
        if not isinstance(ch, dict):
            continue
        if "name" in ch:  # json0
            return str(_plain(ch["name"]))
        if "id" in ch and not any(isinstance(v, dict) and "id" in v for v in ch.values()):
            continue  # bare chassis: the neighbor sends no system name
        for name, body in ch.items():
            if isinstance(body, dict):
                return name
    return None


def _port(port) -> tuple[str | None, int | None]:
    for p in _listed(port):
        if not isinstance(p, dict):
            continue
        pid = _listed(p.get("id"))
        pid = pid[0] if pid else {}
        kind, value = _plain(pid.get("type")), _plain(pid.get("value"))
        descr = _plain(p.get("descr"))
        name = value if kind in ("ifname", "local") and value else (descr or value)
        auto = _listed(p.get("auto-negotiation"))
        current = _plain(auto[0].get("current")) if auto and isinstance(auto[0], dict) else None
        return (str(name) if name is not None else None), mau_speed_gbps(current)
    return None, None


def parse_lldpctl(doc, local_device: str, source: str = "") -> list[Neighbor]:
    """Neighbors seen by `local_device` (the host that ran lldpctl; its output never names it)."""
    if not isinstance(doc, dict) or "lldp" not in doc:
        raise SpecError(source or "lldpctl", "not lldpctl JSON output: no top-level 'lldp' key")
    out = []
    for ifname, rec in _interfaces(doc):
        remote_name = _system_name(rec.get("chassis"))
        remote_port, speed = _port(rec.get("port"))
        if not ifname or not remote_name or not remote_port:
            continue  # a neighbor that names neither itself nor its port cannot be placed
        out.append(Neighbor((local_device, str(ifname)), (remote_name, remote_port), speed, source))
    return out
