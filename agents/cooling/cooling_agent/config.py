"""Agent configuration (YAML), rendered by the cooling_monitor role from the inventory's
``superpod_monitoring: {racks, pdus, cdus}``."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .textfile import read_regular_file, yaml_problem

# ASHRAE TC 9.9 liquid-cooling classes: the name is the maximum facility water supply (degC).
ASHRAE_W_CLASSES = {"W17": 17.0, "W27": 27.0, "W32": 32.0, "W40": 40.0, "W45": 45.0}

DEFAULT_PORTS = {"snmp": 161, "redfish": 443, "modbus": 502}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Listen(_Model):
    # loopback unless told: the role passes the host's management address
    address: str = "127.0.0.1"
    port: int = Field(9731, ge=0, le=65535)
    tls_cert_file: str | None = None  # PEM; with tls_key_file, /metrics is served over HTTPS
    tls_key_file: str | None = None
    basic_auth_ref: str | None = None  # credentials reference holding {username, password}
    max_connections: int = Field(64, ge=1)
    idle_timeout_s: float = Field(15.0, gt=0)

    @model_validator(mode="after")
    def _tls_pair(self) -> Listen:
        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            raise ValueError("listen: tls_cert_file and tls_key_file go together")
        return self


class Range(_Model):
    min: float | None = None
    max: float | None = None


class LoopLimits(_Model):
    flow_lpm: Range | None = None
    delta_pressure_kpa: Range | None = None


class CduLimits(_Model):
    primary: LoopLimits | None = None
    secondary: LoopLimits | None = None


def _none_to_empty(v):
    """The inventory writes null for 'not in an SU' (e.g. management racks)."""
    return "" if v is None else v


class Rack(_Model):
    name: str
    row: str = ""
    su: str = ""
    budget_kw: float | None = None
    planned_kw: float | None = None
    cooling: str | None = None

    _empty = field_validator("row", "su", mode="before")(_none_to_empty)


class Target(_Model):
    name: str
    rack: str = ""
    row: str = ""
    su: str = ""
    address: str
    port: int | None = None
    timeout_s: float | None = None
    interval_s: float | None = None
    model: str | None = None  # catalog model name from the layout (informational)

    _empty = field_validator("rack", "row", "su", mode="before")(_none_to_empty)


class Pdu(Target):
    feed: str = ""
    protocol: Literal["snmp", "redfish"] = "snmp"
    profile: str | None = None  # SNMP vendor profile name (profiles/<name>.yml) or a path
    snmp_version: Literal["1", "2c", "3"] = "2c"
    community_ref: str | None = None  # credentials reference (SNMP community or v3 user)
    credentials_ref: str | None = None  # credentials reference for Redfish
    context: str | None = None  # SNMPv3 context name
    redfish_id: str = "1"
    scheme: Literal["http", "https"] = "https"
    verify_tls: bool = True

    @model_validator(mode="after")
    def _profile_for_snmp(self) -> Pdu:
        if self.protocol == "snmp" and not self.profile:
            raise ValueError(f"pdu {self.name}: protocol snmp needs a profile")
        return self


class Cdu(Target):
    protocol: Literal["redfish", "modbus"] = "redfish"
    credentials_ref: str | None = None
    redfish_id: str = "1"
    scheme: Literal["http", "https"] = "https"
    verify_tls: bool = True
    modbus_map: str | None = None  # register map name (modbus_maps/<name>.yml) or a path
    modbus_unit: int = 1
    ashrae_class: str | None = None
    limits: CduLimits | None = None
    capacity_kw: float | None = None  # planned cooling capacity from the layout (informational)

    @model_validator(mode="after")
    def _map_for_modbus(self) -> Cdu:
        if self.protocol == "modbus" and not self.modbus_map:
            raise ValueError(f"cdu {self.name}: protocol modbus needs a modbus_map")
        return self


class AgentConfig(_Model):
    listen: Listen = Listen()
    interval_s: float = Field(15.0, gt=0)
    timeout_s: float = Field(3.0, gt=0)
    max_backoff_s: float = Field(300.0, gt=0)
    rediscover_s: float = Field(3600.0, gt=0)
    max_concurrency: int = Field(512, ge=1)
    # one device's answer is bounded: body bytes (on the wire and inflated), collection members
    redfish_max_body_bytes: int = Field(1 << 20, ge=1024)
    redfish_max_members: int = Field(256, ge=1)
    snmp_max_rows: int = Field(1024, ge=1)  # rows per SNMP table column (a 54-outlet PDU has 54)
    redfish_max_poll_bytes: int = Field(4 << 20, ge=1024)  # all bodies of one poll of one target
    # what one target may put into a scrape: label values cut to this length, series beyond the cap dropped
    max_label_length: int = Field(128, ge=16)
    max_series_per_target: int = Field(2048, ge=1)
    credentials_file: str | None = None
    ashrae_class: str = "W32"
    feed_imbalance_ratio: float = Field(0.2, ge=0, le=1)
    cdu_limits: CduLimits | None = None  # defaults for every CDU
    racks: list[Rack] = []
    pdus: list[Pdu] = []
    cdus: list[Cdu] = []

    @field_validator("ashrae_class")
    @classmethod
    def _known_class(cls, v: str) -> str:
        if v not in ASHRAE_W_CLASSES:
            raise ValueError(f"unknown ASHRAE class {v!r}; one of {sorted(ASHRAE_W_CLASSES)}")
        return v

    @model_validator(mode="after")
    def _cross_checks(self) -> AgentConfig:
        names = [t.name for t in [*self.pdus, *self.cdus]]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"duplicate target names: {sorted(dup)}")
        racks = {r.name: r for r in self.racks}
        for t in [*self.pdus, *self.cdus]:
            # row / su default from the rack entry so the inventory need not repeat them
            if t.rack and t.rack in racks:
                t.row = t.row or racks[t.rack].row
                t.su = t.su or racks[t.rack].su
        for c in self.cdus:
            if c.ashrae_class is not None and c.ashrae_class not in ASHRAE_W_CLASSES:
                raise ValueError(f"cdu {c.name}: unknown ASHRAE class {c.ashrae_class!r}")
        return self

    def cdu_class(self, cdu: Cdu) -> str:
        return cdu.ashrae_class or self.ashrae_class

    def cdu_limits_for(self, cdu: Cdu) -> CduLimits:
        return cdu.limits or self.cdu_limits or CduLimits()


class ConfigError(ValueError):
    """A config file the agent cannot read as a mapping (pydantic names field errors)."""


def load_config(path: str | Path) -> AgentConfig:
    text, _ = read_regular_file(Path(path), "", ConfigError)
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: {yaml_problem(exc)}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of settings, got {type(raw).__name__}")
    if "superpod_monitoring" in raw and isinstance(raw["superpod_monitoring"], dict):
        # accept the inventory's group-vars shape directly as well
        inner = raw.pop("superpod_monitoring")
        raw = {**raw, **inner}
    return AgentConfig.model_validate(raw)
