"""Writes the two ibnetdiscover recordings beside it, in ibnetdiscover(8)'s topology file format,
for the dgx-h100-ib stack's first four nodes, its eight su01 rail leaves and UFM pair:

- healthy.ibnetdiscover: every node-leaf and UFM-leaf cable as planned, 4x NDR;
- miswired.ibnetdiscover: su01-node02's rail 2 and rail 3 cables swapped at the node, su01-node03's
  rail 0 cable missing, su01-node04's rail 7 cable one port off on its leaf (port 5, 1/3/1,
  instead of 4, 1/2/2) and su01-node04's rail 6 link trained at 2x NDR (200G). (Every leaf port
  is planned on this pod, so a stray cable there reads as a miswire, not as an unplanned link.)

Run: python testdata/validate/make_ib_recordings.py (the files are committed; this shows how).
"""

from __future__ import annotations

from pathlib import Path

HCAS = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]  # rails 0-7
NODES = [f"su01-node{i:02d}" for i in range(1, 5)]
LEAVES = [f"su01-leaf-rail{r}" for r in range(8)]
UFM_PORT = 32  # 1/16/2 on QM9700: the UFM HA pair's cables land on the first four leaves (two each)


def guid(kind: int, a: int, b: int) -> str:
    return f"{0xb83fd20300000000 + (kind << 16) + (a << 8) + b:016x}"


def hca_guid(node: int, rail: int) -> str:
    return guid(1, node, rail)


def leaf_guid(rail: int) -> str:
    return f"{0xfc6a1c0300e8a200 + rail:016x}"


def ufm_guid(i: int) -> str:
    return guid(2, 0, i)


def cables(miswired: bool) -> list[tuple[tuple, tuple, str]]:
    """(CA end, switch end, width x speed): CA end (guid, desc), switch end (rail, port)."""
    out = []
    for n, node in enumerate(NODES, start=1):
        for rail, hca in enumerate(HCAS):
            leaf_rail, port, ws = rail, n, "4xNDR"
            if miswired and node == "su01-node02" and rail in (2, 3):
                leaf_rail = 5 - rail  # rails 2 and 3 swapped at the node
            if miswired and node == "su01-node03" and rail == 0:
                continue  # cable missing
            if miswired and node == "su01-node04" and rail == 7:
                port = 5  # one port off
            if miswired and node == "su01-node04" and rail == 6:
                ws = "2xNDR"  # trained at half width
            out.append(((hca_guid(n, rail), f"{node} {hca}"), (leaf_rail, port), ws))
    for i in range(4):
        out.append(((ufm_guid(i), f"ufm-{i // 2 + 1:02d} mlx5_{i % 2}"), (i, UFM_PORT), "4xNDR"))
    return out


def switch_desc(rail: int) -> str:
    return f"MF0;{LEAVES[rail]}:MQM9700/U1"


def render(miswired: bool) -> str:
    cs = cables(miswired)
    lid = {leaf_guid(r): r + 1 for r in range(8)}
    for i, ((g, _), _, _) in enumerate(cs):
        lid[g] = 100 + i
    lines = ["#", "# Topology file: generated on Tue Nov 24 06:40:12 2026", "#",
             "# Initiated from node b83fd20300010100 port b83fd20300010100", "", ""]
    for rail in range(8):
        sg = leaf_guid(rail)
        lines += ["vendid=0x2c9", "devid=0xd2f0", f"sysimgguid=0x{sg}", f"switchguid=0x{sg}({sg})",
                  f'Switch\t65 "S-{sg}"\t\t# "{switch_desc(rail)}" enhanced port 0 lid {lid[sg]} lmc 0']
        ports = sorted((port, g, desc, ws) for (g, desc), (r, port), ws in cs if r == rail)
        for port, g, desc, ws in ports:
            kind = "S" if desc.startswith("MF0;") else "H"
            pg = "" if kind == "S" else f"({g})"
            lines.append(f'[{port}]\t"{kind}-{g}"[{40 if kind == "S" else 1}]{pg} \t\t# "{desc}" lid {lid[g]} {ws}')
        lines.append("")
    for (g, desc), (rail, port), ws in cs:
        sg = leaf_guid(rail)
        lines += ["vendid=0x2c9", "devid=0x1021", f"sysimgguid=0x{g}", f"caguid=0x{g}",
                  f'Ca\t1 "H-{g}"\t\t# "{desc}"',
                  f'[1]({g}) \t"S-{sg}"[{port}]\t\t# lid {lid[g]} lmc 0 "{switch_desc(rail)}" lid {lid[sg]} {ws}', ""]
    return "\n".join(lines)


if __name__ == "__main__":
    here = Path(__file__).parent
    (here / "healthy.ibnetdiscover").write_text(render(False))
    (here / "miswired.ibnetdiscover").write_text(render(True))
