"""Secrets into the pushed configuration, and out of everything else.

The plan writes no secret: a switch that needs one has `credentials.json` (names, protocols and
the vault variables, topology/render/switches/credentials.py). At push time the role merges the
vault's values into the planned configuration (`switch_fabric_with_credentials`) and compares,
records and diffs only a redacted copy (`switch_fabric_redact`: every secret replaced by a digest
of it, found by where secrets live), so a drift run still sees a changed secret but never prints one.

`secrets` is {"snmp_users": {user: {auth, priv}}, "local_users": {user: hash}, "tacacs_key": str,
"radius_key": str} (roles/switch_fabric/defaults: from vault_switch_snmp_users,
vault_switch_user_hashes, vault_switch_tacacs_key, vault_switch_radius_key).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re

try:
    from ansible.errors import AnsibleFilterError
except ImportError:  # imported outside Ansible (tests)
    AnsibleFilterError = ValueError

MIN_LENGTH = 8  # SNMPv3 (RFC 3414) and SONiC's sonic-snmp: 8 characters at least
SNMP_FORBIDDEN = set(" :@")  # sonic-snmp's password pattern '[^ @:]*'
KEY_FORBIDDEN = set(" #,")  # sonic-system-tacacs' and -radius' passkey pattern '[^ #,]*'
CRYPT_HASH = re.compile(r"^\$(1|5|6|y|2[aby])\$[./A-Za-z0-9$]+$")  # what /etc/shadow takes (crypt(3))


def _vault_name(slots: dict, kind: str, default: str) -> str:
    return (slots.get("vault") or {}).get(kind, default)


def switch_fabric_credential_problems(slots: dict, secrets: dict) -> list[str]:
    """What the vault lacks for this switch, naming variables, never values: [] when complete."""
    slots, secrets = slots or {}, secrets or {}
    problems = []
    var = _vault_name(slots, "snmp_users", "vault_switch_snmp_users")
    for user in slots.get("snmp_users", []):
        entry = (secrets.get("snmp_users") or {}).get(user["name"])
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
            elif SNMP_FORBIDDEN & set(pw):
                problems.append(f"{where}: contains a space, ':' or '@' (SONiC's SNMP model refuses them)")
    var = _vault_name(slots, "local_users", "vault_switch_user_hashes")
    for name in slots.get("local_users", []):
        value = (secrets.get("local_users") or {}).get(name)
        if not isinstance(value, str) or not value:
            problems.append(f"{var}.{name}: missing (local user {name} needs a password hash from the vault)")
        elif not CRYPT_HASH.match(value):
            problems.append(f"{var}.{name}: not a crypt(3) hash ($6$..., e.g. from `mkpasswd -m sha-512`): "
                            "a plain password is never pushed")
    for kind, what, longest in (("tacacs_key", "TACACS+", 256), ("radius_key", "RADIUS", 65)):
        if not slots.get(kind):
            continue
        var = _vault_name(slots, kind, f"vault_switch_{kind}")
        key = secrets.get(kind)
        if not isinstance(key, str) or not key:
            problems.append(f"{var}: missing (the {what} shared secret)")
        elif len(key) > longest or KEY_FORBIDDEN & set(key):
            problems.append(f"{var}: longer than {longest} characters or contains a space, '#' or ',' "
                            f"(SONiC's {what} model refuses them)")
    return problems


def switch_fabric_with_credentials(planned: dict, os: str, slots: dict, secrets: dict) -> dict:
    """The planned configuration (NVUE `set` body or ConfigDB tables) with the vault's secrets in."""
    slots, secrets = slots or {}, secrets or {}
    problems = switch_fabric_credential_problems(slots, secrets)
    if problems:
        raise AnsibleFilterError("; ".join(problems))
    merged = copy.deepcopy(json.loads(json.dumps(planned)))  # plain data (ansible's lazy containers)
    snmp = secrets.get("snmp_users") or {}
    users = [(u, snmp[u["name"]]["auth"], snmp[u["name"]]["priv"]) for u in slots.get("snmp_users", [])]
    if os == "cumulus":
        _nvue(merged, users, slots, secrets)
    else:
        _sonic(merged, users, slots, secrets)
    return merged


def _stale(what: str) -> AnsibleFilterError:
    return AnsibleFilterError(f"credentials.json names {what}, and the plan has no place for it: "
                              "run `superpod plan` again")


def _nvue(merged: dict, users: list, slots: dict, secrets: dict) -> None:
    if users:  # NVUE keys a user by its passwords: username U auth-<p> <pw> encrypt-<p> <pw>
        server = next((merged[top]["snmp-server"] for top in ("system", "service")
                       if "snmp-server" in merged.get(top, {})), None)
        if server is None:
            raise _stale("SNMP users")
        server["username"] = {u["name"]: {f"auth-{u['auth']}": {auth: {f"encrypt-{u['priv']}": {priv: {}}}}}
                              for u, auth, priv in users}
    aaa = merged.get("system", {}).get("aaa", {})
    for name in slots.get("local_users", []):
        if name not in aaa.get("user", {}):
            raise _stale(f"local user {name}")
        aaa["user"][name]["hashed-password"] = secrets["local_users"][name]
    for kind, where in (("tacacs_key", "tacacs"), ("radius_key", "radius")):
        if slots.get(kind):
            if where not in aaa:
                raise _stale(f"a {where} key")
            aaa[where]["secret"] = secrets[kind]


def _sonic(merged: dict, users: list, slots: dict, secrets: dict) -> None:
    rows = merged.get("SNMP_USER", {})
    for u, auth, priv in users:
        if u["name"] not in rows:
            raise _stale(f"SNMP user {u['name']}")
        rows[u["name"]].update({"SNMP_USER_AUTH_PASSWORD": auth, "SNMP_USER_ENCRYPTION_PASSWORD": priv})
    for kind, table in (("tacacs_key", "TACPLUS"), ("radius_key", "RADIUS")):
        if slots.get(kind):
            if "global" not in merged.get(table, {}):
                raise _stale(f"a {table} key")
            merged[table]["global"]["passkey"] = secrets[kind]


def _digest(secret: str) -> str:
    return "vault-sha256:" + hashlib.sha256(secret.encode()).hexdigest()[:16]


# where secrets live: ConfigDB table -> fields of its rows
SONIC_SECRET_FIELDS = {"SNMP_USER": ("SNMP_USER_AUTH_PASSWORD", "SNMP_USER_ENCRYPTION_PASSWORD"),
                       "TACPLUS": ("passkey",), "TACPLUS_SERVER": ("passkey",),
                       "RADIUS": ("passkey",), "RADIUS_SERVER": ("passkey",)}


def switch_fabric_redact(data, os: str):
    """`data` (an NVUE `set` body or ConfigDB tables, planned or running) with every secret replaced by
    a digest of it, found by where secrets live rather than by value, so a switch still holding an
    old secret shows that digest, not the secret: what the role compares, records and diffs."""
    data = json.loads(json.dumps(data or {}))
    if os == "cumulus":
        for top in ("system", "service"):
            users = ((data.get(top) or {}).get("snmp-server") or {}).get("username") or {}
            for user in users.values():
                for auth_kind, by_pw in list((user or {}).items()):
                    if auth_kind.startswith("auth-") and isinstance(by_pw, dict):
                        user[auth_kind] = {_digest(pw): _redact_priv(rest) for pw, rest in by_pw.items()}
        aaa = (data.get("system") or {}).get("aaa") or {}
        for user in (aaa.get("user") or {}).values():
            for field in ("hashed-password", "password"):
                if isinstance(user, dict) and user.get(field):
                    user[field] = _digest(str(user[field]))
        for where in ("tacacs", "radius"):
            block = aaa.get(where) or {}
            for holder in (block, *(block.get("server") or {}).values()):
                if isinstance(holder, dict) and holder.get("secret"):
                    holder["secret"] = _digest(str(holder["secret"]))
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
