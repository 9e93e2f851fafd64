"""Every NVUE startup.yaml the project renders, judged by NVIDIA's NVUE object model for the
Cumulus Linux release the spec names (nvueschema: Pydantic models generated from NVIDIA's NVUE
OpenAPI spec), with keys the model does not declare refused (the models ignore them).

Coverage: every file of the four example stacks, except roce-8k, whose 1,087 switches are
checked one per (role, model, SU 1 or not) -- the same section functions write every switch of
a role, and the full walk adds ~15 s; and one file per (role, model) in each variant of
tests/switch_variants.py."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import pytest
import yaml

from tests.conftest import STACKS, stack_layout
from tests.switch_variants import VARIANTS, variant_layout
from topology.errors import SpecErrors
from topology.render.switches.build import build_intents
from topology.render.switches.nvue import render_nvue
from topology.render.switches.nvue_model import NEWEST_RELEASE, check_set, check_startup
from topology.spec import CUMULUS_RELEASES, NVUE_MODEL_RELEASES

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _startup(sw) -> list:
    return yaml.load(render_nvue(sw), Loader=LOADER)  # noqa: S506 (libyaml's safe loader)


def _cumulus(layout):
    return [sw for sw in build_intents(layout) if sw.os == "cumulus"]


def _one_per_role(intents):
    seen, out = set(), []
    for sw in intents:
        key = (sw.role, sw.model, sw.name.startswith("su01-"))
        if key not in seen:
            seen.add(key)
            out.append(sw)
    return out


def _judge(intents, release: str) -> list[str]:
    return [f"{sw.name}: {e}" for sw in intents for e in check_startup(_startup(sw), release)]


def test_the_releases_the_spec_offers_are_the_models_releases():
    from nvueschema.models._versions import VERSIONS

    assert NVUE_MODEL_RELEASES == VERSIONS
    assert NEWEST_RELEASE == VERSIONS[-1] == CUMULUS_RELEASES[-1]


def test_releases_whose_nvue_cannot_hold_the_plan_are_refused_naming_the_field():
    from tests.conftest import spec_with

    refused = [r for r in NVUE_MODEL_RELEASES if r not in CUMULUS_RELEASES]
    assert refused == ["5.0", "5.1", "5.2", "5.3", "5.4", "5.5"]
    for release in refused:  # each one's own model says why: no /qos/pfc-watchdog (read, not imported: 1.5 s each)
        source = importlib.util.find_spec(f"nvueschema.models.v{release.replace('.', '_')}").origin
        assert "Path: /qos/pfc-watchdog\n" not in Path(source).read_text(encoding="utf-8")
    source = importlib.util.find_spec("nvueschema.models.v5_6").origin
    assert "Path: /qos/pfc-watchdog\n" in Path(source).read_text(encoding="utf-8")
    for release in refused:
        with pytest.raises(SpecErrors, match=r"switch_software\.cumulus_release: .*no PFC watchdog"):
            spec_with("lab", switch_software={"cumulus_release": release})
    with pytest.raises(SpecErrors, match=r"switch_software\.cumulus_release: got the number 5\.1"):
        spec_with("lab", switch_software={"cumulus_release": 5.10})


@pytest.mark.parametrize("stack", STACKS)
def test_every_startup_yaml_of_the_example_stacks_is_accepted(stack):
    layout = stack_layout(stack)
    intents = _cumulus(layout)
    if stack == "roce-8k":
        intents = _one_per_role(intents)
    assert intents, stack
    release = layout.spec.switch_software.cumulus_release
    assert release == NEWEST_RELEASE  # the default
    errors = _judge(intents, release)
    assert not errors, f"{len(errors)} errors, first: " + "\n".join(errors[:20])


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_every_switch_role_of_each_variant_is_accepted(variant):
    layout = variant_layout(variant)
    intents = _one_per_role(_cumulus(layout))
    assert intents, variant.name
    release = layout.spec.switch_software.cumulus_release
    assert {sw.os_release for sw in intents} == {release}
    errors = _judge(intents, release)
    assert not errors, f"{variant.name}: {len(errors)} errors, first: " + "\n".join(errors[:20])


# --- the defects of issue 31, each held by the plan, not by the file under test ---

def _set(sw) -> dict:
    return _startup(sw)[0]["set"]


def test_lossless_ports_turn_the_pfc_watchdog_on_in_the_models_words():
    layout = stack_layout("lab")
    lossless = {(sw.name, p.name) for sw in build_intents(layout) for p in sw.ports if p.lossless}
    assert lossless
    for sw in _cumulus(layout):
        cfg = _set(sw)
        for name, iface in cfg["interface"].items():
            state = iface.get("qos", {}).get("pfc-watchdog", {}).get("state")
            assert (state == "enable") == ((sw.name, name) in lossless), (sw.name, name, state)


@pytest.mark.parametrize("release", ["5.14", NEWEST_RELEASE])
def test_vrr_is_turned_on_wherever_the_plan_gives_a_switch_a_virtual_gateway(release):
    from tests.conftest import spec_with
    from topology.layout.build import build

    layout = build(spec_with("lab", switch_software={"cumulus_release": release}))
    # the plan's shared gateways: an address named <svi>-v0 on both switches of a pair
    vrr_switches = {a.device for a in layout.addresses if a.interface.endswith("-v0")}
    assert vrr_switches
    on = {"enable": "on"} if release == "5.14" else {"state": "enabled"}
    for sw in _cumulus(layout):
        router = _set(sw).get("router", {})
        assert (router.get("vrr") == on) == (sw.name in vrr_switches), sw.name


# --- negative: a corrupted file fails, naming its path ---

def _leaf():
    layout = stack_layout("lab")
    return _set(next(sw for sw in build_intents(layout) if sw.name == "su01-leaf-rail0"))


def test_a_wrong_value_fails_naming_its_path():
    body = copy.deepcopy(_leaf())
    body["interface"]["swp1"]["qos"]["pfc-watchdog"]["state"] = "enabled"
    errors = check_set(body)
    assert len(errors) == 1
    assert errors[0].startswith("interface.swp1.qos.pfc-watchdog.state: Input should be 'enable' or 'disable'")


def test_an_unknown_key_fails_naming_its_path():
    body = copy.deepcopy(_leaf())
    body["interface"]["swp1"]["link"]["mtuu"] = 9216
    body["qos"]["pfc-watchdog"]["robustnes"] = 3
    body["frobnicate"] = {}
    errors = check_set(body)
    assert sorted(errors) == sorted([
        "interface.swp1.link.mtuu: unknown key (the NVUE model has no such field)",
        "qos.pfc-watchdog.robustnes: unknown key (the NVUE model has no such field)",
        "frobnicate: unknown key (the NVUE model has no such field)",
    ])


def test_an_out_of_range_number_and_a_bad_address_fail_naming_their_paths():
    body = copy.deepcopy(_leaf())
    body["interface"]["swp1"]["link"]["mtu"] = 100
    body["vrf"]["default"]["router"]["bgp"]["router-id"] = "10.255.0.300"
    errors = check_set(body)
    assert any(e.startswith("interface.swp1.link.mtu: ") for e in errors), errors
    assert any(e.startswith("vrf.default.router.bgp.router-id: ") for e in errors), errors
    assert len(errors) == 2


def test_a_key_of_the_other_releases_model_fails():
    """5.15 renamed interface `ip` to `ipv4`: a 5.14 file does not pass as 5.18 and back."""
    body = copy.deepcopy(_leaf())
    assert "ipv4" in body["interface"]["swp1"]
    old = copy.deepcopy(body)
    old["interface"]["swp1"]["ip"] = old["interface"]["swp1"].pop("ipv4")
    assert "interface.swp1.ip: unknown key (the NVUE model has no such field)" in check_set(old, NEWEST_RELEASE)
    assert "interface.swp1.ipv4: unknown key (the NVUE model has no such field)" in check_set(body, "5.14")


def test_a_file_that_is_not_a_list_of_operations_fails():
    assert check_startup({"set": {}}) == ["(file): a startup.yaml is a list of operations (- set: ...)"]
    assert check_startup([{"sett": {}}]) == ["[0]: each item is one of header, set"]


def test_check_nvue_command_judges_the_written_plan(tmp_path):
    from typer.testing import CliRunner

    from tests.conftest import ROOT
    from topology.cli import app

    runner = CliRunner()
    out = tmp_path / "lab"
    assert runner.invoke(app, ["plan", "-s", "lab", "-C", str(ROOT), "--out", str(out)]).exit_code == 0
    ok = runner.invoke(app, ["check-nvue", "-s", "lab", "-C", str(ROOT), "--plan-dir", str(out)])
    layout = stack_layout("lab")
    count = len(_cumulus(layout))
    assert ok.exit_code == 0, ok.output
    assert f"Cumulus Linux {NEWEST_RELEASE} NVUE model: {count} of {count} startup.yaml accepted" in ok.output
    spine = out / "switches" / "spine-01" / "startup.yaml"
    pad = " " * 10  # interface > swp1 > link > mtu
    spine.write_text(spine.read_text().replace(f"{pad}mtu: 9216\n", f"{pad}mtu: 9216\n{pad}mtuu: 1\n", 1))
    bad = runner.invoke(app, ["check-nvue", "-s", "lab", "-C", str(ROOT), "--plan-dir", str(out)])
    assert bad.exit_code == 1
    assert "spine-01/startup.yaml: interface.swp1.link.mtuu: unknown key" in bad.output
    missing = runner.invoke(app, ["check-nvue", "-s", "lab", "-C", str(ROOT), "--plan-dir", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "run `superpod plan` first" in missing.output


# --- switch services from the spec, in the places each release keeps them ---

def _services_of(cfg: dict, vrf: str) -> dict:
    """NTP/DNS/syslog servers wherever the release keeps them (system.<name> or service.<name>.<vrf>)."""
    system, service = cfg["system"], cfg.get("service", {})

    def servers(name: str) -> set[str]:
        return set(system.get(name, {}).get("server", {})) | set(service.get(name, {}).get(vrf, {}).get("server", {}))

    return {name: servers(name) for name in ("ntp", "dns", "syslog")}


@pytest.mark.parametrize("name", ["services", "services-5.14", "services-5.12"])
def test_every_switch_gets_the_specs_servers_and_graceful_restart(name):
    variant = next(v for v in VARIANTS if v.name == name)
    layout = variant_layout(variant)
    ss = layout.spec.switch_services
    for sw in _cumulus(layout):
        cfg = _set(sw)
        vrf = sw.mgmt.vrf if sw.mgmt else "default"  # a rack OOB switch reaches them in-band of its own network
        assert _services_of(cfg, vrf) == {"ntp": set(ss.ntp_servers), "dns": set(ss.dns_servers),
                                             "syslog": set(ss.syslog_servers)}, sw.name
        if sw.bgp:
            assert cfg["router"]["bgp"]["graceful-restart"] == {"mode": ss.bgp_graceful_restart}, sw.name


def test_the_gnmi_server_listens_where_gnmic_dials():
    from topology.render.telemetry import switch_targets

    layout = stack_layout("lab")
    dialled = {t["name"]: int(addr.rsplit(":", 1)[1]) for addr, t in yaml.safe_load(switch_targets(layout))
               ["targets"].items()}
    configs = {sw.name: _set(sw) for sw in _cumulus(layout)}
    assert dialled and set(dialled) <= set(configs)
    for name, port in dialled.items():
        assert configs[name]["system"]["gnmi-server"] == {"state": "enabled", "port": port}, name


def test_a_release_without_gnmi_is_refused_unless_gnmi_is_off():
    from tests.conftest import spec_with

    with pytest.raises(SpecErrors, match=r"switch_services: gnmi_server: Cumulus Linux 5\.12 has no gNMI server"):
        spec_with("lab", switch_software={"cumulus_release": "5.12"})
    spec_with("lab", switch_software={"cumulus_release": "5.12"}, switch_services={"gnmi_server": False})
    # no switch on Cumulus: nothing to refuse
    spec_with("lab", switch_software={"cumulus_release": "5.12"}, compute_fabric={"switch_os": "sonic"},
              storage_fabric={"switch_os": "sonic"}, management={"inband": {"switch_os": "sonic"},
                                                                  "oob": {"switch_os": "sonic"}})


@pytest.mark.parametrize("pairing", ["mlag"])  # evpn_mh is refused until its control plane is rendered
def test_host_bonds_bypass_lacp_and_are_stp_edges_with_bpdu_guard(pairing):
    from tests.conftest import spec_with
    from topology.layout.build import build

    layout = build(spec_with("lab", management={"inband": {"pairing": pairing}}))
    # the plan's host bonds: a node's, mgmt node's or appliance's links to an in-band pair
    hosts = {lk.a_device for lk in layout.links if lk.tier in ("node-inband", "mgmt-core", "service-inband")}
    checked = 0
    for sw in _cumulus(layout):
        for name, iface in _set(sw)["interface"].items():
            if iface.get("type") != "bond" or name == "peerlink":
                continue
            assert iface["description"] in hosts, (sw.name, name)
            assert iface["bond"]["lacp-bypass"] == "enabled", (sw.name, name)
            assert iface["bridge"]["domain"]["br_default"]["stp"] == {"admin-edge": "enabled", "bpdu-guard": "enabled"}
            checked += 1
    assert checked >= len(hosts)


@pytest.mark.parametrize("release", ["5.14", NEWEST_RELEASE])
def test_bfd_runs_on_every_session_between_the_pods_switches_and_not_toward_the_site(release):
    from tests.conftest import spec_with
    from topology.layout.build import build

    layout = build(spec_with("lab", switch_software={"cumulus_release": release},
                             switch_services={"bfd_interval_ms": 250, "bfd_multiplier": 4}))
    timers = {"detect-multiplier": 4, "min-rx-interval": 250, "min-tx-interval": 250}
    site_ends = {(lk.a_device, lk.a_port) for lk in layout.border_links} | {
        (lk.b_device, lk.b_port) for lk in layout.border_links}
    with_bfd = without = 0
    for sw in _cumulus(layout):
        cfg = _set(sw)
        bgp = cfg.get("vrf", {}).get("default", {}).get("router", {}).get("bgp")
        if not bgp:
            continue
        by_key = {n.interface if sw.bgp.unnumbered else n.address: n for n in sw.bgp.neighbors}
        for key, nbr in bgp["neighbor"].items():
            toward_site = (sw.name, by_key[key].interface) in site_ends
            if toward_site:
                assert "bfd" not in nbr, (sw.name, key)
                without += 1
            elif release == "5.14":
                assert nbr["bfd"] == {"enable": "on", **timers}, (sw.name, key)
                with_bfd += 1
            else:
                profile = cfg["router"]["bfd"]["profile"][nbr["bfd"]["profile"]]
                assert profile == timers and cfg["router"]["bfd"]["state"] == "enabled", (sw.name, key)
                with_bfd += 1
    assert with_bfd and without
