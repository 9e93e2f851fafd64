"""The credential slots of a switch: which secrets the push fills in from the Ansible vault.

A rendered configuration never holds a secret. Where a switch needs one (an SNMPv3 user's
passwords, a local account's password hash, the TACACS+ and RADIUS shared secrets), the plan writes
`credentials.json` beside the switch's files: the names and protocols the spec gives, and the
vault variable each secret comes from. roles/switch_fabric reads it at push time and merges the
vault's values into what it pushes (filter_plugins/switch_fabric_credentials.py), keeping them
out of its logs, its state and its diffs.
"""

from __future__ import annotations

import json

from topology.render.switches.intent import SwitchIntent
from topology.spec import RADIUS_VAULT_VAR, SNMP_VAULT_VAR, TACACS_VAULT_VAR, USERS_VAULT_VAR

FILENAME = "credentials.json"


def credential_slots(sw: SwitchIntent) -> dict:
    """{} when the switch needs no secret."""
    sv, out, vault = sw.services, {}, {}
    if sv.snmp_users:
        out["snmp_users"] = [{"name": u.name, "auth": u.auth, "priv": u.priv} for u in sv.snmp_users]
        vault["snmp_users"] = SNMP_VAULT_VAR
    if sv.local_users and sw.os == "cumulus":  # the spec refuses local users where a fabric runs SONiC
        out["local_users"] = [name for name, _role in sv.local_users]
        vault["local_users"] = USERS_VAULT_VAR
    if sv.tacacs:
        out["tacacs_key"] = True
        vault["tacacs_key"] = TACACS_VAULT_VAR
    if sv.radius:
        out["radius_key"] = True
        vault["radius_key"] = RADIUS_VAULT_VAR
    if out:
        out["vault"] = vault
    return out


def render_credentials(sw: SwitchIntent) -> str | None:
    slots = credential_slots(sw)
    return json.dumps(slots, indent=2, sort_keys=True) + "\n" if slots else None
