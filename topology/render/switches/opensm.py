"""InfiniBand fabrics: switches take no IP config; the subnet manager (UFM's OpenSM) gets its
routing engine and partitions from the plan."""

from __future__ import annotations

from topology.layout.model import Layout
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


def storage_opensm_conf(layout: Layout) -> str:
    """The InfiniBand storage fabric's own subnet manager: its UFM pair, or the SM embedded in the
    storage switches (MLNX-OS), as `storage_fabric.subnet_manager` says."""
    where = ("its UFM pair (storage-ufm-01/02, HA)" if layout.spec.storage_fabric.subnet_manager == "ufm"
             else "the storage switches' embedded SM (MLNX-OS; enable it on two spines, the lower priority as standby)")
    return "\n".join(
        [
            f"# {GENERATED}",
            f"# {layout.spec.name}: InfiniBand storage fabric, a leaf-spine fat tree; subnet manager: {where}",
            "routing_engine ftree,updn",
            "lmc 0",
            "sm_priority 15",
            "qos FALSE",
            "partition_config_file /etc/opensm/partitions.conf",
            "",
        ]
    )


def storage_partitions_conf(layout: Layout) -> str:
    return "\n".join(
        [
            f"# {GENERATED}",
            "# storage hosts reach each other over IPoIB in the default partition: one on-link subnet, no gateway",
            "Default=0x7fff, ipoib, defmember=full : ALL, ALL_SWITCHES=full, SELF=full;",
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
