"""Secrets into the pushed configuration, and out of everything else.

The plan writes no secret: a switch that needs one has `credentials.json` (names, protocols and
the vault variable, topology/render/switches/credentials.py). At push time the role merges the
vault's values into the planned configuration (`switch_fabric_with_credentials`) and compares,
records and diffs only a redacted copy (`switch_fabric_redact`: every secret replaced by a digest
of it), so a drift run still sees a changed password but never prints one.
"""

from __future__ import annotations

import copy
import hashlib
import json

try:
    from ansible.errors import AnsibleFilterError
except ImportError:  # imported outside Ansible (tests)
    AnsibleFilterError = ValueError

MIN_LENGTH = 8  # SNMPv3 (RFC 3414) and SONiC's sonic-snmp: 8 characters at least
FORBIDDEN = set(" :@")  # sonic-snmp's password pattern '[^ @:]*'


def switch_fabric_credential_problems(slots: dict, secrets: dict) -> list[str]:
    """What the vault lacks for this switch, naming variables, never values: [] when complete."""
    var = (slots or {}).get("vault_variable", "vault_switch_snmp_users")
    problems = []
    for user in (slots or {}).get("snmp_users", []):
        entry = (secrets or {}).get(user["name"])
        if not isinstance(entry, dict):
            problems.append(f"{var}.{user['name']}: missing (SNMPv3 user {user['name']} needs auth and priv "
                            "passwords from the vault)")
            continue
        for kind in ("auth", "priv"):
            pw, where = entry.get(kind), f"{var}.{user['name']}.{kind}"
            if not isinstance(pw, str) or not pw:
                problems.append(f"{where}: missing")
            elif len(pw) < MIN_LENGTH:
                problems.append(f"{where}: shorter than {MIN_LENGTH} characters (SNMPv3 refuses it)")
            elif FORBIDDEN & set(pw):
                problems.append(f"{where}: contains a space, ':' or '@' (SONiC's SNMP model refuses them)")
    return problems


def _snmp_secrets(slots: dict, secrets: dict) -> list[tuple[dict, str, str]]:
    """(user slot, auth password, priv password) for each planned user."""
    problems = switch_fabric_credential_problems(slots, secrets)
    if problems:
        raise AnsibleFilterError("; ".join(problems))
    return [(u, secrets[u["name"]]["auth"], secrets[u["name"]]["priv"]) for u in slots.get("snmp_users", [])]


def switch_fabric_with_credentials(planned: dict, os: str, slots: dict, secrets: dict) -> dict:
    """The planned configuration (NVUE `set` body or ConfigDB tables) with the vault's secrets in."""
    merged = copy.deepcopy(json.loads(json.dumps(planned)))  # plain data (ansible's lazy containers)
    users = _snmp_secrets(slots or {}, secrets)
    if not users:
        return merged
    if os == "cumulus":
        # NVUE keys a user by its passwords: username U auth-<p> <pw> encrypt-<p> <pw>
        server = next((merged[top]["snmp-server"] for top in ("system", "service")
                       if "snmp-server" in merged.get(top, {})), None)
        if server is None:
            raise AnsibleFilterError("credentials.json names SNMP users, and the plan has no snmp-server: "
                                     "run `superpod plan` again")
        server["username"] = {u["name"]: {f"auth-{u['auth']}": {auth: {f"encrypt-{u['priv']}": {priv: {}}}}}
                              for u, auth, priv in users}
    else:
        rows = merged.get("SNMP_USER", {})
        for u, auth, priv in users:
            if u["name"] not in rows:
                raise AnsibleFilterError(f"credentials.json names SNMP user {u['name']}, and the plan's SNMP_USER "
                                         "has no such row: run `superpod plan` again")
            rows[u["name"]].update({"SNMP_USER_AUTH_PASSWORD": auth, "SNMP_USER_ENCRYPTION_PASSWORD": priv})
    return merged


def _digest(secret: str) -> str:
    return "vault-sha256:" + hashlib.sha256(secret.encode()).hexdigest()[:16]


SONIC_SECRET_FIELDS = {"SNMP_USER": ("SNMP_USER_AUTH_PASSWORD", "SNMP_USER_ENCRYPTION_PASSWORD")}


def switch_fabric_redact(data, os: str):
    """`data` (an NVUE `set` body or ConfigDB tables, planned or running) with every secret replaced by
    a digest of it, found by where secrets live rather than by value, so a switch still holding an
    old password shows that digest, not the password: what the role compares, records on the
    switch and shows in a diff."""
    data = json.loads(json.dumps(data or {}))
    if os == "cumulus":
        for top in ("system", "service"):
            users = ((data.get(top) or {}).get("snmp-server") or {}).get("username") or {}
            for user in users.values():
                for auth_kind, by_pw in list((user or {}).items()):
                    if auth_kind.startswith("auth-") and isinstance(by_pw, dict):
                        user[auth_kind] = {_digest(pw): _redact_priv(rest) for pw, rest in by_pw.items()}
    else:
        for table, fields in SONIC_SECRET_FIELDS.items():
            for row in (data.get(table) or {}).values():
                for field in fields:
                    if isinstance(row, dict) and row.get(field):
                        row[field] = _digest(str(row[field]))
    return data


def _redact_priv(node):
    if not isinstance(node, dict):
        return node
    return {k: ({_digest(pw): v for pw, v in by_pw.items()} if k.startswith("encrypt-") and isinstance(by_pw, dict)
                else by_pw) for k, by_pw in node.items()}


class FilterModule:
    def filters(self):
        return {"switch_fabric_with_credentials": switch_fabric_with_credentials,
                "switch_fabric_credential_problems": switch_fabric_credential_problems,
                "switch_fabric_redact": switch_fabric_redact}
