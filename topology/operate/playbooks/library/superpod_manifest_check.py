#!/usr/bin/python
"""Compare a host with what the last `superpod apply` recorded of it (topology/operate/manifest.py):
each file's existence, type, content checksum, mode, owner and group, each path it removed, and
each unit it enabled or disabled. Read-only: one module call per host instead of a role's tasks."""

from __future__ import annotations

import grp
import hashlib
import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: superpod_manifest_check
short_description: Compare files and units with the record of the last apply
options:
  entries:
    description:
      - The host's record, as topology/operate/manifest.py writes it. Each entry is a path
        (C(path), C(state) file, directory or absent, C(checksum) SHA-1 for files, C(mode), C(owner), C(group))
        or a unit (C(unit), C(enabled)).
      - Null when there is no record for the host (the module then fails, saying so).
    type: list
    elements: dict
"""

RETURN = r"""
drift: {description: 'What differs: [{what, kind, detail}], what is a path or a unit.', type: list}
checked: {description: Entries compared., type: int}
"""

# `systemctl is-enabled` answers that ansible's systemd_service module does not count as enabled
_NOT_ENABLED = ("enabled-runtime", "indirect", "alias")


def _sha1(path: str) -> str:
    digest = hashlib.sha1()  # what the copy and template modules report as `checksum`
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _name(table, ident: int) -> str:
    try:
        return table(ident)[0]
    except KeyError:
        return str(ident)


def _path_drift(e: dict) -> list[tuple[str, str]]:
    """(kind, detail) for each way the path differs from its record."""
    path, want = e["path"], e.get("state")
    try:
        st = os.stat(path)  # like the file module: links followed
    except FileNotFoundError:
        return [] if want == "absent" else [("missing", f"expected a {want}")]
    if want == "absent":
        return [("present", "removed by the last apply, present now")]
    if (want == "file" and not stat.S_ISREG(st.st_mode)) or (want == "directory" and not stat.S_ISDIR(st.st_mode)):
        return [("type", f"expected a {want}")]
    out = []
    if want == "file" and e.get("checksum") and _sha1(path) != e["checksum"]:
        out.append(("content", "content changed"))
    mode = f"{stat.S_IMODE(st.st_mode):04o}"
    if e.get("mode") and mode != e["mode"]:
        out.append(("mode", f"mode {mode}, expected {e['mode']}"))
    for kind, now, want_name in (("owner", _name(pwd.getpwuid, st.st_uid), e.get("owner")),
                                 ("group", _name(grp.getgrgid, st.st_gid), e.get("group"))):
        if want_name and now != want_name:
            out.append((kind, f"{kind} {now}, expected {want_name}"))
    return out


def _unit_drift(module: AnsibleModule, e: dict) -> list[tuple[str, str]]:
    systemctl = module.get_bin_path("systemctl", required=True)
    rc, out, _ = module.run_command([systemctl, "is-enabled", e["unit"]])
    enabled = rc == 0 and out.strip() not in _NOT_ENABLED
    if enabled == bool(e["enabled"]):
        return []
    return [("enabled", f"{'enabled' if enabled else 'not enabled'} ({out.strip() or rc}), "
                        f"expected {'enabled' if e['enabled'] else 'disabled'}")]


def main() -> None:
    module = AnsibleModule(argument_spec={"entries": {"type": "list", "elements": "dict"}}, supports_check_mode=True)
    entries = module.params["entries"]
    if entries is None:
        module.fail_json(msg="no record of this host: `superpod apply` has not run on it from this control node "
                             "(or its runs folder); run it, or use `superpod drift` (the full check)")
    drift = []
    for e in entries:
        found = _unit_drift(module, e) if "unit" in e else _path_drift(e)
        drift += [{"what": e.get("unit") or e["path"], "kind": kind, "detail": detail} for kind, detail in found]
    module.exit_json(changed=False, drift=drift, checked=len(entries))


if __name__ == "__main__":
    main()
