"""The polling engine: one asyncio task per target, each on its own cadence with a
per-poll timeout and exponential back-off, so a slow or dead device never delays the
others.  Results land in the Store that the Prometheus collector reads.

Stopping is certain and bounded: every loop checks a stop flag (a cancel some library
swallows cannot keep it polling), poll deadlines run in the loop's own task (no wait_for,
see aio.py), and tasks still running after ``stop_grace_s`` are reported and abandoned."""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import aiohttp

from .aio import cancel_and_wait, deadline
from .config import AgentConfig, Cdu, Pdu
from .credentials import CredentialStore
from .metrics import Store, bound_series
from .modbus import ModbusCduPoller, load_register_map
from .model import PollError, PollResult
from .profiles import load_profile
from .redfish import RedfishCduPoller, RedfishPduPoller
from .snmp import SnmpPoller
from .snmp_transport import SnmpClient

if TYPE_CHECKING:
    from pysnmp.hlapi.v3arch.asyncio import SnmpEngine

log = logging.getLogger("cooling_agent")
PER_DEVICE = 8  # HTTP connections to one Redfish device at once


@dataclass
class _Target:
    name: str
    kind: str
    conf: Pdu | Cdu
    poller: object
    base_labels: dict[str, str]
    interval: float
    timeout: float


class Agent:
    def __init__(self, config: AgentConfig, credentials: CredentialStore | None = None, store: Store | None = None):
        self.config = config
        self.credentials = credentials or CredentialStore.load(config.credentials_file)
        self.store = store or Store()
        self.targets: list[_Target] = []
        self._tasks: list[asyncio.Task] = []
        self._session: aiohttp.ClientSession | None = None
        self._engine: SnmpEngine | None = None  # SNMPv3 only
        self._snmp: SnmpClient | None = None  # SNMPv1/v2c: one UDP socket for all PDUs
        self._sem: asyncio.Semaphore | None = None
        self._parser: ThreadPoolExecutor | None = None  # large Redfish bodies parse here, off the loop
        self._stopping = False
        self.abandoned: list[str] = []  # tasks that outlived stop()'s grace period

    # -- setup ---------------------------------------------------------------------------
    def _build(self) -> None:
        cfg = self.config
        self._snmp = SnmpClient()
        if any(p.protocol == "snmp" and p.snmp_version == "3" for p in cfg.pdus):
            from .snmp_v3 import new_engine

            self._engine = new_engine()
        # bodies are inflated by the Redfish client itself, within a byte limit (gzip bombs).
        # The semaphore bounds polls in flight and each poll holds at most PER_DEVICE sockets, so
        # a total limit of their product never makes a request wait: a lower one queued the
        # fan-out of one CDU poll (~6 concurrent GETs) behind the others, and every release
        # shuffled the waiting hosts (aiohttp), ~10% of a 5,000-target cycle's CPU (issue 39).
        # Idle connections outlive the longest Redfish poll interval, so the next poll of a
        # device reuses them instead of opening ~11 new ones (aiohttp retries a GET once when
        # the device closed a kept connection meanwhile).
        redfish = [t for t in (*cfg.pdus, *cfg.cdus) if t.protocol == "redfish"]
        keepalive = 2 * max((t.interval_s or cfg.interval_s for t in redfish), default=cfg.interval_s)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=cfg.max_concurrency * PER_DEVICE, limit_per_host=PER_DEVICE,
                                           ttl_dns_cache=300, keepalive_timeout=max(15.0, keepalive)),
            auto_decompress=False)
        self._parser = ThreadPoolExecutor(max_workers=2, thread_name_prefix="cooling-parse")
        limits = {"max_body": cfg.redfish_max_body_bytes, "max_members": cfg.redfish_max_members,
                  "max_poll_bytes": cfg.redfish_max_poll_bytes, "executor": self._parser}
        self._sem = asyncio.Semaphore(cfg.max_concurrency)
        for p in cfg.pdus:
            timeout = p.timeout_s or cfg.timeout_s
            if p.protocol == "snmp":
                cred = self.credentials.get(p.community_ref or p.credentials_ref)
                poller = SnmpPoller(p, load_profile(p.profile), cred, timeout, client=self._snmp,
                                    engine=self._engine, rediscover_s=cfg.rediscover_s, max_rows=cfg.snmp_max_rows)
            else:
                cred = self.credentials.get(p.credentials_ref or p.community_ref)
                poller = RedfishPduPoller(self._session, p, cred, timeout, **limits)
            labels = {"pdu": p.name, "rack": p.rack, "row": p.row, "su": p.su, "feed": p.feed}
            self._add(p, "pdu", poller, labels, timeout)
        for c in cfg.cdus:
            timeout = c.timeout_s or cfg.timeout_s
            if c.protocol == "redfish":
                poller = RedfishCduPoller(self._session, c, self.credentials.get(c.credentials_ref), timeout, **limits)
            else:
                poller = ModbusCduPoller(c, load_register_map(c.modbus_map), timeout)
            labels = {"cdu": c.name, "rack": c.rack, "row": c.row, "su": c.su}
            self._add(c, "cdu", poller, labels, timeout)

    def _add(self, conf, kind, poller, labels, timeout) -> None:
        t = _Target(conf.name, kind, conf, poller, labels, conf.interval_s or self.config.interval_s, timeout)
        self.targets.append(t)
        self.store.register(t.name, {"target": t.name, "kind": kind, "protocol": conf.protocol,
                                     "rack": conf.rack, "row": conf.row, "su": conf.su})

    # -- one poll ------------------------------------------------------------------------
    async def poll_target(self, t: _Target) -> bool:
        async with self._sem:
            start = time.monotonic()
            reason = message = None
            result: PollResult | None = None
            try:
                async with deadline(t.timeout):
                    result = await t.poller.poll()
            except asyncio.TimeoutError:
                reason, message = "timeout", f"no complete answer within {t.timeout:g}s"
            except PollError as exc:
                reason, message = exc.reason, str(exc)
            except Exception as exc:  # a poller bug must not kill the target's loop
                reason, message = "internal", f"{exc.__class__.__name__}: {exc}"
                if self.store.targets[t.name].last_reason != "internal":  # once per state change, not per poll
                    log.exception("target %s: unexpected poller error", t.name)
            duration = time.monotonic() - start
        health = self.store.targets[t.name]
        if result is not None:
            samples, dropped = bound_series(result.samples, self.config.max_label_length,
                                            self.config.max_series_per_target, t.base_labels)
            if health.up == 0 and health.polls:
                log.info("target %s: recovered", t.name)
            degraded = bool(result.bad_values or dropped)
            if degraded and not health.degraded:
                log.warning("target %s: %d unusable reading(s) (wrong type, out of range, NaN) and %d series over "
                            "the limit of %d: not exported", t.name, result.bad_values, dropped,
                            self.config.max_series_per_target)
            elif health.degraded and not degraded:
                log.info("target %s: every reading usable again", t.name)
            self.store.update(t.name, up=1.0, degraded=1.0 if degraded else 0.0,
                              last_success=time.time(), last_duration=duration, last_reason="",
                              consecutive_failures=0, polls=health.polls + 1, samples=samples)
            if result.bad_values:
                self.store.count_error(t.name, "bad_value", result.bad_values)
            if dropped:
                self.store.count_error(t.name, "series_limit", dropped)
            return True
        if health.up == 1 or health.polls == 0:
            log.warning("target %s (%s %s:%s) failed: %s: %s", t.name, t.conf.protocol, t.conf.address,
                        t.conf.port or "default", reason, message)
        # stale readings are dropped: a dead target shows as up=0, not as frozen values
        self.store.update(t.name, up=0.0, degraded=0.0, last_duration=duration, samples=[], last_reason=reason,
                          consecutive_failures=health.consecutive_failures + 1, polls=health.polls + 1)
        self.store.count_error(t.name, reason)
        return False

    def next_delay(self, t: _Target) -> float:
        n = self.store.targets[t.name].consecutive_failures
        if n == 0:
            return t.interval
        return min(t.interval * (2 ** (n - 1)), max(self.config.max_backoff_s, t.interval))

    async def _loop(self, t: _Target, offset: float) -> None:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(offset)
        while not self._stopping:
            started = loop.time()
            await self.poll_target(t)
            if self._stopping:  # stop() ran while we polled, even if its cancel got lost
                return
            delay = self.next_delay(t)
            self.store.update(t.name, next_delay=delay)
            # cadence is anchored to the poll's start, so poll time does not drift it
            await asyncio.sleep(max(0.0, started + delay - loop.time()))

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        self._stopping = False
        self._build()
        n = max(1, len(self.targets))
        for i, t in enumerate(self.targets):
            # spread first polls over one interval so hundreds of targets don't burst at once
            self._tasks.append(asyncio.create_task(self._loop(t, t.interval * i / n), name=f"poll:{t.name}"))

    async def poll_once(self) -> dict[str, bool]:
        """Poll every target once, concurrently (benchmarks, `poll-once`)."""
        if not self.targets:
            self._build()
        oks = await asyncio.gather(*[self.poll_target(t) for t in self.targets])
        return {t.name: ok for t, ok in zip(self.targets, oks, strict=True)}

    async def stop(self, grace_s: float = 1.0) -> None:
        """Stop polling and release sockets within ``1.5 * grace_s``: the poll tasks get
        ``grace_s``, closing the pollers and the HTTP session half of that."""
        self._stopping = True
        stuck = await cancel_and_wait(self._tasks, grace_s)
        self._tasks.clear()
        if stuck:
            self.abandoned = [t.get_name() for t in stuck]
            log.error("stop: %d task(s) did not end within %gs, abandoned: %s", len(stuck), grace_s,
                      ", ".join(self.abandoned))
        closers = [close() for t in self.targets if (close := getattr(t.poller, "close", None))]
        if self._session is not None:
            closers.append(self._session.close())
        if closers:
            stuck = await _run_bounded(closers, grace_s / 2)
            if stuck:
                log.error("stop: %d close call(s) did not end within %gs", stuck, grace_s / 2)
        if self._snmp is not None:
            self._snmp.close()
        if self._parser is not None:
            self._parser.shutdown(wait=False, cancel_futures=True)
        if self._engine is not None:
            self._engine.close_dispatcher()


async def _run_bounded(coros: list, limit_s: float) -> int:
    """Run ``coros`` concurrently for at most ``limit_s``; cancel the rest, return their count."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    _, pending = await asyncio.wait(tasks, timeout=limit_s)
    for task in pending:
        task.cancel()
    return len(pending)
