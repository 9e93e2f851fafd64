"""ASN ranges: reserved ASNs are never handed out, private ranges by default (RFC 6996),
public ASNs only when the spec says so."""

from __future__ import annotations

import pytest

from tests.conftest import spec_with, stack_layout
from topology.errors import SpecError, SpecErrors
from topology.spec import RESERVED_ASNS, asn_is_private


def _errors(**addressing) -> list[str]:
    with pytest.raises((SpecError, SpecErrors)) as e:
        spec_with("lab", addressing=addressing)
    errs = e.value.errors if isinstance(e.value, SpecErrors) else [e.value]
    return [str(x) for x in errs]


@pytest.mark.parametrize("first,last,reserved", [
    (23000, 24000, "23456"),               # AS_TRANS, RFC 6793
    (64490, 64520, "64496-64511"),          # documentation, RFC 5398
    (65530, 65540, "65535"),                # RFC 7300
    (65540, 65560, "65536-65551"),          # documentation, RFC 5398
    (4294967000, 4294967295, "4294967295"),  # RFC 7300
])
def test_a_range_holding_a_reserved_asn_is_refused(first, last, reserved):
    errs = _errors(asn_first=first, asn_last=last, asn_public=True)
    assert any(e.startswith("addressing.asn_") and reserved in e for e in errs), errs


def test_public_asns_need_the_spec_to_say_so():
    errs = _errors(asn_first=13335, asn_last=13400)
    assert any("addressing.asn_public" in e and "RFC 6996" in e for e in errs), errs
    spec = spec_with("lab", addressing={"asn_first": 13335, "asn_last": 13400, "asn_public": True})
    assert spec.addressing.asn_public


@pytest.mark.parametrize("first,last", [(64512, 65534), (4200000000, 4294967294)])
def test_private_ranges_are_accepted(first, last):
    assert spec_with("lab", addressing={"asn_first": first, "asn_last": last}).addressing.asn_first == first


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "roce-8k"])
def test_example_pods_use_only_private_unreserved_asns(stack):
    for asn in stack_layout(stack).asns:
        assert asn_is_private(asn.asn), asn
        assert not any(lo <= asn.asn <= hi for lo, hi, _ in RESERVED_ASNS), asn
