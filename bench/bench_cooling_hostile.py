#!/usr/bin/env python3
"""The cooling agent's bounded Redfish parsing (issue 20), in figures.

1. Parser: CPU time to inflate and parse bodies up to 4 MiB (the default limit is 1 MiB), and what a
   gzip bomb costs: bounded (stops at the limit) against unbounded (what the agent did
   before: aiohttp inflated the whole body, json.loads parsed it, both on the event loop).
2. Agent: healthy Redfish and SNMP targets polled next to hostile Redfish peers (a gzip
   bomb, 20,000 collection members, JSON nested 200,000 deep) for --seconds: healthy polls
   ok / attempted, the event loop's longest stall, RSS growth.

    .venv/bin/python bench/bench_cooling_hostile.py [--seconds 10] [--bomb-mib 256]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "agents" / "cooling"))

from cooling_agent import sim  # noqa: E402
from cooling_agent.agent import Agent  # noqa: E402
from cooling_agent.config import AgentConfig  # noqa: E402
from cooling_agent.credentials import CredentialStore  # noqa: E402
from cooling_agent.model import PollError  # noqa: E402
from cooling_agent.redfish import DEFAULT_MAX_BODY, parse_body  # noqa: E402

MOCKUPS = REPO / "testdata" / "redfish"
SNMP_DATA = REPO / "agents" / "cooling" / "tests" / "data" / "snmp"


def rss() -> int:
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def cpu(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def body_of(size: int) -> bytes:
    member = {"@odata.id": "/redfish/v1/PowerEquipment/RackPDUs/1/Outlets/A1", "Id": "A1",
              "CurrentAmps": {"Reading": 1.25}, "PowerWatts": {"Reading": 287.5}}
    one = len(json.dumps(member)) + 2
    return json.dumps({"Members": [member] * max(1, (size - 20) // one)}).encode()


def parser_figures(bomb_mib: int) -> None:
    print("parser (CPU, best of 3):")
    for size in (64 << 10, 256 << 10, 1 << 20, 4 << 20):
        raw = body_of(size)
        gz = zlib.compress(raw)
        t_plain = cpu(lambda raw=raw: parse_body(raw, "", 4 << 20))
        t_gzip = cpu(lambda gz=gz: parse_body(gz, "deflate", 4 << 20))
        print(f"  {len(raw) / 1024:8.0f} KiB JSON: parse {t_plain * 1e3:6.1f} ms, deflate+parse {t_gzip * 1e3:6.1f} ms")
    bomb = sim.gzip_bomb(bomb_mib)

    def bounded():
        try:
            parse_body(bomb, "gzip", DEFAULT_MAX_BODY)
        except PollError:
            pass

    base = rss()
    t_bounded = cpu(bounded, 1)
    grew_bounded = rss() - base

    peak = [base]
    done = threading.Event()

    def watch():
        while not done.wait(0.005):
            peak[0] = max(peak[0], rss())

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    t0 = time.process_time()
    doc = json.loads(zlib.decompress(bomb, 16 + zlib.MAX_WBITS))  # the old path, minus aiohttp
    t_unbounded = time.process_time() - t0
    del doc
    done.set()
    th.join()
    print(f"  gzip bomb ({len(bomb) / 1024:.0f} KiB -> {bomb_mib} MiB): bounded refuses after "
          f"{DEFAULT_MAX_BODY >> 20} MiB in {t_bounded * 1e3:.1f} ms CPU (RSS +{grew_bounded >> 20} MiB); "
          f"unbounded inflate+parse {t_unbounded * 1e3:.0f} ms CPU, RSS peak +{(peak[0] - base) >> 20} MiB")


async def agent_figures(seconds: float) -> None:
    peers = sim.PeerLoop()
    snmp = sim.SnmpSim(SNMP_DATA).start()
    try:
        def http_cdu(name, port, **kw):
            return {"name": name, "address": sim.LOOPBACK, "port": port, "scheme": "http", **kw}

        cdu_port = peers.run(sim.start_app(sim.mockup_app(MOCKUPS / "public-cooling-unit")))[1]
        pdu_port = peers.run(sim.start_app(sim.mockup_app(MOCKUPS / "public-pdu")))[1]
        hostile = {m: peers.run(sim.start_app(sim.hostile_app(m)))[1] for m in ("gzip_bomb", "many_members", "deep")}
        healthy = [f"cdu-{i}" for i in range(8)] + ["rf-pdu", "snmp-pdu"]
        cfg = AgentConfig.model_validate({
            "interval_s": 0.5, "timeout_s": 2.0, "max_backoff_s": 0.5,
            "pdus": [{"name": "snmp-pdu", "address": sim.LOOPBACK, "port": snmp.port, "profile": "apc",
                      "community_ref": "apc"}, http_cdu("rf-pdu", pdu_port, protocol="redfish")],
            "cdus": [http_cdu(f"cdu-{i}", cdu_port) for i in range(8)]
            + [http_cdu(f"{m}-cdu", p) for m, p in hostile.items()]})
        agent = Agent(cfg, CredentialStore(environ={"SUPERPOD_COOLING_APC_COMMUNITY": "apc"}))
        lag = 0.0
        base = peak = rss()
        await agent.start()
        loop = asyncio.get_running_loop()
        end = loop.time() + seconds
        while loop.time() < end:
            t = loop.time()
            await asyncio.sleep(0.02)
            lag = max(lag, loop.time() - t - 0.02)
            peak = max(peak, rss())
        await agent.stop()
        ok = sum(agent.store.targets[n].polls - sum(agent.store.targets[n].errors.values()) for n in healthy)
        total = sum(agent.store.targets[n].polls for n in healthy)
        bad = {f"{m}-cdu": dict(agent.store.targets[f"{m}-cdu"].errors) for m in hostile}
        print(f"agent, {seconds:g} s, {len(healthy)} healthy targets + 3 hostile Redfish peers:")
        print(f"  healthy polls ok {ok}/{total}; longest loop stall {lag * 1e3:.0f} ms; "
              f"RSS growth {(peak - base) >> 20} MiB")
        print(f"  hostile errors: {bad}")
    finally:
        snmp.stop()
        peers.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--bomb-mib", type=int, default=256)
    args = ap.parse_args()
    parser_figures(args.bomb_mib)
    asyncio.run(agent_figures(args.seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
