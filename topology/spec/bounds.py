"""Upper bounds on every count in a spec, from what the catalog makes physically possible.

The builders refuse a pod that does not fit, but only after they have laid it out; a count of
1e9 in a small file would make them run for minutes or allocate gigabytes first. These checks
are arithmetic on the spec and the catalog and run before any builder.
"""

from __future__ import annotations

from topology import catalog
from topology.errors import SpecError, SpecErrors

MAX_RACK_UNITS = 60  # the tallest standard racks are 58U


def _radix(switch_key: str, speed_gbps: int) -> int:
    sw = catalog.load().switches.get(switch_key)
    return sw.radix(speed_gbps) if sw else 0


def bounds_errors(pod) -> list[SpecError]:
    """SpecErrors for counts no hardware in the catalog could hold (empty when all fit)."""
    cat = catalog.load()
    node = cat.nodes.get(pod.node_model)
    if node is None:
        return []
    errors: list[SpecError] = []
    r = pod.racks
    if r.rack_units > MAX_RACK_UNITS:
        errors.append(SpecError("racks.rack_units", f"must be at most {MAX_RACK_UNITS} (the tallest racks are 58U)"))
    if r.pdus_per_feed > r.rack_units:
        errors.append(SpecError(
            "racks.pdus_per_feed",
            f"must be at most racks.rack_units ({r.rack_units}): each PDU feeds at least one unit",
        ))

    ib = pod.management.inband
    mgmt = cat.appliances.get(ib.mgmt_node_model)
    core_key = ib.core_switch_model or ib.switch_model
    core_radix = _radix(core_key, node.inband_nic_speed_gbps)
    if mgmt and mgmt.inband_ports and core_radix:
        # in-band cores divide every in-band switch's uplinks, so there are at most uplinks_per_switch of them
        most = ib.uplinks_per_switch * core_radix // mgmt.inband_ports
        if ib.mgmt_nodes > most:
            errors.append(SpecError(
                "management.inband.mgmt_nodes",
                f"must be at most {most}: {ib.uplinks_per_switch} in-band cores of {core_radix} ports "
                f"({core_key}) hold {mgmt.inband_ports} ports per {ib.mgmt_node_model}",
            ))

    sf = pod.storage_fabric
    server = cat.appliances.get(sf.server_model)
    radix = _radix(sf.switch_model, node.storage_nic_speed_gbps)
    if sf.enabled and server and server.storage_ports and radix:
        # two tiers: at most `radix` server leaves (one port each on a spine), half their ports down
        most = radix * (radix // 2) // server.storage_ports
        if sf.storage_servers > most:
            errors.append(SpecError(
                "storage_fabric.storage_servers",
                f"must be at most {most}: two tiers of {sf.switch_model} ({radix} ports) hold "
                f"{radix} server leaves of {radix // 2} server ports each",
            ))

    # every rack holds at least one device: a row longer than the pod's device count is never needed
    devices = pod.max_su * pod.nodes_per_su * 4 + sf.storage_servers + ib.mgmt_nodes + 64
    if r.racks_per_row > devices:
        errors.append(SpecError(
            "racks.racks_per_row", f"must be at most {devices} (more racks than this pod has devices to fill)"
        ))
    return errors


def check_bounds(pod) -> None:
    errors = bounds_errors(pod)
    if errors:
        raise SpecErrors(errors)

