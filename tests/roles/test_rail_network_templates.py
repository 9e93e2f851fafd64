"""rail_network: the three backends render the same plan (address, MTU, table, rule) for the lab
plan's rails, and each OS family names its network tool. The netplan and
NetworkManager backends are not applied anywhere in CI (Debian containers only): this is their check."""

import configparser
from pathlib import Path

import jinja2
import pytest
import yaml

from tests.role_files import FAMILIES, ROOT, load

ROLE = ROOT / "roles" / "rail_network"


def lab_rails():
    scenario = load(ROLE / "molecule/default/molecule.yml")
    return scenario["provisioner"]["inventory"]["host_vars"]["rail-network-node01"]["rails"]


def plan_entry(rail):
    """What templates/plan.json.j2 computes for a RoCE rail (kept in step by test_plan_template_fields)."""
    ip, prefix = rail["address"].split("/")
    net = ".".join(ip.split(".")[:3] + [str(int(ip.split(".")[3]) & ~1)])
    return {"rail": rail["rail"], "netdev": rail["netdev"], "kind": "roce",
            "name": f"60-superpod-rail{rail['rail']}", "address": rail["address"], "ip": ip,
            "network": f"{net}/{prefix}", "peer": rail["peer"], "table": 100 + rail["rail"],
            "priority": 1000 + rail["rail"], "mtu": 9000, "leaf": rail["leaf"], "leaf_port": rail["leaf_port"]}


def render(name, item):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(ROLE / "templates"),
                             undefined=jinja2.StrictUndefined, trim_blocks=True)
    return env.get_template(name).render(item=item, ansible_managed="managed",
                                         rail_network_ipoib_mode="datagram")


@pytest.mark.parametrize("rail", lab_rails(), ids=lambda r: f"rail{r['rail']}")
def test_netplan_renders_the_plan(rail):
    item = plan_entry(rail)
    eth = yaml.safe_load(render("rail.netplan.yaml.j2", item))["network"]["ethernets"][rail["netdev"]]
    assert eth["addresses"] == [rail["address"]] and eth["mtu"] == 9000
    assert {"to": "default", "via": rail["peer"], "from": item["ip"], "table": item["table"]} in eth["routes"]
    assert eth["routing-policy"] == [{"from": item["ip"] + "/32", "table": item["table"],
                                      "priority": item["priority"]}]


@pytest.mark.parametrize("rail", lab_rails(), ids=lambda r: f"rail{r['rail']}")
def test_nmconnection_renders_the_plan(rail):
    item = plan_entry(rail)
    kf = configparser.ConfigParser(interpolation=None)
    kf.read_string(render("rail.nmconnection.j2", item))
    assert kf["connection"]["interface-name"] == rail["netdev"]
    assert kf["connection"]["id"] == f"superpod-rail{rail['rail']}"
    assert kf["ethernet"]["mtu"] == "9000"
    assert kf["ipv4"]["address1"] == rail["address"]
    assert kf["ipv4"]["route2"] == f"0.0.0.0/0,{rail['peer']}"
    assert kf["ipv4"]["route2_options"] == f"table={item['table']},src={item['ip']}"
    assert kf["ipv4"]["routing-rule1"] == f"priority {item['priority']} from {item['ip']}/32 table {item['table']}"
    assert kf["ipv6"]["method"] == "disabled"


@pytest.mark.parametrize("rail", lab_rails(), ids=lambda r: f"rail{r['rail']}")
def test_networkd_renders_the_plan(rail):
    item = plan_entry(rail)
    lines = [ln for ln in render("rail.network.j2", item).splitlines() if ln and not ln.startswith("#")]
    assert f"Name={rail['netdev']}" in lines and "MTUBytes=9000" in lines
    assert f"Address={rail['address']}" in lines and f"Gateway={rail['peer']}" in lines
    assert f"From={item['ip']}/32" in lines and f"Priority={item['priority']}" in lines
    assert lines.count(f"Table={item['table']}") == 3  # two routes and the rule


def test_plan_template_fields():
    text = (ROLE / "templates/plan.json.j2").read_text()
    for key in plan_entry(lab_rails()[0]):
        assert f"'{key}'" in text, key


def test_each_family_has_its_network_tool():
    data = {f: load(ROLE / "vars" / f"{f}.yml") for f in FAMILIES}
    assert [data[f]["rail_network_family_backend"] for f in FAMILIES] == [
        "systemd-networkd", "netplan", "netplan", "networkmanager"]


def test_netplan_never_reapplies_every_interface():
    """`netplan apply` re-applies every interface, the in-band bond Ansible is connected through
    included: the role renders with `netplan generate` and reconfigures only the rail links."""
    root = Path(__file__).resolve().parents[2] / "roles/rail_network"
    for path in [root / "tasks/netplan.yml", root / "tasks/apply-networkd.yml", root / "handlers/main.yml"]:
        for task in yaml.safe_load(path.read_text()) or []:
            command = str(task.get("ansible.builtin.command", ""))
            assert "apply" not in command, (path.name, task["name"])
    # what it reloads and reconfigures, and when not: tests/roles/test_rail_network_apply.py
    data = yaml.safe_load((root / "vars/main.yml").read_text())
    assert data["rail_network_netplan_generate_argv"] == ["netplan", "generate"]
    assert "flush_handlers" not in (root / "tasks/main.yml").read_text()
