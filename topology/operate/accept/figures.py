"""What a healthy node, rail and SU measure: the catalog's peaks times its pass efficiencies,
or the spec's own figures (`acceptance:`). Each expectation says how it was reached."""

from __future__ import annotations

from dataclasses import dataclass

from topology import catalog
from topology.spec import AcceptanceSpec


@dataclass(frozen=True)
class Expect:
    value: float  # the pass threshold: measured >= value
    unit: str  # GB/s | Gb/s
    how: str  # the arithmetic and its sources, for the report and docs

    def text(self) -> str:
        return f">= {self.value:.1f} {self.unit}"


class Figures:
    """Thresholds for one node model (its GPU and rail NIC) under the spec's overrides."""

    def __init__(self, node_model: str, overrides: AcceptanceSpec | None = None):
        cat = catalog.load()
        self.node = cat.nodes[node_model]
        self.gpu = cat.acceptance.gpus.get(self.node.gpu)
        self.efficiency = cat.acceptance.efficiency
        self.overrides = overrides or AcceptanceSpec()
        self.model = node_model

    def _eff(self, key: str) -> tuple[float, str]:
        if key in self.overrides.efficiency:
            return self.overrides.efficiency[key], f"spec acceptance.efficiency.{key}"
        f = self.efficiency[key]
        return f.value, f.source

    def _make(self, key: str, unit: str, peak: float, peak_how: str, eff_key: str, scale: float = 1.0,
              scale_how: str = "") -> Expect:
        if key in self.overrides.expected:
            return Expect(self.overrides.expected[key], unit, f"spec acceptance.expected.{key}")
        eff, eff_src = self._eff(eff_key)
        how = f"{eff:g} x {peak:g} {unit}{scale_how} [{peak_how}; efficiency: {eff_src}]"
        return Expect(round(eff * peak * scale, 1), unit, how)

    def _need_gpu(self) -> None:
        if self.gpu is None:
            raise KeyError(f"catalog acceptance.gpus has no figures for GPU {self.node.gpu!r} (node model "
                           f"{self.model}): add them, or set the spec's acceptance.expected figures")

    def hbm_copy(self) -> Expect:
        """One GPU's all_reduce is a device copy (reads and writes each byte): algbw vs half the HBM rate."""
        if "hbm_copy_gbs" in self.overrides.expected:
            return Expect(self.overrides.expected["hbm_copy_gbs"], "GB/s", "spec acceptance.expected.hbm_copy_gbs")
        self._need_gpu()
        return self._make("hbm_copy_gbs", "GB/s", self.gpu.hbm_gbs.value, self.gpu.hbm_gbs.source, "hbm_copy",
                          0.5, " / 2 (a copy reads and writes each byte)")

    def pcie_copy(self) -> Expect:
        if "pcie_copy_gbs" in self.overrides.expected:
            return Expect(self.overrides.expected["pcie_copy_gbs"], "GB/s", "spec acceptance.expected.pcie_copy_gbs")
        self._need_gpu()
        return self._make("pcie_copy_gbs", "GB/s", self.gpu.pcie_gbs.value, self.gpu.pcie_gbs.source, "pcie_copy")

    def nvlink(self) -> Expect | None:
        """all_reduce busbw (and device-to-device copies) inside a node; None without NVLink."""
        if "node_all_reduce_busbw_gbs" in self.overrides.expected:
            return Expect(self.overrides.expected["node_all_reduce_busbw_gbs"], "GB/s",
                          "spec acceptance.expected.node_all_reduce_busbw_gbs")
        self._need_gpu()
        if self.gpu.nvlink_gbs is None or not self.node.nvswitch:
            return None
        return self._make("node_all_reduce_busbw_gbs", "GB/s", self.gpu.nvlink_gbs.value, self.gpu.nvlink_gbs.source,
                          "nvlink_all_reduce")

    def rail_write_bw(self) -> Expect:
        speed = self.node.compute_nic_speed_gbps
        return self._make("rail_write_bw_gbps", "Gb/s", speed, f"{self.model}: compute NIC {speed}G (catalog)",
                          "rail_write_bw")

    def network_all_reduce(self, rails: int) -> Expect:
        """all_reduce over nodes: busbw bounded by each node's network, rails x NIC rate."""
        per_nic = self.node.compute_nic_speed_gbps / 8
        return self._make("network_all_reduce_busbw_gbs", "GB/s", rails * per_nic,
                          f"{rails} rails x {self.node.compute_nic_speed_gbps}G / 8 ({self.model}, catalog)",
                          "network_all_reduce")
