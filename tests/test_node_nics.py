"""Each node model carries its own storage/in-band NIC map with the card it is and where the map
comes from: DGX B200 has two dual-port BlueField-3 there (DGX B200 user guide), not the DGX
H100's ConnectX-7; the OEM HGX models say that their PCI layout is an assumption."""

from __future__ import annotations

from topology import catalog


def test_dgx_b200_storage_and_inband_ports_are_bluefield3():
    nodes = catalog.load().nodes
    b200, h100 = nodes["dgx-b200"], nodes["dgx-h100"]
    for nics in (b200.storage_nics, b200.inband_nics):
        assert len(nics) == 2 and all(n.adapter.startswith("BlueField-3") for n in nics), nics
    assert {n.adapter for n in h100.storage_nics + h100.inband_nics} == {"ConnectX-7"}
    # one dual-port card per NUMA node: port 1 storage, port 2 in-band, as the H100's ConnectX-7
    for s, i in zip(b200.storage_nics, b200.inband_nics, strict=True):
        assert (s.pci_bus, s.function, i.pci_bus, i.function) == (i.pci_bus, 0, s.pci_bus, 1)
    assert "DGX B200 user guide" in b200.nic_source


def test_every_node_model_names_the_source_of_its_nic_map():
    for name, node in catalog.load().nodes.items():
        assert node.nic_source.strip(), name
        if name.startswith("hgx-"):  # OEM servers: the layout is assumed, checked on the hardware
            assert "assum" in node.nic_source and "ibdev2netdev" in node.nic_source, name
