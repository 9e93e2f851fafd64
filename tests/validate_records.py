"""Synthetic discovery data for validate's tests and bench: lldpctl JSON as lldpd prints it,
derived from a plan's cables and then perturbed (swap, remove, add, wrong speed)."""

from __future__ import annotations

import json
from pathlib import Path

from topology.render.labels import labels_csv
from topology.render.tables import cabling_csv, devices_csv

SITE_ROUTERS = ("dc1-border-rtr1", "dc1-border-rtr2")  # the site's own names for its border routers

MAU = {1: "1000BaseTFD", 10: "10GigBaseT", 100: "100GbaseCR4", 200: "200GbaseCR4", 400: "400GbaseCR8",
       800: "800GbaseCR8"}


def write_plan(layout, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cabling.csv").write_text(cabling_csv(layout))
    (folder / "devices.csv").write_text(devices_csv(layout))
    (folder / "labels.csv").write_text(labels_csv(layout))
    return folder


def ends(layout, fabrics=("compute", "storage", "inband")) -> dict[tuple[str, str], tuple[tuple[str, str], int]]:
    """Each port of the planned cables: its far end and speed (what LLDP would show there)."""
    out = {}
    for lk in layout.links:
        if lk.fabric in fabrics:
            out[(lk.a_device, lk.a_port)] = ((lk.b_device, lk.b_port), lk.speed_gbps)
            out[(lk.b_device, lk.b_port)] = ((lk.a_device, lk.a_port), lk.speed_gbps)
    if "inband" in fabrics:  # the cores' border ports see the site's routers, under the site's names
        for n, lk in enumerate(layout.border_links):
            out[(lk.a_device, lk.a_port)] = ((SITE_ROUTERS[n % 2], f"Ethernet1/{n + 1}"), lk.speed_gbps)
    return out


def interface(local_port: str, remote: tuple[str, str], speed: int | None) -> dict:
    """One neighbor as `lldpctl -f json` shows it (lldpd 1.0.x)."""
    port = {"id": {"type": "ifname", "value": remote[1]}, "descr": remote[1], "ttl": "120"}
    if speed is not None:
        port["auto-negotiation"] = {"supported": False, "enabled": False, "current": MAU.get(speed, "unknown")}
    return {local_port: {
        "via": "LLDP", "rid": "1", "age": "0 day, 00:10:00",
        "chassis": {remote[0]: {"id": {"type": "mac", "value": "9c:05:91:00:00:01"},
                                "descr": "Debian GNU/Linux 12 (bookworm) Linux 6.1.0-27-amd64",
                                "mgmt-ip": "10.20.0.7",
                                "capability": [{"type": "Bridge", "enabled": True}]}},
        "port": port,
    }}


def lldpctl_docs(port_map: dict, devices: set[str] | None = None) -> dict[str, dict]:
    """Per reporting device, its lldpctl JSON (one interface: an object; several: a list)."""
    per: dict[str, list] = {}
    for (dev, port), (remote, speed) in sorted(port_map.items()):
        if devices is None or dev in devices:
            per.setdefault(dev, []).append(interface(port, remote, speed))
    docs = {}
    for dev, items in per.items():
        docs[dev] = {"lldp": {"interface": items[0] if len(items) == 1 else items}}
    return docs


def write_docs(docs: dict[str, dict], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for dev, doc in docs.items():
        (folder / f"{dev}.json").write_text(json.dumps(doc))
    return folder


def swap_far_ends(port_map: dict, p: tuple[str, str], q: tuple[str, str]) -> None:
    """The cables at ports p and q exchange their far ends (both ends' views change)."""
    (fp, sp), (fq, sq) = port_map[p], port_map[q]
    port_map[p], port_map[q] = (fq, sq), (fp, sp)
    port_map[fq], port_map[fp] = (p, sq), (q, sp)


def remove(port_map: dict, p: tuple[str, str]) -> None:
    far, _ = port_map.pop(p)
    port_map.pop(far)


def add(port_map: dict, p: tuple[str, str], q: tuple[str, str], speed: int) -> None:
    port_map[p] = (q, speed)
    port_map[q] = (p, speed)
