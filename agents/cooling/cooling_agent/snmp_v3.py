"""SNMPv3 (USM authentication and privacy) through pysnmp's engine.  Apart from snmp.py so
that an agent without v3 targets never imports pysnmp (most of the agent's start-up time)."""

from __future__ import annotations

from pysnmp.hlapi.v3arch.asyncio import (
    ContextData,
    ObjectIdentity,
    ObjectType,
    SnmpEngine,
    UdpTransportTarget,
    UsmUserData,
    bulk_cmd,
    get_cmd,
)
from pysnmp.hlapi.v3arch.asyncio import auth as v3auth
from pysnmp.proto.rfc1905 import EndOfMibView, NoSuchInstance, NoSuchObject
from pysnmp.smi import builder, view

from . import snmp_wire
from .config import DEFAULT_PORTS, Pdu
from .credentials import Credential
from .model import PollError
from .snmp_wire import GETBULK

_AUTH = {"md5": v3auth.USM_AUTH_HMAC96_MD5, "sha": v3auth.USM_AUTH_HMAC96_SHA,
         "sha256": v3auth.USM_AUTH_HMAC192_SHA256, "sha512": v3auth.USM_AUTH_HMAC384_SHA512}
_PRIV = {"des": v3auth.USM_PRIV_CBC56_DES, "aes": v3auth.USM_PRIV_CFB128_AES,
         "aes256": v3auth.USM_PRIV_CFB256_AES}
_PYSNMP_MISSING = {NoSuchObject: snmp_wire.NO_SUCH_OBJECT, NoSuchInstance: snmp_wire.NO_SUCH_INSTANCE,
                   EndOfMibView: snmp_wire.END_OF_MIB_VIEW}


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


def _plain(value):
    """A pysnmp (v3 path) value as the same plain value snmp_wire decodes."""
    for cls, sentinel in _PYSNMP_MISSING.items():
        if isinstance(value, cls):
            return sentinel
    if hasattr(value, "asOctets"):
        return bytes(value.asOctets())
    if hasattr(value, "asTuple"):
        return tuple(value.asTuple())
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class V3Session:
    """SNMPv3 through pysnmp's engine (USM keys, engine-id discovery, privacy)."""

    def __init__(self, engine: SnmpEngine, target: Pdu, cred: Credential, timeout_s: float):
        if not cred.username:
            raise PollError("config", f"{target.name}: SNMPv3 needs a username in credentials")
        kw = {}
        if cred.auth_key:
            kw["authKey"] = cred.auth_key.get_secret_value()
            kw["authProtocol"] = _AUTH[(cred.auth_protocol or "sha").lower()]
        if cred.priv_key:
            kw["privKey"] = cred.priv_key.get_secret_value()
            kw["privProtocol"] = _PRIV[(cred.priv_protocol or "aes").lower()]
        self.engine = engine
        self.target = target
        self.timeout_s = timeout_s
        self._auth = UsmUserData(cred.username, **kw)
        self._context = ContextData(contextName=target.context or "")
        self._transport: UdpTransportTarget | None = None

    async def request(self, pdu_type: int, oids: list[tuple[int, ...]], max_repetitions: int = 0):
        if self._transport is None:
            port = self.target.port or DEFAULT_PORTS["snmp"]
            self._transport = await UdpTransportTarget.create(
                (self.target.address, port), timeout=self.timeout_s, retries=0)
        vbs = [ObjectType(ObjectIdentity(_oid_str(o))) for o in oids]
        if pdu_type == GETBULK:
            ei, es, ex, out = await bulk_cmd(self.engine, self._auth, self._transport, self._context,
                                             0, max_repetitions, *vbs, lookupMib=False)
        else:
            ei, es, ex, out = await get_cmd(self.engine, self._auth, self._transport, self._context,
                                            *vbs, lookupMib=False)
        if ei:
            text = str(ei)
            raise PollError("timeout" if "timeout" in text.lower() else "protocol", text)
        return snmp_wire.Response(3, b"", 0, int(es), int(ex), [(tuple(n), _plain(v)) for n, v in out])
