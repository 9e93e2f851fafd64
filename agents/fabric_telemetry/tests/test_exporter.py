"""Counters from the recorded ConnectX-7 outputs, rates across two scrapes, layout labels."""

from __future__ import annotations

import pytest
from fabric_telemetry.counters import COUNTERS, parse_ethtool, rate_name

from .conftest import RECORDINGS, find, scrape, write_phase

RAIL3 = {"node": "su01-node01", "su": "su01", "kind": "rail", "netdev": "enp3np0", "hca": "mlx5_5", "rail": "3",
         "gpu": "3", "leaf": "su01-leaf-rail3", "leaf_port": "swp1"}


def test_every_catalogued_counter_is_in_the_recordings():
    """The recordings hold every name the catalogue reads (a typo in either would show here)."""
    eth = parse_ethtool((RECORDINGS / "ethtool_t0.txt").read_text())
    assert len(eth) == 900
    sysfs = {src: {ln.split()[0] for ln in (RECORDINGS / f"{src}_t0.txt").read_text().splitlines()}
             for src in ("hw_counters", "counters")}
    sysfs["net"] = {"carrier_changes"}
    for c in COUNTERS:
        names = eth if c.source == "ethtool" else sysfs[c.source]
        assert any(c.pattern.fullmatch(n) for n in names), c.pattern.pattern


def test_totals_with_layout_labels_and_units(node):
    _, _, _, registry = node
    s = scrape(registry)
    # rx_prio3_pause_duration 8123456 us; tx_prio3_pause 33100; port_rcv_data in 4-octet words
    assert find(s, "superpod_fabric_pause_duration_seconds_total", direction="rx", priority="3", **RAIL3) == [
        pytest.approx(8.123456)]
    assert find(s, "superpod_fabric_pause_frames_total", direction="tx", priority="3", **RAIL3) == [33100]
    assert find(s, "superpod_fabric_ecn_marked_packets_total", traffic="roce", **RAIL3) == [40377]
    assert find(s, "superpod_fabric_ecn_marked_packets_total", traffic="ip", **RAIL3) == [12]
    assert find(s, "superpod_fabric_cnp_sent_total", **RAIL3) == [40210]
    assert find(s, "superpod_fabric_cnp_handled_total", **RAIL3) == [39880]
    assert find(s, "superpod_fabric_out_of_sequence_total", **RAIL3) == [1]
    assert find(s, "superpod_fabric_link_down_events_total", **RAIL3) == [2]
    assert find(s, "superpod_fabric_port_bytes_total", direction="rx", **RAIL3) == [2_469_135_802_746 * 4]
    assert find(s, "superpod_fabric_link_speed_bits_per_second", **RAIL3) == [400e9]
    assert find(s, "superpod_fabric_link_planned_speed_bits_per_second", **RAIL3) == [400e9]
    assert find(s, "superpod_fabric_link_up", **RAIL3) == [1]
    assert find(s, "superpod_fabric_rdma_port_active", **RAIL3) == [1]
    storage = find(s, "superpod_fabric_link_speed_bits_per_second", kind="storage", rail="", leaf="")
    assert storage == [200e9, 200e9]
    assert len(find(s, "superpod_fabric_nic_present")) == 10
    assert set(find(s, "superpod_fabric_source_up")) == {1.0}
    assert not find(s, "superpod_fabric_pause_frames_per_second")  # no rate before a second scrape


def test_rates_across_two_scrapes(node):
    root, cfg, clock, registry = node
    scrape(registry)
    write_phase(root, cfg, "t1")
    clock.t += 10
    s = scrape(registry)
    # recordings: +6 s of pause in 10 s, +48000 pauses received, +1000 sent, +5000 CNPs, +10 out-of-sequence
    assert find(s, "superpod_fabric_pause_duration_ratio", direction="rx", priority="3", **RAIL3) == [
        pytest.approx(0.6)]
    assert find(s, "superpod_fabric_pause_duration_ratio", direction="rx", priority="0", **RAIL3) == [0]
    assert find(s, "superpod_fabric_pause_frames_per_second", direction="rx", priority="3", **RAIL3) == [4800]
    assert find(s, "superpod_fabric_pause_frames_per_second", direction="tx", priority="3", **RAIL3) == [100]
    assert find(s, "superpod_fabric_cnp_sent_per_second", **RAIL3) == [500]
    assert find(s, "superpod_fabric_ecn_marked_packets_per_second", traffic="roce", **RAIL3) == [510]
    assert find(s, "superpod_fabric_out_of_sequence_per_second", **RAIL3) == [1]
    assert find(s, "superpod_fabric_discards_per_second", direction="rx", **RAIL3) == [2]
    assert find(s, "superpod_fabric_link_down_events_per_second", **RAIL3) == [pytest.approx(0.1)]
    assert find(s, "superpod_fabric_port_bytes_per_second", direction="rx", **RAIL3) == [2e8]
    assert find(s, "superpod_fabric_pause_storm_events_per_second", level="warning", **RAIL3) == [
        pytest.approx(0.1)]


def test_counter_reset_rate_counts_from_zero(node):
    root, cfg, clock, registry = node
    write_phase(root, cfg, "t1")
    scrape(registry)
    write_phase(root, cfg, "t0")  # the driver reloaded: every counter went back
    clock.t += 10
    s = scrape(registry)
    assert find(s, "superpod_fabric_cnp_sent_per_second", **RAIL3) == [4021]
    assert min(find(s, "superpod_fabric_pause_frames_per_second")) >= 0


def test_missing_nic_and_link_down(node, tmp_path):
    root, cfg, clock, registry = node
    write_phase(root, cfg, "t0", down=("enp5np0",))
    import shutil
    shutil.rmtree(root / "sys" / "class" / "net" / "enp7np0")
    shutil.rmtree(root / "sys" / "class" / "infiniband" / "mlx5_11")
    (root / "ethtool" / "enp7np0").unlink()
    s = scrape(registry)
    assert find(s, "superpod_fabric_link_up", netdev="enp5np0") == [0]
    assert find(s, "superpod_fabric_rdma_port_active", netdev="enp5np0") == [0]
    assert find(s, "superpod_fabric_link_speed_bits_per_second", netdev="enp5np0") == []  # speed -1: unknown
    assert find(s, "superpod_fabric_nic_present", netdev="enp7np0") == [0]
    assert find(s, "superpod_fabric_source_up", netdev="enp7np0", source="ethtool") == [0]
    assert find(s, "superpod_fabric_source_up", netdev="enp7np0", source="hw_counters") == [0]
    assert find(s, "superpod_fabric_pause_frames_total", netdev="enp7np0") == []
    assert find(s, "superpod_fabric_nic_present", netdev="enp6np0") == [1]


def test_rate_names():
    assert rate_name("pause_frames_total") == "pause_frames_per_second"
    assert rate_name("pause_duration_seconds_total") == "pause_duration_ratio"


def test_idle_priorities_are_left_out_and_a_fixed_list_wins(node, tmp_path):
    from fabric_telemetry.collector import make_registry

    from .conftest import node_config

    _, _, _, registry = node
    s = scrape(registry)
    # the recordings carry traffic on priorities 0 (TCP) and 3 (RoCE) only
    assert {dict(lab)["priority"] for (n, lab) in s if n == "superpod_fabric_pause_frames_total"} == {"0", "3"}
    fixed, _ = make_registry(node_config(tmp_path, priorities=[3, 6]))
    s = scrape(fixed)
    assert {dict(lab)["priority"] for (n, lab) in s if n == "superpod_fabric_pause_frames_total"} == {"3", "6"}


def test_bad_config_exits_2_naming_the_field(tmp_path, capsys):
    from fabric_telemetry.cli import main

    bad = tmp_path / "exporter.yml"
    bad.write_text("node: n1\nnics:\n  - {netdev: enp1np0, kind: rail}\npriorities: [9]\n")
    assert main(["check-config", "-c", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "error: nics.0: Value error, nic enp1np0: a rail NIC needs its rail index" in err
    assert "error: priorities: Value error, priorities are 0-7" in err


def test_scrape_command_prints_rates(tmp_path, capsys):
    import yaml
    from fabric_telemetry.cli import main

    from .conftest import node_config

    cfg = node_config(tmp_path)
    write_phase(tmp_path, cfg, "t0")
    path = tmp_path / "exporter.yml"
    path.write_text(yaml.safe_dump(cfg.model_dump()))
    assert main(["check-config", "-c", str(path)]) == 0
    assert "ok: su01-node01: 8 rail NICs, 2 storage NICs" in capsys.readouterr().out
    assert main(["scrape", "-c", str(path), "--interval", "0.05"]) == 0
    out = capsys.readouterr().out
    assert 'superpod_fabric_cnp_sent_per_second{gpu="3",hca="mlx5_5"' in out  # second read: rates
    assert "superpod_fabric_exporter_info{" in out
