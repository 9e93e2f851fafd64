"""Modbus TCP poller for CDUs that speak nothing else; the register map is a data file
(modbus_maps/*.yml) naming catalogue metrics, register table/address/type and scale."""

from __future__ import annotations

import asyncio
import struct
from decimal import Decimal
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .catalog import METRICS
from .config import DEFAULT_PORTS, Cdu
from .model import PollError, PollResult

if TYPE_CHECKING:  # pymodbus is imported on the first Modbus poll: most agents have none
    from pymodbus.client import AsyncModbusTcpClient

_WIDTH = {"int16": 1, "uint16": 1, "int32": 2, "uint32": 2, "float32": 2}
_FMT = {"int16": ">h", "uint16": ">H", "int32": ">i", "uint32": ">I", "float32": ">f"}


class Register(BaseModel):
    model_config = ConfigDict(extra="forbid")
    metric: str
    table: Literal["holding", "input"] = "holding"
    address: int = Field(ge=0, le=65535)
    type: Literal["int16", "uint16", "int32", "uint32", "float32"] = "int16"
    scale: Decimal = Decimal(1)
    labels: dict[str, str] = {}
    invalid: list[int] = []

    @field_validator("scale", mode="before")
    @classmethod
    def _scale(cls, v):
        return Decimal(str(v))

    @model_validator(mode="after")
    def _check(self) -> Register:
        d = METRICS.get(self.metric)
        if d is None or d.kind != "cdu":
            raise ValueError(f"{self.metric!r} is not a CDU metric")
        extra = set(self.labels) - set(d.extra)
        if extra:
            raise ValueError(f"{self.metric}: labels {sorted(extra)} not in {list(d.extra)}")
        return self


class RegisterMap(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""
    word_order: Literal["big", "little"] = "big"  # for 32-bit values: high word first?
    max_block: int = Field(100, ge=1, le=125)
    registers: list[Register]


@cache
def load_register_map(name_or_path: str) -> RegisterMap:
    path = Path(name_or_path)
    if path.suffix in (".yml", ".yaml") and path.exists():
        text = path.read_text()
    else:
        res = resources.files("cooling_agent") / "modbus_maps" / f"{name_or_path}.yml"
        if not res.is_file():
            raise ValueError(f"unknown Modbus register map {name_or_path!r}")
        text = res.read_text()
    return RegisterMap.model_validate(yaml.safe_load(text))


def _blocks(regs: list[Register], max_block: int) -> list[tuple[int, int]]:
    """Contiguous (start, count) spans covering the registers, small gaps bridged."""
    spans: list[list[int]] = []
    for r in sorted(regs, key=lambda r: r.address):
        end = r.address + _WIDTH[r.type]
        if spans and r.address - spans[-1][1] <= 8 and end - spans[-1][0] <= max_block:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([r.address, end])
    return [(s, e - s) for s, e in spans]


class ModbusCduPoller:
    def __init__(self, target: Cdu, regmap: RegisterMap, timeout_s: float):
        self.target = target
        self.map = regmap
        self.timeout_s = timeout_s
        self.client: AsyncModbusTcpClient | None = None

    async def _connect(self) -> AsyncModbusTcpClient:
        from pymodbus.client import AsyncModbusTcpClient

        if self.client is None or not self.client.connected:
            if self.client is not None:
                self.client.close()
            self.client = AsyncModbusTcpClient(self.target.address, port=self.target.port or DEFAULT_PORTS["modbus"],
                                               timeout=self.timeout_s, retries=0, reconnect_delay=0)
            if not await self.client.connect():
                self.client.close()
                self.client = None
                raise PollError("unreachable", "Modbus TCP connect failed")
        return self.client

    async def poll(self) -> PollResult:
        from pymodbus.exceptions import ModbusException

        try:
            client = await self._connect()
            words: dict[tuple[str, int], int] = {}
            for table in ("holding", "input"):
                regs = [r for r in self.map.registers if r.table == table]
                for start, count in _blocks(regs, self.map.max_block):
                    fn = client.read_holding_registers if table == "holding" else client.read_input_registers
                    rr = await fn(start, count=count, device_id=self.target.modbus_unit)
                    if rr.isError():
                        raise PollError("protocol", f"{table} {start}+{count}: {rr}")
                    if len(rr.registers) != count:
                        raise PollError("bad_data", f"{table} {start}+{count}: short response")
                    for i, w in enumerate(rr.registers):
                        words[(table, start + i)] = w
        except (ModbusException, asyncio.TimeoutError, ConnectionError, OSError) as exc:
            if self.client is not None:
                self.client.close()
                self.client = None
            raise PollError("timeout" if isinstance(exc, asyncio.TimeoutError) or "timeout" in str(exc).lower()
                            else "unreachable", f"Modbus: {exc.__class__.__name__}") from exc
        r = PollResult()
        for reg in self.map.registers:
            ws = [words[(reg.table, reg.address + i)] for i in range(_WIDTH[reg.type])]
            if self.map.word_order == "little":
                ws.reverse()
            raw = struct.unpack(_FMT[reg.type], b"".join(w.to_bytes(2, "big") for w in ws))[0]
            if reg.type != "float32" and raw in reg.invalid:
                continue
            r.add(reg.metric, float(Decimal(str(raw)) * reg.scale), **reg.labels)
        return r

    async def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
