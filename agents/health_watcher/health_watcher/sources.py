"""What the watcher reads: the kernel log (GPU XIDs), nvidia-smi -q -x (throttling, ECC,
row remapping, lost GPUs), the rails' netdevs in sysfs (down, flapping) and node_check."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from .config import WatcherConfig

# NVRM's line, as the driver writes it: "NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen off the bus."
XID_LINE = re.compile(r"NVRM: Xid \((PCI:[0-9A-Fa-f:.]+)\): (\d+), ?(.*)")


@dataclass(frozen=True)
class Fault:
    key: str  # what it is about ("xid", "gpu3", "rail2"), for one line per cause
    reason: str  # for the drain reason and the alert


class KernelLog:
    """New lines of the kernel log since the watcher started: /dev/kmsg records
    ("pri,seq,usec,flags;message"), or a plain file followed like `tail -f` (tests, syslog)."""

    def __init__(self, path: str):
        self.path = path
        self.kmsg = path.endswith("kmsg")
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(self.fd, 0, os.SEEK_END)  # what was logged before the watcher started is history
        self.partial = b""

    def lines(self) -> list[str]:
        out: list[str] = []
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError as e:
                if e.errno == errno.EAGAIN:
                    break
                if e.errno == errno.EPIPE:  # /dev/kmsg: records overwritten before we read them
                    continue
                raise
            if not chunk:
                break
            if self.kmsg:  # one record per read
                out.append(chunk.decode("utf-8", "replace").partition(";")[2].rstrip("\n"))
                continue
            data = self.partial + chunk
            *whole, self.partial = data.split(b"\n")
            out += [w.decode("utf-8", "replace") for w in whole]
        return out


def xid_faults(lines: list[str], drain_xids: set[int]) -> list[Fault]:
    out = []
    for line in lines:
        m = XID_LINE.search(line)
        if m and int(m[2]) in drain_xids:
            out.append(Fault(f"xid-{m[1]}", f"GPU XID {m[2]} at {m[1]}: {m[3].strip()[:80]}"))
    return out


def gpu_faults(cfg: WatcherConfig, run=subprocess.run) -> list[Fault]:
    try:
        done = run(cfg.nvidia_smi, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return [Fault("nvidia-smi", f"nvidia-smi did not answer: {e}")]
    if done.returncode != 0:
        said = (done.stdout or done.stderr).strip().splitlines()
        return [Fault("nvidia-smi", f"nvidia-smi failed (exit {done.returncode}): {said[0] if said else ''}")]
    try:
        root = ET.fromstring(done.stdout)
    except ET.ParseError as e:
        return [Fault("nvidia-smi", f"nvidia-smi -q -x is not XML: {e}")]
    out, seen = [], 0
    for g in root.iter("gpu"):
        seen += 1
        idx = (g.findtext("minor_number") or "?").strip()
        reasons = g.find("clocks_event_reasons")
        if reasons is None:
            reasons = g.find("clocks_throttle_reasons")
        active = [t.removeprefix("clocks_event_reason_").replace("_", " ") for t in cfg.throttle_reasons
                  if reasons is not None and (reasons.findtext(t) or reasons.findtext(t.replace("event", "throttle"))
                                              or "").strip() == "Active"]
        if active:
            out.append(Fault(f"gpu{idx}-throttle", f"GPU {idx} throttled: {', '.join(active)}"))
        vol = g.find("ecc_errors/volatile")
        unc = sum(int(e.text) for e in (vol if vol is not None else []) if "uncorrectable" in e.tag
                  and (e.text or "").strip().isdigit())
        if unc:
            out.append(Fault(f"gpu{idx}-ecc", f"GPU {idx}: {unc} uncorrectable ECC errors"))
        if (g.findtext("remapped_rows/remapped_row_failure") or "").strip() == "Yes":
            out.append(Fault(f"gpu{idx}-remap", f"GPU {idx}: row remapping failed"))
        if (g.findtext("remapped_rows/remapped_row_pending") or "").strip() == "Yes":
            out.append(Fault(f"gpu{idx}-remap", f"GPU {idx}: row remap pending (needs a GPU reset)"))
    if cfg.gpu_count is not None and seen < cfg.gpu_count:
        out.append(Fault("gpu-count", f"{seen} of {cfg.gpu_count} GPUs seen"))
    return out


class RailLinks:
    """Each rail netdev's operstate and carrier changes; flapping = flap_changes changes within flap_window_s."""

    def __init__(self, cfg: WatcherConfig):
        self.cfg = cfg
        self.history: dict[str, deque[tuple[float, int]]] = {r.netdev: deque() for r in cfg.rails}

    def faults(self, now: float) -> list[Fault]:
        out = []
        for r in self.cfg.rails:
            base = Path(self.cfg.sysfs_net) / r.netdev
            try:
                state = (base / "operstate").read_text().strip()
                changes = int((base / "carrier_changes").read_text().strip())
            except (OSError, ValueError):
                out.append(Fault(f"rail{r.rail}", f"rail {r.rail} {r.netdev}: no such netdev"))
                continue
            hist = self.history[r.netdev]
            hist.append((now, changes))
            while hist and now - hist[0][0] > self.cfg.flap_window_s:
                hist.popleft()
            if state != "up":
                out.append(Fault(f"rail{r.rail}", f"rail {r.rail} {r.netdev} is {state}"))
            elif changes - hist[0][1] >= self.cfg.flap_changes:
                out.append(Fault(f"rail{r.rail}", f"rail {r.rail} {r.netdev} flapping: {changes - hist[0][1]} "
                                                  f"carrier changes in {now - hist[0][0]:.0f} s"))
        return out


def command_fault(name: str, argv: list[str], run=subprocess.run, timeout: float = 1800) -> Fault | None:
    """Runs a check (node_check, acceptance). node_check's module run on its own (python3
    superpod_node_check.py ARGS.json, as Slurm's health check runs it) prints its result as JSON and
    exits 0 whatever it found: its mismatches (or its failure) are the fault. Any other command: a
    non-zero exit is a fault naming its last words."""
    try:
        done = run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return Fault(name, f"{name} did not run: {e}")
    result = _module_result(done.stdout) if name == "node_check" else None
    if result is not None:
        if result.get("failed"):
            return Fault(name, f"{name} failed: {str(result.get('msg', ''))[:120]}")
        found = [f"{m.get('check')} expected {m.get('expected')} actual {m.get('actual')}"
                 for m in result.get("mismatches") or []]
        if found:
            return Fault(name, f"{name}: {len(found)} mismatch(es): {'; '.join(found)}"[:200])
        if done.returncode == 0:
            return None
    if done.returncode == 0:
        return None
    said = [x for x in (done.stdout + "\n" + done.stderr).splitlines() if x.strip()]
    return Fault(name, f"{name} failed (exit {done.returncode}): {said[-1].strip()[:120] if said else ''}")


def _module_result(stdout: str) -> dict | None:
    """An Ansible module's JSON result (it has 'mismatches' or 'failed'), else None."""
    text = stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) and ("mismatches" in data or "failed" in data) else None
