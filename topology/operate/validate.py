"""`superpod validate`: the real cabling against the plan.

Reads the plan (cabling.csv, devices.csv from `superpod plan`) and a folder of discovery files,
compares them (cabling_check) and reports a table or JSON and the work list per rack.

Discovery files in the folder (any mix):
- `<device>.json` or `<device>.lldp.json`: `lldpctl -f json` (or json0) output of that device;
- `<device>.ports.json`: {"<ifname>": {"up": bool, "speed_mbps": int, "kind": str}}, the port
  facts the collector (playbooks/lldp_collect.yml) writes beside it (no speed check on a cable with
  a virtual end: veth, dummy, ...);
- any other file: ibnetdiscover output (a node's or UFM's view of an InfiniBand fabric).
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from topology.errors import SpecError, plain
from topology.operate.cabling_check import Finding, Result, compare
from topology.operate.ibnetdiscover import PlanPortNames, parse_ibnetdiscover
from topology.operate.lldp_json import parse_lldpctl
from topology.operate.neighbors import Discovery, Neighbor, Plan, PlannedLink, PortState
from topology.operate.worklist import Task, work_list

DEFAULT_FABRICS = ("compute", "storage", "inband")  # OOB ports (BMCs, PDUs) rarely speak LLDP
# Link kinds (`ip -details link`: linkinfo.info_kind) of ports that are no cable: a lab's veth
# reports 10 Gb/s whatever the plan says. Physical NICs and switch ports have no kind.
VIRTUAL_KINDS = frozenset({"veth", "dummy", "tun", "macvlan", "ipvlan", "vxlan", "bridge"})
# A device's lldpctl or ibnetdiscover output is kilobytes (a 10,000-node fabric's ibnetdiscover a few
# MiB); a bigger file is a fault, and reading it whole would cost its size several times over in RAM.
MAX_FILE_MIB = 16
KINDS = ("correct", "swap", "miswired", "missing", "wrong_speed", "unplanned", "unverified")


def read_discovery(folder: Path, plan: Plan) -> Discovery:
    if not folder.is_dir():
        raise SpecError("--from", f"no such folder {folder}")
    neighbors: list[Neighbor] = []
    reporters: set[str] = set()
    ports: dict = {}
    namer = None
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    if not files:
        raise SpecError("--from", f"{folder} holds no discovery files")
    for path in files:
        size = path.stat().st_size
        if size > MAX_FILE_MIB * 2**20:
            raise SpecError(path.name, f"{size / 2**20:.0f} MiB: larger than the {MAX_FILE_MIB} MiB a device's "
                                       "discovery output can be (a fault in its collection)")
        try:
            if path.name.endswith(".ports.json"):
                ports.update(_port_states(path.name[: -len(".ports.json")], _json(path)))
            elif path.suffix == ".json":
                device = path.name.removesuffix(".json").removesuffix(".lldp")
                neighbors += parse_lldpctl(_json(path), device, path.name)
                reporters.add(device)
            else:
                namer = namer or PlanPortNames(plan)
                found, devices = parse_ibnetdiscover(path.read_text(encoding="utf-8", errors="replace"), namer,
                                                     path.name)
                neighbors += found
                reporters |= devices
        except SpecError:
            raise
        except (AttributeError, TypeError, KeyError, IndexError, ValueError, RecursionError) as e:
            # a shape none of the tools prints: name the file, never a traceback
            raise SpecError(path.name, f"not the output of lldpctl, ibnetdiscover or the port collector: "
                                       f"unexpected content ({type(e).__name__})") from None
    return Discovery(neighbors, reporters, ports)


def _port_states(device: str, doc) -> dict:
    """{"<ifname>": {"up": bool, "speed_mbps": int, "kind": str}} as the collector writes it."""
    if not isinstance(doc, dict):
        raise TypeError("not a mapping of interfaces")
    states = {}
    for ifname, st in doc.items():
        if not isinstance(st, dict):
            raise TypeError(f"{ifname}: not a mapping")
        up, speed = st.get("up"), st.get("speed_mbps")
        speed_ok = isinstance(speed, int) and not isinstance(speed, bool) and 0 < speed < 10**7
        states[(device, ifname)] = PortState(up if isinstance(up, bool) else None,
                                             speed // 1000 if speed_ok else None, st.get("kind") in VIRTUAL_KINDS)
    return states


def _json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as e:  # ValueError: bad JSON, 4,300+ digit integers
        raise SpecError(path.name, f"not valid JSON ({plain(str(e)[:200])})") from None


def scope(plan: Plan, discovery: Discovery, fabrics: tuple[str, ...], limit: tuple[str, ...]
          ) -> tuple[list[PlannedLink], Discovery]:
    """The planned links and records to compare: the fabrics asked for, devices matching --limit."""
    def match(device: str) -> bool:
        return not limit or any(fnmatch.fnmatchcase(device, pat) for pat in limit)

    links, included, excluded = [], set(), set()
    for lk in plan.links:
        if lk.fabric in fabrics and match(lk.a[0]) and match(lk.b[0]):
            links.append(lk)
            included |= {lk.a, lk.b}
        else:
            excluded |= {lk.a, lk.b}
    # A record touching a port checked here counts (a cable that wandered onto a port out of scope is
    # still this link's miswire); one between ports checked elsewhere does not.
    kept = [nb for nb in discovery.neighbors
            if nb.local in included or nb.remote in included
            or (match(nb.local[0]) and nb.local not in excluded and nb.remote not in excluded)]
    return links, Discovery(kept, {d for d in discovery.reporters if match(d)}, discovery.ports)


def site_ends_named(discovery: Discovery, plan: Plan) -> Discovery:
    """A border port's neighbor is the site's router, under the site's own name: a record on a planned
    border port whose far device the plan does not hold is that planned cable's site end."""
    site_end = {lk.a: lk.b for lk in plan.links if lk.site_end}
    if not site_end:
        return discovery
    neighbors = [Neighbor(nb.local, site_end[nb.local], nb.speed_gbps, nb.source)
                 if nb.local in site_end and nb.remote[0] not in plan.racks else nb
                 for nb in discovery.neighbors]
    return Discovery(neighbors, discovery.reporters, discovery.ports)


def exit_code(result: Result) -> int:
    return 0 if result.all_correct else 1


# ---- output -------------------------------------------------------------------------------------

def _end(e) -> str:
    return plain(f"{e[0]} {e[1]}")  # a neighbor names itself: never let its bytes drive the terminal


def _planned(lk: PlannedLink | None) -> str:
    if not lk:
        return ""
    return f"{lk.cable_id + ': ' if lk.cable_id else ''}{_end(lk.a)} — {_end(lk.b)}"


def _found(f: Finding) -> str:
    return "; ".join(f"{_end(a)} — {_end(b)}" for a, b in f.found)


def _detail(f: Finding) -> str:
    if f.kind == "swap":
        return f"swapped with {_planned(f.other)}"
    if f.kind == "miswired":
        lk = f.planned
        return "; ".join(
            f"{_end(near)} reaches {_end(c[1] if c[0] == near else c[0])} instead of {_end(far)}"
            for c in f.found for near, far in ((lk.a, lk.b), (lk.b, lk.a)) if near in c)
    if f.kind == "wrong_speed":
        return f"runs at {f.speed_gbps}G, planned {f.planned.speed_gbps}G"
    if f.kind == "unplanned" and f.speed_gbps:
        return f"{f.speed_gbps}G"
    return f.detail


def counts(result: Result) -> dict[str, int]:
    return {k: len(result.of(k)) for k in KINDS} | {"not_heard": len(result.not_heard)}


def to_json(stack: str, result: Result, tasks: list[Task]) -> dict:
    def link(lk):
        return None if lk is None else {"cable_id": lk.cable_id, "a_device": lk.a[0], "a_port": lk.a[1],
                                        "b_device": lk.b[0], "b_port": lk.b[1], "fabric": lk.fabric,
                                        "speed_gbps": lk.speed_gbps}

    return {
        "stack": stack,
        "all_correct": result.all_correct,
        "counts": counts(result),
        "findings": [
            {"kind": f.kind, "planned": link(f.planned), "other": link(f.other),
             "found": [{"a_device": a[0], "a_port": a[1], "b_device": b[0], "b_port": b[1]} for a, b in f.found],
             "speed_gbps": f.speed_gbps, "detail": _detail(f)}
            for f in result.findings if f.kind != "correct"
        ],
        "not_heard": result.not_heard,
        "work_list": [{"rack": t.rack, "device": t.device, "port": t.port, "action": t.action, "cable_id": t.cable_id}
                      for t in tasks],
    }


_STYLE = {"swap": "magenta", "miswired": "red", "missing": "red", "wrong_speed": "yellow", "unplanned": "cyan",
          "unverified": "dim"}


def print_report(console: Console, stack: str, result: Result, tasks: list[Task], limit: int = 50) -> None:
    c = counts(result)
    problems = sorted((f for f in result.findings if f.kind not in ("correct", "unverified")),
                      key=lambda f: KINDS.index(f.kind))
    if problems:
        table = Table(title=f"cabling of {stack}: what differs from the plan", title_justify="left")
        for col in ("kind", "planned", "found", "detail"):
            table.add_column(col)
        shown = problems if limit == 0 else problems[:limit]
        for f in shown:
            table.add_row(f"[{_STYLE[f.kind]}]{f.kind}[/]", escape(_planned(f.planned)), escape(_found(f)),
                          escape(_detail(f)))
        console.print(table)
        if len(shown) < len(problems):
            console.print(f"… {len(problems) - len(shown)} more (--limit-rows 0 or --json for all)", highlight=False)
    if result.not_heard:
        console.print(f"[bold]not heard from[/] ({len(result.not_heard)}): " + plain(", ".join(result.not_heard)),
                      highlight=False)
    console.print(" ".join(f"{k}={v}" for k, v in c.items()), highlight=False)
    if not tasks:
        console.print("[green]all planned cables are where the plan says[/]")
        return
    console.print("[bold]work list[/] (per rack):")
    rack = None
    for t in tasks:
        if t.rack != rack:
            rack = t.rack
            console.print(f"  [bold]{escape(plain(rack))}[/]")
        console.print(f"    {escape(plain(t.line()))}", highlight=False)


def validate(plan_dir: Path, from_dir: Path, fabrics: tuple[str, ...] = DEFAULT_FABRICS,
             limit: tuple[str, ...] = ()) -> tuple[Result, list[Task], Plan]:
    from topology.operate.neighbors import load_plan

    plan = load_plan(plan_dir)
    unknown = sorted(set(fabrics) - {lk.fabric for lk in plan.links})
    if unknown:
        raise SpecError("--fabric", f"no such fabric in the plan: {', '.join(unknown)}")
    links, discovery = scope(plan, site_ends_named(read_discovery(from_dir, plan), plan), fabrics, limit)
    if not links:
        raise SpecError("--limit", "no planned cable is left to check (both ends must match)")
    result = compare(links, discovery)
    return result, work_list(result, plan), plan
