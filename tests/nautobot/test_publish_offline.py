"""The publisher's rules without a server (these run in the main suite, in seconds): an in-memory
stand-in for Nautobot's bulk REST endpoints checks idempotence, growth, ownership and --prune;
the token file's mode; the CLI's error lines. tests/nautobot/test_publish_live.py proves the same
against a real Nautobot."""

from __future__ import annotations

import itertools
import json
import random
import threading
from collections import Counter

import httpx
import pytest
from typer.testing import CliRunner

from tests.conftest import ROOT, spec_with, stack_layout
from topology.catalog import load as load_catalog
from topology.cli import app
from topology.errors import SpecError
from topology.layout.build import build
from topology.publish.nautobot import Nautobot, NautobotError, read_token
from topology.publish.sync import sync
from topology.render.dcim import OWNER_TAG, desired_objects


class FakeNautobot:
    """Stores what is POSTed, keyed by endpoint; related objects are plain ids (the publisher
    accepts both {"id": ...} and bare ids). Seeds the statuses a fresh Nautobot has."""

    def __init__(self):
        self.ids = itertools.count(1)
        self.db: dict[str, dict[str, dict]] = {}
        self.requests = 0
        self.writes: list[tuple[str, str, int]] = []
        for name in ("Active", "Planned", "Connected"):
            self._put("extras/statuses/", {"name": name})

    def _put(self, endpoint, body):
        obj = {**body, "id": f"id{next(self.ids)}"}
        self.db.setdefault(endpoint, {})[obj["id"]] = obj
        return obj

    def list(self, endpoint, **params):
        self.requests += 1
        objs = [dict(o) for o in self.db.get(endpoint, {}).values()]
        if endpoint == "dcim/cables/":  # CableFilterSet: `location` takes a name, `location_id` a UUID
            assert "location" not in params, "cables filter by location_id (an id), not location (a name)"
            if "location_id" in params:
                here = {d["id"] for d in self.find("dcim/devices/", location=params["location_id"])}
                comps = {o["id"]: o["device"] for ep in ("dcim/interfaces/", "dcim/power-ports/")
                         for o in self.db.get(ep, {}).values()}
                objs = [o for o in objs if comps.get(o["termination_a_id"]) in here
                        or comps.get(o["termination_b_id"]) in here]
            if "termination_type" in params:  # Nautobot's CableFilterSet: "Termination (either end) type"
                objs = [o for o in objs if params["termination_type"] in
                        (o["termination_a_type"], o["termination_b_type"])]
        return objs

    def count(self, endpoint, **params):
        self.requests += 1
        return len(self.db.get(endpoint, {}))

    def create(self, endpoint, objects, parallel=False):
        self.requests += 1
        self.writes.append(("POST", endpoint, len(objects)))
        return [self._put(endpoint, body) for body in objects]

    def update(self, endpoint, objects, parallel=False):
        self.requests += 1
        self.writes.append(("PATCH", endpoint, len(objects)))
        for body in objects:
            self.db[endpoint][body["id"]].update(body)
        return objects

    def delete(self, endpoint, ids, parallel=False):
        self.requests += 1
        self.writes.append(("DELETE", endpoint, len(ids)))
        for i in ids:
            del self.db[endpoint][i]

    def find(self, endpoint, **match):
        return [o for o in self.db.get(endpoint, {}).values() if all(o.get(k) == v for k, v in match.items())]


def kinds_changed(report) -> dict[str, set[str]]:
    return {kind: {c.action for c in changes} for kind, changes in report.changes.items()}


@pytest.fixture
def published():
    server = FakeNautobot()
    report = sync(server, desired_objects(stack_layout("lab")), apply=True)
    return server, report


def test_first_publish_creates_everything_in_bulk(published):
    server, report = published
    counts = desired_objects(stack_layout("lab")).counts
    assert report.counts()["devices"]["create"] == counts["devices"]
    assert report.counts()["cables"]["create"] == counts["cables"]
    assert report.counts()["ip_assignments"]["create"] == counts["ip_assignments"]
    assert len(server.db["dcim/interfaces/"]) == counts["interfaces"]
    posts = [n for method, endpoint, n in server.writes if endpoint == "dcim/interfaces/"]
    assert posts == [counts["interfaces"]], "one bulk call per object type, not one per object"


def test_client_sends_lists_in_chunks_and_pages_reads():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path, request.headers["Authorization"]))
        if request.method == "GET":
            offset = int(request.url.params["offset"])
            nxt = "more" if offset == 0 else None
            return httpx.Response(200, json={"results": [{"id": str(offset)}], "next": nxt})
        return httpx.Response(201, json=[{**o, "id": "x"} for o in json.loads(request.content)])

    client = Nautobot("http://nb.example", "tok123", chunk=100)
    client._http = httpx.Client(base_url="http://nb.example/api/", transport=httpx.MockTransport(handler),
                                headers=client._http.headers)
    assert len(client.create("dcim/interfaces/", [{"name": f"e{i}"} for i in range(250)])) == 250
    assert [m for m, _, _ in seen] == ["POST"] * 3
    assert [o["id"] for o in client.list("dcim/devices/")] == ["0", "1000"]
    assert {auth for _, _, auth in seen} == {"Token tok123"} and "tok123" not in repr(client)


def test_second_publish_and_diff_change_nothing(published):
    server, _ = published
    server.writes.clear()
    assert sync(server, desired_objects(stack_layout("lab")), apply=True).total == 0
    assert server.writes == []


def test_grown_su_only_creates(published):
    server, _ = published
    report = sync(server, desired_objects(build(spec_with("lab", scalable_units=2))), apply=True)
    assert all(actions == {"create"} for actions in kinds_changed(report).values()), kinds_changed(report)
    assert report.counts()["devices"]["create"] > 0


def test_shrink_lists_deletions_and_prune_deletes_only_ours(published):
    server, _ = published
    grown = desired_objects(build(spec_with("lab", scalable_units=2)))
    sync(server, grown, apply=True)
    # someone adds a device of their own to the pod's location, and a tag to one of ours
    node = server.find("dcim/devices/", name="su01-node01")[0]
    server._put("dcim/devices/", {**node, "name": "their-box", "rack": None, "position": None, "tags": []})
    hand_tag = server._put("extras/tags/", {"name": "hand-made"})
    node["tags"] = node["tags"] + [hand_tag["id"]]

    lab = desired_objects(stack_layout("lab"))
    listed = sync(server, lab, apply=True)
    deletes = [c for c in listed.changes["devices"] if c.action == "delete"]
    assert deletes and all("needs --prune" in c.detail for c in deletes)
    assert server.find("dcim/devices/", name="su02-node01"), "nothing deleted without --prune"
    assert hand_tag["id"] in server.find("dcim/devices/", name="su01-node01")[0]["tags"], "hand-made tag kept"

    pruned = sync(server, lab, apply=True, prune=True)
    assert {c.key for c in pruned.changes["devices"]} == {c.key for c in deletes}
    assert not server.find("dcim/devices/", name="su02-node01")
    assert server.find("dcim/devices/", name="their-box"), "an object without our tag is never deleted"
    assert sync(server, lab, apply=True).total == 0


def test_an_object_we_did_not_create_is_updated_but_never_claimed():
    server = FakeNautobot()
    lab = desired_objects(stack_layout("lab"))
    sync(server, lab, apply=True)
    rack = server.find("dcim/racks/", name=lab.racks[0].name)[0]
    owner = server.find("extras/tags/", name=OWNER_TAG)[0]["id"]
    rack["tags"] = []  # as if made by hand before the first publish
    rack["u_height"] = 42
    report = sync(server, lab, apply=True)
    height = lab.racks[0].u_height
    assert [c.detail for c in report.changes["racks"]] == [f"u_height: 42 -> {height}; tags: {{}} -> {{su-01}}"]
    assert owner not in rack["tags"] and rack["u_height"] == lab.racks[0].u_height
    assert sync(server, lab, apply=True).total == 0


def test_recabled_port_is_named(published):
    server, _ = published
    lab = desired_objects(stack_layout("lab"))
    cable = server.find("dcim/cables/", label="NL-000001")[0]
    spare = server._put("dcim/interfaces/", {"name": "swp99", "device": server.find(
        "dcim/devices/", name=lab.cables[0].b_device)[0]["id"], "tags": []})
    cable["termination_b_id"] = spare["id"]
    report = sync(server, lab, apply=False)
    (change,) = report.changes["cables"]
    assert change.key == "NL-000001" and change.action == "update" and "swp99" in change.detail


def test_token_file_must_be_private(tmp_path):
    token = tmp_path / "token"
    token.write_text("0123456789abcdef\n")
    token.chmod(0o644)
    with pytest.raises(SpecError, match="chmod 600"):
        read_token(token)
    token.chmod(0o600)
    assert read_token(token) == "0123456789abcdef"
    result = CliRunner().invoke(app, ["publish", "--stack", "lab", "-C", str(ROOT), "--nautobot",
                                      "http://127.0.0.1:9", "--token-file", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "error: --token-file" in result.output


def test_cli_errors_name_the_field(tmp_path):
    token = tmp_path / "token"
    token.write_text("secret-token-value\n")
    token.chmod(0o600)
    runner = CliRunner()
    no_url = runner.invoke(app, ["publish", "--stack", "lab", "-C", str(ROOT), "--token-file", str(token)])
    assert no_url.exit_code == 2 and "error: --nautobot" in no_url.output
    down = runner.invoke(app, ["diff", "--nautobot", "http://127.0.0.1:9", "--token-file", str(token),
                               "-C", str(ROOT), "lab"])
    assert down.exit_code == 2 and "error: --nautobot" in down.output
    assert "secret-token-value" not in down.output


def test_power_panels_feeds_pdus_follow_the_plan():
    layout = stack_layout("lab")
    power = desired_objects(layout).power
    pdus = [d for d in layout.devices if d.role == "pdu"]
    model = load_catalog().pdus[layout.spec.racks.pdu_model]
    assert len(power.feeds) == len(pdus) == 2 * layout.spec.racks.pdus_per_feed * len(layout.racks)
    assert {(f.voltage, f.amperage, f.phase) for f in power.feeds} == {
        (model.volts, model.amps, "three-phase" if model.phases == 3 else "single-phase")}
    assert {f.side for f in power.feeds} == {"a", "b"} and {p.name[-1] for p in power.panels} == {"a", "b"}
    assert sum(1 for o in power.outlets if o.device == pdus[0].name) == model.outlets
    assert {(c.device, c.port) for c in power.cables} == {(p.name, "input") for p in pdus}


def test_power_is_published_and_republish_changes_nothing(published):
    server, report = published
    lab = desired_objects(stack_layout("lab"))
    for kind in ("power_panels", "power_feeds", "power_cables"):
        assert report.counts()[kind]["create"] == lab.counts[kind] > 0, kind
    feed = lab.power.feeds[0]
    held = server.find("dcim/power-feeds/", name=feed.name)[0]
    assert (held["voltage"], held["amperage"], held["phase"], held["power_path"], held["type"]) == (
        feed.voltage, feed.amperage, feed.phase, "a", "primary")
    pdu_port = server.find("dcim/power-ports/", name="input", device=server.find(
        "dcim/devices/", name=lab.power.cables[0].device)[0]["id"])[0]
    cable = server.find("dcim/cables/", label=lab.power.cables[0].label)[0]
    assert (cable["termination_a_type"], cable["termination_a_id"]) == ("dcim.powerport", pdu_port["id"])
    assert (cable["termination_b_type"], cable["termination_b_id"]) == ("dcim.powerfeed", held["id"])
    # PDUs' outlets and nodes' PSUs come from device-type templates (Nautobot instantiates them)
    templates = server.db["dcim/power-outlet-templates/"]
    assert len(templates) == load_catalog().pdus[stack_layout("lab").spec.racks.pdu_model].outlets
    server.writes.clear()
    assert sync(server, lab, apply=True).total == 0 and server.writes == []


def test_reads_skip_m2m_fields_only_where_no_tags_are_compared():
    """exclude_m2m drops tags and content types from a read: fine where neither is compared (lighter
    pages), never where ownership (the superpod tag) or content types are checked."""
    from topology.publish.kinds import kinds
    server = FakeNautobot()
    seen: dict[str, dict] = {}
    plain = server.list

    def record(endpoint, **params):
        seen.setdefault(endpoint, params)
        return plain(endpoint, **params)

    server.list = record
    lab = desired_objects(stack_layout("lab"))
    sync(server, lab, apply=True)
    sync(server, lab, apply=False)
    light = {k.endpoint for k in kinds() if not k.m2m}
    assert {"dcim/power-outlets/", "dcim/power-ports/", "ipam/ip-address-to-interface/"} <= light
    for k in kinds():
        if k.endpoint in seen and k.endpoint != "dcim/cables/":
            assert ("exclude_m2m" in seen[k.endpoint]) == (not k.m2m), k.name


def test_no_object_is_read_twice():
    """Each object type is read once, and no object comes back in two reads: the interface cables'
    read leaves out the PDU-to-feed cables (power_cables reads those), which it used to fetch and drop."""
    server = FakeNautobot()
    lab = desired_objects(stack_layout("lab"))
    sync(server, lab, apply=True)
    reads: list[tuple[str, list[str]]] = []
    plain = server.list

    def record(endpoint, **params):
        objs = plain(endpoint, **params)
        reads.append((endpoint, [o["id"] for o in objs]))
        return objs

    server.list = record
    assert sync(server, lab, apply=True).total == 0
    times = Counter(i for _, got in reads for i in got)
    twice = {endpoint for endpoint, got in reads for i in got if times[i] > 1}
    assert not twice, f"read more than once: {twice}"
    assert len(server.db["dcim/cables/"]) == len(lab.cables) + len(lab.power.cables)


def test_pages_after_the_first_are_read_concurrently_in_order():
    import threading
    import time
    active, peak = [0], [0]
    lock = threading.Lock()

    def handler(request: httpx.Request) -> httpx.Response:
        offset = int(request.url.params["offset"])
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.05)
        with lock:
            active[0] -= 1
        nxt = "more" if offset + 10 < 45 else None
        return httpx.Response(200, json={"count": 45, "next": nxt,
                                         "results": [{"id": str(i)} for i in range(offset, min(offset + 10, 45))]})

    client = Nautobot("http://nb.example", "tok", page=10, workers=4)
    client._http = httpx.Client(base_url="http://nb.example/api/", transport=httpx.MockTransport(handler))
    assert [o["id"] for o in client.list("dcim/interfaces/")] == [str(i) for i in range(45)]
    assert client.requests == 5 and peak[0] > 1


def test_outlets_are_counted_and_read_only_when_some_are_missing(published):
    """A PDU's outlets come from its type's templates: a republish counts them (one object on the
    wire) instead of reading thousands; one deleted by hand makes the count short, and publish
    reads them and puts it back."""
    server, _ = published
    lab = desired_objects(stack_layout("lab"))
    reads = []
    plain = server.list

    def record(endpoint, **params):
        reads.append(endpoint)
        return plain(endpoint, **params)

    server.list = record
    assert sync(server, lab, apply=True).total == 0
    assert "dcim/power-outlets/" not in reads
    outlet = server.find("dcim/power-outlets/", name="outlet7")[0]
    del server.db["dcim/power-outlets/"][outlet["id"]]
    report = sync(server, lab, apply=True)
    assert [c.action for c in report.changes["power_outlets"]] == ["create"]
    assert sync(server, lab, apply=True).total == 0


def test_concurrent_writes_split_a_small_type_over_all_workers():
    sizes = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sizes.append(len(body))
        return httpx.Response(201, json=[{**o, "id": "x"} for o in body])

    client = Nautobot("http://nb.example", "tok", chunk=250, workers=4)
    client._http = httpx.Client(base_url="http://nb.example/api/", transport=httpx.MockTransport(handler))
    assert len(client.create("dcim/interfaces/", [{"name": f"e{i}"} for i in range(300)], parallel=True)) == 300
    assert sorted(sizes) == [75, 75, 75, 75], "300 objects, 4 workers: 4 requests, not 250 + 50"
    sizes.clear()
    client.create("dcim/interfaces/", [{"name": f"e{i}"} for i in range(2000)], parallel=True)
    assert max(sizes) == 250 and len(sizes) == 8


@pytest.mark.parametrize("method", ["PATCH", "DELETE"])
def test_updates_and_deletes_of_independent_objects_go_concurrently(method):
    """A re-plan that changes thousands of interfaces or addresses is as many bulk PATCHes (and a
    prune as many DELETEs) as a first publish has POSTs: they too go `workers` at a time. The server
    answers only when 4 requests are in flight at once (a barrier): sent one by one, they fail."""
    together = threading.Barrier(4, timeout=5)

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.method == method
        try:
            together.wait()
        except threading.BrokenBarrierError:
            return httpx.Response(503, text="requests came one at a time")
        return httpx.Response(200, json=json.loads(request.content))

    client = Nautobot("http://nb.example", "tok", chunk=250, workers=4)
    client._http = httpx.Client(base_url="http://nb.example/api/", transport=httpx.MockTransport(handler))
    objects = [{"id": f"i{i}", "description": "x"} for i in range(1000)]
    if method == "PATCH":
        assert len(client.update("dcim/interfaces/", objects, parallel=True)) == 1000
    else:
        client.delete("dcim/interfaces/", [o["id"] for o in objects], parallel=True)
    assert client.requests == 4


# ---- paged reads over an unstable order (the roce-1k republish bug) -----------------------------

def paging_server(objects_of, honour_sort: bool = True):
    """A REST handler that pages like Nautobot's LimitOffsetPagination over a queryset with no
    unique order (IP-address-to-interface has none): each LIMIT/OFFSET query may come back in
    another order, so unsorted pages overlap and miss objects. `sort=id` gives a stable order
    unless `honour_sort` is off (a server that ignores it)."""
    def handler(request: httpx.Request) -> httpx.Response:
        params = dict(request.url.params)
        limit, offset = int(params.pop("limit", 1000)), int(params.pop("offset", 0))
        sort = params.pop("sort", None)
        objs = list(objects_of(request.url.path.removeprefix("/api/"), params))
        if sort == "id" and honour_sort:
            objs.sort(key=lambda o: o["id"])
        else:
            random.Random(f"{offset}:{limit}").shuffle(objs)  # the query plan, and so the order, differs per page
        more = offset + limit < len(objs)
        return httpx.Response(200, json={"count": len(objs), "next": "more" if more else None,
                                         "results": objs[offset:offset + limit]})
    return handler


def paged_client(handler, **kw) -> Nautobot:
    client = Nautobot("http://nb.example", "tok", **kw)
    client._http = httpx.Client(base_url="http://nb.example/api/", transport=httpx.MockTransport(handler))
    return client


@pytest.mark.parametrize("workers", [1, 4])
def test_paged_reads_are_complete_and_distinct_when_the_server_order_is_unstable(workers):
    held = [{"id": f"{i:04d}"} for i in range(95)]
    client = paged_client(paging_server(lambda endpoint, params: held), page=20, workers=workers)
    ids = [o["id"] for o in client.list("ipam/ip-address-to-interface/", exclude_m2m="true")]
    assert sorted(ids) == [o["id"] for o in held], "every object once: none repeated, none missed"
    assert client.requests == 5


def test_a_read_with_fewer_objects_than_counted_fails_loudly():
    """A server that ignores sort=id still pages over an unstable order: publish must stop rather
    than take the unseen objects for missing ones and post them again."""
    held = [{"id": f"{i:04d}"} for i in range(95)]
    client = paged_client(paging_server(lambda endpoint, params: held, honour_sort=False), page=20, workers=4)
    with pytest.raises(NautobotError, match=r"GET ipam/ip-address-to-interface/: read \d+ distinct objects of the 95"):
        client.list("ipam/ip-address-to-interface/")


def rest_front(server: FakeNautobot, honour_sort: bool = True):
    """FakeNautobot behind HTTP, paged like Nautobot (unstable order, see paging_server), so the
    real client's paging is in the loop; an IP already on an interface is refused as Nautobot does."""
    pages = paging_server(lambda endpoint, params: server.list(endpoint, **params), honour_sort)
    # the client's workers call this from several threads: one request at a time, as a database
    # transaction would see it (the fake's dicts are not safe to read while another thread writes)
    one_at_a_time = threading.Lock()

    def handler(request: httpx.Request) -> httpx.Response:
        with one_at_a_time:
            return serve(request)

    def serve(request: httpx.Request) -> httpx.Response:
        endpoint = request.url.path.removeprefix("/api/")
        if request.method == "GET":
            return pages(request)
        body = json.loads(request.content)
        if request.method == "POST":
            if endpoint == "ipam/ip-address-to-interface/":
                held = {(a["ip_address"], a["interface"]) for a in server.db.get(endpoint, {}).values()}
                if any((a["ip_address"], a["interface"]) in held for a in body):
                    return httpx.Response(400, json=[{"non_field_errors": [
                        "The fields interface, ip_address must make a unique set."]}])
            return httpx.Response(201, json=server.create(endpoint, body))
        if request.method == "PATCH":
            return httpx.Response(200, json=server.update(endpoint, body))
        server.delete(endpoint, [o["id"] for o in body])
        return httpx.Response(204)
    return handler


def test_republish_over_many_pages_changes_nothing():
    """The lab pod read back in pages of 20 (hundreds of interfaces, addresses and assignments over
    many pages, pages read concurrently): the republish writes nothing. Before reads sorted by id,
    assignments unseen in overlapping pages were posted again and Nautobot refused them (HTTP 400)."""
    server = FakeNautobot()
    lab = desired_objects(stack_layout("lab"))
    with paged_client(rest_front(server), page=20, workers=4) as client:
        sync(client, lab, apply=True)
        assert len(server.db["ipam/ip-address-to-interface/"]) == lab.counts["ip_assignments"] > 20
        server.writes.clear()
        report = sync(client, lab, apply=True)
    assert report.total == 0 and server.writes == [], report.counts()


def test_writes_ask_for_answers_without_many_to_many_fields():
    """Bulk POSTs and PATCHes carry exclude_m2m: Nautobot still writes the tags sent, but does not read
    back and render every object's tags (or an interface's addresses) for an answer of which the
    publisher uses only the ids. Reads keep the choice per type (tags are compared on some)."""
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, dict(request.url.params)))
        return httpx.Response(201 if request.method == "POST" else 200,
                              json=[{**o, "id": o.get("id", "x")} for o in json.loads(request.content)])

    client = paged_client(handler, chunk=2)
    client.create("dcim/interfaces/", [{"name": f"e{i}", "tags": ["t"]} for i in range(3)])
    client.update("dcim/interfaces/", [{"id": "x", "tags": ["t"]}])
    assert [m for m, _ in seen] == ["POST", "POST", "PATCH"]
    assert all(params.get("exclude_m2m") == "true" for _, params in seen)
