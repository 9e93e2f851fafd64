"""The layout stages: pure functions from the pod spec to devices, links, racks, addresses and ASNs."""
