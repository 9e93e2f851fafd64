"""Watcher configuration (YAML): the node, its rails from the plan, the checks' commands and
how to take the node out and bring it back."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

# GPU XIDs that take a node out (NVIDIA's XID catalog, "Xid Errors" in the GPU deployment and
# management documentation): 48 double-bit ECC, 61/62 internal micro-controller halt, 63/64 row
# remapping (pending / failed), 74 NVLink error, 79 GPU fallen off the bus, 92 high single-bit
# ECC rate, 94/95 contained/uncontained ECC, 119/120 GSP RPC timeout / error. Application faults
# (13, 31, 43, 45) stay out: the job is at fault, not the node.
DEFAULT_DRAIN_XIDS = (48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Rail(_Model):
    netdev: str = Field(min_length=1)
    rail: int = Field(ge=0)


class Scheduler(_Model):
    """How the node is taken out and brought back: Slurm's scontrol, Kubernetes' kubectl, or a
    site's own commands (kind "command": argv lists where {node} and {reason} are filled in, e.g.
    a wrapper that drains in Slurm and cordons in Kubernetes, or runs scontrol on the head node)."""

    kind: Literal["slurm", "kubernetes", "command", "none"] = "slurm"
    scontrol: str = "scontrol"
    kubectl: str = "kubectl"
    drain_command: list[str] = Field(default_factory=list)
    resume_command: list[str] = Field(default_factory=list)
    node_name: str = ""  # the scheduler's name for this node; "" = config.node

    @model_validator(mode="after")
    def _commands(self) -> Scheduler:
        if self.kind == "command" and not (self.drain_command and self.resume_command):
            raise ValueError("scheduler: kind 'command' needs drain_command and resume_command (argv lists)")
        for name in ("drain_command", "resume_command"):
            for arg in getattr(self, name):
                try:
                    arg.format(node="", reason="")
                except (KeyError, IndexError, ValueError) as e:
                    raise ValueError(f"scheduler.{name}: {arg!r}: only {{node}} and {{reason}} are filled in "
                                     f"({e})") from None
        return self


class Alert(_Model):
    """Alertmanager's API (POST /api/v2/alerts); empty url: the log line is the alert."""

    url: str = ""
    timeout_s: float = Field(5.0, gt=0)


class Pfc(_Model):
    """PFC storms from the fabric telemetry exporter on this node (agents/fabric_telemetry's
    /metrics, the mlx5 counters it reads with ethtool -S); empty url: not watched."""

    url: str = ""  # e.g. http://<in-band address>:9735/metrics
    timeout_s: float = Field(2.0, gt=0)
    basic_auth_user: str = ""
    basic_auth_password_file: str = ""  # mode 0600 on the node; the password never sits in this file
    # A NIC priority paused (or pausing) more than this share of the time for storm_for_s is a storm
    # (the generated FabricPfcStorm alert uses the same ratio, over 2 min: this one drains sooner).
    storm_pause_ratio: float = Field(0.5, gt=0, le=1)
    storm_for_s: float = Field(10.0, ge=0)
    # tx: this NIC keeps pausing its leaf (a stuck receiver here: the storm that spreads through the
    # fabric, the node is at fault). rx: the leaf pauses this NIC (a victim of congestion elsewhere):
    # not a reason to drain this node unless the site says so.
    directions: list[Literal["rx", "tx"]] = Field(default_factory=lambda: ["tx"], min_length=1)
    kinds: list[Literal["rail", "storage"]] = Field(default_factory=lambda: ["rail"], min_length=1)

    @model_validator(mode="after")
    def _auth_pair(self) -> Pfc:
        if bool(self.basic_auth_user) != bool(self.basic_auth_password_file):
            raise ValueError("pfc: basic_auth_user and basic_auth_password_file go together")
        return self


class WatcherConfig(_Model):
    node: str = Field(min_length=1)
    interval_s: float = Field(2.0, gt=0, le=60)  # how often the cheap sources are read (kernel log, sysfs)
    gpu_interval_s: float = Field(10.0, gt=0)  # nvidia-smi -q -x
    kernel_log: str = "/dev/kmsg"
    drain_xids: list[int] = Field(default_factory=lambda: list(DEFAULT_DRAIN_XIDS))
    nvidia_smi: list[str] = Field(default_factory=lambda: ["nvidia-smi", "-q", "-x"])
    gpu_count: int | None = Field(None, ge=0)  # the plan's GPUs: fewer seen is a lost GPU
    throttle_reasons: list[str] = Field(default_factory=lambda: [
        "clocks_event_reason_hw_thermal_slowdown", "clocks_event_reason_hw_power_brake_slowdown",
        "clocks_event_reason_sw_thermal_slowdown", "clocks_event_reason_hw_slowdown"])
    sysfs_net: str = "/sys/class/net"
    rails: list[Rail] = Field(default_factory=list)
    flap_changes: int = Field(4, ge=2)  # carrier changes within flap_window_s that count as flapping
    flap_window_s: float = Field(300.0, gt=0)
    node_check: list[str] = Field(default_factory=list)  # argv; non-zero exit = fault (e.g. the role's check)
    node_check_interval_s: float = Field(300.0, gt=0)
    acceptance: list[str] = Field(default_factory=list)  # argv of the per-node acceptance run before return
    return_after_s: float = Field(600.0, ge=0)  # quiet time after the last fault before the return checks
    scheduler: Scheduler = Scheduler()
    alert: Alert = Alert()
    pfc: Pfc = Pfc()
    state_file: str = "/var/lib/superpod-health-watcher/state.json"


def load_config(path: str | Path) -> WatcherConfig:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    return WatcherConfig.model_validate(data)
