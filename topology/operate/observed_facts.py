"""The part of a host's facts the roles decide on (grep `ansible_facts[` in roles/): the OS,
kernel, CPU and virtualization, and which interface holds which IPv4 address (host_network's
guard for the link Ansible is connected through). Recorded after a full apply and compared by
the record check, so a host whose kernel or addresses changed is not skipped. Interfaces
without an IPv4 address (a container's veth pairs, which come and go) are left out."""

from __future__ import annotations

KEYS = ("distribution", "distribution_major_version", "os_family", "kernel", "architecture",
        "virtualization_role", "virtualization_type", "processor_vcpus", "processor")


def observed_facts(facts: dict) -> dict:
    """The decision-relevant subset of ansible_facts (keys with or without `ansible_`)."""
    facts = {k.removeprefix("ansible_"): v for k, v in (facts or {}).items()}
    out = {k: facts[k] for k in KEYS if k in facts}
    default = facts.get("default_ipv4") or {}
    out["default_ipv4"] = {k: default.get(k) for k in ("interface", "address") if default.get(k)}
    addresses = {}
    for name in facts.get("interfaces") or []:
        ipv4 = (facts.get(str(name).replace("-", "_").replace(".", "_")) or {}).get("ipv4") or {}
        if isinstance(ipv4, dict) and ipv4.get("address"):
            addresses[str(name)] = ipv4["address"]
    out["ipv4_addresses"] = dict(sorted(addresses.items()))
    return out
