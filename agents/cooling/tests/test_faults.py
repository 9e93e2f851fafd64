"""Faults: a target that times out, one that returns garbage, one that disappears
mid-run.  The healthy targets keep their cadence; the health metrics show each fault."""

from __future__ import annotations

import asyncio
import time

from cooling_agent import sim
from cooling_agent.agent import Agent
from cooling_agent.config import AgentConfig

from .conftest import layout, one, scrape, snmp_pdu

INTERVAL = 0.25
TIMEOUT = 1.0
RUN_S = 3.0


def test_faulty_targets_do_not_delay_healthy_ones(peers, snmpsim, redfish_cdu, mockups, creds):
    blackhole, udp_dead = peers.run(sim.start_udp_peer(None))  # SNMP: never answers
    _, udp_noise = peers.run(sim.start_udp_peer(b"\x30\x03\x02\x01\xff garbage"))  # undecodable replies
    _, tcp_dead_srv = peers.run(sim.start_tcp_blackhole())  # Redfish: accepts, never answers
    tcp_dead = tcp_dead_srv
    _, garbage_port = peers.run(sim.start_app(sim.garbage_app()))
    vanishing, vanish_port = peers.run(sim.start_app(sim.mockup_app(mockups / "public-cooling-unit")))

    def cdu(name, port):
        return {"name": name, "rack": "rack-a01", "address": "127.0.0.1", "port": port, "scheme": "http"}

    cfg = AgentConfig.model_validate(layout(
        interval_s=INTERVAL, timeout_s=TIMEOUT, max_backoff_s=1.0,
        pdus=[snmp_pdu("good-pdu", snmpsim.port, "apc"),
              snmp_pdu("dead-pdu", udp_dead, "apc"),
              snmp_pdu("noisy-pdu", udp_noise, "apc"),
              snmp_pdu("garbage-pdu", snmpsim.port, "apc", community="garbage")],
        cdus=[cdu("good-cdu", redfish_cdu), cdu("hung-cdu", tcp_dead), cdu("garbage-cdu", garbage_port),
              cdu("vanishing-cdu", vanish_port)],
    ))
    agent = Agent(cfg, creds)
    seen_vanishing_up = []

    async def go():
        await agent.start()
        try:
            await asyncio.sleep(RUN_S / 2)
            seen_vanishing_up.append(agent.store.targets["vanishing-cdu"].up)
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(vanishing.cleanup(), peers.loop))
            await asyncio.sleep(RUN_S / 2)
        finally:
            await agent.stop()

    t0 = time.monotonic()
    asyncio.run(go())
    assert time.monotonic() - t0 < RUN_S + 3
    m = scrape(agent)

    def health(name, target):
        return one(m, name, target=target)

    # healthy targets polled on cadence: ~RUN_S/INTERVAL polls, minus the start-up stagger
    expected = RUN_S / INTERVAL
    for good in ("good-pdu", "good-cdu"):
        assert health("superpod_target_up", good) == 1.0
        assert health("superpod_target_polls_total", good) >= expected * 0.5, good
        assert health("superpod_target_poll_duration_seconds", good) < TIMEOUT
        assert time.time() - health("superpod_target_last_success_timestamp_seconds", good) < 3 * INTERVAL
    assert one(m, "superpod_pdu_power_watts", pdu="good-pdu") == 6420.0

    # faulty ones: down, with the reason counted, and backing off (fewer polls)
    for bad, reason in (("dead-pdu", "timeout"), ("noisy-pdu", "timeout"), ("hung-cdu", "timeout"),
                        ("garbage-cdu", "bad_data"), ("garbage-pdu", "bad_data")):
        assert health("superpod_target_up", bad) == 0.0, bad
        assert health("superpod_target_last_success_timestamp_seconds", bad) == 0.0, bad
        assert one(m, "superpod_target_poll_errors_total", target=bad, reason=reason) >= 1, bad
        assert health("superpod_target_consecutive_failures", bad) >= 2, bad
    assert health("superpod_target_polls_total", "dead-pdu") < health("superpod_target_polls_total", "good-pdu")
    assert health("superpod_target_next_poll_delay_seconds", "dead-pdu") > INTERVAL  # exponential back-off
    assert health("superpod_target_poll_duration_seconds", "hung-cdu") <= TIMEOUT + 0.2  # bounded by timeout
    assert blackhole.received >= 1

    # the vanishing CDU was up, then went down once its server disappeared
    assert seen_vanishing_up == [1.0]
    assert health("superpod_target_up", "vanishing-cdu") == 0.0
    assert health("superpod_target_last_success_timestamp_seconds", "vanishing-cdu") > 0
    assert one(m, "superpod_target_poll_errors_total", target="vanishing-cdu", reason="unreachable") >= 1
    # no stale readings are exported for a target that is down
    assert not [k for k in m if k[0] == "superpod_cdu_supply_temperature_celsius" and ("cdu", "vanishing-cdu") in k[1]]


def test_backoff_schedule():
    cfg = AgentConfig.model_validate(layout(interval_s=10, max_backoff_s=60,
                                            pdus=[snmp_pdu("p", 1, "apc")]))
    agent = Agent(cfg)

    async def go():
        agent._build()
        t = agent.targets[0]
        delays = []
        for n in range(6):
            agent.store.update("p", consecutive_failures=n)
            delays.append(agent.next_delay(t))
        await agent.stop()
        return delays

    assert asyncio.run(go()) == [10, 10, 20, 40, 60, 60]
