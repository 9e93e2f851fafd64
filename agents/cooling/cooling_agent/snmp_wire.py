"""SNMPv1/v2c messages on the wire (BER, RFC 1157 / RFC 3416) for the polling hot path.

Why not pyasn1 here: decoding one 30-varbind response with pysnmp/pyasn1 costs ~3 ms of
CPU and building the request another ~1.2 ms; at 500 PDUs per cycle that alone is over 2 s
on a 2-core manager.  Community-based messages are a fixed, small subset of BER (SEQUENCE,
INTEGER, OCTET STRING, NULL, OBJECT IDENTIFIER and the SMIv2 application types), so this
module encodes and decodes exactly that subset, ~20x faster.  SNMPv3 (USM auth/privacy)
stays on pysnmp.  tests/test_snmp_wire.py cross-checks both directions against pysnmp.

Decoded values are plain Python: int (INTEGER, Counter32/64, Gauge32, TimeTicks), bytes
(OCTET STRING, IpAddress, Opaque), tuple (OID), None (NULL) or one of the exception
sentinels NO_SUCH_OBJECT / NO_SUCH_INSTANCE / END_OF_MIB_VIEW.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

GET, GETNEXT, RESPONSE, GETBULK = 0xA0, 0xA1, 0xA2, 0xA5
VERSIONS = {"1": 0, "2c": 1}


class WireError(ValueError):
    """Bytes that are not a well-formed SNMPv1/v2c message."""


class SnmpException:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


NO_SUCH_OBJECT = SnmpException("noSuchObject")
NO_SUCH_INSTANCE = SnmpException("noSuchInstance")
END_OF_MIB_VIEW = SnmpException("endOfMibView")
MISSING = (NO_SUCH_OBJECT, NO_SUCH_INSTANCE, END_OF_MIB_VIEW)
_EXCEPTIONS = {0x80: NO_SUCH_OBJECT, 0x81: NO_SUCH_INSTANCE, 0x82: END_OF_MIB_VIEW}
_UNSIGNED = {0x41, 0x42, 0x43, 0x46}  # Counter32, Gauge32, TimeTicks, Counter64
_BYTES = {0x04, 0x40, 0x44}  # OCTET STRING, IpAddress, Opaque


# -- encoding ------------------------------------------------------------------------------
def _len(n: int) -> bytes:
    if n < 0x80:
        return bytes((n,))
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes((0x80 | len(body),)) + body


def _tlv(tag: int, body: bytes) -> bytes:
    return bytes((tag,)) + _len(len(body)) + body


def _int(n: int) -> bytes:
    return _tlv(0x02, n.to_bytes(max(1, (n.bit_length() + 8) // 8), "big", signed=True))


def encode_oid(oid: tuple[int, ...]) -> bytes:
    if len(oid) < 2 or oid[0] > 2 or (oid[0] < 2 and oid[1] > 39):
        raise WireError(f"not an encodable OID: {oid}")
    out = bytearray()
    for arc in (oid[0] * 40 + oid[1], *oid[2:]):
        if arc < 0:
            raise WireError(f"negative arc in {oid}")
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.append(0x80 | (arc & 0x7F))
            arc >>= 7
        out.extend(reversed(chunk))
    return _tlv(0x06, bytes(out))


def encode_varbinds(oids: list[tuple[int, ...]]) -> bytes:
    """The request's VarBindList (each value NULL); callers cache it per OID plan."""
    return _tlv(0x30, b"".join(_tlv(0x30, encode_oid(o) + b"\x05\x00") for o in oids))


def encode_request(version: str, community: bytes, pdu_type: int, request_id: int, varbinds: bytes,
                   non_repeaters: int = 0, max_repetitions: int = 0) -> bytes:
    """A whole request message around a pre-encoded VarBindList (see encode_varbinds)."""
    if pdu_type == GETBULK:
        if version == "1":
            raise WireError("GETBULK does not exist in SNMPv1")
        fields = _int(request_id) + _int(non_repeaters) + _int(max_repetitions)
    else:
        fields = _int(request_id) + b"\x02\x01\x00\x02\x01\x00"
    pdu = _tlv(pdu_type, fields + varbinds)
    return _tlv(0x30, _int(VERSIONS[version]) + _tlv(0x04, community) + pdu)


def encode_response(version: int, community: bytes, request_id: int, error_status: int, error_index: int,
                    varbinds: list[tuple[tuple[int, ...], int, bytes]]) -> bytes:
    """A Response-PDU message; each varbind is (oid, value tag, value contents).  Used by the
    loopback responder in sim.py."""
    vbl = _tlv(0x30, b"".join(_tlv(0x30, encode_oid(o) + _tlv(tag, body)) for o, tag, body in varbinds))
    pdu = _tlv(RESPONSE, _int(request_id) + _int(error_status) + _int(error_index) + vbl)
    return _tlv(0x30, _int(version) + _tlv(0x04, community) + pdu)


# -- decoding ------------------------------------------------------------------------------
def _header(data: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """(tag, start of contents, end of contents) of the TLV at pos."""
    if pos + 2 > end:
        raise WireError("truncated")
    tag = data[pos]
    n = data[pos + 1]
    pos += 2
    if n & 0x80:
        k = n & 0x7F
        if k == 0 or k > 4 or pos + k > end:
            raise WireError("bad length")  # indefinite lengths are not allowed in SNMP
        n = int.from_bytes(data[pos:pos + k], "big")
        pos += k
    if pos + n > end:
        raise WireError("truncated")
    return tag, pos, pos + n


def _expect(data: bytes, pos: int, end: int, tag: int) -> tuple[int, int]:
    t, start, stop = _header(data, pos, end)
    if t != tag:
        raise WireError(f"expected tag 0x{tag:02x}, got 0x{t:02x}")
    return start, stop


def _get_int(data: bytes, pos: int, end: int) -> tuple[int, int]:
    start, stop = _expect(data, pos, end, 0x02)
    if start == stop:
        raise WireError("empty INTEGER")
    return int.from_bytes(data[start:stop], "big", signed=True), stop


# every PDU of a profile answers the same OIDs: a cycle of 5,000 targets decodes ~150,000 OIDs,
# a few hundred distinct ones. Bounded, so a device sending random OIDs cannot grow it (issue 39).
@functools.lru_cache(maxsize=4096)
def decode_oid(body: bytes) -> tuple[int, ...]:
    if not body or body[-1] & 0x80:
        raise WireError("bad OID")
    arcs: list[int] = []
    arc = 0
    for b in body:
        arc = (arc << 7) | (b & 0x7F)
        if not b & 0x80:
            arcs.append(arc)
            arc = 0
    first = arcs[0]
    head = (first // 40, first % 40) if first < 80 else (2, first - 80)
    return head + tuple(arcs[1:])


def _value(tag: int, body: bytes):
    if tag == 0x02:
        if not body:
            raise WireError("empty INTEGER")
        return int.from_bytes(body, "big", signed=True)
    if tag in _UNSIGNED:
        return int.from_bytes(body, "big")
    if tag in _BYTES:
        return bytes(body)
    if tag == 0x05:
        return None
    if tag == 0x06:
        return decode_oid(body)
    if tag in _EXCEPTIONS:
        return _EXCEPTIONS[tag]
    raise WireError(f"unknown value tag 0x{tag:02x}")


@dataclass
class Response:
    version: int
    community: bytes
    request_id: int
    error_status: int
    error_index: int
    varbinds: list[tuple[tuple[int, ...], object]]


def decode_response(data: bytes) -> Response:
    return decode_message(data, (RESPONSE,))[1]


def decode_message(data: bytes, pdu_types=(GET, GETNEXT, RESPONSE, GETBULK)) -> tuple[int, Response]:
    """(PDU type, contents) of a v1/v2c message; for GETBULK, error_status and error_index
    hold non-repeaters and max-repetitions (same positions in the PDU)."""
    end = len(data)
    start, stop = _expect(data, 0, end, 0x30)
    version, pos = _get_int(data, start, stop)
    if version not in (0, 1):
        raise WireError(f"not an SNMPv1/v2c message (version {version})")
    c0, pos = _expect(data, pos, stop, 0x04)
    community = bytes(data[c0:pos])
    pdu_type, p0, pdu_end = _header(data, pos, stop)
    if pdu_type not in pdu_types:
        raise WireError(f"unexpected PDU type 0x{pdu_type:02x}")
    request_id, pos = _get_int(data, p0, pdu_end)
    error_status, pos = _get_int(data, pos, pdu_end)
    error_index, pos = _get_int(data, pos, pdu_end)
    pos, vbl_end = _expect(data, pos, pdu_end, 0x30)
    varbinds = []
    while pos < vbl_end:
        vb0, vb_end = _expect(data, pos, vbl_end, 0x30)
        o0, o1 = _expect(data, vb0, vb_end, 0x06)
        tag, v0, v1 = _header(data, o1, vb_end)
        if v1 != vb_end:
            raise WireError("trailing bytes in VarBind")
        varbinds.append((decode_oid(bytes(data[o0:o1])), _value(tag, data[v0:v1])))
        pos = vb_end
    return pdu_type, Response(version, community, request_id, error_status, error_index, varbinds)
