"""The plan summary: counts a purchase order needs and the oversubscription per tier."""

from __future__ import annotations

from collections import Counter
from math import gcd

from rich.table import Table

from topology.layout.model import Layout


def ratio_text(down: int, up: int) -> str:
    if not up:
        return "-"
    g = gcd(down, up)
    return f"{down // g}:{up // g}"


def summary(layout: Layout) -> dict:
    roles = Counter(d.role for d in layout.devices)
    tiers = Counter(lk.tier for lk in layout.links)
    return {
        "pod": layout.spec.name,
        "nodes": layout.facts["nodes"],
        "gpus": layout.facts["gpus"],
        "fabric_tiers": layout.facts["tiers"],
        "switches": {t.role: t.switches for t in layout.tiers},
        "oversubscription": {t.role: ratio_text(t.down_gbps, t.up_gbps) for t in layout.tiers if t.up_ports},
        "devices": dict(roles),
        "cables": dict(tiers),
        "racks": len(layout.racks),
        "planned_kw": round(sum(r.planned_kw for r in layout.racks), 1),
    }


def summary_tables(layout: Layout) -> list[Table]:
    s = summary(layout)
    head = Table(
        title=f"pod {s['pod']}: {s['nodes']} nodes, {s['gpus']} GPUs, {s['fabric_tiers']}-tier compute "
        f"fabric, {s['racks']} racks, {s['planned_kw']} kW planned"
    )
    for col in ("fabric", "tier", "switches", "model", "speed", "down:up"):
        head.add_column(col, justify="right" if col in ("switches", "speed") else "left")
    for t in layout.tiers:
        head.add_row(t.fabric, t.role, str(t.switches), t.model, f"{t.speed_gbps}G", ratio_text(t.down_gbps, t.up_gbps))
    cables = Table(title="cables per tier")
    for col in ("tier", "fabric", "cables"):
        cables.add_column(col, justify="right" if col == "cables" else "left")
    fabric_of = {lk.tier: lk.fabric for lk in layout.links}
    for tier, n in s["cables"].items():
        cables.add_row(tier, fabric_of[tier], str(n))
    cables.add_row("total", "", str(len(layout.links)))
    return [head, cables]
