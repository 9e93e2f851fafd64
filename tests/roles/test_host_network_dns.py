"""DNS on the in-band bond: resolvers and search domains are spec fields (`dns:`), written into the
inventory by `superpod plan` and into netplan, systemd-networkd and NetworkManager by host_network.
A node whose member port had DHCP (and so DNS) keeps name resolution after the bond replaces it.
The netplan file is judged by netplan itself (`netplan generate --root-dir`, the Debian/Ubuntu
package): the networkd file it produces must carry the plan's resolvers, and the role's own
networkd file must say the same."""

from __future__ import annotations

import configparser
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import spec_with
from tests.roles.playbook import debug_values, run_play
from tests.roles.test_host_network import NODE, POD, render_tasks
from topology.errors import SpecError
from topology.layout.build import build
from topology.render.inventory import render_inventory

DNS = {"servers": ["10.16.0.53", "10.16.0.54"], "search": ["pod.example.net", "example.net"]}


def inventory_all_vars(**changes) -> dict:
    files = render_inventory(build(spec_with("lab", **changes)), Path("/inv"))
    return yaml.safe_load(files[Path("/inv/group_vars/all/00_generated.yml")])


def test_spec_dns_reaches_the_inventory():
    all_vars = inventory_all_vars(dns=DNS)
    assert all_vars["superpod_dns_servers"] == DNS["servers"]
    assert all_vars["superpod_dns_search"] == DNS["search"]
    empty = inventory_all_vars()
    assert empty["superpod_dns_servers"] == [] and empty["superpod_dns_search"] == []


@pytest.mark.parametrize("dns,words", [
    ({"servers": ["10.16.0.300"]}, ["dns", "servers", "IPv4"]),
    ({"servers": ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]}, ["dns", "servers", "3"]),
    ({"search": ["-bad.example"]}, ["dns", "search", "-bad.example"]),
    ({"search": ["a..example"]}, ["dns", "search"]),
])
def test_bad_dns_is_refused_naming_the_field(dns, words):
    with pytest.raises((SpecError, ValueError)) as err:
        spec_with("lab", dns=dns)
    assert all(w in str(err.value) for w in words), str(err.value)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    all_vars = inventory_all_vars(dns=DNS)
    dns = {k: all_vars[k] for k in ("superpod_dns_servers", "superpod_dns_search")}
    hosts = {f: dict(NODE, **POD, **dns, family=f) for f in ("Debian", "Ubuntu-24", "RedHat-9")}
    results = run_play(tmp_path_factory.mktemp("host_network_dns"), render_tasks(), hosts)
    return {f: debug_values(results[f])[-1]["files"] for f in hosts}


def _values(network_file: str, key: str) -> list[str]:
    """Every value of a networkd key, whether given on one line or several (both are valid)."""
    out = []
    for line in network_file.splitlines():
        if line.startswith(key + "="):
            out.extend(line.split("=", 1)[1].split())
    return out


def test_netplan_itself_renders_the_plan_resolvers(rendered, tmp_path):
    netplan = shutil.which("netplan")
    assert netplan, "netplan (Debian package netplan.io, scripts/bootstrap.sh) is the judge of the netplan files"
    conf = tmp_path / "etc/netplan"
    conf.mkdir(parents=True)
    for name, files in rendered["Ubuntu-24"].items():
        if files["netplan"]:
            (conf / f"60-superpod-host-{name}.yaml").write_text(files["netplan"])
            (conf / f"60-superpod-host-{name}.yaml").chmod(0o600)
    subprocess.run([netplan, "generate", "--root-dir", str(tmp_path)], check=True, capture_output=True, text=True)
    bond = (tmp_path / "run/systemd/network/10-netplan-bond0.network").read_text()
    assert _values(bond, "DNS") == DNS["servers"] and _values(bond, "Domains") == DNS["search"]
    # the storage NICs carry no resolvers: one place answers names, the in-band network
    storage = (tmp_path / "run/systemd/network/10-netplan-enp41s0f0np0.network").read_text()
    assert _values(storage, "DNS") == []


def test_networkd_bond_carries_the_resolvers(rendered):
    bond = rendered["Debian"]["bond0"]["network"]
    assert _values(bond, "DNS") == DNS["servers"] and _values(bond, "Domains") == DNS["search"]
    assert _values(rendered["Debian"]["enp41s0f0np0"]["network"], "DNS") == []


def test_networkmanager_bond_carries_the_resolvers(rendered):
    kf = configparser.ConfigParser(interpolation=None)
    kf.read_string(rendered["RedHat-9"]["bond0"]["nm"])
    assert kf["ipv4"]["dns"] == ";".join(DNS["servers"]) + ";"
    assert kf["ipv4"]["dns-search"] == ";".join(DNS["search"]) + ";"
