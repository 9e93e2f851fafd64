"""The lab nodes' GPUs: the state the nvidia-smi stand-in (tests/e2e/stand_ins/nvidia-smi)
answers from, built from a real H100 node's `nvidia-smi -q -x` (testdata/h100-node/), one entry
per planned GPU. Drift is made by editing that state (a GPU removed = fell off the bus)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REAL_NODE_XML = ROOT / "testdata" / "h100-node" / "nvidia-smi-q.xml"
SMI_PATH = "/usr/local/sbin/superpod-e2e-nvidia-smi"
STATE_PATH = "/var/lib/superpod-e2e/gpus.json"


def real_gpu() -> dict[str, str]:
    """One GPU's query fields as the real node reported them (nvidia-smi's --query-gpu names)."""
    gpu = ET.parse(REAL_NODE_XML).getroot().find("gpu")
    link = gpu.find("pci/pci_gpu_link_info")
    return {
        "name": gpu.findtext("product_name"),
        "persistence_mode": gpu.findtext("persistence_mode"),
        "ecc.mode.current": gpu.findtext("ecc_mode/current_ecc"),
        "mig.mode.current": gpu.findtext("mig_mode/current_mig"),
        "pstate": gpu.findtext("performance_state"),
        "pcie.link.gen.max": link.findtext("pcie_gen/max_link_gen"),
        "pcie.link.gen.current": link.findtext("pcie_gen/current_link_gen"),
        # the query's width fields are plain numbers ("16"), the XML's "16x"
        "pcie.link.width.max": link.findtext("link_widths/max_link_width").rstrip("x"),
        "pcie.link.width.current": link.findtext("link_widths/current_link_width").rstrip("x"),
        # `nvidia-smi -q -x` fields (the stand-in writes them as that XML): the real node is a one-GPU
        # VM without NVSwitches, whose fabric reads N/A; the lab's node model has NVSwitches, where a
        # GPU the fabric manager registered reads Completed/Success (NVML's fabric state and status)
        "fabric.state": "Completed",
        "fabric.status": "Success",
        "remapped_rows.pending": gpu.findtext("remapped_rows/remapped_row_pending"),
        "remapped_rows.failure": gpu.findtext("remapped_rows/remapped_row_failure"),
    }


def healthy(count: int) -> list[dict[str, str]]:
    gpu = real_gpu()
    # one PCI address per GPU, as the XML's <gpu id=...> carries it
    return [{"index": str(i), "pci.bus_id": f"00000000:{0x18 + 0x10 * i:02X}:00.0", **gpu} for i in range(count)]


def state_json(gpus: list[dict[str, str]]) -> str:
    return json.dumps(gpus, indent=1) + "\n"
