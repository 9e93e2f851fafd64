"""Each poller against a real peer; metric values must equal the recorded values, scaled."""

from __future__ import annotations

import pytest

from .conftest import layout, one, pick, poll_once, scrape, snmp_pdu

PDU = {"rack": "rack-a01", "row": "a", "su": "su01"}

# (metric, labels, expected) per profile, from tests/data/snmp/<profile>.snmprec
EXPECTED = {
    "raritan": [  # values divided by 10^decimalDigits of the same sensor
        ("superpod_pdu_power_watts", {}, 8423.0),
        ("superpod_pdu_apparent_power_va", {}, 8610.0),
        ("superpod_pdu_energy_kwh", {}, 123456.789),  # 123456789 Wh
        ("superpod_pdu_current_amps", {}, 12.345),  # 12345, 3 digits
        ("superpod_pdu_voltage_volts", {}, 230.0),
        ("superpod_pdu_frequency_hz", {}, 50.0),  # 500, 1 digit
        ("superpod_pdu_phase_current_amps", {"phase": "L2"}, 4.105),
        ("superpod_pdu_phase_voltage_volts", {"phase": "L1"}, 231.0),
        ("superpod_pdu_phase_power_watts", {"phase": "L3"}, 2822.0),
        ("superpod_pdu_branch_current_amps", {"branch": "2"}, 4.105),
        ("superpod_pdu_outlet_current_amps", {"outlet": "4"}, 2.21),
        ("superpod_pdu_outlet_power_watts", {"outlet": "2"}, 234.0),
        ("superpod_pdu_outlet_energy_kwh", {"outlet": "4"}, 3500.001),
        ("superpod_pdu_inlet_temperature_celsius", {"sensor": "1"}, 23.5),  # 235, 1 digit, type 10
        ("superpod_pdu_inlet_humidity_percent", {"sensor": "2"}, 41.0),  # type 11
    ],
    "apc": [  # fixed PowerNet units
        ("superpod_pdu_power_watts", {}, 6420.0),  # 642 hundredths of kW
        ("superpod_pdu_energy_kwh", {}, 12345.6),  # 123456 tenths of kWh
        ("superpod_pdu_apparent_power_va", {}, 6600.0),
        ("superpod_pdu_phase_current_amps", {"phase": "L1"}, 9.5),  # 95 tenths of A
        ("superpod_pdu_phase_voltage_volts", {"phase": "L2"}, 231.0),
        ("superpod_pdu_phase_power_watts", {"phase": "L3"}, 2090.0),
        ("superpod_pdu_branch_current_amps", {"branch": "2"}, 14.2),
        ("superpod_pdu_outlet_current_amps", {"outlet": "3"}, 3.1),
        ("superpod_pdu_outlet_power_watts", {"outlet": "3"}, 705.0),  # W
        ("superpod_pdu_outlet_energy_kwh", {"outlet": "3"}, 1500.3),
        ("superpod_pdu_inlet_temperature_celsius", {"sensor": "1"}, 24.3),
        ("superpod_pdu_inlet_humidity_percent", {"sensor": "1"}, 38.0),
    ],
    "servertech": [
        ("superpod_pdu_power_watts", {}, 7421.0),
        ("superpod_pdu_energy_kwh", {}, 9876.5),
        ("superpod_pdu_phase_current_amps", {"phase": "L1"}, 10.78),  # hundredths of A
        ("superpod_pdu_phase_voltage_volts", {"phase": "L3"}, 230.5),  # tenths of V
        ("superpod_pdu_phase_power_watts", {"phase": "L2"}, 2470.0),
        ("superpod_pdu_branch_current_amps", {"branch": "6"}, 5.55),
        ("superpod_pdu_outlet_current_amps", {"outlet": "3"}, 4.55),
        ("superpod_pdu_outlet_power_watts", {"outlet": "3"}, 1046.0),
        ("superpod_pdu_outlet_energy_kwh", {"outlet": "1"}, 1234.567),  # Wh
        ("superpod_pdu_inlet_temperature_celsius", {"sensor": "1"}, 25.1),
        ("superpod_pdu_inlet_humidity_percent", {"sensor": "1"}, 44.0),
    ],
}


@pytest.mark.parametrize("profile", sorted(EXPECTED))
def test_snmp_profile_values(snmpsim, creds, profile):
    agent, oks = poll_once(layout(pdus=[snmp_pdu("pdu-x", snmpsim.port, profile)]), creds)
    assert oks == {"pdu-x": True}
    m = scrape(agent)
    for name, labels, value in EXPECTED[profile]:
        assert one(m, name, pdu="pdu-x", feed="A", **PDU, **labels) == value, (name, labels)


def test_snmp_filters_and_invalid(snmpsim, creds):
    agent, _ = poll_once(layout(pdus=[snmp_pdu("r", snmpsim.port, "raritan"), snmp_pdu("a", snmpsim.port, "apc")]),
                         creds)
    m = scrape(agent)
    # Raritan: external sensor 3 is an air-flow sensor (type 12): neither temperature nor humidity
    assert set(pick(m, "superpod_pdu_inlet_temperature_celsius", pdu="r")) == {
        frozenset({**PDU, "pdu": "r", "feed": "A", "sensor": "1"}.items())}
    # APC outlet 5 reports -1 (not available): no sample rather than -0.1 A
    assert len(pick(m, "superpod_pdu_outlet_current_amps", pdu="a")) == 4
    assert not pick(m, "superpod_pdu_outlet_current_amps", pdu="a", outlet="5")


def test_snmp_second_poll_uses_plan(snmpsim, creds):
    """Discovery happens once; the next poll reads the same values with plain GETs."""
    import asyncio

    from cooling_agent.agent import Agent
    from cooling_agent.config import AgentConfig

    agent = Agent(AgentConfig.model_validate(layout(pdus=[snmp_pdu("p", snmpsim.port, "raritan")])), creds)

    async def go():
        try:
            await agent.poll_once()
            plan = agent.targets[0].poller._plan
            await agent.poll_once()
            assert agent.targets[0].poller._plan is plan
        finally:
            await agent.stop()

    asyncio.run(go())
    assert one(scrape(agent), "superpod_pdu_power_watts", pdu="p") == 8423.0


def test_redfish_cdu(redfish_cdu, creds):
    cfg = layout(cdus=[{"name": "cdu-a01", "rack": "rack-a01", "address": "127.0.0.1", "port": redfish_cdu,
                        "protocol": "redfish", "scheme": "http", "redfish_id": "1"}])
    agent, oks = poll_once(cfg, creds)
    assert oks == {"cdu-a01": True}
    m = scrape(agent)
    c = {"cdu": "cdu-a01", **PDU}
    # the DMTF public-cooling-unit mockup, CDUs/1
    assert one(m, "superpod_cdu_supply_temperature_celsius", loop="primary", **c) == 30.0
    assert one(m, "superpod_cdu_return_temperature_celsius", loop="secondary", **c) == 48.0
    assert one(m, "superpod_cdu_flow_liters_per_minute", loop="primary", connector="1", **c) == 42.0
    assert one(m, "superpod_cdu_delta_pressure_kpa", loop="primary", **c) == 138.0
    assert one(m, "superpod_cdu_delta_pressure_kpa", loop="secondary", **c) == 34.0
    assert one(m, "superpod_cdu_heat_removed_kw", loop="primary", **c) == 25.48
    assert one(m, "superpod_cdu_heat_removed_kw", loop="secondary", **c) == 25.31
    assert one(m, "superpod_cdu_pump_speed_percent", pump="1", **c) == 38.5
    assert one(m, "superpod_cdu_pump_health", pump="2", **c) == 2.0  # Pump 2 failed (Critical)
    assert one(m, "superpod_cdu_pump_enabled", pump="2", **c) == 0.0
    assert one(m, "superpod_cdu_leak_detector_state", detector="Moisture", **c) == 0.0
    assert one(m, "superpod_cdu_leak_detector_state", detector="Overflow", **c) == 0.0
    assert one(m, "superpod_cdu_health", **c) == 1.0  # Warning
    assert one(m, "superpod_cdu_ambient_humidity_percent", **c) == 26.0
    assert one(m, "superpod_cdu_supply_temperature_limit_celsius", **c) == 32.0


def test_redfish_leak_is_reported(peers, mockups, creds):
    """A detector in Critical state becomes 2 (the rules alert on > 0)."""
    import json

    from aiohttp import web
    from cooling_agent import sim

    leak_path = "/redfish/v1/ThermalEquipment/CDUs/1/LeakDetection/LeakDetectors/Moisture"
    doc = json.loads((mockups / "public-cooling-unit" / leak_path[len("/redfish/v1/"):] / "index.json").read_text())
    doc["DetectorState"] = "Critical"

    def hook(request):
        return web.json_response(doc) if request.path == leak_path else None

    port = peers.run(sim.start_app(sim.mockup_app(mockups / "public-cooling-unit", hook)))[1]
    agent, oks = poll_once(layout(cdus=[{"name": "c", "address": "127.0.0.1", "port": port, "scheme": "http"}]), creds)
    assert oks == {"c": True}
    assert one(scrape(agent), "superpod_cdu_leak_detector_state", cdu="c", detector="Moisture") == 2.0


def test_redfish_rack_pdu(redfish_pdu, creds):
    cfg = layout(pdus=[{"name": "pdu-rf", "rack": "rack-a01", "feed": "B", "address": "127.0.0.1",
                        "port": redfish_pdu, "protocol": "redfish", "scheme": "http"}])
    agent, oks = poll_once(cfg, creds)
    assert oks == {"pdu-rf": True}
    m = scrape(agent)
    p = {"pdu": "pdu-rf", "feed": "B", **PDU}
    assert one(m, "superpod_pdu_power_watts", **p) == 6438.0
    assert one(m, "superpod_pdu_energy_kwh", **p) == 56438.0
    assert one(m, "superpod_pdu_branch_current_amps", branch="A", **p) == 5.19
    assert one(m, "superpod_pdu_branch_power_watts", branch="A", **p) == 937.4
    assert one(m, "superpod_pdu_outlet_power_watts", outlet="A1", **p) == 197.4
    assert one(m, "superpod_pdu_phase_current_amps", phase="L2", **p) == 8.66
    assert one(m, "superpod_pdu_phase_voltage_volts", phase="L3", **p) == 118.5
    assert one(m, "superpod_pdu_inlet_temperature_celsius", sensor="pdu", **p) == 31.0
    assert len(pick(m, "superpod_pdu_outlet_power_watts", **p)) == 9  # the Outlets collection lists 9


def test_modbus_cdu(modbus_cdu, creds):
    cfg = layout(cdus=[{"name": "cdu-mb", "rack": "rack-a01", "address": "127.0.0.1", "port": modbus_cdu,
                        "protocol": "modbus", "modbus_map": "generic-cdu", "ashrae_class": "W17"}])
    agent, oks = poll_once(cfg, creds)
    assert oks == {"cdu-mb": True}
    m = scrape(agent)
    c = {"cdu": "cdu-mb", **PDU}
    assert one(m, "superpod_cdu_supply_temperature_celsius", loop="secondary", **c) == 25.5  # 255 x 0.1
    assert one(m, "superpod_cdu_supply_temperature_celsius", loop="primary", **c) == 18.0
    assert one(m, "superpod_cdu_flow_liters_per_minute", loop="primary", **c) == 60.0
    assert one(m, "superpod_cdu_delta_pressure_kpa", loop="secondary", **c) == 34.5
    assert one(m, "superpod_cdu_heat_removed_kw", **c) == 25.31  # uint32 2531 x 0.01
    assert one(m, "superpod_cdu_pump_health", pump="2", **c) == 2.0
    assert one(m, "superpod_cdu_leak_detector_state", detector="floor", **c) == 1.0
    assert one(m, "superpod_cdu_ambient_temperature_celsius", **c) == 24.5  # float32 0x41C40000
    assert one(m, "superpod_cdu_supply_temperature_limit_celsius", ashrae_class="W17", **c) == 17.0


def test_snmp_v3_goes_through_pysnmp(snmpsim):
    """SNMPv3 (USM auth + privacy) uses pysnmp's engine; snmpsim's default v3 user, the
    recording chosen by context name.  Same values as the v2c path."""
    from cooling_agent.credentials import Credential, CredentialStore

    creds = CredentialStore({"v3": Credential.model_validate(
        {"username": "simulator", "auth_protocol": "md5", "auth_key": "auctoritas",
         "priv_protocol": "des", "priv_key": "privatus"})})
    pdu = snmp_pdu("pdu-v3", snmpsim.port, "apc", community="v3", snmp_version="3", context="apc")
    agent, oks = poll_once(layout(pdus=[pdu]), creds)
    assert oks == {"pdu-v3": True}
    m = scrape(agent)
    assert one(m, "superpod_pdu_power_watts", pdu="pdu-v3") == 6420.0
    assert one(m, "superpod_pdu_outlet_power_watts", pdu="pdu-v3", outlet="3") == 705.0


def test_snmp_v1_walks_with_getnext(snmpsim, creds):
    """SNMPv1 has no GETBULK: discovery walks with GETNEXT and stops on noSuchName."""
    agent, oks = poll_once(layout(pdus=[snmp_pdu("pdu-v1", snmpsim.port, "servertech", snmp_version="1")]), creds)
    assert oks == {"pdu-v1": True}
    m = scrape(agent)
    assert one(m, "superpod_pdu_power_watts", pdu="pdu-v1") == 7421.0
    assert one(m, "superpod_pdu_outlet_energy_kwh", pdu="pdu-v1", outlet="1") == 1234.567
