"""superpod publish against a real Nautobot (scripts/nautobot-lab.sh): the lab pod is published, read
back over REST (by this test's own reader, not the publisher's) and compared object by object;
a second publish (the CLI's, as a user runs it) changes nothing and never shows or writes the token;
a grown SU adds only new objects, and its republish, paging the types Nautobot does not order uniquely
in pages of 20, changes nothing; a cable re-plugged by hand in Nautobot is named by `superpod diff
--nautobot`. Tests run in file order and share the server.

The server's CPU is what this job costs (every object written is validated, saved and change-logged),
so each test reads and writes only what its claim needs: the publisher's own page size except where
paging is what is tested, one object-by-object read-back, the cables alone after the growth."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from tests.conftest import ROOT, spec_with, stack_layout
from topology.cli import app
from topology.layout.build import build
from topology.publish.nautobot import Nautobot, read_token
from topology.publish.sync import sync
from topology.render.dcim import desired_objects

pytestmark = [pytest.mark.nautobot, pytest.mark.timeout(2400)]
SMALL_PAGE = 20  # so that the lab pod's unordered types span many pages, as roce-1k's do at the default 1000
# IP-address-to-interface has no ordering in Nautobot and IP addresses tie on (version, host, length): the
# types whose offset pages overlapped and missed rows before reads sorted by id (docs/nautobot.md)
UNORDERED = ("ipam/ip-address-to-interface/", "ipam/ip-addresses/")
TIMEOUT = 900.0  # the lab server's own limit (uWSGI harakiri): a starved loaded server is slow, not wrong


class SmallPages(Nautobot):
    """The publisher's client, reading the unordered types in small pages (sync reads one type at a time)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.default_page = self.page

    def list(self, endpoint: str, **params) -> list[dict]:
        self.page = SMALL_PAGE if endpoint in UNORDERED else self.default_page
        return super().list(endpoint, **params)


class Reader:
    """What Nautobot holds, read flat (depth 0, many-to-many fields only where tags are compared): related
    objects come as ids and are named from this reader's own reads of those objects, so the server
    serializes no nested objects (at depth=1 each interface carried its whole device, each outlet its
    device and power port)."""

    def __init__(self, url: str, token: str):
        self.http = httpx.Client(base_url=url + "/api/", headers={"Authorization": f"Token {token}"},
                                 timeout=TIMEOUT)

    def all(self, endpoint: str, m2m: bool = False, **params) -> list[dict]:
        """Every object once: paged over a unique order (sort=id), checked against the count."""
        out, offset = [], 0
        light = {} if m2m else {"exclude_m2m": "true"}
        while True:
            body = self.http.get(endpoint, params={**params, **light, "sort": "id", "limit": 1000, "offset": offset}
                                 ).raise_for_status().json()
            out += body["results"]
            if not body["next"]:
                assert len({o["id"] for o in out}) == len(out) == body["count"], endpoint
                return out
            offset += 1000

    def names(self, endpoint: str, field: str = "name", **params) -> dict[str, str]:
        return {o["id"]: o[field] for o in self.all(endpoint, **params)}

    def interfaces(self, site: str, devices: dict[str, str] | None = None) -> dict[str, tuple]:
        """id -> ((device, name), (type, speed))."""
        devices = devices or self.names("dcim/devices/", location=site)
        return {i["id"]: ((devices[i["device"]["id"]], i["name"]), (_choice(i["type"]), i["speed"]))
                for i in self.all("dcim/interfaces/", location=site)}

    def cables(self, site: str, ifaces: dict[str, tuple] | None = None) -> dict:
        """Data cables by label: their two ends as (device, interface)."""
        ends = {k: v[0] for k, v in (ifaces or self.interfaces(site)).items()}
        return {c["label"]: frozenset({ends.get(c["termination_a_id"]), ends.get(c["termination_b_id"])})
                for c in self.all("dcim/cables/") if c["termination_a_id"] in ends or c["termination_b_id"] in ends}

    def pod(self, site: str) -> dict:
        devices = self.all("dcim/devices/", m2m=True, location=site)
        device_names = {d["id"]: d["name"] for d in devices}
        ifaces = self.interfaces(site, device_names)
        racks = self.all("dcim/racks/", location=site)
        rack_names, groups = {r["id"]: r["name"] for r in racks}, self.names("dcim/rack-groups/", location=site)
        types, roles = self.names("dcim/device-types/", "model"), self.names("extras/roles/")
        tags = self.names("extras/tags/")
        ips = self.names("ipam/ip-addresses/", "address", namespace=site)
        assigned: dict[str, set] = {}
        for a in self.all("ipam/ip-address-to-interface/"):
            if a["ip_address"]["id"] in ips:
                assigned.setdefault(ips[a["ip_address"]["id"]], set()).add(ifaces[a["interface"]["id"]][0])
        return {
            "devices": {d["name"]: (rack_names.get((d["rack"] or {}).get("id")), d["position"],
                                    types[d["device_type"]["id"]], roles[d["role"]["id"]],
                                    d["custom_fields"].get("superpod_asn"), frozenset(tags[t["id"]] for t in d["tags"]))
                        for d in devices},
            "interfaces": dict(ifaces.values()),
            "cables": self.cables(site, ifaces),
            "addresses": {addr: frozenset(ifs) for addr, ifs in assigned.items()},
            "prefixes": {p["prefix"] for p in self.all("ipam/prefixes/", namespace=site)},
            "racks": {r["name"]: (groups[r["rack_group"]["id"]], r["u_height"]) for r in racks},
            **self.power(site, device_names, rack_names),
        }

    def power(self, site: str, devices: dict[str, str], racks: dict[str, str]) -> dict:
        """Feeds with their ratings, PDU inputs cabled to them; ports and outlets (made by templates)."""
        panels = self.names("dcim/power-panels/", location=site)
        feeds = self.all("dcim/power-feeds/", location=site)
        feed_names = {f["id"]: f["name"] for f in feeds}
        ports = {p["id"]: (devices[p["device"]["id"]], p["name"])
                 for p in self.all("dcim/power-ports/", location=site)}
        loc = self.all("dcim/locations/", name=site)[0]["id"]
        return {
            "power_feeds": {f["name"]: (panels[f["power_panel"]["id"]], racks[f["rack"]["id"]], f["voltage"],
                                        f["amperage"], _choice(f["phase"]), _choice(f["power_path"])) for f in feeds},
            "power_cables": {c["label"]: (ports.get(c["termination_a_id"]), feed_names.get(c["termination_b_id"]))
                             for c in self.all("dcim/cables/", location_id=loc, termination_type="dcim.powerfeed")},
            "power_ports": set(ports.values()),
            "power_outlets": {(devices[o["device"]["id"]], o["name"], ports[o["power_port"]["id"]][1])
                              for o in self.all("dcim/power-outlets/", location=site)},
        }


def _choice(v):
    return v["value"] if isinstance(v, dict) else v


def expected(desired) -> dict:
    return {
        "devices": {d.name: (d.rack, d.position, d.device_type, d.role, d.asn, frozenset(d.tags))
                    for d in desired.devices},
        "interfaces": {(i.device, i.name): (i.type, i.speed_kbps) for i in desired.interfaces},
        "cables": {c.label: c.ends for c in desired.cables},
        "addresses": {a.address: frozenset(a.interfaces) for a in desired.addresses},
        "prefixes": {p.prefix for p in desired.prefixes},
        "racks": {r.name: (r.row, r.u_height) for r in desired.racks},
        "power_feeds": {f.name: (f.panel, f.rack, f.voltage, f.amperage, f.phase, f.side) for f in desired.power.feeds},
        "power_cables": {c.label: ((c.device, c.port), c.feed) for c in desired.power.cables},
        "power_ports": {(p.device, p.name) for p in desired.power.ports},
        "power_outlets": {(o.device, o.name, o.power_port) for o in desired.power.outlets},
    }


@pytest.fixture(scope="module")
def server(nautobot_server):
    url, token_file, workers = nautobot_server
    token = read_token(token_file)
    return url, token_file, token, Reader(url, token), workers


def publish(server, layout, client=Nautobot, **kw):
    """With as many concurrent requests as the server has processes (the lab's uWSGI: 2n+1)."""
    url, _, token, _, workers = server
    with client(url, token, workers=workers, timeout=TIMEOUT) as nautobot:
        return sync(nautobot, desired_objects(layout), apply=True, **kw)


def test_publish_matches_the_plan_object_by_object(server):
    desired = desired_objects(stack_layout("lab"))
    report = publish(server, stack_layout("lab"))
    actions = {c.action for changes in report.changes.values() for c in changes}
    assert "create" in actions and not actions & {"delete", "conflict"}, report.counts()
    held, want = server[3].pod("lab"), expected(desired)
    for kind in want:
        missing = {k: v for k, v in want[kind].items() if held[kind].get(k) != v} if isinstance(want[kind], dict) \
            else want[kind] - held[kind]
        extra = set(held[kind]) - set(want[kind])
        assert not missing and not extra, f"{kind}: differ {list(missing)[:5]}, not in plan {list(extra)[:5]}"


def test_second_publish_changes_nothing_and_never_shows_the_token(server):
    """`superpod publish` as a user runs it (its own process, the token from --token-file): 0 changes, and the
    token in none of its output nor in any file it wrote."""
    url, token_file, token, _, workers = server
    superpod = str(Path(sys.executable).parent / "superpod")
    started = time.time()
    out = subprocess.run([superpod, "publish", "--stack", "lab", "--nautobot", url, "--token-file", str(token_file),
                          "--workers", str(workers), "--timeout", str(TIMEOUT), "--json", "-C", str(ROOT)],
                         capture_output=True, text=True, cwd=ROOT, timeout=1800)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout)["total"] == 0, out.stdout[-3000:]
    assert token not in out.stdout + out.stderr
    build_dir = ROOT / "build"
    if build_dir.exists():  # only a file written since the run started can hold what the run wrote
        for path in build_dir.rglob("*"):
            if path.is_file() and path.stat().st_mtime >= started - 1 and path.stat().st_size < 5_000_000:
                assert token not in path.read_text(errors="ignore"), path


def test_grown_su_adds_only_new_objects(server):
    """The republish reads the unordered types in pages of 20, several at a time (the grown lab's 500-odd IP
    assignments: 25 pages). Paged over Nautobot's default order (none for assignments), pages overlapped and
    the unseen assignments were posted again (HTTP 400, "interface, ip_address must make a unique set"), as
    roce-1k's did at 1000."""
    grown = build(spec_with("lab", scalable_units=2))
    planned = desired_objects(grown)
    before, after = expected(desired_objects(stack_layout("lab"))), expected(planned)
    assert planned.counts["ip_assignments"] > 5 * SMALL_PAGE
    report = publish(server, grown)
    assert all(c.action == "create" for changes in report.changes.values() for c in changes), report.counts()
    assert report.counts()["devices"]["create"] == len(set(after["devices"]) - set(before["devices"])) > 0
    assert report.counts()["cables"]["create"] == len(set(after["cables"]) - set(before["cables"])) > 0
    assert server[3].cables("lab") == after["cables"]
    assert publish(server, grown, client=SmallPages).total == 0


def test_a_cable_replugged_in_nautobot_is_named_by_diff(server):
    url, token_file, token, reader, _ = server
    grown = build(spec_with("lab", scalable_units=2))
    cable = next(c for c in desired_objects(grown).cables if c.label == "NL-000001")
    http = reader.http
    leaf = http.get("dcim/devices/", params={"name": cable.b_device, "location": "lab"}).json()["results"][0]
    spare = http.post("dcim/interfaces/", json={"device": leaf["id"], "name": "swp99", "type": "400gbase-x-osfp",
                                                "status": {"name": "Active"}}).raise_for_status().json()
    old = http.get("dcim/cables/", params={"label": "NL-000001"}).json()["results"][0]
    http.delete(f"dcim/cables/{old['id']}/").raise_for_status()
    http.post("dcim/cables/", json={"termination_a_type": "dcim.interface", "termination_a_id": old["termination_a_id"],
                                    "termination_b_type": "dcim.interface", "termination_b_id": spare["id"],
                                    "label": "NL-000001", "status": {"name": "Connected"}}).raise_for_status()
    result = CliRunner().invoke(app, ["diff", "--nautobot", url, "--token-file", str(token_file), "--limit", "0",
                                      "-C", str(ROOT), "lab"], env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    # the grown plan is not lab's stack file: only the hand edit and the grown SU's objects may differ
    line = next(x for x in result.output.splitlines() if "NL-000001" in x)
    assert "ends" in line and "swp99" in line and cable.b_interface in line, line
    assert token not in result.output
