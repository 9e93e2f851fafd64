"""InfiniBand fabrics: switches take no IP config; the subnet manager (UFM's OpenSM) gets its
routing engine and partitions from the plan."""

from __future__ import annotations

from topology.model import Layout
from topology.render.files import GENERATED


def opensm_conf(layout: Layout) -> str:
    tiers = layout.facts.get("tiers", 2)
    return "\n".join(
        [
            f"# {GENERATED}",
            f"# {layout.spec.name}: {tiers}-tier rail-optimized fat tree",
            "# fat-tree routing finds the roots itself (the top tier); up/down is its fallback",
            "routing_engine ftree,updn",
            "lmc 0",
            "sm_priority 15",
            "max_op_vls 8",
            "qos FALSE",
            "partition_config_file /etc/opensm/partitions.conf",
            "",
        ]
    )


def partitions_conf(layout: Layout) -> str:
    ipoib = ", ipoib" if layout.spec.addressing.ipoib else ""
    return "\n".join(
        [
            f"# {GENERATED}",
            "# every GPU node and the switches are full members of the default partition",
            f"Default=0x7fff{ipoib}, defmember=full : ALL, ALL_SWITCHES=full, SELF=full;",
            "",
        ]
    )
