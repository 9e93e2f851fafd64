"""A stand-in node: 8 rail NICs and 2 storage NICs of the lab plan's su01-node01 (DGX H100
numbering), its sysfs tree and ethtool outputs written from the ConnectX-7 recordings."""

from __future__ import annotations

from pathlib import Path

import pytest
from fabric_telemetry import fakes
from fabric_telemetry.collector import make_registry
from fabric_telemetry.config import ExporterConfig
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

RECORDINGS = Path(__file__).resolve().parent / "data" / "cx7"
RAIL_HCAS = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
STORAGE = [("enp1s0f0np0", "mlx5_1"), ("enp2s0f0np0", "mlx5_7")]


def node_config(root: Path, **over) -> ExporterConfig:
    nics = [{"netdev": f"enp{r}np0", "hca": hca, "kind": "rail", "rail": r, "gpu": r, "leaf": f"su01-leaf-rail{r}",
             "leaf_port": "swp1", "planned_speed_gbps": 400} for r, hca in enumerate(RAIL_HCAS)]
    nics += [{"netdev": nd, "hca": hca, "kind": "storage", "planned_speed_gbps": 200} for nd, hca in STORAGE]
    return ExporterConfig.model_validate({"node": "su01-node01", "su": "su01", "sysfs_root": str(root / "sys"),
                                          "ethtool_command": fakes.ethtool_command(root), "nics": nics, **over})


def write_phase(root: Path, cfg: ExporterConfig, phase: str, down: tuple[str, ...] = ()) -> None:
    for n in cfg.nics:
        fakes.write_nic(root, RECORDINGS, phase, n.netdev, n.hca, n.port, up=n.netdev not in down,
                        speed_mbps=400000 if n.kind == "rail" else 200000)


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def scrape(registry) -> dict[tuple[str, frozenset], float]:
    out = {}
    for fam in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def find(samples, name, **labels) -> list[float]:
    want = set(labels.items())
    return [v for (n, lab), v in samples.items() if n == name and want <= lab]


@pytest.fixture
def node(tmp_path):
    cfg = node_config(tmp_path)
    write_phase(tmp_path, cfg, "t0")
    clock = Clock()
    registry, collector = make_registry(cfg, clock)
    return tmp_path, cfg, clock, registry
