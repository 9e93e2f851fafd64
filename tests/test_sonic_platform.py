"""SONiC config_db.json judged by SONiC's own platform files (testdata/sonic-platforms/, from
sonic-buildimage): PORT and BREAKOUT_CFG against platform.json, QoS and buffers against the
Mellanox SKU's qos.json.j2 / buffers templates rendered with jinja2 as sonic-cfggen does, FRR's
mode against the bgp container's docker_init.sh. Every SONiC switch of every example stack and
of the variants below is checked; expectations come from the plan (the layout) and SONiC's
files, never from the config under test.
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from pathlib import Path

import jinja2
import pytest

from tests.conftest import ROOT, spec_with
from topology import catalog
from topology.errors import SpecError
from topology.layout.build import build
from topology.render.switches.build import build_intents
from topology.render.switches.sonic import config_db

PLATFORMS = ROOT / "testdata" / "sonic-platforms"
SONIC = {"switch_os": "sonic"}

# variant -> (stack, spec changes). SONiC's SN4600C platform has no 4-way breakout, and every
# example's in-band cores split a cage 4 x 25G for the storage servers' service ports: a SONiC
# in-band fabric is refused there (test below), so the SONiC in-band variants put their cores on
# SN5400 (4x100G[50G,25G,10G]), as roce-8k does, or run without storage servers.
INBAND = SONIC | {"core_switch_model": "sn5400"}
ALL = {"compute_fabric": SONIC, "storage_fabric": SONIC, "management": {"inband": INBAND, "oob": SONIC}}
NO_INBAND = {"compute_fabric": SONIC, "storage_fabric": SONIC, "management": {"oob": SONIC}}
VARIANTS = {
    "lab": ("lab", ALL),
    "lab-unnumbered": ("lab", ALL | {"compute_fabric": SONIC | {"bgp_peering": "unnumbered"}}),
    "lab-per-leaf": ("lab", ALL | {"addressing": {"rail_mode": "per_leaf"}}),
    "lab-per-leaf-rail-pods": ("lab", ALL | {"addressing": {"rail_mode": "per_leaf", "rail_pods": "100.104.0.0/16"}}),
    "lab-p2p-rail-pods": ("lab", ALL | {"addressing": {"rail_pods": "100.104.0.0/16"}}),
    "lab-inband-bond": ("lab", ALL | {"storage_fabric": SONIC | {"node_ports": "inband_bond"}}),
    "lab-sn5600": ("lab", ALL | {"compute_fabric": SONIC | {"switch_model": "sn5600"},
                                 "storage_fabric": SONIC | {"switch_model": "sn5600"}}),
    "lab-compute-only": ("lab", {"compute_fabric": SONIC}),
    "lab-storage-only": ("lab", {"storage_fabric": SONIC}),
    "lab-inband-only": ("lab", {"management": {"inband": INBAND}}),
    "lab-sn4600c-cores": ("lab", {"management": {"inband": SONIC, "oob": SONIC},
                                  "storage_fabric": {"storage_servers": 0}}),
    "roce-1k": ("roce-1k", NO_INBAND),
    "roce-8k": ("roce-8k", NO_INBAND),
    "dgx-h100-ib": ("dgx-h100-ib", {"storage_fabric": SONIC, "management": {"inband": INBAND, "oob": SONIC}}),
}


@cache
def _plan(variant: str):
    stack, changes = VARIANTS[variant]
    layout = build(spec_with(stack, **changes))
    cat = catalog.load()
    return layout, [
        (sw, config_db(sw, cat.switches[sw.model])) for sw in build_intents(layout) if sw.os == "sonic"
    ]


def _dbs(variant: str):
    return _plan(variant)[1]


# -- the judge: SONiC's files read here, not through the project's code ---------------------------


@cache
def platform_json(platform: str) -> dict:
    return json.loads((PLATFORMS / platform / "platform.json").read_text())["interfaces"]


def sku_dir(platform: str) -> Path:
    return PLATFORMS / platform / (PLATFORMS / platform / "default_sku").read_text().split()[0]


def _mbps(text: str) -> int:
    return int(text[:-1]) * 1000 if text.endswith("G") else int(text)


def mode_speeds(key: str) -> tuple[int, set[int]]:
    """'2x200G[100G,50G]' -> (2, {200000, 100000, 50000})."""
    m = re.fullmatch(r"(\d+)x(\d+G?)(?:\[([^\]]*)\])?", key)
    assert m, f"a breakout mode key of another shape: {key}"
    return int(m.group(1)), {_mbps(m.group(2))} | {_mbps(s) for s in (m.group(3) or "").split(",") if s}


def legs(parent: str, entry: dict, mode: str) -> list[tuple[str, str, str]]:
    """sonic-config-engine portconfig: leg i of a k-way breakout of EthernetB with n lanes is
    Ethernet(B + i*n/k) with lanes [i*n/k, (i+1)*n/k) and the mode's i-th alias."""
    lanes = entry["lanes"].split(",")
    k, _ = mode_speeds(mode)
    width = len(lanes) // k
    base = int(parent.removeprefix("Ethernet"))
    aliases = entry["breakout_modes"][mode]
    return [(f"Ethernet{base + i * width}", ",".join(lanes[i * width:(i + 1) * width]), aliases[i]) for i in range(k)]


def planned_cage(name: str) -> tuple[int, int]:
    """The plan's Cumulus-style port name -> (front-panel port, leg): swp50s1 -> (50, 1)."""
    m = re.fullmatch(r"swp(\d+)(?:s(\d+))?", name)
    assert m, name
    return int(m.group(1)), int(m.group(2) or 0)


def sonic_platform_of(model: str) -> str:
    return catalog.load().switches[model].sonic_platform


# -- PORT and BREAKOUT_CFG --------------------------------------------------------------------


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_port_matches_its_platform(variant):
    """Every front-panel port is in BREAKOUT_CFG under a mode key platform.json has; PORT holds
    exactly that mode's legs (names, lanes, aliases); each planned port sits on the leg its
    cage and sub-port name it, at its planned speed, with its planned address."""
    checked = 0
    for sw, db in _dbs(variant):
        ports = platform_json(sonic_platform_of(sw.model))
        assert set(db["BREAKOUT_CFG"]) == set(ports), sw.name
        expected: dict[str, tuple[str, str]] = {}
        leg_of: dict[tuple[int, int], str] = {}
        for parent, entry in ports.items():
            mode = db["BREAKOUT_CFG"][parent]["brkout_mode"]
            assert mode in entry["breakout_modes"], f"{sw.name} {parent}: {mode} is not a platform.json mode"
            _, speeds = mode_speeds(mode)
            front = int(entry["index"].split(",")[0])
            for i, (name, lanes, alias) in enumerate(legs(parent, entry, mode)):
                expected[name] = (lanes, alias)
                leg_of[(front, i)] = name
                assert int(db["PORT"][name]["speed"]) in speeds, f"{sw.name} {name}: speed not in {mode}"
        assert {n: (p["lanes"], p["alias"]) for n, p in db["PORT"].items()} == expected, sw.name
        for p in sw.ports:
            name = leg_of[planned_cage(p.name)]
            assert db["PORT"][name]["speed"] == str(p.speed_gbps * 1000), (sw.name, p.name)
            assert db["PORT"][name]["admin_status"] == "up"
            if p.address:
                assert f"{name}|{p.address}" in db["INTERFACE"], (sw.name, p.name)
            checked += 1
    assert checked


def test_the_issue_s_ports():
    """The defects of issue 31 on real platform data: SN4600C's front port 50 is Ethernet196 on
    lanes 392-395; an SN5400 2 x 200G breakout is mode '2x200G[100G,50G,40G,25G,10G]' with two
    4-lane legs Ethernet0 (etp1a) and Ethernet4 (etp1b)."""
    layout, dbs = _plan("roce-1k")
    sn5400 = next(db for sw, db in dbs if sw.role == "storage_leaf")
    assert sn5400["BREAKOUT_CFG"]["Ethernet0"]["brkout_mode"] == "2x200G[100G,50G,40G,25G,10G]"
    assert (sn5400["PORT"]["Ethernet0"]["lanes"], sn5400["PORT"]["Ethernet0"]["alias"]) == ("0,1,2,3", "etp1a")
    assert (sn5400["PORT"]["Ethernet4"]["lanes"], sn5400["PORT"]["Ethernet4"]["alias"]) == ("4,5,6,7", "etp1b")
    _, lab = _plan("lab")
    sn4600c = next(db for sw, db in lab if sw.model == "sn4600c")
    assert sn4600c["PORT"]["Ethernet196"]["lanes"] == "392,393,394,395"
    assert sn4600c["PORT"]["Ethernet196"]["alias"] == "etp50"


def test_a_breakout_the_platform_lacks_is_refused_naming_the_field():
    """roce-1k's in-band cores split cages 4 x 25G for the storage servers' service ports: SONiC's
    SN4600C platform has 1x100G and 2x50G only, so an all-SONiC roce-1k is refused, naming the
    field that chose SONiC and the modes the platform has."""
    layout = build(spec_with("roce-1k", **(ALL | {"management": {"inband": SONIC}})))
    cat = catalog.load()
    sw = next(s for s in build_intents(layout) if s.name == "inband-core-01")
    with pytest.raises(SpecError) as e:
        config_db(sw, cat.switches[sw.model])
    assert e.value.field == "management.inband.switch_os"
    assert "4 x 25G" in e.value.rule and "2x50G[25G,10G,1G]" in e.value.rule and "swp50" in e.value.rule


def test_plan_refuses_and_writes_nothing(tmp_path):
    from typer.testing import CliRunner

    from topology.cli import app

    spec = spec_with("roce-1k", **(ALL | {"management": {"inband": SONIC}})).model_dump(exclude_none=True)
    path = tmp_path / "pod.json"
    path.write_text(json.dumps(spec))
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["plan", "--spec", str(path), "--out", str(out)])
    assert r.exit_code != 0
    assert "management.inband.switch_os" in r.output
    assert not out.exists() or not any(out.iterdir())


def test_catalog_names_each_spectrum_model_s_sonic_platform():
    cat = catalog.load()
    for key, model in cat.switches.items():
        if model.kind == "ethernet":
            assert (PLATFORMS / model.sonic_platform / "platform.json").is_file(), key


# -- DEVICE_METADATA and FRR's mode ------------------------------------------------------------


def test_routing_mode_keeps_frr_conf():
    """docker_init.sh removes /etc/frr/frr.conf in `split` mode; `split-unified` keeps the one
    FRR file the plan writes (the script's own branch for the mode is read here)."""
    script = (PLATFORMS / "docker-fpm-frr_docker_init.sh").read_text()
    for _sw, db in _dbs("lab"):
        mode = db["DEVICE_METADATA"]["localhost"]["docker_routing_config_mode"]
        branch = re.search(rf'"\$CONFIG_TYPE" == "{re.escape(mode)}" \]; then\n(.*?)\n(?:elif|fi)', script, re.S)
        assert branch, f"docker_init.sh has no branch for {mode}"
        assert "rm -f /etc/frr/frr.conf" not in branch.group(1)
        assert "frr.conf" in branch.group(1)


def test_device_metadata_leaves_the_switch_s_own_keys():
    """hwsku, platform and mac are the switch's (its ONIE image and EEPROM): the plan names none."""
    for variant in ("lab", "roce-1k"):
        for sw, db in _dbs(variant):
            meta = db["DEVICE_METADATA"]["localhost"]
            assert not {"hwsku", "platform", "mac"} & set(meta), sw.name
            assert meta["hostname"] == sw.name


# -- QoS and buffers: SONiC's Mellanox templates as the judge -----------------------------------


def sonic_templates(platform: str, config: dict) -> dict:
    """What `config qos reload` renders on the switch: the SKU's qos.json.j2 and buffers.json.j2
    over the given ConfigDB (sonic-cfggen's globals template_exists and sort_by_port_index)."""
    dirs = [str(sku_dir(platform)), str(PLATFORMS / "build_templates")]
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(dirs), extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"],
        trim_blocks=True,
    )
    env.globals["template_exists"] = lambda n: any(os.path.exists(os.path.join(d, n)) for d in dirs)
    env.filters["sort_by_port_index"] = lambda v: v.sort(key=lambda p: int(p.removeprefix("Ethernet")))
    ctx = dict(config) | {"asic_type": "mellanox"}
    out: dict = {}
    for name in ("qos.json.j2", "buffers.json.j2"):
        out.update(json.loads(env.get_template(name).render(ctx)))
    return out


def _judge(sw, db: dict) -> dict:
    """SONiC's templates over this switch's PORT table and device type (the only inputs they read
    here): switches of one model with the same ports share one rendering."""
    ports = tuple((name, row["speed"]) for name, row in db["PORT"].items())
    return _judged(sonic_platform_of(sw.model), db["DEVICE_METADATA"]["localhost"]["type"], ports)


@cache
def _judged(platform: str, device_type: str, ports: tuple) -> dict:
    port_table = {name: {"speed": speed} for name, speed in ports}
    return sonic_templates(platform, {"PORT": port_table, "DEVICE_METADATA": {"localhost": {"type": device_type}}})


def _lossless(variant: str):
    for sw, db in _dbs(variant):
        if sw.qos:
            yield sw, db


@pytest.mark.parametrize("variant", ["lab", "lab-sn5600", "roce-1k"])
def test_port_qos_map_as_sonic_sets_it(variant):
    """Every field SONiC's qos.json.j2 sets on a port's PORT_QOS_MAP (pfc_to_queue_map and
    pfc_to_pg_map among them) is set on each lossless port, and names a map the config holds."""
    seen = 0
    for sw, db in _lossless(variant):
        judge = _judge(sw, db)
        port = next(k for k in judge["PORT_QOS_MAP"] if k.startswith("Ethernet"))
        wanted = set(judge["PORT_QOS_MAP"][port])
        for p in sw.ports:
            if p.lossless:
                name = _name(sw, db, p.name)
                row = db["PORT_QOS_MAP"][name]
                assert wanted <= set(row), (sw.name, p.name, wanted - set(row))
                for table, ref in (("MAP_PFC_PRIORITY_TO_QUEUE", "pfc_to_queue_map"),
                                   ("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", "pfc_to_pg_map"),
                                   ("TC_TO_PRIORITY_GROUP_MAP", "tc_to_pg_map"), ("DSCP_TO_TC_MAP", "dscp_to_tc_map")):
                    assert row[ref] in db[table]
                assert row["pfc_enable"] == ",".join(map(str, sw.qos.pfc_priorities))
                seen += 1
    assert seen


def _name(sw, db: dict, planned: str) -> str:
    """The SONiC port of a planned port: its front port's leg, by platform.json."""
    front, leg = planned_cage(planned)
    for parent, entry in platform_json(sonic_platform_of(sw.model)).items():
        if int(entry["index"].split(",")[0]) == front:
            return legs(parent, entry, db["BREAKOUT_CFG"][parent]["brkout_mode"])[leg][0]
    raise AssertionError(f"{sw.name}: no front port {front}")


def test_queues_bound_to_schedulers_cnp_strict():
    """Each queue SONiC's template binds to a scheduler is bound here too; the CNP queue (TC 6) is
    strict priority, RoCE's lossless queue carries the ECN profile."""
    for sw, db in _lossless("lab"):
        judge = _judge(sw, db)
        cnp_tc = dict(sw.qos.dscp_to_tc)[sw.qos.cnp_dscp]
        for p in sw.ports:
            if not p.lossless:
                continue
            name = _name(sw, db, p.name)
            bound = {k.split("|")[1] for k, v in judge["QUEUE"].items() if k.split("|")[0] == name and "scheduler" in v}
            for q in bound:
                assert db["SCHEDULER"][db["QUEUE"][f"{name}|{q}"]["scheduler"]]["type"] in ("DWRR", "STRICT")
            assert db["SCHEDULER"][db["QUEUE"][f"{name}|{cnp_tc}"]["scheduler"]]["type"] == "STRICT"
            for tc in sw.qos.ecn_traffic_classes:
                assert db["QUEUE"][f"{name}|{tc}"]["wred_profile"] in db["WRED_PROFILE"]


def pg_lookup(platform: str) -> dict[tuple[str, str], dict]:
    rows = {}
    for line in (sku_dir(platform) / "pg_profile_lookup.ini").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            speed, cable, size, xon, xoff, threshold = line.split()[:6]
            rows[(speed, cable)] = {"size": size, "xon": xon, "xoff": xoff}
    return rows


def test_buffers_as_sonic_builds_them_for_the_plan_s_cables():
    """Buffer tables are the SKU's templates' for this PORT table; CABLE_LENGTH holds each lossless
    port's planned cable rounded up to a length SONiC's pg_profile_lookup.ini has for its speed,
    so buffermgrd finds a lossless headroom profile for every (speed, cable) of the plan."""
    layout, dbs = _plan("lab")
    length = {}
    for lk in layout.links:
        length[(lk.a_device, lk.a_port)] = length[(lk.b_device, lk.b_port)] = lk.length_m
    for sw, db in _lossless("lab"):
        platform = sonic_platform_of(sw.model)
        lookup = pg_lookup(platform)
        judge = _judge(sw, db)
        for table in ("BUFFER_POOL", "BUFFER_PROFILE"):
            assert db[table] == judge[table], (sw.name, table)
        cables = db["CABLE_LENGTH"]["AZURE"]
        for p in sw.ports:
            name = _name(sw, db, p.name)
            speed = db["PORT"][name]["speed"]
            choices = sorted(int(c.removesuffix("m")) for s, c in lookup if s == speed)
            want = next(c for c in choices if c >= length[(sw.name, p.name)])
            assert cables[name] == f"{want}m", (sw.name, p.name)
            for table in ("BUFFER_PG", "BUFFER_QUEUE"):
                assert {k: v for k, v in db[table].items() if k.startswith(f"{name}|")} == \
                    {k: v for k, v in judge[table].items() if k.startswith(f"{name}|")}, (sw.name, table)
            assert (speed, cables[name]) in lookup


# -- MCLAG ------------------------------------------------------------------------------------


def test_mclag_unique_ip_on_the_domain_s_vlan():
    """The MCLAG session runs between the pair's own SVI addresses: SONiC needs MCLAG_UNIQUE_IP
    on that VLAN, or both switches answer for the same address."""
    found = 0
    for _sw, db in _dbs("lab"):
        if "MCLAG_DOMAIN" not in db:
            continue
        source = next(iter(db["MCLAG_DOMAIN"].values()))["source_ip"]
        vlan = next(k.split("|")[0] for k in db["VLAN_INTERFACE"] if k.partition("|")[2].split("/")[0] == source)
        assert db["MCLAG_UNIQUE_IP"] == {vlan: {"unique_ip": "enable"}}
        found += 1
    assert found


# -- yanglint over the variants -----------------------------------------------------------------


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_one_switch_per_role_and_model_passes_yanglint(variant):
    import shutil

    from topology.render.switches.sonic_yang import validate

    if shutil.which("yanglint") is None:
        pytest.skip("yanglint (libyang-tools) not installed")
    seen = set()
    for sw, db in _dbs(variant):
        if (sw.role, sw.model) not in seen:
            seen.add((sw.role, sw.model))
            validate(db)
    assert seen
