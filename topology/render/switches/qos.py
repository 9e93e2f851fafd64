"""Lossless RoCE values for the switches: the same numbers as the hosts' roles/roce_qos defaults
(tests/test_switches.py holds the two together), plus the switch-only ECN and watchdog figures."""

from __future__ import annotations

from dataclasses import replace

from topology.render.switches.intent import Qos

# Host side (roles/roce_qos/defaults/main.yml): trust DSCP, RoCE DSCP 26 -> priority 3 with PFC
# and ECN, CNP DSCP 48 -> priority 6 (strict on NVIDIA's default ETS).
ROCE_DSCP = 26
CNP_DSCP = 48
ROCE_QOS = Qos(
    trust="dscp",
    dscp_to_tc=((ROCE_DSCP, 3), (CNP_DSCP, 6)),
    pfc_priorities=(3,),
    ecn_traffic_classes=(3,),
    cnp_dscp=CNP_DSCP,
    # NVIDIA's RoCE lossless defaults on Spectrum: ECN marking from 150 KB to 1.5 MB of queue.
    ecn_min_bytes=150_000,
    ecn_max_bytes=1_500_000,
    ecn_probability=100,
    # PFC watchdog: a queue paused this long is a storm; drop its traffic, restore after.
    pfcwd_detection_ms=200,
    pfcwd_restoration_ms=400,
    pfcwd_action="drop",
)

# ECN only (storage_fabric.qos: ecn): the same classes and marking, no PFC and so no watchdog
ECN_QOS = replace(ROCE_QOS, pfc_priorities=())
STORAGE_QOS = {"lossless": ROCE_QOS, "ecn": ECN_QOS, "none": None}  # storage_fabric.qos
