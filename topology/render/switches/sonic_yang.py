"""config_db.json -> SONiC YANG JSON, validated with yanglint against SONiC's own models.

SONiC's sonic-yang-mgmt does this translation on a switch; here it is redone from the models
themselves (each table's container, its lists and their keys, and each leaf's type read from
the .yang text), so a config that SONiC would refuse to load fails plan-time checks too.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

MODELS = Path(__file__).resolve().parents[3] / "testdata" / "sonic-yang-models"

# config_db table -> the model that defines it
TABLE_MODULE = {
    "DEVICE_METADATA": "sonic-device_metadata",
    "PORT": "sonic-port",
    "BREAKOUT_CFG": "sonic-breakout_cfg",
    "INTERFACE": "sonic-interface",
    "LOOPBACK_INTERFACE": "sonic-loopback-interface",
    "VLAN": "sonic-vlan",
    "VLAN_MEMBER": "sonic-vlan",
    "VLAN_INTERFACE": "sonic-vlan",
    "MGMT_PORT": "sonic-mgmt_port",
    "MGMT_INTERFACE": "sonic-mgmt_interface",
    "MGMT_VRF_CONFIG": "sonic-mgmt_vrf",
    "BGP_NEIGHBOR": "sonic-bgp-neighbor",
    "DSCP_TO_TC_MAP": "sonic-dscp-tc-map",
    "TC_TO_PRIORITY_GROUP_MAP": "sonic-tc-priority-group-map",
    "TC_TO_QUEUE_MAP": "sonic-tc-queue-map",
    "WRED_PROFILE": "sonic-wred-profile",
    "PORT_QOS_MAP": "sonic-port-qos-map",
    "QUEUE": "sonic-queue",
    "PFC_WD": "sonic-pfcwd",
    "PORTCHANNEL": "sonic-portchannel",
    "PORTCHANNEL_MEMBER": "sonic-portchannel",
    "MCLAG_DOMAIN": "sonic-mclag",
    "MCLAG_INTERFACE": "sonic-mclag",
    "MCLAG_UNIQUE_IP": "sonic-mclag",
    "MAP_PFC_PRIORITY_TO_QUEUE": "sonic-pfc-priority-queue-map",
    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP": "sonic-pfc-priority-priority-group-map",
    "SCHEDULER": "sonic-scheduler",
    "BUFFER_POOL": "sonic-buffer-pool",
    "BUFFER_PROFILE": "sonic-buffer-profile",
    "BUFFER_PG": "sonic-buffer-pg",
    "BUFFER_QUEUE": "sonic-buffer-queue",
    "BUFFER_PORT_INGRESS_PROFILE_LIST": "sonic-buffer-port-ingress-profile-list",
    "BUFFER_PORT_EGRESS_PROFILE_LIST": "sonic-buffer-port-egress-profile-list",
    "CABLE_LENGTH": "sonic-cable-length",
    "NTP": "sonic-ntp",
    "NTP_SERVER": "sonic-ntp",
    "DNS_NAMESERVER": "sonic-dns",
    "SYSLOG_SERVER": "sonic-syslog",
    "GNMI": "sonic-gnmi",
    "LLDP": "sonic-lldp",
    "LLDP_PORT": "sonic-lldp",
    "SNMP_USER": "sonic-snmp",
    "SNMP_AGENT_ADDRESS_CONFIG": "sonic-snmp",
    "TACPLUS": "sonic-system-tacacs",
    "TACPLUS_SERVER": "sonic-system-tacacs",
    "AAA": "sonic-system-aaa",
    "RADIUS": "sonic-system-radius",
    "RADIUS_SERVER": "sonic-system-radius",
}
_KEY = re.compile(r"\bkey\s+[\"']?([^\"';]+)")
_INT = re.compile(r"^u?int(8|16|32)$")  # RFC 7951: 64-bit integers are JSON strings


class YangError(Exception):
    pass


def _block(text: str, start: int) -> str:
    """The `{...}` body that opens at or after `start`."""
    i = text.index("{", start)
    depth = 0
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i + 1 : j]
    raise ValueError("unbalanced braces")


@cache
def _module_text(module: str) -> str:
    return (MODELS / f"{module}.yang").read_text(encoding="utf-8")


@cache
def _leaf_types(module: str) -> dict[str, str]:
    """leaf name -> 'int' | 'bool' | 'str' (names are unique enough within one table's module)."""
    text = re.sub(r"//[^\n]*", "", _module_text(module))
    out: dict[str, str] = {}
    for m in re.finditer(r"\bleaf\s+([\w-]+)\s*\{", text):
        body = _block(text, m.start())
        t = re.search(r"\btype\s+([\w:-]+)", body)
        kind = _resolve(t.group(1) if t else "string")
        if kind == "union":  # e.g. SNMP agent port: '' or a port number (RFC 7951: a JSON number matches the integer)
            members = [_resolve(x) for x in re.findall(r"\btype\s+([\w:-]+)", body)[1:]]
            kind = "int_or_str" if any(_INT.match(x) for x in members) else "str"
            out.setdefault(m.group(1), kind)
            continue
        out.setdefault(m.group(1), "int" if _INT.match(kind) else "bool" if kind == "boolean" else "str")
    for imported in re.findall(r"\bimport\s+(sonic-[\w-]+)", text):  # groupings used from other models
        if imported != "sonic-types" and (MODELS / f"{imported}.yang").exists():
            for leaf, kind in _leaf_types(imported).items():
                out.setdefault(leaf, kind)
    return out


_IETF = {"as-number": "uint32", "port-number": "uint16", "dscp": "uint8"}


def _resolve(type_name: str) -> str:
    """A typedef's base type (ietf-inet-types and sonic-types typedefs), else the name itself."""
    prefix, _, name = type_name.rpartition(":")
    if name in _IETF:
        return _IETF[name]
    if prefix:
        text = _module_text("sonic-types")
        m = re.search(rf"\btypedef\s+{re.escape(name)}\s*\{{", text)
        if m:
            t = re.search(r"\btype\s+([\w:-]+)", _block(text, m.start()))
            return _resolve(t.group(1)) if t and t.group(1) != type_name else name
    return name


def _lists(module: str, table: str) -> list[tuple[str, list[str], str | None, list[str]]]:
    """(list name, keys, nested list name, nested keys) of a table's container."""
    text = re.sub(r"//[^\n]*", "", _module_text(module))
    m = re.search(rf"\bcontainer\s+{table}\s*\{{", text)
    if not m:
        raise YangError(f"{table}: no container in {module}")
    body = _block(text, m.start())
    found: list[tuple[str, list[str], str | None, list[str]]] = []
    nested: set[str] = set()
    for lm in re.finditer(r"(?<![\w-])list\s+(\w+)\s*\{", body):
        lbody = _block(body, lm.start())
        keys = re.search(_KEY, lbody).group(1).split()
        inner = re.search(r"(?<![\w-])list\s+(\w+)\s*\{", lbody)
        inner_keys = []
        if inner:
            nested.add(inner.group(1))
            inner_keys = re.search(_KEY, _block(lbody, inner.start())).group(1).split()
        found.append((lm.group(1), keys, inner.group(1) if inner else None, inner_keys))
    return [x for x in found if x[0] not in nested]


def _typed(types: dict[str, str], field: str, value):
    kind = types.get(field, "str")
    if isinstance(value, list):
        return [_typed(types, field, v) for v in value]
    if kind == "int":
        return int(value)
    if kind == "int_or_str":
        return int(value) if str(value).isdigit() else value
    if kind == "bool":
        return str(value).lower() == "true"
    return value


def to_yang_json(config_db: dict) -> dict:
    out: dict = {}
    for table, rows in config_db.items():
        module = TABLE_MODULE.get(table)
        if module is None:
            raise YangError(f"{table}: no SONiC model known for this table")
        if table in unmodelled({table: rows}):  # validate() reports these as not checked
            continue
        types = _leaf_types(module)
        lists = _lists(module, table)
        container: dict = {}
        if not lists:  # a table of fixed containers (DEVICE_METADATA|localhost)
            container = {k: {f: _typed(types, f, v) for f, v in fields.items()} for k, fields in rows.items()}
        for key, fields in rows.items():
            parts = key.split("|")
            match = [x for x in lists if len(x[1]) == len(parts)]
            if lists and not match:
                raise YangError(f"{table}|{key}: no list of {table} takes {len(parts)} key part(s)")
            if not lists:
                continue
            name, keys, inner, inner_keys = match[0]
            entry = {k: _typed(types, k, v) for k, v in zip(keys, parts, strict=True)}
            if inner:  # a map table: {name: {from: to}} -> inner list of {from_key: .., to_leaf: ..}
                value_leaf = _inner_value_leaf(module, inner, inner_keys[0])
                entry[inner] = [
                    {inner_keys[0]: _typed(types, inner_keys[0], k), value_leaf: _typed(types, value_leaf, v)}
                    for k, v in fields.items()
                ]
            else:
                entry.update({f: _typed(types, f, v) for f, v in fields.items()})
            container.setdefault(name, []).append(entry)
        out.setdefault(f"{module}:{module}", {})[table] = container
    return out


def _inner_value_leaf(module: str, inner: str, key: str) -> str:
    text = _module_text(module)
    m = re.search(rf"\blist\s+{inner}\s*\{{", text)
    leaves = re.findall(r"\bleaf\s+([\w-]+)", _block(text, m.start()))
    return next(leaf for leaf in leaves if leaf != key)


def closure(modules: set[str]) -> set[str]:
    """The models and every sonic-* model they import: all must be implemented for the
    cross-table checks (must/when/leafref) to run rather than be skipped."""
    todo, seen = list(modules), set()
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo += [i for i in re.findall(r"\bimport\s+(sonic-[\w-]+)", _module_text(m)) if i not in seen]
    return seen


def yanglint() -> str | None:
    return shutil.which("yanglint")


def unmodelled(config_db: dict) -> tuple[str, ...]:
    """Tables whose SONiC model is not in testdata/sonic-yang-models (validate skips them)."""
    return tuple(t for t in config_db if t in TABLE_MODULE and not (MODELS / f"{TABLE_MODULE[t]}.yang").exists())


def validate(config_db: dict) -> tuple[str, ...]:
    """Raises YangError with yanglint's message when the data breaks SONiC's models. Returns the
    tables it could not check (`unmodelled`), so a caller can say so rather than assume them valid."""
    skipped = unmodelled(config_db)
    config_db = {t: rows for t, rows in config_db.items() if t not in skipped}
    data = to_yang_json(config_db)
    modules = sorted(closure({TABLE_MODULE[t] for t in config_db} | {"sonic-device_metadata"}))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        cmd = [yanglint() or "yanglint", "-p", str(MODELS), "-t", "config", "-f", "json"]
        cmd += [str(MODELS / f"{m}.yang") for m in modules] + [str(path)]
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0 or "libyang err" in r.stderr:
        raise YangError(r.stderr.strip() or r.stdout.strip())
    return skipped
