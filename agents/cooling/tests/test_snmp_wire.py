"""The light SNMPv1/v2c codec against pysnmp/pyasn1: same bytes out, same values in."""

from __future__ import annotations

import pytest
from cooling_agent import snmp_wire
from pyasn1.codec.ber import decoder, encoder
from pysnmp.proto import api
from pysnmp.proto.rfc1902 import (
    Counter32,
    Counter64,
    Gauge32,
    Integer32,
    IpAddress,
    ObjectName,
    OctetString,
    TimeTicks,
)
from pysnmp.proto.rfc1905 import EndOfMibView, NoSuchInstance, NoSuchObject

OIDS = [(1, 3, 6, 1, 4, 1, 13742, 6, 5, 2, 3, 1, 4, 1, 1, 5), (1, 3, 6, 1, 2, 1, 1, 1, 0),
        (1, 3, 6, 1, 4, 1, 318, 1, 1, 26, 4, 3, 1, 5, 1), (2, 999, 3), (1, 3, 6, 1, 4, 1, 4294967295, 0)]


@pytest.mark.parametrize("version", ["1", "2c"])
@pytest.mark.parametrize("pdu_type", [snmp_wire.GET, snmp_wire.GETNEXT])
def test_request_decodes_in_pysnmp(version, pdu_type):
    msg = snmp_wire.encode_request(version, b"s3cr\xe9t", pdu_type, 0x7FFFFFFF,
                                   snmp_wire.encode_varbinds(OIDS))
    p = api.PROTOCOL_MODULES[snmp_wire.VERSIONS[version]]
    decoded, rest = decoder.decode(msg, asn1Spec=p.Message())
    assert rest == b""
    assert bytes(p.apiMessage.get_community(decoded)) == b"s3cr\xe9t"
    pdu = p.apiMessage.get_pdu(decoded)
    want = p.GetRequestPDU if pdu_type == snmp_wire.GET else p.GetNextRequestPDU
    assert pdu.isSameTypeWith(want())
    assert int(p.apiPDU.get_request_id(pdu)) == 0x7FFFFFFF
    assert [tuple(n) for n, _ in p.apiPDU.get_varbinds(pdu)] == OIDS
    # byte for byte what pysnmp itself would send
    ref = want()
    p.apiPDU.set_defaults(ref)
    p.apiPDU.set_request_id(ref, 0x7FFFFFFF)
    p.apiPDU.set_varbinds(ref, [(o, p.Null("")) for o in OIDS])
    ref_msg = p.Message()
    p.apiMessage.set_defaults(ref_msg)
    p.apiMessage.set_community(ref_msg, b"s3cr\xe9t")
    p.apiMessage.set_pdu(ref_msg, ref)
    assert encoder.encode(ref_msg) == msg


def test_getbulk_request():
    msg = snmp_wire.encode_request("2c", b"public", snmp_wire.GETBULK, 42, snmp_wire.encode_varbinds(OIDS[:2]),
                                   max_repetitions=25)
    p = api.PROTOCOL_MODULES[1]
    pdu = p.apiMessage.get_pdu(decoder.decode(msg, asn1Spec=p.Message())[0])
    assert pdu.isSameTypeWith(p.GetBulkRequestPDU())
    assert int(p.apiBulkPDU.get_max_repetitions(pdu)) == 25
    assert int(p.apiBulkPDU.get_non_repeaters(pdu)) == 0
    with pytest.raises(snmp_wire.WireError):
        snmp_wire.encode_request("1", b"public", snmp_wire.GETBULK, 1, b"\x30\x00")


def _response(values, version=1, error_status=0, error_index=0, request_id=1234567) -> bytes:
    p = api.PROTOCOL_MODULES[version]
    pdu = p.GetResponsePDU()
    p.apiPDU.set_defaults(pdu)
    p.apiPDU.set_request_id(pdu, request_id)
    p.apiPDU.set_error_status(pdu, error_status)
    p.apiPDU.set_error_index(pdu, error_index)
    p.apiPDU.set_varbinds(pdu, [(OIDS[i % len(OIDS)] + (i,), v) for i, v in enumerate(values)])
    msg = p.Message()
    p.apiMessage.set_defaults(msg)
    p.apiMessage.set_community(msg, b"public")
    p.apiMessage.set_pdu(msg, pdu)
    return encoder.encode(msg)


def test_response_values_match_pysnmp():
    values = [Integer32(-1), Integer32(2**31 - 1), Integer32(-2**31), Gauge32(4294967295), Counter32(0),
              Counter64(2**64 - 1), TimeTicks(123456), OctetString(b"12.5"), OctetString(b""),
              IpAddress("10.1.2.3"), ObjectName((1, 3, 6, 1, 99999)), NoSuchObject(), NoSuchInstance(),
              EndOfMibView(), api.v2c.Null("")]
    want = [-1, 2**31 - 1, -2**31, 4294967295, 0, 2**64 - 1, 123456, b"12.5", b"", b"\x0a\x01\x02\x03",
            (1, 3, 6, 1, 99999), snmp_wire.NO_SUCH_OBJECT, snmp_wire.NO_SUCH_INSTANCE, snmp_wire.END_OF_MIB_VIEW,
            None]
    rsp = snmp_wire.decode_response(_response(values))
    assert (rsp.version, rsp.community, rsp.request_id, rsp.error_status) == (1, b"public", 1234567, 0)
    assert [o for o, _ in rsp.varbinds] == [OIDS[i % len(OIDS)] + (i,) for i in range(len(values))]
    assert [v for _, v in rsp.varbinds] == want


def test_response_long_lengths_and_v1_errors():
    many = [OctetString(b"x" * 300)] * 40  # > 64 KiB total: multi-byte BER lengths
    rsp = snmp_wire.decode_response(_response(many, version=0, error_status=2, error_index=3))
    assert (rsp.version, rsp.error_status, rsp.error_index) == (0, 2, 3)
    assert len(rsp.varbinds) == 40 and rsp.varbinds[-1][1] == b"x" * 300


@pytest.mark.parametrize("junk", [b"", b"\x30", b"\x30\x03\x02\x01\xff garbage", b"\x30\x80\x00\x00",
                                  b"<html>\x00\xff not snmp", b"\x30\x84\xff\xff\xff\xff"])
def test_garbage_is_a_wire_error(junk):
    with pytest.raises(snmp_wire.WireError):
        snmp_wire.decode_response(junk)


def test_every_truncation_is_a_wire_error():
    good = _response([Integer32(5), OctetString(b"abc")])
    for n in range(len(good)):
        with pytest.raises(snmp_wire.WireError):
            snmp_wire.decode_response(good[:n])


def test_request_pdu_is_not_a_response():
    req = snmp_wire.encode_request("2c", b"public", snmp_wire.GET, 1, snmp_wire.encode_varbinds(OIDS[:1]))
    with pytest.raises(snmp_wire.WireError):
        snmp_wire.decode_response(req)
