"""SNMP poller for rack PDUs driven by a vendor profile.

First poll (and every ``rediscover_s``): walk each profile column with GETBULK (columns
in parallel), match instance indexes, read the static auxiliary columns (decimal
digits, sensor types) once, and keep a plan of exact instance OIDs.  Every later poll is
one GET per ``max_get_varbinds`` planned OIDs (the request bytes are built once per plan),
so steady-state traffic and CPU per PDU are small.

SNMPv1/v2c go through the agent's shared UDP socket and the light codec in snmp_wire;
SNMPv3 (USM authentication and privacy) goes through pysnmp's engine (snmp_v3, imported
only when a v3 target exists: pysnmp's import is most of the agent's start-up).  Both hand
the poller plain values (see snmp_wire).
"""

from __future__ import annotations

import asyncio
import socket
import time
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

from . import snmp_wire
from .config import DEFAULT_PORTS, Pdu
from .credentials import Credential
from .model import PollError, PollResult
from .profiles import Profile, Series
from .snmp_transport import SnmpClient
from .snmp_wire import GET, GETBULK, GETNEXT

if TYPE_CHECKING:
    from pysnmp.hlapi.v3arch.asyncio import SnmpEngine

# readings below 2**53 (16 digits) times a factor of at most 12 digits fit the Decimal
# context's 28 digits: the product is exact on both paths of Planned.scaled, which then
# agree bit for bit (each rounds the exact value once, correctly)
_EXACT = 1 << 53
_NO_SUCH_NAME = 2  # SNMPv1 error-status for a missing object / end of MIB


def _raw_number(value) -> int | Decimal | None:
    """A plain SNMP value as a number; None when it is not numeric (garbage) or missing."""
    if isinstance(value, int):
        return value
    if isinstance(value, bytes):  # some firmware reports readings as DisplayString "12.5"
        try:
            number = Decimal(value.decode("ascii").strip())
        except (UnicodeDecodeError, InvalidOperation):
            return None
        return number if number.is_finite() else None  # "nan", "inf": unusable, not a reading
    return None


class _CommunitySession:
    """SNMPv1/v2c over the shared UDP socket."""

    def __init__(self, client: SnmpClient, target: Pdu, community: str, timeout_s: float):
        self.client = client
        self.target = target
        self.version = target.snmp_version
        self.community = community.encode()
        self.timeout_s = timeout_s
        self._addr: tuple[str, int] | None = None

    async def _address(self) -> tuple[str, int]:
        if self._addr is None:
            port = self.target.port or DEFAULT_PORTS["snmp"]
            try:
                infos = await asyncio.get_running_loop().getaddrinfo(
                    self.target.address, port, family=socket.AF_INET, type=socket.SOCK_DGRAM)
            except OSError as exc:
                raise PollError("unreachable", f"cannot resolve {self.target.address}: {exc}") from exc
            self._addr = infos[0][4][:2]
        return self._addr

    async def request(self, pdu_type: int, varbinds: bytes, max_repetitions: int = 0) -> snmp_wire.Response:
        addr = await self._address()
        rid = self.client.next_id()
        msg = snmp_wire.encode_request(self.version, self.community, pdu_type, rid, varbinds,
                                       max_repetitions=max_repetitions)
        return await self.client.request(addr, rid, msg, self.timeout_s)


@dataclass
class Planned:
    oid: tuple[int, ...]
    series: Series
    labels: dict[str, str]
    factor: Decimal  # scale / 10^decimal digits
    invalid: frozenset[int]

    def __post_init__(self) -> None:
        # the factor as an exact fraction: int / int is correctly rounded, so for an integer
        # reading (nearly all) num * n / d is the float of the exact Decimal product, ~5x cheaper
        self.ratio = self.factor.as_integer_ratio() if len(self.factor.as_tuple().digits) <= 12 else None

    def scaled(self, num: int | Decimal) -> float:
        if self.ratio is not None and type(num) is int and -_EXACT < num < _EXACT:
            return num * self.ratio[0] / self.ratio[1]
        return float(num * self.factor)


class SnmpPoller:
    def __init__(self, target: Pdu, profile: Profile, cred: Credential, timeout_s: float, *,
                 client: SnmpClient | None = None, engine: SnmpEngine | None = None,
                 rediscover_s: float = 3600.0, max_rows: int = 1024):
        self.max_rows = max_rows  # rows per table column: a walk stops there (20,000 outlets are no PDU)
        self.target = target
        self.profile = profile
        self.timeout_s = timeout_s
        self.rediscover_s = rediscover_s
        if target.snmp_version == "3":
            if engine is None:
                raise ValueError("SNMPv3 targets need a pysnmp engine")
            from .snmp_v3 import V3Session

            self._session = V3Session(engine, target, cred, timeout_s)
            self._v3 = True
        else:
            if client is None:
                raise ValueError("SNMPv1/v2c targets need the shared SnmpClient")
            community = cred.community.get_secret_value() if cred.community else "public"
            self._session = _CommunitySession(client, target, community, timeout_s)
            self._v3 = False
        self._plan: list[Planned] | None = None
        self._requests: list[tuple[list[tuple[int, ...]], bytes]] = []  # planned GETs, encoded once
        self._planned_at = 0.0

    async def _request(self, pdu_type: int, oids: list[tuple[int, ...]], encoded: bytes | None = None,
                       max_repetitions: int = 0) -> snmp_wire.Response:
        if self._v3:
            return await self._session.request(pdu_type, oids, max_repetitions)
        return await self._session.request(pdu_type, encoded or snmp_wire.encode_varbinds(oids), max_repetitions)

    @staticmethod
    def _check(rsp: snmp_wire.Response, what: str) -> None:
        if rsp.error_status:
            raise PollError("protocol", f"{what}: error-status {rsp.error_status} at {rsp.error_index}")

    def _chunks(self, oids: list[tuple[int, ...]]) -> list[list[tuple[int, ...]]]:
        step = self.profile.max_get_varbinds
        return [oids[i:i + step] for i in range(0, len(oids), step)]

    async def _get(self, oids: list[tuple[int, ...]]) -> dict[tuple[int, ...], object]:
        out: dict[tuple[int, ...], object] = {}
        for chunk in self._chunks(oids):
            rsp = await self._request(GET, chunk)
            self._check(rsp, "get")
            out.update(rsp.varbinds)
        return out

    async def _walk(self, columns: list[tuple[int, ...]]) -> dict[tuple[int, ...], dict[tuple[int, ...], object]]:
        """Walk several table columns at once; {column: {suffix: value}}."""
        result: dict[tuple[int, ...], dict[tuple[int, ...], object]] = {c: {} for c in columns}
        cursor = {c: c for c in columns}
        while cursor:
            cols = list(cursor)
            oids = [cursor[c] for c in cols]
            if self.target.snmp_version == "1":
                rsp = await self._request(GETNEXT, oids)
                if rsp.error_status == _NO_SUCH_NAME:  # v1 end of MIB: drop that column, go on
                    if not 1 <= rsp.error_index <= len(cols):
                        break
                    cursor.pop(cols[rsp.error_index - 1])
                    continue
            else:
                rsp = await self._request(GETBULK, oids, max_repetitions=self.profile.max_repetitions)
            self._check(rsp, "walk")
            if not rsp.varbinds:
                break
            done: set[tuple[int, ...]] = set()
            for i, (oid, value) in enumerate(rsp.varbinds):
                col = cols[i % len(cols)]
                if col in done or col not in cursor:
                    continue
                if value is snmp_wire.END_OF_MIB_VIEW or oid[:len(col)] != col or oid <= cursor[col]:
                    done.add(col)
                    continue
                result[col][oid[len(col):]] = value
                if len(result[col]) > self.max_rows:
                    raise PollError("too_large", f"walk: column {'.'.join(map(str, col))} has more than "
                                                 f"{self.max_rows} rows")
                cursor[col] = oid
            for col in done:
                cursor.pop(col, None)
        return result

    async def discover(self) -> list[Planned]:
        series = self.profile.series
        columns = sorted({s.column_oid for s in series})
        walked = await self._walk(columns)
        found: list[tuple[Series, tuple[int, ...], dict[str, str]]] = []
        aux_needed: set[tuple[int, ...]] = set()
        for s in series:
            pat = s.pattern
            for suffix in walked[s.column_oid]:
                caps = pat.match(suffix)
                if caps is None:
                    continue
                found.append((s, s.column_oid + suffix, caps))
                for aux in (s.decimals, s.where):
                    if aux is not None:
                        aux_needed.add(aux.column_oid + aux.pattern.render(caps))
        aux = await self._get(sorted(aux_needed)) if aux_needed else {}
        plan: list[Planned] = []
        for s, oid, caps in found:
            if s.where is not None:
                v = _raw_number(aux.get(s.where.column_oid + s.where.pattern.render(caps)))
                if v is None or int(v) not in s.where.equals:
                    continue
            divisor = Decimal(1)
            if s.decimals is not None:
                d = _raw_number(aux.get(s.decimals.column_oid + s.decimals.pattern.render(caps)))
                if d is None or not 0 <= int(d) <= 9:
                    continue  # without its decimal digits a Raritan value is meaningless
                divisor = Decimal(10) ** int(d)
            labels = dict(s.labels)
            for name, raw in caps.items():
                labels[name] = s.label_values.get(name, {}).get(raw, raw)
            plan.append(Planned(oid, s, labels, s.scale / divisor, frozenset(self.profile.invalid_for(s))))
        return plan

    def _set_plan(self, plan: list[Planned]) -> None:
        self._plan = plan
        # the steady-state GETs never change until the next discovery: encode them once
        self._requests = [(chunk, snmp_wire.encode_varbinds(chunk))
                          for chunk in self._chunks([p.oid for p in plan])]

    async def poll(self) -> PollResult:
        now = time.monotonic()
        if self._plan is None or now - self._planned_at > self.rediscover_s:
            plan = await self.discover()
            if not plan:
                self._plan = None
                raise PollError("no_data", "no profile OID answered: wrong profile or community?")
            self._set_plan(plan)
            self._planned_at = now
        values: dict[tuple[int, ...], object] = {}
        for oids, encoded in self._requests:
            rsp = await self._request(GET, oids, encoded)
            self._check(rsp, "get")
            values.update(rsp.varbinds)
        result = PollResult()
        missing = 0
        for p in self._plan:
            raw = values.get(p.oid, snmp_wire.NO_SUCH_INSTANCE)
            if isinstance(raw, snmp_wire.SnmpException):
                missing += 1
                continue
            num = _raw_number(raw)
            if num is None:
                result.bad_values += 1
                continue
            if isinstance(num, int) and num in p.invalid:
                continue
            result.add(p.series.metric, p.scaled(num), **p.labels)
        if missing:
            self._plan = None  # the device changed (outlet removed, firmware): rediscover next time
        if not result.samples:
            raise PollError("bad_data" if result.bad_values else "no_data",
                            f"{result.bad_values} unusable and {missing} missing values")
        return result

    async def close(self) -> None:
        self._plan = None
