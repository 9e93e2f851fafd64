"""Reading one NIC: sysfs files and `ethtool -S` output. Every ethtool of a scrape is started at
once and every NIC's sysfs is read in its own thread, all within one time budget: a hung ethtool
or a sysfs read that never returns costs that NIC's freshness, never the scrape. Bytes that do
not decode cost the value they are in."""

from __future__ import annotations

import copy
import os
import subprocess
import threading
import time
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
    stale: bool = False  # sysfs did not answer within the budget: the last good reading, marked


SYSFS_SOURCES = ("net", "hw_counters", "counters")


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8", "replace").strip()
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
                                stderr=subprocess.DEVNULL)
    except OSError:
        return None


def finish_ethtool(proc: subprocess.Popen | None, r: NicReading, deadline: float) -> None:
    if proc is None:
        r.source_ok["ethtool"] = False
        return
    try:
        out, _ = proc.communicate(timeout=max(0.01, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        r.source_ok["ethtool"] = False
        return
    r.source_ok["ethtool"] = proc.returncode == 0
    if proc.returncode == 0:
        r.counters.update(match("ethtool", parse_ethtool(out.decode("utf-8", "replace"))))


class SysfsRead:
    """One NIC's sysfs read in a daemon thread (a read stuck in the kernel cannot be cancelled,
    and must not keep the process from stopping)."""

    def __init__(self, cfg: ExporterConfig, nic: Nic):
        self.done = threading.Event()
        self.reading = NicReading()
        threading.Thread(target=self._run, args=(cfg, nic), daemon=True, name=f"sysfs-{nic.netdev}").start()

    def _run(self, cfg: ExporterConfig, nic: Nic) -> None:
        try:
            read_sysfs(cfg, nic, self.reading)
        finally:
            self.done.set()


class NicReader:
    """Reads every NIC of the plan within cfg.ethtool_timeout_s. A NIC whose sysfs read is still
    running is not read again (threads stay one per NIC at most): its last good reading is served,
    marked stale, with its sysfs sources down."""

    def __init__(self, cfg: ExporterConfig):
        self.cfg = cfg
        self.pending: list[SysfsRead | None] = [None] * len(cfg.nics)
        self.last: list[NicReading | None] = [None] * len(cfg.nics)

    def read_all(self) -> list[NicReading]:
        cfg = self.cfg
        deadline = time.monotonic() + cfg.ethtool_timeout_s
        procs = [start_ethtool(cfg, nic) for nic in cfg.nics]
        for i, nic in enumerate(cfg.nics):
            if self.pending[i] is None:
                self.pending[i] = SysfsRead(cfg, nic)
        readings = []
        for i, read in enumerate(self.pending):
            if read.done.wait(max(0.0, deadline - time.monotonic())):
                self.pending[i] = None
                self.last[i] = read.reading
                readings.append(copy.deepcopy(read.reading))
            else:
                readings.append(self._stale(i))
        for proc, r in zip(procs, readings, strict=True):
            finish_ethtool(proc, r, deadline)
        return readings

    def _stale(self, i: int) -> NicReading:
        r = copy.deepcopy(self.last[i]) if self.last[i] is not None else NicReading()
        r.stale = True  # its ethtool counters are added fresh by the caller, as for any NIC
        r.source_ok.update({src: False for src in SYSFS_SOURCES})
        return r


def read_all(cfg: ExporterConfig) -> list[NicReading]:
    """One read of every NIC (no staleness kept between calls: the collector keeps a NicReader)."""
    return NicReader(cfg).read_all()
