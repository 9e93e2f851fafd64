"""Config, credentials and profile data files."""

from __future__ import annotations

import asyncio
import logging
import textwrap

import pytest
import yaml
from cooling_agent.agent import Agent
from cooling_agent.config import AgentConfig, load_config
from cooling_agent.credentials import CredentialStore
from cooling_agent.profiles import Profile, available_profiles, load_profile
from pydantic import ValidationError

from .conftest import layout, one, poll_once, scrape, snmp_pdu

BRIEF = """
listen: {address: 0.0.0.0, port: 9731}
interval_s: 15
timeout_s: 3
credentials_file: /etc/superpod-cooling/credentials.yml
ashrae_class: W32
racks: [{name: rack-a01, row: a, su: su01, budget_kw: 45.0, planned_kw: 41.2, cooling: liquid}]
pdus: [{name: rack-a01-pdu-a, rack: rack-a01, row: a, su: su01, feed: A, address: 10.20.0.11, protocol: snmp,
        profile: raritan, community_ref: default}]
cdus: [{name: cdu-a01, rack: rack-a01, row: a, address: 10.20.0.30, protocol: redfish, redfish_id: "1"}]
"""


def test_config_shape_from_inventory(tmp_path):
    f = tmp_path / "agent.yml"
    f.write_text(BRIEF)
    cfg = load_config(f)
    assert cfg.listen.port == 9731 and cfg.pdus[0].profile == "raritan" and cfg.cdus[0].redfish_id == "1"
    assert cfg.cdus[0].su == "su01"  # inherited from the rack entry
    # the inventory's group-vars wrapper is accepted as well
    raw = yaml.safe_load(BRIEF)
    wrapped = {k: raw[k] for k in ("listen", "interval_s")}
    wrapped["superpod_monitoring"] = {k: raw[k] for k in ("racks", "pdus", "cdus")}
    f.write_text(yaml.safe_dump(wrapped))
    assert load_config(f).pdus[0].name == "rack-a01-pdu-a"


def test_generated_monitoring_vars_are_accepted():
    """What `superpod plan` writes: null su for racks outside an SU, catalog model names,
    CDU capacity.  The cooling_monitor role passes these entries through unchanged."""
    cfg = AgentConfig.model_validate({
        "ashrae_class": "W32",
        "racks": [{"name": "rack-b01", "row": "b", "su": None, "budget_kw": 45.0, "planned_kw": 1.1,
                   "cooling": "air"}],
        "pdus": [{"name": "rack-b01-pdu-a", "rack": "rack-b01", "row": "b", "su": None, "feed": "A",
                  "address": "10.20.0.3", "protocol": "snmp", "profile": "raritan", "model": "raritan-px4-60a"}],
        "cdus": [{"name": "rack-b01-cdu", "rack": "rack-b01", "row": "b", "su": None, "address": "10.20.0.9",
                  "protocol": "redfish", "redfish_id": "1", "capacity_kw": 80.0}],
    })
    assert cfg.racks[0].su == "" and cfg.pdus[0].su == "" and cfg.cdus[0].capacity_kw == 80.0


@pytest.mark.parametrize("bad", [
    {"ashrae_class": "W99"},
    {"pdus": [{"name": "p", "address": "1.2.3.4", "protocol": "snmp"}]},  # no profile
    {"cdus": [{"name": "c", "address": "1.2.3.4", "protocol": "modbus"}]},  # no register map
    {"pdus": [{"name": "x", "address": "1.2.3.4", "profile": "apc"}], "cdus": [{"name": "x", "address": "1.2.3.5"}]},
    {"racks": [], "typo": 1},
])
def test_config_rejects(bad):
    with pytest.raises(ValidationError):
        AgentConfig.model_validate(bad)


def test_credentials_file_env_and_never_logged(tmp_path, caplog, snmpsim):
    f = tmp_path / "credentials.yml"
    f.write_text("default: {community: s3cret-community}\nredfish: {username: mon, password: hunter2-pass}\n")
    f.chmod(0o600)
    store = CredentialStore.load(f, environ={"SUPERPOD_COOLING_REDFISH_PASSWORD": "from-env-pw"})
    assert store.get("default").community.get_secret_value() == "s3cret-community"
    assert store.get(None).community.get_secret_value() == "s3cret-community"
    assert store.get("redfish").password.get_secret_value() == "from-env-pw"
    for text in (repr(store), repr(store.get("redfish")), str(store.get("default")),
                 str(store.get("redfish").model_dump())):
        assert "s3cret" not in text and "hunter2" not in text and "from-env" not in text
    # a failing poll logs target, address and reason: never the community
    cfg = AgentConfig.model_validate(layout(timeout_s=0.3, pdus=[snmp_pdu("p", snmpsim.port, "apc", "default")]))
    agent = Agent(cfg, store)

    async def go():
        try:
            await agent.poll_once()
        finally:
            await agent.stop()

    with caplog.at_level(logging.DEBUG):
        asyncio.run(go())
    assert "p" in caplog.text and "s3cret" not in caplog.text
    assert one(scrape(agent), "superpod_target_up", target="p") == 0.0  # wrong community: no answer


def test_shipped_profiles_load():
    assert {"raritan", "apc", "servertech"} <= set(available_profiles())
    for name in available_profiles():
        assert load_profile(name).series


def test_profile_rejects_unknown_metric_and_label():
    base = {"vendor": "x", "mib": "X-MIB"}
    with pytest.raises(ValidationError):
        Profile.model_validate({**base, "series": [{"metric": "pdu_watts", "column": "1.3.6", "index": "{x}"}]})
    with pytest.raises(ValidationError):
        Profile.model_validate({**base, "series": [
            {"metric": "pdu_power_watts", "column": "1.3.6", "index": "{x}", "labels": {"phase": "L1"}}]})
    with pytest.raises(ValidationError):  # decimals index uses a capture the series does not have
        Profile.model_validate({**base, "series": [
            {"metric": "pdu_power_watts", "column": "1.3.6", "index": "{x}",
             "decimals": {"column": "1.3.7", "index": "{y}"}}]})


def test_new_vendor_is_a_data_file(tmp_path, snmpsim, creds):
    """A profile written as YAML outside the package polls a device with no code change."""
    prof = tmp_path / "acme.yml"
    prof.write_text(textwrap.dedent("""
        vendor: ACME
        mib: ACME-PDU-MIB
        series:
          - {metric: pdu_power_watts, column: 1.3.6.1.4.1.318.1.1.26.4.3.1.5, index: "{unit}", scale: 0.01}
          - {metric: pdu_outlet_power_watts, column: 1.3.6.1.4.1.318.1.1.26.9.4.3.1.7, index: "{outlet}"}
    """))
    agent, oks = poll_once(layout(pdus=[snmp_pdu("acme", snmpsim.port, str(prof), community="apc")]), creds)
    assert oks == {"acme": True}
    m = scrape(agent)
    assert one(m, "superpod_pdu_power_watts", pdu="acme") == 6.42
    assert one(m, "superpod_pdu_outlet_power_watts", pdu="acme", outlet="3") == 705.0
