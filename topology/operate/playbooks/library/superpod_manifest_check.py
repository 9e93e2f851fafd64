#!/usr/bin/python
"""Compare a host with what the last `superpod apply` recorded of it (topology/operate/manifest.py):
each file's existence, type, content checksum, mode, owner and group, each path it removed, each
unit it enabled or disabled and whether it runs, each kernel module it loaded; and what the run
read: each declared read command run again (exit code and output digest), each find's matches,
the facts the roles decide on. Read-only (the replayed commands are the ones a role marks
check_mode: false, changed_when: false, which `superpod drift` runs too): one module call per
host instead of a role's tasks."""

from __future__ import annotations

import fnmatch
import grp
import hashlib
import os
import pwd
import re
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
  facts:
    description: The host's facts now, as the record keeps them (filter superpod_observed_facts).
    type: dict
"""

RETURN = r"""
drift: {description: 'What differs: [{what, kind, detail}], what is a path, a unit, a module or a read.', type: list}
checked: {description: Entries compared., type: int}
node_check: {description: The record holds node_check's verdict (the playbook runs the role now)., type: bool}
unverifiable: {description: "Results the record keeps in no form this check replays: [{what, task}].", type: list}
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
    if want == "exists":
        return []
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


def _active_drift(module: AnsibleModule, e: dict) -> list[tuple[str, str]]:
    systemctl = module.get_bin_path("systemctl", required=True)
    rc, out, _ = module.run_command([systemctl, "is-active", e["unit_active"]])
    if (rc == 0) == bool(e["active"]):
        return []
    return [("active", f"{out.strip() or rc}, expected {'active' if e['active'] else 'inactive'}")]


def _kmod_drift(e: dict) -> list[tuple[str, str]]:
    loaded = os.path.isdir(f"/sys/module/{e['kmod'].replace('-', '_')}")
    if loaded == bool(e["loaded"]):
        return []
    return [("loaded", f"{'loaded' if loaded else 'not loaded'}, expected {'loaded' if e['loaded'] else 'unloaded'}")]


def _probe_drift(module: AnsibleModule, e: dict) -> list[tuple[str, str]]:
    """The read again, run as the command and shell modules run it."""
    args = e["args"]
    shell = bool(args.get("_uses_shell"))
    cmd = args.get("_raw_params") if shell else (args.get("argv") or args.get("_raw_params"))
    stdin = args.get("stdin")
    if stdin is not None and args.get("stdin_add_newline", True):
        stdin = stdin + "\n"
    rc, out, _ = module.run_command(cmd, cwd=args.get("chdir"), executable=args.get("executable"),
                                    use_unsafe_shell=shell, data=stdin, binary_data=stdin is not None)
    if args.get("strip_empty_ends", True):
        out = out.rstrip("\r\n")
    found = []
    if rc != e["rc"]:
        found.append(("exit code", f"exit code {rc}, was {e['rc']}"))
    if hashlib.sha1(out.encode("utf-8", "surrogateescape")).hexdigest() != e["stdout_sha1"]:
        found.append(("output", "it reads differently now"))
    return found


def _as_list(value) -> list[str]:
    if value is None:
        return []
    return [v.strip() for v in value.split(",")] if isinstance(value, str) else [str(v) for v in value]


def _type_ok(path: str, file_type: str, follow: bool) -> bool:
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except OSError:
        return False
    return file_type == "any" or {"file": stat.S_ISREG, "directory": stat.S_ISDIR,
                                  "link": stat.S_ISLNK}.get(file_type, lambda _: False)(st.st_mode)


def _contains(path: str, regex: str) -> bool:
    prog = re.compile(regex)
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return any(prog.match(line) for line in f)  # as the find module: match, line by line
    except OSError:
        return False


def _find(args: dict) -> list[str]:
    """The find module's matches for the options the record keeps (record_entries.FIND_ARGS)."""
    patterns, excludes = _as_list(args.get("patterns")) or ["*"], _as_list(args.get("excludes"))
    file_type, follow = args.get("file_type") or "file", bool(args.get("follow"))
    found = []
    for root in _as_list(args.get("paths")):
        if not os.path.isdir(root):
            continue
        walk = os.walk(root, followlinks=follow) if args.get("recurse") else [(root, *next(os.walk(root))[1:])]
        for dirpath, dirnames, filenames in walk:
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                if (name.startswith(".") and not args.get("hidden")) \
                        or not any(fnmatch.fnmatch(name, p) for p in patterns) \
                        or any(fnmatch.fnmatch(name, p) for p in excludes) or not _type_ok(path, file_type, follow):
                    continue
                regex = args.get("contains")
                if regex and not (stat.S_ISREG(os.stat(path).st_mode) and _contains(path, regex)):
                    continue
                found.append(os.path.normpath(path))
    return sorted(found)


def _find_drift(e: dict) -> list[tuple[str, str]]:
    now, was = _find(e["args"]), sorted(os.path.normpath(p) for p in e["matched"])
    if now == was:
        return []
    added, gone = sorted(set(now) - set(was)), sorted(set(was) - set(now))
    return [("matches", "; ".join(filter(None, (added and f"new: {', '.join(added)}",
                                                gone and f"gone: {', '.join(gone)}"))))]


def _account_drift(e: dict) -> list[tuple[str, str]]:
    kind = "user" if "user_account" in e else "group"
    name = e.get("user_account") or e.get("group_account")
    try:
        entry = pwd.getpwnam(name) if kind == "user" else grp.getgrnam(name)
    except KeyError:
        return [("missing", f"no {kind} {name}")] if e["present"] else []
    if not e["present"]:
        return [("present", f"{kind} {name} exists, removed by the last apply")]
    now = ({"uid": entry.pw_uid, "group": entry.pw_gid, "home": entry.pw_dir, "shell": entry.pw_shell}
           if kind == "user" else {"gid": entry.gr_gid})
    return [(k, f"{k} {now[k]}, expected {e[k]}") for k in now if k in e and now[k] != e[k]]


def _fstab_has(path: str, fstype: str | None) -> bool:
    try:
        with open("/etc/fstab", encoding="utf-8", errors="replace") as f:
            rows = [line.split() for line in f if line.strip() and not line.lstrip().startswith("#")]
    except OSError:
        return False
    return any(len(r) > 2 and r[1] == path and (not fstype or r[2] == fstype) for r in rows)


def _mounted(path: str, fstype: str | None) -> bool:
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
            rows = [line.split() for line in f]
    except OSError:
        return False
    return any(len(r) > 2 and r[1] == path and (not fstype or r[2] == fstype) for r in rows)


def _mount_drift(e: dict) -> list[tuple[str, str]]:
    path, fstype, state = e["mount"], e.get("fstype"), e["state"]
    want_fstab, want_mounted = state in ("mounted", "present"), {"mounted": True, "unmounted": False,
                                                                   "absent": False}.get(state)
    out = []
    if _fstab_has(path, fstype) != want_fstab and state != "unmounted":
        out.append(("fstab", f"{'not ' if want_fstab else ''}in /etc/fstab, expected {'in' if want_fstab else 'out'}"))
    if want_mounted is not None and _mounted(path, fstype) != want_mounted:
        out.append(("mounted", "not mounted" if want_mounted else "mounted, expected not"))
    return out


def _alternative_drift(e: dict) -> list[tuple[str, str]]:
    registered = False
    for db in ("/var/lib/dpkg/alternatives", "/var/lib/alternatives"):
        try:
            with open(os.path.join(db, e["alternative"]), encoding="utf-8", errors="replace") as f:
                registered = e["path"] in (line.strip() for line in f)
            break
        except OSError:
            continue
    if not registered:
        return [("registered", f"{e['path']} is not an alternative for {e['alternative']}")]
    now = os.path.realpath(os.path.join("/etc/alternatives", e["alternative"]))
    if e.get("selected") and now != os.path.realpath(e["path"]):
        return [("selected", f"{now} selected, expected {e['path']}")]
    return []


def _pip_drift(module: AnsibleModule, e: dict) -> list[tuple[str, str]]:
    python = os.path.join(e["virtualenv"], "bin", "python")
    if not os.access(python, os.X_OK):
        return [("virtualenv", f"no {python}")]
    code = ("import sys, importlib.metadata as m\n"
            "for n in sys.argv[1:]:\n"
            "    try: m.version(n)\n"
            "    except m.PackageNotFoundError: print(n)\n")
    rc, out, err = module.run_command([python, "-c", code, *e["pip"]])
    missing = out.split()
    if rc != 0:
        return [("virtualenv", f"{python} failed: {err.strip()[-200:]}")]
    return [("missing", f"not installed: {', '.join(missing)}")] if missing else []


def _facts_drift(e: dict, facts: dict | None) -> list[tuple[str, str]]:
    if facts is None:
        return [("facts", "no facts to compare")]
    changed = sorted(k for k in set(e["facts"]) | set(facts) if e["facts"].get(k) != facts.get(k))
    return [("facts", f"{k}: {facts.get(k)!r}, was {e['facts'].get(k)!r}") for k in changed]


# The entry's kind (the key that names it) -> its check(module, entry, facts); a path otherwise
_KINDS = {
    "unit": lambda m, e, _: _unit_drift(m, e),
    "unit_active": lambda m, e, _: _active_drift(m, e),
    "kmod": lambda _m, e, _: _kmod_drift(e),
    "probe": lambda m, e, _: _probe_drift(m, e),
    "find": lambda _m, e, _: _find_drift(e),
    "facts": lambda _m, e, facts: _facts_drift(e, facts),
    "user_account": lambda _m, e, _: _account_drift(e),
    "group_account": lambda _m, e, _: _account_drift(e),
    "mount": lambda _m, e, _: _mount_drift(e),
    "alternative": lambda _m, e, _: _alternative_drift(e),
    "pip": lambda m, e, _: _pip_drift(m, e),
}


def _kind(e: dict) -> str:
    return next((k for k in _KINDS if k in e), "path")


def _what(e: dict) -> str:
    kind = _kind(e)
    return {"pip": lambda: ",".join(e["pip"]), "facts": lambda: "facts"}.get(kind, lambda: str(e[kind]))()


def _drift(module: AnsibleModule, e: dict, facts: dict | None) -> list[tuple[str, str]]:
    kind = _kind(e)
    return _path_drift(e) if kind == "path" else _KINDS[kind](module, e, facts)


def main() -> None:
    module = AnsibleModule(argument_spec={"entries": {"type": "list", "elements": "dict"},
                                          "facts": {"type": "dict"}}, supports_check_mode=True)
    entries = module.params["entries"]
    if entries is None:
        module.fail_json(msg="no record of this host: `superpod apply` has not run on it from this control node "
                             "(or its runs folder); run it, or use `superpod drift` (the full check)")
    refused = next((e["refused"] for e in entries if "refused" in e), None)
    if refused:  # the controller would not let this record decide (topology/operate/trusted_record.py)
        module.fail_json(msg=f"record not trusted, the host runs in full: {refused}")
    drift, unverifiable = [], []
    checks = [e for e in entries if "node_check" in e]  # run by the playbook (the role, from today's tree)
    entries = [e for e in entries if "node_check" not in e]
    for e in entries:
        if "unverifiable" in e:
            unverifiable.append({"what": e["unverifiable"], "task": e.get("task", "")})
            continue
        found = _drift(module, e, module.params["facts"])
        drift += [{"what": _what(e), "kind": kind, "detail": detail} for kind, detail in found]
    module.exit_json(changed=False, drift=drift, checked=len(entries) - len(unverifiable), unverifiable=unverifiable,
                     node_check=bool(checks))


if __name__ == "__main__":
    main()
