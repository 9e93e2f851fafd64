"""Bad input to rail_network and host_network fails in their validate step, naming the field and the
rule it breaks, before anything is written. Checks that always run share one assert per role
(rail_network's per-rail name and RoCE or IPoIB address checks too: fewer host-tasks per node,
issue 39): the message must name each rule that failed and only those. Run by ansible-playbook on
the roles' own validate.yml, each case one local host: the lab plan's node (the molecule scenarios' inventory)
with one field broken."""

from __future__ import annotations

import copy

import pytest

from tests.role_files import ROOT, load
from tests.roles.playbook import run_play

RAIL = ROOT / "roles/rail_network"
HOST = ROOT / "roles/host_network"
RAIL_NODE = load(RAIL / "molecule/default/molecule.yml")["provisioner"]["inventory"]["host_vars"]["rail-network-node01"]
HOST_NODE = dict(load(HOST / "molecule/default/molecule.yml")["provisioner"]["inventory"]["group_vars"]["gpu_nodes"],
                 superpod_storage_prefix="10.24.0.0/14")


def _rails(**changes) -> list[dict]:
    """The lab node's rails, rail 0 changed (None drops the key)."""
    rails = copy.deepcopy(RAIL_NODE["rails"])
    for key, value in changes.items():
        if value is None:
            rails[0].pop(key, None)
        else:
            rails[0][key] = value
    return rails


def _no_addresses() -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("address", "peer")} for r in RAIL_NODE["rails"]]


# case -> (host vars over the lab node, the words the failure must hold (None: passes), words it must not)
RAIL_CASES = {
    "as-planned": ({}, None, []),
    "duplicate-rail": ({"rails": _rails(rail=1)}, ["rail_network_rails (rails)", "must be unique"], ["backend"]),
    "unknown-backend": ({"rail_network_backend": "ifupdown"}, ["rail_network_backend must be one of", "'ifupdown'"],
                        ["unique"]),
    "peer-outside-subnet": ({"rails": _rails(peer="100.64.9.0")},
                            ["rail 0 (enp24s0np0) needs address as IPv4", "peer '100.64.9.0'"], ["IPoIB"]),
    "address-without-prefix": ({"rails": _rails(address="100.64.0.1")}, ["rail 0 (enp24s0np0)", "a.b.c.d/len"],
                               ["IPoIB"]),
    "ipoib-without-address": ({"superpod_fabric_kind": "infiniband", "rail_network_ipoib_enabled": True,
                               "rails": _no_addresses()},
                              ["rail_network_ipoib_addresses: rail 0", "has no IPoIB address"], ["peer"]),
    "ipoib-address-from-the-map": ({"superpod_fabric_kind": "infiniband", "rail_network_ipoib_enabled": True,
                                    "rails": _no_addresses(),
                                    "rail_network_ipoib_addresses": {r["rail"]: f"10.30.{r['rail']}.1/24"
                                                                     for r in RAIL_NODE["rails"]}}, None, []),
    "infiniband-without-ipoib": ({"superpod_fabric_kind": "infiniband", "rails": _no_addresses()}, None, []),
    "netdev-too-long": ({"rails": _rails(netdev="enp24s0np0-way-too-long")},
                        ["rail 0 netdev 'enp24s0np0-way-too-long' is not a valid interface name"], ["needs address"]),
    # two checks broken at once (they were two asserts, the first stopping the host): the one assert names both
    "unknown-backend-and-peer-outside-subnet": ({"rail_network_backend": "ifupdown",
                                                 "rails": _rails(peer="100.64.9.0")},
                                                ["rail_network_backend must be one of", "peer '100.64.9.0'"],
                                                ["unique", "IPoIB"]),
    "infiniband-without-ipoib-bad-name": ({"superpod_fabric_kind": "infiniband", "rails": _no_addresses()[:1]
                                           + [dict(_no_addresses()[1], netdev="ib 1")]},
                                          ["netdev 'ib 1' is not a valid interface name"], ["IPoIB"]),
}
HOST_CASES = {
    "as-planned": ({}, None, []),
    "unknown-backend": ({"host_network_backend": "ifupdown"}, ["host_network_backend: must be one of", "'ifupdown'"],
                        ["superpod_storage_nics"]),
    "duplicate-storage-nic": ({"superpod_storage_nics": HOST_NODE["superpod_storage_nics"][:1] * 2},
                              ["superpod_storage_nics / host_network_storage_routes", "must be unique"],
                              ["host_network_backend"]),
    "route-not-a-prefix": ({"superpod_storage_prefix": "not-a-prefix"},
                           ["host_network_storage_routes", "prefixes a.b.c.d/len", "'not-a-prefix'"],
                           ["host_network_backend"]),
    "bond-member-is-the-bond": ({"superpod_inband_members": ["bond0"]}, ["superpod_inband_*: the bond"],
                                ["host_network_backend", "superpod_storage_nics"]),
    # two checks broken at once: the one assert names both
    "unknown-backend-and-bad-gateway": ({"host_network_backend": "ifupdown", "superpod_inband_gateway": "192.0.2.1"},
                                        ["host_network_backend: must be one of", "gateway '192.0.2.1'"],
                                        ["superpod_storage_nics"]),
    # a storage NIC's own rules and a shared rule broken at once: one assert names both
    "unknown-backend-and-bad-nic-address": ({"host_network_backend": "ifupdown", "superpod_storage_nics": [
        dict(HOST_NODE["superpod_storage_nics"][0], address="10.24.0.2")] + HOST_NODE["superpod_storage_nics"][1:]},
        ["host_network_backend: must be one of", "superpod_storage_nics: 'enp41s0f0np0' needs",
         "got address '10.24.0.2'"],
        ["enp170s0f0np0' needs"]),
}


def _failure(results: list[dict]) -> str | None:
    """The message of the task that failed (each failed item's, for a loop), or None."""
    failed = [r for r in results if r.get("failed")]
    if not failed:
        return None
    items = [i["msg"] for i in failed[0].get("results", []) if i.get("failed")]
    return " ".join(items) if items else failed[0]["msg"]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    out = {}
    for role, path, node, cases in (("rail_network", RAIL, RAIL_NODE, RAIL_CASES),
                                    ("host_network", HOST, HOST_NODE, HOST_CASES)):
        family = load(path / "vars/Debian.yml")  # the family backend, as the role loads it on Debian 12
        hosts = {case: dict(node, **family, **changes) for case, (changes, _, _) in cases.items()}
        tasks = [{"name": "validate", "ansible.builtin.include_role": {"name": role, "tasks_from": "validate.yml"}}]
        results = run_play(tmp_path_factory.mktemp(role), tasks, hosts)
        out[role] = {case: _failure(results[case]) for case in cases}
    return out


@pytest.mark.parametrize(("role", "case"), [("rail_network", c) for c in RAIL_CASES]
                         + [("host_network", c) for c in HOST_CASES])
def test_bad_input_fails_naming_the_field_and_the_rule(outcomes, role, case):
    _, want, unwanted = (RAIL_CASES if role == "rail_network" else HOST_CASES)[case]
    got = outcomes[role][case]
    if want is None:
        assert got is None, got
        return
    assert got is not None, f"{case} passed validation"
    for words in want:
        assert words in got, got
    for words in unwanted:
        assert words not in got, got
