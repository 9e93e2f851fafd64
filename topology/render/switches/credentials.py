"""The credential slots of a switch: which secrets the push fills in from the Ansible vault.

A rendered configuration never holds a secret. Where a switch needs one (an SNMPv3 user's
passwords), the plan writes `credentials.json` beside the switch's files: the names and
protocols the spec gives, and the vault variable each secret comes from. roles/switch_fabric
reads it at push time and merges the vault's values into what it pushes
(filter_plugins/switch_fabric_credentials.py), keeping them out of its logs and state.
"""

from __future__ import annotations

import json

from topology.render.switches.intent import SwitchIntent
from topology.spec import SNMP_VAULT_VAR

FILENAME = "credentials.json"


def credential_slots(sw: SwitchIntent) -> dict:
    """{} when the switch needs no secret."""
    users = sw.services.snmp_users
    if not users:
        return {}
    return {"snmp_users": [{"name": u.name, "auth": u.auth, "priv": u.priv} for u in users],
            "vault_variable": SNMP_VAULT_VAR}


def render_credentials(sw: SwitchIntent) -> str | None:
    slots = credential_slots(sw)
    return json.dumps(slots, indent=2, sort_keys=True) + "\n" if slots else None
