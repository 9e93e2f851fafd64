"""Each device's own addresses by interface, built the first time a device is asked for.

The switch intents look up a switch's own addresses (its ports, SVIs, loopback) and, for each
BGP session, the peer's address at the cable's far end. A dict keyed by (device, interface) over
every address of the pod cost 0.3 s at 100k GPUs (520k entries, most of them nodes' that no
session reads); the layout already groups addresses by device (Layout.addresses_by_device), so a
device's dict is made from its own list, once, when a switch or a session first needs it.
"""

from __future__ import annotations

from topology.layout.model import Address

POD_GATEWAYS = "rail_pods"  # a rail leaf's pod gateways share the rail SVI (vlan10N): kept apart


class OwnAddresses(dict):
    """device -> {interface: Address}, the pod gateways left out (the last address of an
    interface wins, as a dict built over the layout's addresses in order would have it)."""

    def __init__(self, by_device: dict[str, list[Address]]):
        super().__init__()
        self.by_device = by_device

    def __missing__(self, device: str) -> dict[str, Address]:
        own = self[device] = {a.interface: a for a in self.by_device.get(device, ()) if a.pool != POD_GATEWAYS}
        return own

    def pods(self, device: str) -> list[Address]:
        """The device's pod gateways (a rail leaf's pool rail_pods), in the layout's order."""
        return [a for a in self.by_device.get(device, ()) if a.pool == POD_GATEWAYS]
