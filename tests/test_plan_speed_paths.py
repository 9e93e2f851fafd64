"""The plan's fast paths give what the library calls they replace give (bench/bench_plan.py, issue 15 item 15)."""

from __future__ import annotations

import csv
import dataclasses
import io
import random
from pathlib import Path
from unittest import mock

import netaddr
import pytest
import yaml
from netaddr.strategy.ipv4 import int_to_str

from tests.conftest import STACKS, stack_layout
from topology import catalog
from topology.layout import ipv4
from topology.layout.cabling import CABLED_FIELDS
from topology.layout.model import Link
from topology.render import inventory
from topology.render.slurm_plan import slurm_plan
from topology.render.switches.nvue import _link_lines, _plain_or_quoted, _scalar
from topology.render.switches.sections import _all_bounds, _bounds, _spanning, address_key, network_key
from topology.render.tables import SLOT, GFormats, RowShape, csv_text, shaped_csv_pieces


def test_integer_spanning_prefix_is_netaddrs():
    """Aggregates span a switch's subnets with integers: the same prefix as netaddr.spanning_cidr,
    duplicates and overlapping subnets included."""
    rng = random.Random(15)
    for _ in range(3000):
        lengths = [20, 24, 28, 30, 31, 31, 32]
        nets = [str(netaddr.IPNetwork((0x64400000 + rng.randrange(1 << 14), rng.choice(lengths))).cidr)
                for _ in range(rng.randint(1, 6))]
        want = netaddr.IPNetwork(nets[0]).cidr if len(nets) == 1 else netaddr.spanning_cidr(nets)
        first, plen = _spanning([_bounds(n) for n in nets])
        assert f"{int_to_str(first)}/{plen}" == str(want), nets


def test_bounds_parsed_inline_are_bounds():
    """HostSpace parses the pod's host subnets inline: each one's bounds as _bounds gives them,
    an address without a length, a length written oddly and IPv6 among them."""
    rng = random.Random(17)
    nets = [str(netaddr.IPNetwork((rng.randrange(1 << 32), rng.choice([0, 8, 24, 31, 32])))) for _ in range(500)]
    nets += ["10.0.0.1", "10.0.0.0/032", "10.0.0.7/ 30", "fd00::/64", "2001:db8::1"]
    assert _all_bounds(nets) == {n: _bounds(n) for n in nets}


def test_uncached_scalars_and_link_lines_write_what_the_memo_writes():
    for v in ("leaf-01:swp1", "on", "it's", "100.64.0.1/31", 9216, True, "400G"):
        assert _plain_or_quoted(v) == _scalar(v)
    assert _link_lines("  ", 9216, 400) == "  link:\n    mtu: 9216\n    speed: 400G\n    state:\n      up: {}\n"


def test_integer_sort_keys_order_as_netaddr_does():
    """Switch configs sort subnets and pick router-ids with integer keys: netaddr's order."""
    rng = random.Random(16)
    nets = [str(netaddr.IPNetwork((rng.randrange(1 << 32), rng.choice([8, 16, 24, 31, 32]))).cidr) for _ in range(500)]
    nets += ["10.0.0.0/31", "10.0.0.0/24", "10.0.0.1", "fd00::/64", "fd00::/48", "2001:db8::1/128"]
    assert sorted(nets, key=network_key) == sorted(nets, key=netaddr.IPNetwork)
    addrs = [str(netaddr.IPAddress(rng.randrange(1 << 32))) for _ in range(500)] + ["fd00::1", "::ffff:0:1"]
    assert sorted(addrs, key=address_key) == sorted(addrs, key=netaddr.IPAddress)


def test_cabled_links_are_built_in_links_field_order():
    """cabling._with_cables passes a Link's fields positionally: a new or moved field must fail here."""
    assert tuple(f.name for f in dataclasses.fields(Link)) == CABLED_FIELDS


@pytest.mark.parametrize("name", STACKS)
def test_generated_vars_read_back_as_a_plain_yaml_dump(name):
    """00_generated.yml writes the monitoring and Slurm lists one flow mapping per item: YAML reads the same
    variables as from PyYAML's own dump of them."""
    layout = stack_layout(name)
    files = inventory.render_inventory(layout, Path("/inv"))
    text = files[Path("/inv/group_vars/all/00_generated.yml")]
    slurm = slurm_plan(layout)  # its lists too: a node line per rack
    slurm_items = len(slurm.controllers) + len(slurm.node_groups) + len(slurm.gres) + len(slurm.switches)
    monitoring_items = len(layout.racks) + sum(d.role in ("pdu", "cdu") for d in layout.devices)
    assert text.count("\n  - {") == monitoring_items + slurm_items
    with mock.patch.object(inventory, "_vars_yaml", inventory._yaml):
        plain = inventory.render_inventory(layout, Path("/inv"))[Path("/inv/group_vars/all/00_generated.yml")]
    assert yaml.safe_load(text) == yaml.safe_load(plain)



def test_csv_writes_what_the_csv_module_writes():
    """tables.csv_text joins plain blocks of rows itself: byte for byte the csv module's output, with
    quoting, None, lone empty fields, rows as iterators, and blocks before and after a quoted row."""
    rng = random.Random(17)
    plain = ["a", "leaf-01", "", 0, 7, 2.5, True, "None", "ünï", " sp ", "%s", "100%"]
    odd = [",", '"', "x,y", 'say "hi"', "line\nbreak", "cr\r", None]
    cases = [
        [tuple(rng.choice(plain) for _ in range(rng.randint(1, 5))) for _ in range(5000)],
        [tuple(rng.choice(plain + odd) for _ in range(rng.randint(0, 5))) for _ in range(3000)],
        [("a", "b")] * 4100 + [("x,y", "c")] + [("d", "e")] * 10,
        # one width (every table's): a block is written by one %-format
        [tuple(rng.choice(plain) for _ in range(3)) for _ in range(5000)],
        [tuple(rng.choice(plain + odd) for _ in range(4)) for _ in range(3000)],
        [("a", "b")] * 3000 + [("a", "b", "c")] + [("a",)],
        [("",), (None,), (), [1, "a"], (1, 2)],
        # fields with commas and nothing else to quote (NetBox's tag lists): quoted in place
        [tuple(rng.choice(plain + [",", "x,y", "superpod,su-01,rail-0", ",,"]) for _ in range(4)) for _ in range(3000)],
        [("a", "b,c", 1)] * 2100 + [("a", None, 1)],
        # a later block: commas in another column too, a quote, a line break or None where commas were
        [("a", "b,c", "d")] * 2048 + [("a,x", "b,c", "d")] * 10 + [("a", "b", "d")] * 5,
        [("a", "b,c")] * 2048 + [("a", 'q"b,c')] * 3,
        [("a", "b,c")] * 2048 + [("a", 'x"y')] * 3,
        [("a", "b,c")] * 2048 + [("a", "x\ny,z")] * 3,
        [("a", "b,c")] * 2048 + [("a", None), ("a", 2.5)],
        # every field a str (joined per row), then one that is not
        [tuple(rng.choice(["a", "", "None", "x y", "%s", "ünï"]) for _ in range(5)) for _ in range(2100)],
        [tuple(rng.choice(["a", "", "x,y", "a,b,c"]) for _ in range(3)) for _ in range(4100)] + [("a", 1, "b,c")] * 9,
        [("a", "b")] * 2048 + [("a", None)] + [("a", "x\ry")],
    ]
    for rows in cases:
        want = io.StringIO()
        writer = csv.writer(want, lineterminator="\n")
        writer.writerow(["h1", "h,2"])
        writer.writerows(rows)
        assert csv_text(["h1", "h,2"], iter([*rows[:-1], iter(rows[-1])])) == want.getvalue()  # a row as an iterator


def test_shaped_csv_writes_what_the_csv_module_writes():
    """tables.shaped_csv_pieces formats blocks of (RowShape, values) itself: byte for byte the csv
    module's output for the whole rows, with constants to quote or holding %, and values that are
    not str or need quoting (such a block goes to the csv writer)."""
    rng = random.Random(19)
    constants = ["a", "", "x,y", 'say "hi"', "100%", "%s", 0, 2.5, -0.0, None, "line\nbreak", "ünï"]
    shapes = [RowShape(*rng.sample([SLOT, SLOT, *rng.sample(constants, 3)], 5)) for _ in range(20)]
    shapes.append(RowShape(SLOT, SLOT))
    plain = ["leaf-01", "", "swp1", "None", "%d", "ünï"]
    odd = [",", '"', "cr\r", "lf\n", 7, None]
    for values_from in (plain, plain + odd):
        rows = [(s, tuple(rng.choice(values_from) for _ in range(s.fields.count(SLOT))))
                for s in rng.choices(shapes, k=5000)]
        rows += [(shapes[0], ("a", "b,c"))] + [(shapes[0], ("d", "e"))] * 10  # one block written by the writer
        want = io.StringIO()
        writer = csv.writer(want, lineterminator="\n")
        writer.writerow(["h1", "h,2"])
        writer.writerows(s.row(v) for s, v in rows)
        assert "".join(shaped_csv_pieces(["h1", "h,2"], iter(rows))) == want.getvalue()
    with pytest.raises(ValueError):
        RowShape(SLOT)


def test_ipv4_text_is_netaddrs():
    """Addresses are written from integers by topology.layout.ipv4 (a /24's head text kept): netaddr's text,
    and netaddr's refusal outside 32 bits."""
    rng = random.Random(18)
    values = [0, 1, 255, 256, 2**32 - 1, 0x64400000, *(rng.randrange(1 << 32) for _ in range(20000))]
    values += [0x0A000000 + rng.randrange(1 << 12) for _ in range(5000)]  # the same /24s again and again
    assert [ipv4.int_to_str(v) for v in values] == [int_to_str(v) for v in values]
    for bad in (-1, -256, 2**32, 2**40):
        with pytest.raises(ValueError):
            int_to_str(bad)
        with pytest.raises(ValueError):
            ipv4.int_to_str(bad)


def test_memoized_port_names_are_the_models_own():
    """SwitchModel.port keeps its answers: the same names as computed afresh, for every model and speed,
    asked in any order; the model still equals an unmemoized copy of itself."""
    for sw in catalog.load().switches.values():
        fresh = catalog.SwitchModel.model_validate(sw.model_dump())
        for speed in sw.lanes:
            indexes = list(range(sw.radix(speed)))
            random.Random(speed).shuffle(indexes)
            for i in indexes + indexes:
                assert sw.port(i, speed) == fresh._port(i, speed)
        assert sw == fresh
        for deep in (False, True):  # a copy names its ports from its own fields, not its original's memo
            renamed = sw.model_copy(update={"port_name": "xe{cage}-{sub}"}, deep=deep)
            speed = next(iter(sw.lanes))
            assert renamed.port(0, speed) == renamed._port(0, speed) != sw.port(0, speed)
            assert sw.model_copy(deep=deep) == sw


def test_a_port_used_twice_is_still_named():
    """check_ports counts the ends in C; a repeated end is still refused, the first one named."""
    from topology.layout.build import check_ports

    links = [Link("n1", "p1", "s1", "swp1", "compute", "node-leaf", 400),
             Link("n2", "p1", "s1", "swp2", "compute", "node-leaf", 400)]
    check_ports(links)
    with pytest.raises(AssertionError, match="port used twice: s1 swp2"):
        check_ports([*links, Link("n3", "p1", "s1", "swp2", "compute", "node-leaf", 400),
                     Link("n1", "p1", "s9", "swp9", "compute", "node-leaf", 400)])


def test_memoized_g_format_is_the_format():
    """GFormats gives f"{x:g}" for every number, whichever of equal keys (0.0 and -0.0, 1 and 1.0
    and True) came first."""
    values = [0.0, -0.0, 0, -0.0, 1, 1.0, True, 0.5, 2.5, 1e7, 10**7, 3.0000001, float("nan"), float("inf"),
              -1.5, -0.0, 0.0]
    for order in (values, values[::-1]):
        g = GFormats()
        assert [g[x] for x in order] == [f"{x:g}" for x in order]
