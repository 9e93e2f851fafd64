"""SNMP vendor OID profiles: data files (profiles/*.yml) describing which table columns
hold which catalogue metric, how instance indexes map to labels, and how raw integers
scale to units.  A new PDU vendor is a new YAML file; nothing here is vendor-specific.

Index patterns are dot-separated components matched against the part of an OID after
the column: a number (literal), ``*`` (any one component) or ``{label}`` (capture one
component as a label value).  ``decimals`` and ``where`` read auxiliary columns at an
index built from the same captures (``{label}`` substituted).
"""

from __future__ import annotations

import re
from decimal import Decimal
from functools import cache
from importlib import resources
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .catalog import METRICS

_COMPONENT = re.compile(r"^(\d+|\*|\{[a-z_][a-z0-9_]*\})$")


def parse_oid(text: str) -> tuple[int, ...]:
    text = text.strip().lstrip(".")
    if not re.fullmatch(r"\d+(\.\d+)*", text):
        raise ValueError(f"not a numeric OID: {text!r}")
    return tuple(int(p) for p in text.split("."))


class IndexPattern:
    def __init__(self, text: str):
        parts = [p for p in str(text).split(".") if p != ""]
        for p in parts:
            if not _COMPONENT.match(p):
                raise ValueError(f"bad index component {p!r} in {text!r}")
        self.text = str(text)
        self.parts = parts
        self.captures = [p[1:-1] for p in parts if p.startswith("{")]

    def match(self, suffix: tuple[int, ...]) -> dict[str, str] | None:
        if len(suffix) != len(self.parts):
            return None
        out: dict[str, str] = {}
        for p, v in zip(self.parts, suffix, strict=True):
            if p == "*":
                continue
            if p.startswith("{"):
                out[p[1:-1]] = str(v)
            elif int(p) != v:
                return None
        return out

    def literal_prefix(self) -> tuple[int, ...]:
        out = []
        for p in self.parts:
            if not p.isdigit():
                break
            out.append(int(p))
        return tuple(out)

    def render(self, captures: dict[str, str]) -> tuple[int, ...]:
        out = []
        for p in self.parts:
            if p.startswith("{"):
                out.append(int(captures[p[1:-1]]))
            elif p == "*":
                raise ValueError(f"cannot render wildcard in {self.text!r}")
            else:
                out.append(int(p))
        return tuple(out)


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


class AuxRef(_M):
    column: str
    index: str

    @property
    def column_oid(self) -> tuple[int, ...]:
        return parse_oid(self.column)

    @property
    def pattern(self) -> IndexPattern:
        return IndexPattern(self.index)


class Where(AuxRef):
    equals: list[int]

    @field_validator("equals", mode="before")
    @classmethod
    def _listify(cls, v):
        return v if isinstance(v, list) else [v]


class Series(_M):
    metric: str
    column: str
    index: str
    scale: Decimal = Decimal(1)
    decimals: AuxRef | None = None
    where: Where | None = None
    labels: dict[str, str] = {}
    label_values: dict[str, dict[str, str]] = {}  # capture -> {raw component: label value}
    invalid: list[int] | None = None  # raw values meaning "not available"; default: the profile's

    @field_validator("scale", mode="before")
    @classmethod
    def _scale(cls, v):
        return Decimal(str(v))

    @model_validator(mode="after")
    def _check(self) -> Series:
        if self.metric not in METRICS:
            raise ValueError(f"unknown metric {self.metric!r}")
        if METRICS[self.metric].kind != "pdu":
            raise ValueError(f"{self.metric} is not a PDU metric")
        parse_oid(self.column)
        pat = IndexPattern(self.index)
        for aux in (self.decimals, self.where):
            if aux is not None:
                parse_oid(aux.column)
                missing = set(IndexPattern(aux.index).captures) - set(pat.captures)
                if missing or "*" in aux.index.split("."):
                    raise ValueError(f"{self.metric}: aux index {aux.index!r} uses {missing or '*'} not captured")
        allowed = set(METRICS[self.metric].extra)
        for name in self.labels:
            if name not in allowed:
                raise ValueError(f"{self.metric}: label {name!r} not in {sorted(allowed)}")
        return self

    @property
    def column_oid(self) -> tuple[int, ...]:
        return parse_oid(self.column)

    @property
    def pattern(self) -> IndexPattern:
        return IndexPattern(self.index)


class Profile(_M):
    vendor: str
    mib: str
    description: str = ""
    max_repetitions: int = Field(25, ge=1, le=100)
    max_get_varbinds: int = Field(40, ge=1, le=120)
    invalid: list[int] = []
    series: list[Series]

    def invalid_for(self, s: Series) -> set[int]:
        return set(self.invalid if s.invalid is None else s.invalid)


PROFILE_DIR = "profiles"


def available_profiles() -> list[str]:
    root = resources.files("cooling_agent") / PROFILE_DIR
    return sorted(p.name[:-4] for p in root.iterdir() if p.name.endswith(".yml"))


@cache
def load_profile(name_or_path: str) -> Profile:
    """A shipped profile by name (``raritan``) or a YAML file by path."""
    path = Path(name_or_path)
    if path.suffix in (".yml", ".yaml") and path.exists():
        text = path.read_text()
    else:
        res = resources.files("cooling_agent") / PROFILE_DIR / f"{name_or_path}.yml"
        if not res.is_file():
            raise ValueError(f"unknown SNMP profile {name_or_path!r}; shipped: {available_profiles()}")
        text = res.read_text()
    return Profile.model_validate(yaml.safe_load(text))
