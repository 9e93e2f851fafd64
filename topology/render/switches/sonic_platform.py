"""A SONiC platform's own port facts (platform.json and its default SKU, from sonic-buildimage in
testdata/sonic-platforms/): the front-panel ports, their lanes, the breakout modes by the exact key
SONiC spells (`2x200G[100G,50G,40G,25G,10G]`) and each mode's leg names and aliases.

SONiC refuses a config_db whose PORT entries are not the legs of the port's BREAKOUT_CFG mode, as
sonic-config-engine's portconfig derives them: leg i of a k-way breakout of EthernetB with n lanes
is Ethernet(B + i*n/k) with the lanes [i*n/k, (i+1)*n/k) and the mode's i-th alias.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PLATFORMS = Path(__file__).resolve().parents[3] / "testdata" / "sonic-platforms"

_MODE = re.compile(r"(\d+)x(\d+G?)(?:\[([^\]]*)\])?")


def _mbps(text: str) -> int:
    """'100G' -> 100000; '1000' -> 1000 (platform.json writes sub-gigabit speeds in Mb/s)."""
    return int(text[:-1]) * 1000 if text.endswith("G") else int(text)


@dataclass(frozen=True, slots=True)
class Mode:
    key: str  # exactly as platform.json spells it
    legs: int
    speed_mbps: int  # the mode's default leg speed
    speeds: frozenset[int]  # every leg speed the mode allows (default and the bracketed ones)


@cache
def parse_mode(key: str) -> Mode | None:
    """A single-group mode key; None for mixed modes (`1x200G(4)+2x100G(4)`), which the plan never uses."""
    m = _MODE.fullmatch(key)
    if not m:
        return None
    default = _mbps(m.group(2))
    others = {_mbps(s) for s in (m.group(3) or "").split(",") if s}
    return Mode(key, int(m.group(1)), default, frozenset({default} | others))


@dataclass(frozen=True, slots=True)
class Leg:
    name: str  # EthernetN
    lanes: tuple[int, ...]
    alias: str  # etp1a
    index: int  # front-panel port number


@dataclass(frozen=True, slots=True)
class FrontPort:
    name: str  # the parent port, Ethernet<first leg>
    index: int  # front-panel port number (1-based), as the planned swpN counts
    lanes: tuple[int, ...]
    modes: dict[str, tuple[str, ...]]  # mode key -> leg aliases
    default_mode: str  # the SKU's (hwsku.json default_brkout_mode)

    def legs(self, mode: str) -> tuple[Leg, ...]:
        k = parse_mode(mode).legs
        width = len(self.lanes) // k
        base = int(self.name.removeprefix("Ethernet"))
        return tuple(
            Leg(f"Ethernet{base + i * width}", self.lanes[i * width:(i + 1) * width], self.modes[mode][i], self.index)
            for i in range(k)
        )

    def mode_for(self, legs: int, speed_mbps: int) -> str | None:
        """The platform's mode key with `legs` legs at `speed_mbps`: one whose default speed it is
        first, else one that allows it."""
        fits = [m for m in map(parse_mode, self.modes) if m and m.legs == legs and speed_mbps in m.speeds]
        fits.sort(key=lambda m: m.speed_mbps != speed_mbps)
        return fits[0].key if fits else None


@dataclass(frozen=True)
class Platform:
    name: str  # x86_64-nvidia_sn5400-r0
    sku: str  # its default SKU (default_sku)
    ports: tuple[FrontPort, ...]

    def port(self, index: int) -> FrontPort | None:
        return next((p for p in self.ports if p.index == index), None)


@cache
def load(name: str) -> Platform:
    folder = PLATFORMS / name
    sku = (folder / "default_sku").read_text(encoding="utf-8").split()[0]
    interfaces = json.loads((folder / "platform.json").read_text(encoding="utf-8"))["interfaces"]
    defaults = json.loads((folder / sku / "hwsku.json").read_text(encoding="utf-8"))["interfaces"]
    ports = tuple(
        FrontPort(
            name=name,
            index=int(entry["index"].split(",")[0]),
            lanes=tuple(int(x) for x in entry["lanes"].split(",")),
            modes={k: tuple(v) for k, v in entry["breakout_modes"].items()},
            default_mode=defaults[name]["default_brkout_mode"],
        )
        for name, entry in interfaces.items()
    )
    return Platform(name, sku, ports)
