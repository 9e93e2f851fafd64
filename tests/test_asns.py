"""ASN ranges: reserved ASNs are never handed out, private ranges by default (RFC 6996),
public ASNs only when the spec says so."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import ROOT, spec_with, stack_layout
from topology.errors import SpecError, SpecErrors
from topology.spec import RESERVED_ASNS, asn_is_private, parse


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



# Rules bind fields left at their defaults too (pydantic skips validators on defaults unless told):
# the spec is the example's own YAML, so only the keys written here are set.
def _raw_errors(**changes) -> list[SpecError]:
    data = yaml.safe_load((ROOT / "Pulumi.lab.yaml").read_text())["config"]["superpod:pod"]
    for key, value in changes.items():
        data[key] = {**data.get(key, {}), **value}
    with pytest.raises(SpecErrors) as e:
        parse(data)
    return e.value.errors


@pytest.mark.parametrize("addressing,reserved_or_rule", [
    ({"asn_first": 23456}, "23456"),                      # AS_TRANS, asn_last left at its default
    ({"asn_first": 64500}, "64496-64511"),                # documentation range
    ({"asn_first": 100, "asn_last": 400}, "RFC 6996"),    # public, asn_public left at its default
])
def test_asn_rules_bind_defaults(addressing, reserved_or_rule):
    errs = [str(e) for e in _raw_errors(addressing=addressing)]
    assert any(e.startswith("addressing.asn_") and reserved_or_rule in e for e in errs), errs


def test_infiniband_without_any_subnet_manager_is_refused_when_left_at_defaults():
    errs = _raw_errors(compute_fabric={"kind": "infiniband", "switch_model": "qm9700"})
    assert [e.field for e in errs] == ["compute_fabric.switch_subnet_manager"]


def test_a_mistyped_key_names_the_field_it_meant():
    errs = _raw_errors(compute_fabric={"swich_os": "sonic"}, racks={"rack_unit": 44})
    assert {e.field: e.rule for e in errs} == {
        "compute_fabric.swich_os": "unknown key (not part of the spec); did you mean 'switch_os'?",
        "racks.rack_unit": "unknown key (not part of the spec); did you mean 'rack_units'?",
    }
