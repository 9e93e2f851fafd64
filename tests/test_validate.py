"""`superpod validate`: the comparison, the parsers and the command, on discovery data derived
from the plan and perturbed (swap, remove, add, wrong speed), and on recorded ibnetdiscover output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests import validate_records as rec
from tests.conftest import stack_layout
from topology.cli import app
from topology.operate.lldp_json import mau_speed_gbps, parse_lldpctl
from topology.operate.neighbors import cable_ids
from topology.operate.validate import validate

RECORDINGS = Path(__file__).resolve().parents[1] / "testdata" / "validate"
runner = CliRunner()


@pytest.fixture(scope="module")
def lab_plan(tmp_path_factory) -> Path:
    return rec.write_plan(stack_layout("lab"), tmp_path_factory.mktemp("plan"))


@pytest.fixture
def ports():
    return rec.ends(stack_layout("lab"))


def run(plan: Path, folder: Path, *extra: str):
    return runner.invoke(app, ["validate", "--stack", "lab", "--plan-dir", str(plan), "--from", str(folder), *extra])


def report(plan: Path, folder: Path, *extra: str) -> tuple[int, dict]:
    r = run(plan, folder, "--json", *extra)
    assert r.exit_code in (0, 1), r.output
    return r.exit_code, json.loads(r.stdout)


def label(plan: Path, device: str, port: str) -> str:
    """The cable ID labels.csv prints for the planned cable at (device, port)."""
    (cable_id,) = {i for (a, b), i in cable_ids(plan).items() if (device, port) in (a, b)}
    return cable_id


def kinds(doc: dict) -> list[str]:
    return sorted(f["kind"] for f in doc["findings"])


def test_all_correct_exits_0(lab_plan, ports, tmp_path):
    folder = rec.write_docs(rec.lldpctl_docs(ports), tmp_path)
    code, doc = report(lab_plan, folder)
    assert code == 0
    assert doc["findings"] == [] and doc["not_heard"] == [] and doc["work_list"] == []
    assert doc["counts"]["correct"] == len({tuple(sorted((p, f))) for p, (f, _) in ports.items()})
    text = run(lab_plan, folder)
    assert text.exit_code == 0 and "all planned cables are where the plan says" in text.output


def test_rails_swapped_at_the_node_is_one_swap_with_one_task(lab_plan, ports, tmp_path):
    rec.swap_far_ends(ports, ("su01-node01", "enp79s0np0"), ("su01-node01", "enp94s0np0"))
    code, doc = report(lab_plan, rec.write_docs(rec.lldpctl_docs(ports), tmp_path))
    assert code == 1
    assert kinds(doc) == ["swap"]
    (swap,) = doc["findings"]
    assert {swap["planned"]["b_device"], swap["other"]["b_device"]} == {"su01-leaf-rail2", "su01-leaf-rail3"}
    assert doc["work_list"] == [{
        "rack": "rack-a02", "device": "su01-node01", "port": "enp79s0np0",
        "action": "swap with enp94s0np0 (swapped pair: enp79s0np0 goes to su01-leaf-rail2 swp1, "
                  "enp94s0np0 to su01-leaf-rail3 swp1)",
        "cable_id": f"{label(lab_plan, 'su01-node01', 'enp79s0np0')}, {label(lab_plan, 'su01-node01', 'enp94s0np0')}"}]


def test_leaf_ports_swapped_is_a_swap_at_the_leaf(lab_plan, ports, tmp_path):
    rec.swap_far_ends(ports, ("su01-leaf-rail3", "swp1"), ("su01-leaf-rail3", "swp2"))
    code, doc = report(lab_plan, rec.write_docs(rec.lldpctl_docs(ports), tmp_path))
    assert code == 1 and kinds(doc) == ["swap"]
    (task,) = doc["work_list"]
    assert (task["rack"], task["device"], task["port"]) == ("rack-a01", "su01-leaf-rail3", "swp1")
    assert task["action"].startswith("swap with swp2")


def test_cable_one_port_off_says_where_to_move_it(lab_plan, ports, tmp_path):
    rec.remove(ports, ("su01-node04", "enp94s0np0"))
    rec.add(ports, ("su01-node04", "enp94s0np0"), ("su01-leaf-rail3", "swp5"), 400)
    code, doc = report(lab_plan, rec.write_docs(rec.lldpctl_docs(ports), tmp_path))
    assert code == 1 and kinds(doc) == ["miswired"]
    (task,) = doc["work_list"]
    assert (task["rack"], task["device"], task["port"]) == ("rack-a01", "su01-leaf-rail3", "swp5")
    assert task["action"].startswith("move to swp4")
    assert doc["findings"][0]["detail"] == "su01-node04 enp94s0np0 reaches su01-leaf-rail3 swp5 instead of " \
                                           "su01-leaf-rail3 swp4"
    human = run(lab_plan, tmp_path)
    assert "rack-a01, su01-leaf-rail3 swp5: move to swp4" in human.output


def test_missing_unplanned_and_wrong_speed_are_named(lab_plan, ports, tmp_path):
    rec.remove(ports, ("su01-node02", "enp24s0np0"))
    rec.add(ports, ("su01-leaf-rail0", "swp40"), ("su01-leaf-rail1", "swp40"), 400)
    far, _ = ports[("su01-node03", "enp220s0np0")]
    ports[("su01-node03", "enp220s0np0")] = (far, 200)
    ports[far] = (("su01-node03", "enp220s0np0"), 200)
    code, doc = report(lab_plan, rec.write_docs(rec.lldpctl_docs(ports), tmp_path))
    assert code == 1
    assert kinds(doc) == ["missing", "unplanned", "wrong_speed"]
    by = {f["kind"]: f for f in doc["findings"]}
    assert (by["missing"]["planned"]["a_device"], by["missing"]["planned"]["a_port"]) == ("su01-node02", "enp24s0np0")
    assert by["unplanned"]["found"] == [{"a_device": "su01-leaf-rail0", "a_port": "swp40",
                                         "b_device": "su01-leaf-rail1", "b_port": "swp40"}]
    assert by["wrong_speed"]["speed_gbps"] == 200 and by["wrong_speed"]["planned"]["speed_gbps"] == 400
    actions = {(t["device"], t["port"]): t["action"] for t in doc["work_list"]}
    assert actions[("su01-node02", "enp24s0np0")].startswith("connect to su01-leaf-rail0 swp2")
    assert actions[("su01-leaf-rail0", "swp40")] == "remove the cable to su01-leaf-rail1 swp40 (not in the plan)"
    assert "runs at 200G, planned 400G" in actions[("su01-node03", "enp220s0np0")]


def test_port_facts_give_speed_and_down_state(lab_plan, ports, tmp_path):
    rec.remove(ports, ("su01-node01", "enp24s0np0"))
    folder = rec.write_docs(rec.lldpctl_docs(ports), tmp_path)
    (folder / "su01-node01.ports.json").write_text(json.dumps({
        "enp24s0np0": {"up": False, "speed_mbps": -1}, "enp64s0np0": {"up": True, "speed_mbps": 100000}}))
    code, doc = report(lab_plan, folder)
    by = {f["kind"]: f for f in doc["findings"]}
    assert kinds(doc) == ["missing", "wrong_speed"]
    assert by["missing"]["detail"] == "su01-node01 enp24s0np0 is down"
    assert by["wrong_speed"]["speed_gbps"] == 100
    # a lab's veth says 10 Gb/s, and lldpd advertises what ethtool says: no speed check on it
    (folder / "su01-node01.ports.json").write_text(json.dumps({
        "enp64s0np0": {"up": True, "speed_mbps": 10000, "kind": "veth"}}))
    far, _ = ports[("su01-node01", "enp64s0np0")]
    ports[far] = (("su01-node01", "enp64s0np0"), 10)
    rec.write_docs(rec.lldpctl_docs(ports), folder)
    code, doc = report(lab_plan, folder)
    assert kinds(doc) == ["missing"]


def test_a_silent_switch_is_not_heard_from_with_one_task(lab_plan, ports, tmp_path):
    for p in [p for p in ports if p[0] == "su01-leaf-rail5" or ports[p][0][0] == "su01-leaf-rail5"]:
        ports.pop(p)
    code, doc = report(lab_plan, rec.write_docs(rec.lldpctl_docs(ports), tmp_path))
    assert code == 1 and doc["not_heard"] == ["su01-leaf-rail5"]
    assert kinds(doc) == ["missing"] * 8  # seen missing from the nodes' and the spine's side
    assert [t["device"] for t in doc["work_list"]] == ["su01-leaf-rail5"]


def test_devices_and_fabric_narrow_the_check(lab_plan, ports, tmp_path):
    nodes_and_rails = {p: v for p, v in ports.items()
                       if p[0].startswith(("su01-node", "su01-leaf-rail")) and v[0][0].startswith(("su01-node",
                                                                                                   "su01-leaf-rail"))}
    folder = rec.write_docs(rec.lldpctl_docs(nodes_and_rails), tmp_path)
    code, doc = report(lab_plan, folder, "--fabric", "compute", "--devices", "su01-node*,su01-leaf-rail*")
    assert code == 0 and doc["counts"]["correct"] == 32
    code, doc = report(lab_plan, folder)
    assert code == 1 and "spine-01" in doc["not_heard"]


def test_json0_and_bare_chassis_shapes():
    doc = {"lldp": [{"interface": [
        {"name": "enp24s0np0", "via": "LLDP", "chassis": [{"id": [{"type": "mac", "value": "aa:bb"}],
                                                             "name": [{"value": "su01-leaf-rail0"}]}],
         "port": [{"id": [{"type": "ifname", "value": "swp1"}], "descr": [{"value": "swp1"}],
                   "auto-negotiation": [{"current": [{"value": "400GbaseCR8 - 400GBASE-R PCS"}]}]}]},
        {"name": "eth9", "via": "LLDP", "chassis": [{"id": [{"type": "mac", "value": "aa:cc"}]}],
         "port": [{"id": [{"type": "mac", "value": "aa:cc"}]}]},
    ]}]}
    (nb,) = parse_lldpctl(doc, "su01-node01")
    assert (nb.local, nb.remote, nb.speed_gbps) == (("su01-node01", "enp24s0np0"), ("su01-leaf-rail0", "swp1"), 400)
    bare = {"lldp": {"interface": {"eth0": {"chassis": {"id": {"type": "mac", "value": "aa"}},
                                             "port": {"id": {"type": "mac", "value": "aa"}}}}}}
    assert parse_lldpctl(bare, "x") == []
    assert parse_lldpctl({"lldp": {}}, "x") == []
    assert (mau_speed_gbps("10GigBaseR"), mau_speed_gbps("1000BaseTFD"), mau_speed_gbps("unknown")) == (10, 1, None)


def test_bad_input_exits_2_naming_the_file(lab_plan, tmp_path):
    (tmp_path / "su01-node01.json").write_text("{not json")
    r = run(lab_plan, tmp_path)
    assert r.exit_code == 2 and "error: su01-node01.json: not valid JSON" in r.output
    (tmp_path / "su01-node01.json").write_text('{"neighbors": []}')
    r = run(lab_plan, tmp_path)
    assert r.exit_code == 2 and "no top-level 'lldp' key" in r.output
    r = run(tmp_path / "nowhere", tmp_path)
    assert r.exit_code == 2 and "run `superpod plan` for this stack first" in r.output
    r = run(lab_plan, tmp_path / "nowhere")
    assert r.exit_code == 2 and "error: --from: no such folder" in r.output


# ---- InfiniBand: recorded ibnetdiscover output ---------------------------------------------------
IB_SCOPE = (("compute",), ("su01-node0[1-4]", "su01-leaf-rail*", "ufm-0[12]"))


@pytest.fixture(scope="module")
def ib_plan(tmp_path_factory) -> Path:
    return rec.write_plan(stack_layout("dgx-h100-ib"), tmp_path_factory.mktemp("ibplan"))


def ib_folder(tmp_path: Path, name: str) -> Path:
    (tmp_path / "ib").mkdir()
    shutil.copy(RECORDINGS / name, tmp_path / "ib" / name)
    return tmp_path / "ib"


def test_healthy_ib_fabric_is_all_correct(ib_plan, tmp_path):
    result, tasks, _ = validate(ib_plan, ib_folder(tmp_path, "healthy.ibnetdiscover"), *IB_SCOPE)
    assert result.all_correct and tasks == []
    assert len(result.of("correct")) == 4 * 8 + 4  # node rails and the UFM pair's four links


def test_miswired_ib_fabric_names_each_fault(ib_plan, tmp_path):
    result, tasks, _ = validate(ib_plan, ib_folder(tmp_path, "miswired.ibnetdiscover"), *IB_SCOPE)
    (swap,) = result.of("swap")
    assert {swap.planned.a, swap.other.a} == {("su01-node02", "ibp79s0"), ("su01-node02", "ibp94s0")}
    (missing,) = result.of("missing")
    assert missing.planned.a == ("su01-node03", "ibp24s0")
    (mis,) = result.of("miswired")
    assert mis.planned.b == ("su01-leaf-rail7", "1/2/2") and mis.found == (
        (("su01-leaf-rail7", "1/3/1"), ("su01-node04", "ibp220s0")),)
    (slow,) = result.of("wrong_speed")
    assert slow.planned.a == ("su01-node04", "ibp206s0") and slow.speed_gbps == 200
    assert result.of("unplanned") == [] and result.not_heard == []
    lines = [t.line() for t in tasks]
    assert ("rack-a01, su01-leaf-rail7 1/3/1: move to 1/2/2 (its other end is su01-node04 ibp220s0)"
            f" [cable {label(ib_plan, 'su01-leaf-rail7', '1/2/2')}]") in lines
    assert any(x.startswith("rack-a02, su01-node02 ibp79s0: swap with ibp94s0") for x in lines), lines
    assert len(lines) == 4


@pytest.mark.parametrize("name", ["lldpctl-node-veth.json", "lldpctl-node-veth.json0"])
def test_recorded_lldpd_output(name):
    """`lldpctl -f json` / `-f json0` as lldpd 1.0.16 printed them in roles/lldp's molecule scenario
    (a node's enp24s0np0 cabled to a leaf's swp1 by a veth pair, which reports 10GBASE-T)."""
    (nb,) = parse_lldpctl(json.loads((RECORDINGS / name).read_text()), "lldp-node01", name)
    assert (nb.local, nb.remote, nb.speed_gbps) == (("lldp-node01", "enp24s0np0"), ("lldp-leaf-rail0", "swp1"), 10)


def test_a_correct_pod_with_its_border_uplinks_passes_in_every_scope(lab_plan, ports, tmp_path):
    # The site's routers answer under the site's own names; no fabric scope makes them unplanned.
    folder = rec.write_docs(rec.lldpctl_docs(ports), tmp_path)
    for scope in ((), ("--fabric", "compute"), ("--fabric", "inband")):
        code, doc = report(lab_plan, folder, *scope)
        assert code == 0 and doc["all_correct"], (scope, doc["findings"], doc["work_list"])
        assert not any("remove the cable" in t["action"] for t in doc["work_list"])


def test_an_unplugged_border_uplink_is_missing_with_its_label(lab_plan, ports, tmp_path):
    layout = stack_layout("lab")
    border = layout.border_links[0]
    del ports[(border.a_device, border.a_port)]
    code, doc = report(lab_plan, rec.write_docs(rec.lldpctl_docs(ports), tmp_path))
    assert code == 1 and kinds(doc) == ["missing"]
    (task,) = doc["work_list"]
    assert (task["device"], task["port"]) == (border.a_device, border.a_port)
    assert task["cable_id"] == label(lab_plan, border.a_device, border.a_port) and task["cable_id"].startswith("BR-")
    assert doc["not_heard"] == []  # the site's routers are never polled: not "not heard from"
