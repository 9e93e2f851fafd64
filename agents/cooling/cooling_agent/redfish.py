"""Redfish pollers: DMTF CoolingUnit (ThermalEquipment/CDUs/{id}) and PowerDistribution
(PowerEquipment/RackPDUs/{id}).  Sub-resources of one device are fetched concurrently.

A device is not trusted to be small: bodies are read in chunks up to a byte limit, gzip and
deflate are inflated here (the session's auto-decompression is off) up to the same limit,
collections may list at most ``max_members`` members, and large bodies are parsed in a
worker thread, so one hostile device (a gzip bomb, 20,000 members) can neither stall the
event loop nor grow the agent's memory; it only fails its own poll with reason too_large."""

from __future__ import annotations

import asyncio
import json
import zlib
from concurrent.futures import Executor
from typing import Any

import aiohttp

from .catalog import health_value
from .config import DEFAULT_PORTS, Cdu, Pdu
from .credentials import Credential
from .model import PollError, PollResult

_LOOPS = {"PrimaryCoolantConnectors": "primary", "SecondaryCoolantConnectors": "secondary"}
_CONNECTOR_READINGS = {
    "SupplyTemperatureCelsius": "cdu_supply_temperature_celsius",
    "ReturnTemperatureCelsius": "cdu_return_temperature_celsius",
    "FlowLitersPerMinute": "cdu_flow_liters_per_minute",
    "DeltaPressurekPa": "cdu_delta_pressure_kpa",
    "SupplyPressurekPa": "cdu_supply_pressure_kpa",
    "ReturnPressurekPa": "cdu_return_pressure_kpa",
    "HeatRemovedkW": "cdu_heat_removed_kw",
}


# bytes on the wire and after inflating: a CoolingUnit or one outlet is a few KiB, a 48-outlet
# collection ~5 KiB; parsing 1 MiB holds the GIL ~20 ms (4 MiB: ~100 ms, see the bench)
DEFAULT_MAX_BODY = 1 << 20
DEFAULT_MAX_MEMBERS = 256  # a 48-outlet PDU lists 48
# all bodies of one poll of one target, on the wire and inflated: a 48-outlet PDU reads ~200 KiB;
# 256 members of 1 MiB each (every one within both limits above) stop at this budget
DEFAULT_MAX_POLL_BYTES = 4 << 20
INLINE_PARSE = 64 << 10  # smaller bodies parse on the loop (a thread hop costs more than they do)
_CHUNK = 64 << 10


def inflate(raw: bytes, encoding: str, limit: int) -> bytes:
    """``raw`` decoded per Content-Encoding, at most ``limit`` bytes out (a bomb stops there)."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise PollError("bad_data", f"unsupported Content-Encoding {encoding[:20]!r}")
    wbits = 16 + zlib.MAX_WBITS if "gzip" in encoding else zlib.MAX_WBITS
    try:
        d = zlib.decompressobj(wbits)
        out = d.decompress(raw, limit + 1)
    except zlib.error as exc:
        raise PollError("bad_data", f"{encoding} body does not inflate") from exc
    if len(out) > limit or d.unconsumed_tail:
        raise PollError("too_large", f"body inflates past {limit} bytes")
    return out


def parse_body(raw: bytes, encoding: str, limit: int) -> Any:
    """Inflate and parse a JSON body (runs in a worker thread for large bodies)."""
    return parse_sized(raw, encoding, limit)[0]


def parse_sized(raw: bytes, encoding: str, limit: int) -> tuple[Any, int]:
    """The parsed body and its inflated size (charged to the poll's byte budget)."""
    body = inflate(raw, encoding, limit)
    try:
        # NaN / Infinity (not JSON, but Python's parser reads them) reach PollResult.add,
        # which counts them as unusable readings: the target is then exported as degraded
        return json.loads(body), len(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise PollError("bad_data", "response is not JSON") from exc


class PollBudget:
    """Bytes one poll of one target may still read (wire and inflated together)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.used = 0

    def left(self) -> int:
        return self.limit - self.used

    def charge(self, n: int, path: str) -> None:
        self.used += n
        if self.used > self.limit:
            raise PollError("too_large", f"GET {path}: this poll read more than {self.limit} bytes "
                                         "(all bodies of the target together)")


def _reading(obj: Any, key: str) -> object:
    """``obj[key].Reading`` as sent (PollResult.add judges it: a wrong type costs that sample)."""
    v = obj.get(key) if isinstance(obj, dict) else None
    return v.get("Reading") if isinstance(v, dict) else v


def _status(r: PollResult, obj: Any) -> dict:
    """``obj.Status`` as an object; a Status of another type (a string) is one bad value."""
    status = obj.get("Status") if isinstance(obj, dict) else None
    if status is None or isinstance(status, dict):
        return status or {}
    r.bad_values += 1
    return {}


def _health(r: PollResult, status: dict) -> float | None:
    health = status.get("Health")
    if health is not None and not isinstance(health, str):
        r.bad_values += 1
    return health_value(health)


def _odata_id(obj: Any) -> str | None:
    return obj.get("@odata.id") if isinstance(obj, dict) else None


class RedfishClient:
    def __init__(self, session: aiohttp.ClientSession, target: Pdu | Cdu, cred: Credential, timeout_s: float, *,
                 max_body: int = DEFAULT_MAX_BODY, max_members: int = DEFAULT_MAX_MEMBERS,
                 max_poll_bytes: int = DEFAULT_MAX_POLL_BYTES, executor: Executor | None = None):
        self.max_body = max_body
        self.max_members = max_members
        self.max_poll_bytes = max_poll_bytes
        self.budget = PollBudget(max_poll_bytes)
        self.executor = executor
        port = target.port or (80 if target.scheme == "http" else DEFAULT_PORTS["redfish"])
        self.base = f"{target.scheme}://{target.address}:{port}"
        self.session = session
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self.ssl = None if target.verify_tls else False
        self.auth = (aiohttp.BasicAuth(cred.username, cred.password.get_secret_value())
                     if cred.username and cred.password else None)

    def begin_poll(self) -> None:
        """A fresh byte budget; requests of an earlier poll still running keep charging theirs."""
        self.budget = PollBudget(self.max_poll_bytes)

    async def get(self, path: str) -> dict:
        budget = self.budget
        budget.charge(0, path)  # spent already (a sibling request used it up): do not even ask
        try:
            async with self.session.get(self.base + path, auth=self.auth, timeout=self.timeout, ssl=self.ssl,
                                        headers={"Accept": "application/json",
                                                 "Accept-Encoding": "gzip, deflate"}) as resp:
                if resp.status in (401, 403):
                    raise PollError("auth", f"GET {path}: HTTP {resp.status}")
                if resp.status >= 400:
                    raise PollError("http", f"GET {path}: HTTP {resp.status}")
                raw = await self._read(resp, path, budget)
                encoding = resp.headers.get("Content-Encoding", "")
        except asyncio.TimeoutError as exc:
            raise PollError("timeout", f"GET {path}: timed out") from exc
        except aiohttp.ClientError as exc:
            raise PollError("unreachable", f"GET {path}: {exc.__class__.__name__}") from exc
        try:
            limit = min(self.max_body, max(budget.left(), 0))  # inflated bytes count against the poll too
            if len(raw) <= INLINE_PARSE and not encoding:
                doc, size = parse_sized(raw, encoding, limit)
            else:
                loop = asyncio.get_running_loop()
                doc, size = await loop.run_in_executor(self.executor, parse_sized, raw, encoding, limit)
        except PollError as exc:
            raise PollError(exc.reason, f"GET {path}: {exc}") from None
        if encoding:
            budget.charge(size, path)
        if not isinstance(doc, dict):
            raise PollError("bad_data", f"GET {path}: response is not a JSON object")
        return doc

    async def _read(self, resp: aiohttp.ClientResponse, path: str, budget: PollBudget) -> bytes:
        """The raw body, refused as soon as it passes ``max_body`` or the poll's budget (declared or read)."""
        if resp.content_length is not None and resp.content_length > self.max_body:
            raise PollError("too_large", f"GET {path}: Content-Length {resp.content_length} > {self.max_body}")
        if resp.content_length is not None and resp.content_length > budget.left():
            budget.charge(resp.content_length, path)
        buf = bytearray()
        async for chunk in resp.content.iter_chunked(_CHUNK):
            buf += chunk
            budget.charge(len(chunk), path)
            if len(buf) > self.max_body:
                raise PollError("too_large", f"GET {path}: body larger than {self.max_body} bytes")
        return bytes(buf)

    async def members(self, link: Any) -> list[dict]:
        """Fetch a collection (given its link object) and then all of its members."""
        path = _odata_id(link)
        if not path:
            return []
        coll = await self.get(path)
        members = coll.get("Members", [])
        if not isinstance(members, list):
            raise PollError("bad_data", f"GET {path}: Members is not a list")
        if len(members) > self.max_members:
            raise PollError("too_large", f"GET {path}: {len(members)} members, limit {self.max_members}")
        paths = [_odata_id(m) for m in members]
        return list(await asyncio.gather(*[self.get(p) for p in paths if p]))


class RedfishCduPoller:
    def __init__(self, session: aiohttp.ClientSession, target: Cdu, cred: Credential, timeout_s: float, **limits):
        self.target = target
        self.client = RedfishClient(session, target, cred, timeout_s, **limits)
        self.path = f"/redfish/v1/ThermalEquipment/CDUs/{target.redfish_id}"

    async def poll(self) -> PollResult:
        c = self.client
        c.begin_poll()
        cdu = await c.get(self.path)
        if "PrimaryCoolantConnectors" not in cdu and "SecondaryCoolantConnectors" not in cdu:
            raise PollError("bad_data", f"{self.path} is not a CoolingUnit")
        r = PollResult()
        r.add("cdu_health", _health(r, _status(r, cdu)))

        async def empty() -> list:
            return []

        async def one(link: Any) -> dict | None:
            return await c.get(_odata_id(link)) if _odata_id(link) else None

        loops = list(_LOOPS)
        results = await asyncio.gather(
            *[c.members(cdu.get(k)) if k in cdu else empty() for k in loops],
            c.members(cdu.get("Pumps")),
            c.members(cdu.get("Reservoirs")),
            one(cdu.get("LeakDetection")),
            one(cdu.get("EnvironmentMetrics")),
        )
        for key, connectors in zip(loops, results[:2], strict=True):
            for conn in connectors:
                with r.member():
                    labels = {"loop": _LOOPS[key], "connector": str(conn.get("Id", ""))}
                    for prop, metric in _CONNECTOR_READINGS.items():
                        r.add(metric, _reading(conn, prop), **labels)
        pumps, reservoirs, leak, env = results[2:]
        for pump in pumps:
            with r.member():
                status = _status(r, pump)
                labels = {"pump": str(pump.get("Id", ""))}
                r.add("cdu_pump_speed_percent", _reading(pump, "PumpSpeedPercent"), **labels)
                r.add("cdu_pump_health", _health(r, status), **labels)
                if "State" in status:
                    r.add("cdu_pump_enabled", 1.0 if status.get("State") == "Enabled" else 0.0, **labels)
        for res in reservoirs:
            with r.member():
                if "FluidLevelStatus" in res:
                    r.add("cdu_reservoir_level_ok", 1.0 if res["FluidLevelStatus"] == "OK" else 0.0,
                          reservoir=str(res.get("Id", "")))
        if leak:
            link = leak.get("LeakDetectors")
            if link is None and _odata_id(leak):
                # some services (the DMTF mockup among them) host the collection at its
                # conventional path without linking it from LeakDetection
                link = {"@odata.id": _odata_id(leak).rstrip("/") + "/LeakDetectors"}
            try:
                detectors = await c.members(link)
            except PollError as exc:
                if exc.reason != "http":
                    raise
                detectors = []
            if detectors:
                for d in detectors:
                    r.add("cdu_leak_detector_state", self._detector(d), detector=str(d.get("Id", "")))
            else:  # older services only list detectors inline in LeakDetectorGroups
                for group in leak.get("LeakDetectorGroups", []):
                    for d in group.get("Detectors", []):
                        with r.member():
                            name = (d.get("DataSourceUri") or d.get("DeviceName") or "").rstrip("/").split("/")[-1]
                            r.add("cdu_leak_detector_state", self._detector(d), detector=name)
        if env:
            r.add("cdu_ambient_temperature_celsius", _reading(env, "TemperatureCelsius"))
            r.add("cdu_ambient_humidity_percent", _reading(env, "HumidityPercent"))
        return r

    @staticmethod
    def _detector(d: dict) -> float:
        state = d.get("DetectorState")
        v = health_value(state)
        if v is None:
            # an unknown or missing state is treated as a fault, not as "no leak"
            raise PollError("bad_data", f"leak detector {d.get('Id')}: DetectorState {state!r}")
        return v


class RedfishPduPoller:
    def __init__(self, session: aiohttp.ClientSession, target: Pdu, cred: Credential, timeout_s: float, **limits):
        self.target = target
        self.client = RedfishClient(session, target, cred, timeout_s, **limits)
        self.path = f"/redfish/v1/PowerEquipment/RackPDUs/{target.redfish_id}"

    async def poll(self) -> PollResult:
        c = self.client
        c.begin_poll()
        pdu = await c.get(self.path)
        if "Metrics" not in pdu and "Mains" not in pdu:
            raise PollError("bad_data", f"{self.path} is not a PowerDistribution resource")
        r = PollResult()

        async def one(link: Any) -> dict | None:
            return await c.get(_odata_id(link)) if _odata_id(link) else None

        metrics, mains, branches, outlets = await asyncio.gather(
            one(pdu.get("Metrics")), c.members(pdu.get("Mains")), c.members(pdu.get("Branches")),
            c.members(pdu.get("Outlets")))
        if metrics:
            pw = metrics.get("PowerWatts") or {}
            r.add("pdu_power_watts", _reading(metrics, "PowerWatts"))
            if isinstance(pw, dict):
                r.add("pdu_apparent_power_va", pw.get("ApparentVA"))
            r.add("pdu_energy_kwh", _reading(metrics, "EnergykWh"))
            r.add("pdu_inlet_temperature_celsius", _reading(metrics, "TemperatureCelsius"), sensor="pdu")
            r.add("pdu_inlet_humidity_percent", _reading(metrics, "HumidityPercent"), sensor="pdu")
        for m in mains:
            with r.member():
                r.add("pdu_frequency_hz", _reading(m, "FrequencyHz"))
                for line, v in (m.get("PolyPhaseCurrentAmps") or {}).items():
                    if line.startswith("Line"):
                        r.add("pdu_phase_current_amps", _reading({"x": v}, "x"), phase="L" + line[4:])
                for pair, v in (m.get("PolyPhaseVoltage") or {}).items():
                    if pair.endswith("ToNeutral"):
                        r.add("pdu_phase_voltage_volts", _reading({"x": v}, "x"), phase="L" + pair[4:-9])
                for pair, v in (m.get("PolyPhasePowerWatts") or {}).items():
                    if pair.endswith("ToNeutral"):
                        r.add("pdu_phase_power_watts", _reading({"x": v}, "x"), phase="L" + pair[4:-9])
        for b in branches:
            with r.member():
                labels = {"branch": str(b.get("Id", ""))}
                r.add("pdu_branch_current_amps", _reading(b, "CurrentAmps"), **labels)
                r.add("pdu_branch_power_watts", _reading(b, "PowerWatts"), **labels)
        for o in outlets:
            with r.member():
                labels = {"outlet": str(o.get("Id", ""))}
                r.add("pdu_outlet_current_amps", _reading(o, "CurrentAmps"), **labels)
                r.add("pdu_outlet_power_watts", _reading(o, "PowerWatts"), **labels)
                r.add("pdu_outlet_energy_kwh", _reading(o, "EnergykWh"), **labels)
        if not r.samples:
            raise PollError("no_data", f"{self.path}: no readings")
        return r
