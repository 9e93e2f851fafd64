"""SNMP poller for rack PDUs (pysnmp 7 asyncio API) driven by a vendor profile.

First poll (and every ``rediscover_s``): walk each profile column with GETBULK (columns
in parallel), match instance indexes, read the static auxiliary columns (decimal
digits, sensor types) once, and keep a plan of exact instance OIDs.  Every later poll is
a handful of GETs for exactly those OIDs, so steady-state traffic per PDU is small.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from pysnmp.hlapi.v3arch.asyncio import (
    CommunityData,
    ContextData,
    ObjectIdentity,
    ObjectType,
    SnmpEngine,
    UdpTransportTarget,
    UsmUserData,
    bulk_cmd,
    get_cmd,
    next_cmd,
)
from pysnmp.hlapi.v3arch.asyncio import auth as v3auth
from pysnmp.proto.rfc1905 import EndOfMibView, NoSuchInstance, NoSuchObject
from pysnmp.smi import builder, view

from .config import DEFAULT_PORTS, Pdu
from .credentials import Credential
from .model import PollError, PollResult
from .profiles import Profile, Series

_AUTH = {"md5": v3auth.USM_AUTH_HMAC96_MD5, "sha": v3auth.USM_AUTH_HMAC96_SHA,
         "sha256": v3auth.USM_AUTH_HMAC192_SHA256, "sha512": v3auth.USM_AUTH_HMAC384_SHA512}
_PRIV = {"des": v3auth.USM_PRIV_CBC56_DES, "aes": v3auth.USM_PRIV_CFB128_AES,
         "aes256": v3auth.USM_PRIV_CFB256_AES}
_MISSING = (NoSuchInstance, NoSuchObject, EndOfMibView)


class _NoMibCompiler:
    """Placeholder MIB compiler: profiles use numeric OIDs only, so pysnmp must never build
    pysmi's compiler (seconds of start-up, and it would try to fetch MIBs over the network)."""


def new_engine() -> SnmpEngine:
    engine = SnmpEngine()
    mib_builder = builder.MibBuilder()
    pysnmp_mibs = next(iter(mib_builder.get_mib_sources())).full_path()
    mib_builder.set_mib_compiler(_NoMibCompiler(), pysnmp_mibs)
    engine.cache["mibViewController"] = view.MibViewController(mib_builder)
    return engine


def _oid_str(oid: tuple[int, ...]) -> str:
    return ".".join(map(str, oid))


def _raw_number(value) -> int | Decimal | None:
    """An SNMP value as a number; None when it is not numeric (garbage)."""
    if isinstance(value, _MISSING):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        pass
    try:  # some firmware reports readings as DisplayString "12.5"
        return Decimal(value.asOctets().decode("ascii").strip())
    except (AttributeError, UnicodeDecodeError, InvalidOperation):
        return None


@dataclass
class _Planned:
    oid: tuple[int, ...]
    series: Series
    labels: dict[str, str]
    divisor: Decimal
    invalid: frozenset[int]


class SnmpPoller:
    def __init__(self, target: Pdu, profile: Profile, cred: Credential, engine: SnmpEngine,
                 timeout_s: float, rediscover_s: float = 3600.0):
        self.target = target
        self.profile = profile
        self.engine = engine
        self.timeout_s = timeout_s
        self.rediscover_s = rediscover_s
        self._auth = self._auth_data(target, cred)
        self._context = ContextData(contextName=target.context or "")
        self._transport: UdpTransportTarget | None = None
        self._plan: list[_Planned] | None = None
        self._planned_at = 0.0

    @staticmethod
    def _auth_data(t: Pdu, cred: Credential):
        if t.snmp_version in ("1", "2c"):
            community = cred.community.get_secret_value() if cred.community else "public"
            return CommunityData(community, mpModel=0 if t.snmp_version == "1" else 1)
        if not cred.username:
            raise PollError("config", f"{t.name}: SNMPv3 needs a username in credentials")
        kw = {}
        if cred.auth_key:
            kw["authKey"] = cred.auth_key.get_secret_value()
            kw["authProtocol"] = _AUTH[(cred.auth_protocol or "sha").lower()]
        if cred.priv_key:
            kw["privKey"] = cred.priv_key.get_secret_value()
            kw["privProtocol"] = _PRIV[(cred.priv_protocol or "aes").lower()]
        return UsmUserData(cred.username, **kw)

    async def _transport_target(self) -> UdpTransportTarget:
        if self._transport is None:
            port = self.target.port or DEFAULT_PORTS["snmp"]
            self._transport = await UdpTransportTarget.create(
                (self.target.address, port), timeout=self.timeout_s, retries=0)
        return self._transport

    def _check(self, err_ind, err_status, err_index, what: str) -> None:
        if err_ind:
            text = str(err_ind)
            raise PollError("timeout" if "timeout" in text.lower() else "protocol", f"{what}: {text}")
        if err_status:
            raise PollError("protocol", f"{what}: {err_status.prettyPrint()} at {err_index}")

    async def _get(self, oids: list[tuple[int, ...]]) -> dict[tuple[int, ...], object]:
        out: dict[tuple[int, ...], object] = {}
        transport = await self._transport_target()
        step = self.profile.max_get_varbinds
        for i in range(0, len(oids), step):
            chunk = oids[i:i + step]
            ei, es, ex, vbs = await get_cmd(
                self.engine, self._auth, transport, self._context,
                *[ObjectType(ObjectIdentity(_oid_str(o))) for o in chunk], lookupMib=False)
            self._check(ei, es, ex, "get")
            for name, value in vbs:
                out[tuple(name)] = value
        return out

    async def _walk(self, columns: list[tuple[int, ...]]) -> dict[tuple[int, ...], dict[tuple[int, ...], object]]:
        """Walk several table columns at once; {column: {suffix: value}}."""
        transport = await self._transport_target()
        result: dict[tuple[int, ...], dict[tuple[int, ...], object]] = {c: {} for c in columns}
        cursor = {c: c for c in columns}
        while cursor:
            cols = list(cursor)
            if self.target.snmp_version == "1":
                ei, es, ex, vbs = await next_cmd(
                    self.engine, self._auth, transport, self._context,
                    *[ObjectType(ObjectIdentity(_oid_str(cursor[c]))) for c in cols], lookupMib=False)
                if es and int(es) == 2:  # noSuchName: end of MIB in v1
                    break
            else:
                ei, es, ex, vbs = await bulk_cmd(
                    self.engine, self._auth, transport, self._context, 0, self.profile.max_repetitions,
                    *[ObjectType(ObjectIdentity(_oid_str(cursor[c]))) for c in cols], lookupMib=False)
            self._check(ei, es, ex, "walk")
            if not vbs:
                break
            done: set[tuple[int, ...]] = set()
            for i, (name, value) in enumerate(vbs):
                col = cols[i % len(cols)]
                if col in done or col not in cursor:
                    continue
                oid = tuple(name)
                if isinstance(value, EndOfMibView) or oid[:len(col)] != col or oid <= cursor[col]:
                    done.add(col)
                    continue
                result[col][oid[len(col):]] = value
                cursor[col] = oid
            for col in done:
                cursor.pop(col, None)
        return result

    async def discover(self) -> list[_Planned]:
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
        plan: list[_Planned] = []
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
            plan.append(_Planned(oid, s, labels, divisor, frozenset(self.profile.invalid_for(s))))
        return plan

    async def poll(self) -> PollResult:
        now = time.monotonic()
        if self._plan is None or now - self._planned_at > self.rediscover_s:
            self._plan = await self.discover()
            self._planned_at = now
            if not self._plan:
                self._plan = None
                raise PollError("no_data", "no profile OID answered: wrong profile or community?")
        values = await self._get([p.oid for p in self._plan])
        result = PollResult()
        missing = 0
        for p in self._plan:
            raw = values.get(p.oid)
            if raw is None or isinstance(raw, _MISSING):
                missing += 1
                continue
            num = _raw_number(raw)
            if num is None:
                result.bad_values += 1
                continue
            if isinstance(num, int) and num in p.invalid:
                continue
            value = float(Decimal(num) * p.series.scale / p.divisor)
            result.add(p.series.metric, value, **p.labels)
        if missing:
            self._plan = None  # the device changed (outlet removed, firmware): rediscover next time
        if not result.samples:
            raise PollError("bad_data" if result.bad_values else "no_data",
                            f"{result.bad_values} unusable and {missing} missing values")
        return result

    async def close(self) -> None:
        self._transport = None
