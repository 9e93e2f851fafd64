#!/usr/bin/env python3
"""Figures in the docs, generated from the example stacks' plans, never typed.

Each figure block in a Markdown file sits between `<!-- figures:NAME -->` and
`<!-- /figures:NAME -->`; this script rewrites the blocks from the layouts of the example stacks.

    python scripts/docs_figures.py          # rewrite the blocks in docs/*.md and README.md
    python scripts/docs_figures.py --check  # exit 1 naming each file whose blocks are stale

tests/test_docs_figures.py runs the check, so a change that moves a figure fails until the docs
are regenerated."""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from topology.layout.build import build  # noqa: E402
from topology.render.report import render_report  # noqa: E402
from topology.spec import load_stack_file  # noqa: E402

STACKS = ("lab", "roce-1k", "dgx-h100-ib", "roce-8k")
BLOCK = re.compile(r"(<!-- figures:([a-z-]+) -->\n)(.*?)(<!-- /figures:\2 -->)", re.S)
SWITCH_ROLES_OOB = ("oob_switch", "oob_aggregation")


@cache
def layout(stack: str):
    return build(load_stack_file(str(ROOT / f"Pulumi.{stack}.yaml")))


def counts(stack: str) -> dict:
    lay = layout(stack)
    roles = [d.role for d in lay.devices]
    from topology import catalog

    switches = catalog.load().switches
    return {
        "gpus": lay.facts["gpus"],
        "nodes": lay.facts["nodes"],
        "racks": len(lay.racks),
        "cables": len(lay.links) + len(lay.border_links),
        "border": len(lay.border_links),
        "pdus": roles.count("pdu"),
        "switches": sum(1 for d in lay.devices if d.model in switches and d.role not in SWITCH_ROLES_OOB),
        "oob": sum(roles.count(r) for r in SWITCH_ROLES_OOB),
        "kw": round(sum(r.planned_kw for r in lay.racks), 1),
    }


def report_size(stack: str) -> tuple[int, float]:
    files = render_report(layout(stack), Path("out"))
    return len(files), sum(len(c.encode()) for c in files.values()) / 1e6


def examples_table() -> str:
    head = ("| stack | GPUs | nodes | racks | cables (border) | fabric switches | OOB switches | PDUs | kW planned |\n"
            "|---|---|---|---|---|---|---|---|---|\n")
    rows = []
    for s in STACKS:
        c = counts(s)
        rows.append(f"| {s} | {c['gpus']:,} | {c['nodes']:,} | {c['racks']:,} | {c['cables']:,} ({c['border']}) | "
                    f"{c['switches']:,} | {c['oob']:,} | {c['pdus']:,} | {c['kw']:,} |")
    return head + "\n".join(rows) + "\n"


def report_table() -> str:
    head = "| stack | racks | cables | pages | MB |\n|---|---|---|---|---|\n"
    rows = []
    for s in ("lab", "roce-1k", "roce-8k"):
        c, (pages, mb) = counts(s), report_size(s)
        rows.append(f"| {s} | {c['racks']:,} | {c['cables']:,} | {pages} | {mb:.1f} |")
    return head + "\n".join(rows) + "\n"


def lab_line() -> str:
    c = counts("lab")
    return (f"The lab pod plans {c['gpus']} GPUs on {c['nodes']} nodes in {c['racks']} racks: {c['cables']} cables "
            f"({c['border']} to the site's border routers), {c['switches']} fabric switches, {c['oob']} OOB switches "
            f"and {c['pdus']} PDUs.\n")


BLOCKS = {"examples": examples_table, "report": report_table, "lab": lab_line}


def render(text: str) -> str:
    def fill(m: re.Match) -> str:
        name = m.group(2)
        if name not in BLOCKS:
            raise SystemExit(f"unknown figures block {name!r} (known: {', '.join(BLOCKS)})")
        return m.group(1) + BLOCKS[name]() + m.group(4)

    return BLOCK.sub(fill, text)


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def stale() -> list[Path]:
    return [p for p in documents() if BLOCK.search(p.read_text()) and render(p.read_text()) != p.read_text()]


def main(argv: list[str]) -> int:
    if "--check" in argv:
        bad = stale()
        for p in bad:
            print(f"{p.relative_to(ROOT)}: figures differ from the plans; run python scripts/docs_figures.py")
        return 1 if bad else 0
    for p in documents():
        text = p.read_text()
        new = render(text)
        if new != text:
            p.write_text(new)
            print(f"rewrote {p.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
