"""The loop: read the sources when due, drain on the first fault (one reason line naming each
cause), alert; once quiet for return_after_s, run node_check and the per-node acceptance and
return the node when both pass. Only a drain this watcher made is ever returned (state file)."""

from __future__ import annotations

import json
import logging
import subprocess
import time
from pathlib import Path

from . import actions
from .config import WatcherConfig
from .pfc import PfcStorms
from .sources import Fault, KernelLog, RailLinks, command_fault, gpu_faults, xid_faults

log = logging.getLogger("health_watcher")
REASON_MAX = 250  # Slurm keeps the reason as a string; keep it one readable line


class Watcher:
    def __init__(self, cfg: WatcherConfig, run=subprocess.run, clock=time.monotonic, wall=time.time):
        self.cfg, self.run, self.clock, self.wall = cfg, run, clock, wall
        self.kernel = KernelLog(cfg.kernel_log)
        self.rails = RailLinks(cfg)
        self.pfc = PfcStorms(cfg.pfc)
        self.next_gpu = self.next_check = 0.0
        self.state_path = Path(cfg.state_file)
        self.state = self._load()

    def _load(self) -> dict:
        try:
            return json.loads(self.state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def _save(self) -> None:
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state), encoding="utf-8")
        tmp.replace(self.state_path)

    def faults(self, now: float) -> list[Fault]:
        found = (xid_faults(self.kernel.lines(), set(self.cfg.drain_xids)) + self.rails.faults(now)
                 + self.pfc.faults(now))
        if now >= self.next_gpu:
            self.next_gpu = now + self.cfg.gpu_interval_s
            found += gpu_faults(self.cfg, self.run)
        if self.cfg.node_check and now >= self.next_check:
            self.next_check = now + self.cfg.node_check_interval_s
            f = command_fault("node_check", self.cfg.node_check, self.run)
            found += [f] if f else []
        return found

    def step(self) -> str | None:
        """One pass; returns "drain" or "resume" when it acted."""
        now = self.clock()
        found = self.faults(now)
        drained = bool(self.state.get("drained"))
        if found:
            self.state["last_fault"] = now
            if not drained:
                causes = list(dict.fromkeys(f.reason for f in found))
                reason = f"{actions.REASON_PREFIX} {'; '.join(causes)}"[:REASON_MAX]
                actions.drain(self.cfg, reason, self.run)
                self.state.update(drained=True, reason=reason, since=self.wall())
                self._save()
                actions.alert(self.cfg, reason, True, self.state["since"])
                return "drain"
            return None
        if drained and now - self.state.get("last_fault", now) >= self.cfg.return_after_s:
            return self._try_return(now)
        return None

    def _try_return(self, now: float) -> str | None:
        if actions.holds_our_drain(self.cfg, self.run) is False:
            log.info("%s: no longer drained by this watcher in the scheduler (returned or drained again by "
                     "someone else): forgetting its drain", self.cfg.node)
            self._forget()
            return None
        for name, argv in (("node_check", self.cfg.node_check), ("acceptance", self.cfg.acceptance)):
            f = command_fault(name, argv, self.run) if argv else None
            if f:
                log.info("%s still failing: %s", self.cfg.node, f.reason)
                self.state["last_fault"] = now  # wait another quiet period before trying again
                return None
        actions.resume(self.cfg, self.run)
        self._forget()
        return "resume"

    def _forget(self) -> None:
        """The episode is over: its alert resolved, its drain no longer held."""
        actions.alert(self.cfg, self.state.get("reason", ""), False, self.state.get("since", self.wall()))
        self.state = {}
        self._save()

    def run_forever(self, stop) -> None:
        while not stop.is_set():
            try:
                acted = self.step()
                if acted:
                    log.info("%s: %s", acted, self.state.get("reason", "returned to service"))
            except actions.ActionError as e:  # scheduler unreachable: log, try again next pass
                log.error("%s", e)
            stop.wait(self.cfg.interval_s)
