#!/usr/bin/python
"""Bring a role's files and directories to their planned state in one module call (one round
trip for what were a template, copy or file task each). The content arrives rendered: the action
plugin of the same name (action_plugins/superpod_files.py) renders the templates on the
controller, as ansible.builtin.template does, and calls this module once."""

from __future__ import annotations

import grp
import hashlib
import os
import pwd
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: superpod_files
short_description: Write, create or remove a role's files in one call (use it through its action plugin)
description:
  - Each entry of C(files) is brought to its state in list order (a directory before the files in it).
  - A file is written (in its directory, then renamed over the old one) only when its content differs;
    owner, group and mode are set where they differ. Check mode writes nothing and reports what would change.
options:
  files:
    description: Entries with dest, state (file, directory or absent), content (file), owner, group, mode.
    type: list
    elements: dict
    required: true
"""

RETURN = r"""
files: {description: Per entry, dest, state and whether it changed., type: list}
changed_files: {description: The dests that changed (or would, in check mode)., type: list}
managed:
  description:
    - Each entry as it is now (path, state, SHA-1 checksum of a file, mode, owner, group), for the
      record `superpod drift --quick` compares with (topology/operate/record_entries.py).
  type: list
"""

STATES = ("file", "directory", "absent")


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _attrs(path: str) -> dict:
    """mode, owner and group as ansible.builtin.file reports them."""
    st = os.lstat(path)
    try:
        owner = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        owner = str(st.st_uid)
    try:
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    return {"mode": f"{stat.S_IMODE(st.st_mode):04o}", "owner": owner, "group": group}


def _set_attrs(module: AnsibleModule, entry: dict, diff: dict | None) -> bool:
    """owner, group and mode where they differ (in check mode: only whether they would)."""
    args = module.load_file_common_arguments(
        {"path": entry["dest"], "owner": entry.get("owner"), "group": entry.get("group"), "mode": entry.get("mode")})
    return module.set_fs_attributes_if_different(args, False, diff=diff)


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", "replace")


def _directory(module: AnsibleModule, entry: dict) -> tuple[bool, list[dict]]:
    path = entry["dest"]
    if os.path.isdir(path):
        diff = {"before": {"path": path}, "after": {"path": path}}
        changed = _set_attrs(module, entry, diff)
        return changed, [diff] if changed else []
    if os.path.lexists(path):
        module.fail_json(msg=f"superpod_files: {path}: exists and is not a directory")
    diff = {"before": {"path": path, "state": "absent"}, "after": {"path": path, "state": "directory"}}
    if not module.check_mode:
        os.makedirs(path)
        _set_attrs(module, entry, None)
    return True, [diff]


def _file(module: AnsibleModule, entry: dict) -> tuple[bool, list[dict]]:
    path, content = entry["dest"], entry["content"].encode("utf-8")
    parent = os.path.dirname(path)
    if not os.path.isdir(parent) and not module.check_mode:
        module.fail_json(msg=f"superpod_files: {path}: its directory {parent} does not exist")
    # in check mode a missing directory (one this call would create, or a step before would) only
    # means the file would be written
    if os.path.lexists(path) and not os.path.isfile(path):
        module.fail_json(msg=f"superpod_files: {path}: exists and is not a regular file")
    before = _read(path)
    diffs, changed = [], False
    if before != content:
        changed = True
        diffs.append({"before": _text(before), "after": entry["content"],
                      "before_header": path if before is not None else f"{path} (absent)", "after_header": path})
        if not module.check_mode:
            fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=parent)
            with os.fdopen(fd, "wb") as f:
                f.write(content)
            module.atomic_move(tmp, path)  # keeps the old file's owner, mode and SELinux context
    if before is None and module.check_mode:
        return changed, diffs  # nothing there to compare owner and mode with
    attrs_diff = {"before": {"path": path}, "after": {"path": path}}
    if _set_attrs(module, entry, attrs_diff):
        changed = True
        diffs.append(attrs_diff)
    return changed, diffs


def _absent(module: AnsibleModule, entry: dict) -> tuple[bool, list[dict]]:
    path = entry["dest"]
    if not os.path.lexists(path):
        return False, []
    if os.path.isdir(path) and not os.path.islink(path):
        module.fail_json(msg=f"superpod_files: {path}: state absent removes files, not directories")
    if not module.check_mode:
        os.unlink(path)
    return True, [{"before": {"path": path, "state": "file"}, "after": {"path": path, "state": "absent"}}]


def _managed(entry: dict) -> dict:
    path, state = entry["dest"], entry["state"]
    if state == "absent" or not os.path.lexists(path):
        return {"path": path, "state": "absent"} if state == "absent" else {"path": path, "state": state}
    out = {"path": path, "state": state, **_attrs(path)}
    if state == "file":
        out["checksum"] = hashlib.sha1(_read(path) or b"").hexdigest()  # the copy module's checksum
    return out


def _validate(module: AnsibleModule, entries: list) -> None:
    """Every entry well formed before anything is written."""
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("dest"), str) or not entry["dest"].startswith("/"):
            module.fail_json(msg=f"superpod_files: each entry needs an absolute dest; got {entry!r}")
        if entry.get("state", "file") not in STATES:
            module.fail_json(msg=f"superpod_files: {entry['dest']}: state must be one of {', '.join(STATES)}")
        if entry.get("state", "file") == "file" and not isinstance(entry.get("content"), str):
            module.fail_json(msg=f"superpod_files: {entry['dest']}: a file needs its content (a string)")


def main() -> None:
    module = AnsibleModule(argument_spec={"files": {"type": "list", "elements": "dict", "required": True}},
                           supports_check_mode=True)
    entries = [dict(e, state=e.get("state", "file"), dest=os.path.normpath(e["dest"]))
               if isinstance(e, dict) and isinstance(e.get("dest"), str) else e for e in module.params["files"]]
    _validate(module, entries)
    handlers = {"file": _file, "directory": _directory, "absent": _absent}
    results, diffs = [], []
    for entry in entries:
        changed, entry_diffs = handlers[entry["state"]](module, entry)
        results.append({"dest": entry["dest"], "state": entry["state"], "changed": changed})
        diffs.extend(entry_diffs)
    managed = [_managed(e) for e in entries] if not module.check_mode else []
    module.exit_json(changed=any(r["changed"] for r in results), files=results,
                     changed_files=[r["dest"] for r in results if r["changed"]], managed=managed, diff=diffs)


if __name__ == "__main__":
    main()
