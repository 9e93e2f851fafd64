"""Reading one NIC: sysfs files and `ethtool -S` output. Every ethtool of a scrape is started
at once and collected after the sysfs reads, so a scrape costs about one ethtool, not ten."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .config import ExporterConfig, Nic
from .counters import match, parse_ethtool, wanted


@dataclass
class NicReading:
    present: bool = False
    link_up: float | None = None
    speed_bps: float | None = None
    rdma_active: float | None = None
    counters: dict[tuple[str, tuple[str, ...]], float] = field(default_factory=dict)
    source_ok: dict[str, bool] = field(default_factory=dict)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:  # absent counter, or one the firmware refuses to read (EINVAL)
        return None


def _read_dir(path: Path, source: str) -> dict[str, int] | None:
    try:
        names = wanted(source, os.listdir(path))
    except OSError:
        return None
    out = {}
    for n in names:
        v = _read(path / n)
        if v is not None and v.lstrip("-").isdigit():
            out[n] = int(v)
    return out


def read_sysfs(cfg: ExporterConfig, nic: Nic, r: NicReading) -> None:
    root = Path(cfg.sysfs_root)
    net = root / "class" / "net" / nic.netdev
    r.present = net.is_dir()
    if r.present:
        oper = _read(net / "operstate")
        r.link_up = 1.0 if oper == "up" else 0.0
        speed = _read(net / "speed")  # Mb/s; -1 or unreadable while the link is down
        if speed and speed.isdigit():
            r.speed_bps = int(speed) * 1e6
        raw = _read_dir(net, "net")
        r.source_ok["net"] = raw is not None
        r.counters.update(match("net", raw or {}))
    if nic.hca:
        port = root / "class" / "infiniband" / nic.hca / "ports" / str(nic.port)
        state = _read(port / "state")  # "4: ACTIVE"
        if state is not None:
            r.rdma_active = 1.0 if state.split(":")[0].strip() == "4" else 0.0
        for src in ("hw_counters", "counters"):
            raw = _read_dir(port / src, src)
            r.source_ok[src] = raw is not None
            r.counters.update(match(src, raw or {}))


def start_ethtool(cfg: ExporterConfig, nic: Nic) -> subprocess.Popen | None:
    try:
        return subprocess.Popen([*cfg.ethtool_command, nic.netdev], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
    except OSError:
        return None


def finish_ethtool(cfg: ExporterConfig, proc: subprocess.Popen | None, r: NicReading) -> None:
    if proc is None:
        r.source_ok["ethtool"] = False
        return
    try:
        out, _ = proc.communicate(timeout=cfg.ethtool_timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        r.source_ok["ethtool"] = False
        return
    r.source_ok["ethtool"] = proc.returncode == 0
    if proc.returncode == 0:
        r.counters.update(match("ethtool", parse_ethtool(out)))


def read_all(cfg: ExporterConfig) -> list[NicReading]:
    procs = [start_ethtool(cfg, nic) for nic in cfg.nics]
    readings = [NicReading() for _ in cfg.nics]
    for nic, r in zip(cfg.nics, readings, strict=True):
        read_sysfs(cfg, nic, r)
    for proc, r in zip(procs, readings, strict=True):
        finish_ethtool(cfg, proc, r)
    return readings
