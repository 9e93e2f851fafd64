#!/usr/bin/python
"""Write a set of small config files in one directory in one module call (one round trip for
every rail instead of a template task per rail), atomically each, with check mode and diff;
list the files with the role's prefix that are not in the set (rails no longer planned)."""

from __future__ import annotations

import hashlib
import os

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: rail_network_files
short_description: Write the per-rail files of one directory in one call
description:
  - Each entry of C(files) is written to C(dir)/name when its content, owner, group or mode differ.
  - Files in C(dir) whose name starts with C(prefix) and that are not in C(files) are returned as C(stale)
    (not removed: the role reads them first to take their running configuration off).
options:
  dir: {description: Directory holding the files (must exist)., type: path, required: true}
  files: {description: File name -> content., type: dict, required: true}
  prefix: {description: Name prefix of the files this role owns in C(dir)., type: str, required: true}
  owner: {description: Owner of each file., type: str, default: root}
  group: {description: Group of each file., type: str, default: root}
  mode: {description: Mode of each file., type: raw, default: '0644'}
"""

RETURN = r"""
written: {description: Paths written (or that would be, in check mode)., type: list}
stale: {description: Paths with the prefix that are not in files., type: list}
managed:
  description:
    - Each file of the set as it is now (path, state, SHA-1 checksum, mode, owner, group), for
      the record `superpod drift --quick` compares with (topology/operate/manifest.py).
  type: list
"""


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return None


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "dir": {"type": "path", "required": True},
            "files": {"type": "dict", "required": True},
            "prefix": {"type": "str", "required": True},
            "owner": {"type": "str", "default": "root"},
            "group": {"type": "str", "default": "root"},
            "mode": {"type": "raw", "default": "0644"},
        },
        supports_check_mode=True,
    )
    p = module.params
    directory = p["dir"]
    changed, written, diffs = False, [], []
    if not os.path.isdir(directory):
        if not module.check_mode:
            module.fail_json(msg=f"rail_network_files: dir: {directory} is not a directory")
        # check mode on a host where the directory task did not create it yet: all would be written
        paths = [os.path.join(directory, name) for name in sorted(p["files"])]
        diffs = [{"before": "", "after": str(p["files"][os.path.basename(x)]), "before_header": "(absent)",
                  "after_header": x} for x in paths]
        module.exit_json(changed=bool(paths), written=paths, stale=[], diff=diffs)
    for name, content in sorted(p["files"].items()):
        if "/" in name or name in ("", ".", ".."):
            module.fail_json(msg=f"rail_network_files: files: {name!r}: must be a plain file name")
        path = os.path.join(directory, name)
        content = str(content)
        before = _read(path)
        if before != content:
            changed = True
            written.append(path)
            diffs.append({"before": before or "", "after": content,
                          "before_header": path if before is not None else "(absent)", "after_header": path})
            if not module.check_mode:
                tmp = os.path.join(directory, f".{name}.tmp")
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write(content)
                module.atomic_move(tmp, path)
        # owner, group and mode, checked (and in check mode only reported) like the file module
        file_args = module.load_file_common_arguments(
            {"path": path, "owner": p["owner"], "group": p["group"], "mode": p["mode"]})
        if os.path.exists(path) or not module.check_mode:
            changed = module.set_fs_attributes_if_different(file_args, changed) or changed
    planned = {os.path.join(directory, name) for name in p["files"]}
    stale = sorted(os.path.join(directory, n) for n in os.listdir(directory)
                   if n.startswith(p["prefix"]) and os.path.join(directory, n) not in planned)
    mode = p["mode"] if isinstance(p["mode"], int) else int(str(p["mode"]), 8)
    managed = [{"path": os.path.join(directory, name), "state": "file",
                "checksum": hashlib.sha1(str(content).encode("utf-8")).hexdigest(),  # the copy module's checksum
                "mode": f"{mode:04o}", "owner": p["owner"], "group": p["group"]}
               for name, content in sorted(p["files"].items())]
    module.exit_json(changed=changed, written=written, stale=stale, managed=managed, diff=diffs)


if __name__ == "__main__":
    main()
