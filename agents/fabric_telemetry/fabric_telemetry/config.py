"""Exporter configuration (YAML), rendered by the fabric_telemetry role from the node's
inventory host vars (rails, superpod_storage_nics, superpod_su)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Listen(_Model):
    # loopback unless told: the role binds the node's management (in-band) address
    address: str = "127.0.0.1"
    port: int = Field(9735, ge=0, le=65535)
    max_connections: int = Field(16, ge=1, le=1024)  # Prometheus needs one or two
    idle_timeout_s: float = Field(10.0, gt=0, le=300)
    basic_auth_user: str = ""
    basic_auth_password_file: str = ""  # mode 0600; the password never sits in this file
    tls_cert_file: str = ""
    tls_key_file: str = ""

    @model_validator(mode="after")
    def _pairs(self) -> Listen:
        if bool(self.basic_auth_user) != bool(self.basic_auth_password_file):
            raise ValueError("basic_auth_user and basic_auth_password_file go together")
        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            raise ValueError("tls_cert_file and tls_key_file go together")
        return self


class Nic(_Model):
    """One NIC of the plan: its netdev, its RDMA device and port, and where it is cabled."""

    netdev: str = Field(min_length=1)
    hca: str = ""  # RDMA device (mlx5_N); "" when the plan has none
    port: int = Field(1, ge=1)
    kind: Literal["rail", "storage"] = "rail"
    rail: int | None = Field(None, ge=0)
    gpu: int | None = Field(None, ge=0)
    leaf: str = ""
    leaf_port: str = ""
    planned_speed_gbps: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _rail_has_index(self) -> Nic:
        if self.kind == "rail" and self.rail is None:
            raise ValueError(f"nic {self.netdev}: a rail NIC needs its rail index")
        return self

    def labels(self, node: str, su: str) -> dict[str, str]:
        def s(v) -> str:
            return "" if v is None else str(v)

        return {"node": node, "su": su, "kind": self.kind, "netdev": self.netdev, "hca": self.hca,
                "rail": s(self.rail), "gpu": s(self.gpu), "leaf": self.leaf, "leaf_port": self.leaf_port}


class ExporterConfig(_Model):
    listen: Listen = Listen()
    node: str = Field(min_length=1)
    su: str = ""
    sysfs_root: str = "/sys"
    # `ethtool -S NETDEV` (the netdev is appended); the mlx5 PPCNT/RDMA counter names come from it
    ethtool_command: list[str] = Field(default_factory=lambda: ["ethtool", "-S"], min_length=1)
    ethtool_timeout_s: float = Field(2.0, gt=0)
    # Priorities whose per-priority counters are exported; null: each priority with a non-zero
    # counter on a NIC since the exporter started (idle priorities would multiply the series by 4).
    priorities: list[int] | None = None
    nics: list[Nic] = []

    @field_validator("priorities")
    @classmethod
    def _prio_range(cls, v: list[int] | None) -> list[int] | None:
        if v is not None and any(not 0 <= p <= 7 for p in v):
            raise ValueError("priorities are 0-7")
        return v

    @model_validator(mode="after")
    def _unique(self) -> ExporterConfig:
        seen: set[str] = set()
        for n in self.nics:
            if n.netdev in seen:
                raise ValueError(f"duplicate netdev {n.netdev}")
            seen.add(n.netdev)
        rails = [n.rail for n in self.nics if n.kind == "rail"]
        dup = {r for r in rails if rails.count(r) > 1}
        if dup:
            raise ValueError(f"rails served by more than one NIC: {sorted(dup)}")
        return self


def load_config(path: str | Path) -> ExporterConfig:
    return ExporterConfig.model_validate(yaml.safe_load(Path(path).read_text()) or {})
