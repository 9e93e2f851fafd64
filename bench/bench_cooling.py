#!/usr/bin/env python3
"""Poll-cycle benchmark of the cooling agent: 500 SNMP PDUs + 50 Redfish CDUs on loopback.

Simulators: SNMP responder processes serving the agent's test recordings (Raritan, APC,
ServerTech; many agent targets share a few responders) -- by default the fast recording
responder (cooling_agent.sim.RecordingResponder, checked against snmpsim in
tests/test_sim.py), with --snmp-sim snmpsim the snmpsim command responder, which costs
~9 ms CPU per GET -- and a Redfish server process
serving the DMTF CoolingUnit mockup.  All traffic goes to 127.0.0.1.

    .venv/bin/python bench/bench_cooling.py [--pdus 500] [--cdus 50] [--cycles 3]

Prints the first cycle (includes per-PDU SNMP discovery walks) and steady-state cycles
(planned GETs) with wall time, the CPU spent by the agent and by the simulators, targets
ok, per-target p50/p95 and the agent's RSS (now and peak: bounded means flat across cycles).
On a shared machine the agent's CPU seconds are the figure to compare, not wall. The target
(issue 39): one full steady cycle of 5,000 targets (--pdus 4500 --cdus 500) under 5 s;
--strict makes missing it exit 1; --profile FILE writes a CPU-time cProfile of the steady cycles.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import multiprocessing as mp
import os
import resource
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "agents" / "cooling"))

from cooling_agent import sim  # noqa: E402
from cooling_agent.agent import Agent  # noqa: E402
from cooling_agent.config import AgentConfig  # noqa: E402
from cooling_agent.credentials import CredentialStore  # noqa: E402

SNMP_DATA = REPO / "agents" / "cooling" / "tests" / "data" / "snmp"
MOCKUPS = REPO / "testdata" / "redfish"
PROFILES = ("raritan", "apc", "servertech")
TARGET_S = 5.0


def _cpu_seconds(pids: list[int]) -> float:
    """User+system CPU of the simulator processes (Linux /proc), to tell their cost apart."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _rss_mib() -> float:
    """The agent's resident memory now (Linux /proc): it must stay flat from cycle to cycle."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _Responder:
    """An SNMP simulator process: pid, port, stop()."""

    def __init__(self, kind: str):
        if kind == "snmpsim":
            self._sim = sim.SnmpSim(SNMP_DATA).start()
            self.pid, self.port, self.stop = self._sim.proc.pid, self._sim.port, self._sim.stop
        else:
            q = mp.get_context("spawn").Queue()
            self._proc = mp.get_context("spawn").Process(target=sim.serve_recordings, args=(str(SNMP_DATA), q),
                                                         daemon=True)
            self._proc.start()
            self.port = q.get(timeout=60)
            self.pid = self._proc.pid
            self.stop = self._proc.terminate


def _start_snmp(args) -> list[_Responder]:
    return [_Responder(args.snmp_sim) for _ in range(args.responders)]


def _redfish_server(root: str, n_ports: int, q: mp.Queue) -> None:
    """One process serving the CoolingUnit mockup on one port per CDU: each CDU is its own
    device (own HTTP connection pool in the agent), as on a real management network."""
    async def main():
        runner, port = await sim.start_app(sim.mockup_app(root))
        ports = [port]
        for _ in range(n_ports - 1):
            site = sim.web.TCPSite(runner, sim.LOOPBACK, 0)
            await site.start()
            ports.append(site._server.sockets[0].getsockname()[1])
        q.put(ports)
        await asyncio.Event().wait()

    asyncio.run(main())


async def run(args) -> int:
    responders = _start_snmp(args)
    q: mp.Queue = mp.get_context("spawn").Queue()
    rf = mp.get_context("spawn").Process(
        target=_redfish_server, args=(str(MOCKUPS / "public-cooling-unit"), max(1, args.cdus), q), daemon=True)
    rf.start()
    rf_ports = q.get(timeout=60)
    snmp_pids, rf_pids = [r.pid for r in responders], [rf.pid]
    try:
        pdus = [{"name": f"pdu-{i:03d}", "rack": f"rack-{i // 2:03d}", "row": "a", "su": f"su{i // 64:02d}",
                 "feed": "AB"[i % 2], "address": sim.LOOPBACK, "port": responders[i % len(responders)].port,
                 "protocol": "snmp", "profile": PROFILES[i % 3], "community_ref": PROFILES[i % 3]}
                for i in range(args.pdus)]
        cdus = [{"name": f"cdu-{i:02d}", "rack": f"rack-{i * 5:03d}", "row": "a", "address": sim.LOOPBACK,
                 "port": rf_ports[i], "protocol": "redfish", "scheme": "http"} for i in range(args.cdus)]
        cfg = AgentConfig.model_validate({"timeout_s": args.timeout, "max_concurrency": args.concurrency,
                                         "pdus": pdus, "cdus": cdus})
        creds = CredentialStore(environ={f"SUPERPOD_COOLING_{p.upper()}_COMMUNITY": p for p in PROFILES})
        agent = Agent(cfg, creds)
        print(f"targets: {args.pdus} SNMP PDUs on {args.responders} {args.snmp_sim} responder process(es), "
              f"{args.cdus} Redfish CDUs; per-target timeout {args.timeout}s")
        cycles = []
        prof = cProfile.Profile(time.process_time)  # CPU, not wall: the machine is shared
        try:
            for n in range(args.cycles + 1):
                s0, r0 = _cpu_seconds(snmp_pids), _cpu_seconds(rf_pids)
                c0 = time.process_time()
                t0 = time.perf_counter()
                if n and args.profile:
                    prof.enable()
                oks = await agent.poll_once()
                if n and args.profile:
                    prof.disable()
                wall = time.perf_counter() - t0
                cpu = time.process_time() - c0
                snmp_cpu, rf_cpu = _cpu_seconds(snmp_pids) - s0, _cpu_seconds(rf_pids) - r0
                durs = sorted(agent.store.targets[t.name].last_duration for t in agent.targets)
                ok = sum(1 for v in oks.values() if v)
                label = "first (discovery)" if n == 0 else f"steady {n}"
                p50, p95 = durs[len(durs) // 2] * 1000, durs[int(len(durs) * 0.95)] * 1000
                print(f"cycle {label:18s} wall {wall:6.2f} s  cpu: agent {cpu:5.2f} s, snmp sim {snmp_cpu:5.2f} s, "
                      f"redfish {rf_cpu:5.2f} s  "
                      f"targets ok {ok}/{len(oks)}  per-target p50 {p50:5.0f} ms  p95 {p95:5.0f} ms  "
                      f"agent RSS {_rss_mib():.0f} MiB (peak {_peak_mib():.0f})")
                if n:
                    cycles.append((wall, ok == len(oks)))
                samples = sum(len(agent.store.targets[t.name].samples) for t in agent.targets)
        finally:
            await agent.stop()
        if args.profile:
            prof.dump_stats(args.profile)
        walls = [w for w, _ in cycles]
        met = max(walls) < TARGET_S and all(full for _, full in cycles)
        print(f"samples exported per cycle: {samples}")
        print(f"steady cycle: mean {statistics.mean(walls):.2f} s, max {max(walls):.2f} s "
              f"(target: every target ok in < {TARGET_S:g} s: {'met' if met else 'NOT met'})")
        return 0 if met or not args.strict else 1
    finally:
        rf.terminate()
        for r in responders:
            r.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pdus", type=int, default=500)
    ap.add_argument("--cdus", type=int, default=50)
    ap.add_argument("--cycles", type=int, default=3)
    ap.add_argument("--responders", type=int, default=2, help="SNMP simulator processes")
    ap.add_argument("--snmp-sim", choices=["recording", "snmpsim"], default="recording",
                    help="SNMP simulator: the fast recording responder or snmpsim")
    ap.add_argument("--timeout", type=float, default=30.0,
                    help="per-target timeout; generous so a loaded machine shows as time, not as failures")
    ap.add_argument("--concurrency", type=int, default=64, help="agent max_concurrency (polls in flight)")
    ap.add_argument("--strict", action="store_true", help=f"exit 1 when a steady cycle takes {TARGET_S:g} s or more")
    ap.add_argument("--profile", metavar="FILE", help="cProfile the steady cycles into FILE (pstats)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    logging.getLogger("cooling_agent").setLevel(logging.ERROR)
    if not (MOCKUPS / "public-cooling-unit").is_dir():
        print(f"Redfish mockups not found at {MOCKUPS}", file=sys.stderr)
        return 2
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
