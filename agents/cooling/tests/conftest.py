"""Real protocol peers on loopback: snmpsim, a Redfish mockup server, a pymodbus CDU."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cooling_agent import sim
from cooling_agent.agent import Agent
from cooling_agent.config import AgentConfig
from cooling_agent.credentials import CredentialStore
from cooling_agent.metrics import make_registry
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SNMP_DATA = HERE / "data" / "snmp"
COMMUNITIES = ("raritan", "apc", "servertech", "garbage")

# Modbus holding registers 0..19 for the generic-cdu map (see cooling_agent/modbus_maps)
MODBUS_REGS = [255, 355, 420, 345, 180, 280, 600, 0, 0, 2531, 385, 0, 0, 2, 0, 0, 0, 1, 0x41C4, 0x0000]


def redfish_root() -> Path:
    """DMTF's Redfish mockups, kept in the repository (testdata/redfish)."""
    return REPO / "testdata" / "redfish"


@pytest.fixture(scope="session")
def mockups() -> Path:
    root = redfish_root()
    assert (root / "public-cooling-unit").is_dir(), f"DMTF Redfish mockups missing at {root}"
    return root


@pytest.fixture(scope="session")
def peers():
    loop = sim.PeerLoop()
    yield loop
    loop.close()


@pytest.fixture(scope="session")
def snmpsim():
    s = sim.SnmpSim(SNMP_DATA).start()
    yield s
    s.stop()


@pytest.fixture(scope="session")
def redfish_cdu(peers, mockups) -> int:
    return peers.run(sim.start_app(sim.mockup_app(mockups / "public-cooling-unit")))[1]


@pytest.fixture(scope="session")
def redfish_pdu(peers, mockups) -> int:
    return peers.run(sim.start_app(sim.mockup_app(mockups / "public-pdu")))[1]


@pytest.fixture(scope="session")
def modbus_cdu(peers) -> int:
    return peers.run(sim.start_modbus(MODBUS_REGS))[1]


@pytest.fixture
def creds() -> CredentialStore:
    return CredentialStore(environ={f"SUPERPOD_COOLING_{c.upper()}_COMMUNITY": c for c in COMMUNITIES})


def layout(**extra) -> dict:
    base = {
        "interval_s": 15, "timeout_s": 5, "ashrae_class": "W32",
        "racks": [{"name": "rack-a01", "row": "a", "su": "su01", "budget_kw": 45.0, "planned_kw": 41.2,
                   "cooling": "liquid"}],
    }
    base.update(extra)
    return base


def snmp_pdu(name: str, port: int, profile: str, community: str | None = None, feed: str = "A", **kw) -> dict:
    return {"name": name, "rack": "rack-a01", "feed": feed, "address": sim.LOOPBACK, "port": port,
            "protocol": "snmp", "profile": profile, "community_ref": community or profile, **kw}


def scrape(agent: Agent) -> dict[tuple[str, frozenset], float]:
    text = generate_latest(make_registry(agent.store, agent.config)).decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def pick(metrics: dict, name: str, **labels: str) -> dict[frozenset, float]:
    """Samples of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return {lbl: v for (n, lbl), v in metrics.items() if n == name and want <= set(lbl)}


def one(metrics: dict, name: str, **labels: str) -> float:
    found = pick(metrics, name, **labels)
    assert len(found) == 1, f"{name}{labels}: {len(found)} samples: {found}"
    return next(iter(found.values()))


def poll_once(cfg: dict, creds: CredentialStore) -> tuple[Agent, dict]:
    agent = Agent(AgentConfig.model_validate(cfg), creds)

    async def go():
        try:
            return await agent.poll_once()
        finally:
            await agent.stop()

    oks = asyncio.run(go())
    return agent, oks
