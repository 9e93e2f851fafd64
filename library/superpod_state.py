#!/usr/bin/python
"""Read a role's node state in one module call: what were a stat, a find, a slurp or a read-only
command task each (one controller worker, templating and callback per host-task: issue 39).
Read-only: it never changes the node, so it runs the same under --check and reports changed=false."""

from __future__ import annotations

import base64
import fnmatch
import os
import stat as statmod
import subprocess

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: superpod_state
short_description: Read paths' status, directory listings, file contents and read-only commands in one call
description:
  - Every read is independent: one that fails (a missing path, a command's non-zero exit) is reported in its
    entry, never fails the task, so the role decides what a missing or failed read means.
options:
  stat:
    description: Paths whose status to read (exists, isdir, isreg, islnk, writeable, readable, mode, uid, gid, size).
    type: list
    elements: str
    default: []
  find:
    description:
      - Directory listings, each C(name), C(path), C(patterns) (shell globs matched against the entry's
        name) and C(file_type) (file, directory or any; default file): ansible.builtin.find's matches for
        those options, not recursing, hidden names and links' targets left out as find leaves them.
      - C(slurp) true also reads each match's content into the result's C(slurp) (as a slurp entry of
        that path would), for a role that reads the files it finds (no second call to read them).
    type: list
    elements: dict
    default: []
  slurp:
    description: Files whose content to read (base64, as ansible.builtin.slurp returns it); a missing file is null.
    type: list
    elements: str
    default: []
  commands:
    description:
      - Read-only commands, each C(name) and C(argv) (a list, run without a shell) or C(shell) (a script run by
        C(executable), default /bin/sh). Each gives rc, stdout and stderr (trailing newlines stripped,
        as ansible.builtin.command).
      - C(required) true fails the task where that command exits non-zero (as a command task would);
        otherwise the exit status is only reported.
    type: list
    elements: dict
    default: []
"""

RETURN = r"""
stat: {description: Per path, its status; exists false where it is absent., type: dict}
find: {description: Per listing name, the sorted paths that matched (empty where the directory is absent)., type: dict}
slurp: {description: Per path, its content in base64, or null where it is absent or unreadable., type: dict}
commands: {description: Per command name, rc, stdout and stderr., type: dict}
"""

FILE_TYPES = {"file": statmod.S_ISREG, "directory": statmod.S_ISDIR, "any": lambda mode: True}


def path_status(path: str) -> dict:
    try:
        st = os.stat(path)
    except OSError:
        return {"exists": False}
    link = os.path.islink(path)
    return {"exists": True, "isdir": statmod.S_ISDIR(st.st_mode), "isreg": statmod.S_ISREG(st.st_mode),
            "islnk": link, "writeable": os.access(path, os.W_OK), "readable": os.access(path, os.R_OK),
            "mode": f"{statmod.S_IMODE(st.st_mode):04o}", "uid": st.st_uid, "gid": st.st_gid, "size": st.st_size}


def listing(spec: dict) -> list[str]:
    matches = FILE_TYPES[spec.get("file_type") or "file"]
    patterns = spec.get("patterns") or ["*"]
    try:
        names = os.listdir(spec["path"])
    except OSError:
        return []
    out = []
    for name in names:
        full = os.path.join(spec["path"], name)
        if name.startswith("."):
            continue  # as ansible.builtin.find without hidden
        try:
            mode = os.lstat(full).st_mode  # as find without follow: a link is not its target's type
        except OSError:
            continue
        if any(fnmatch.fnmatch(name, p) for p in patterns) and matches(mode):
            out.append(full)
    return sorted(out)


def content(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return base64.b64encode(f.read()).decode("ascii")
    except OSError:
        return None


def command(spec: dict) -> dict:
    if spec.get("argv"):
        args = [str(a) for a in spec["argv"]]
    else:
        args = [spec.get("executable") or "/bin/sh", "-c", spec["shell"]]
    try:
        proc = subprocess.run(args, capture_output=True, text=True, errors="replace")
    except OSError as e:  # the command is not there: as ansible.builtin.command with failed_when false
        return {"rc": 2, "stdout": "", "stderr": str(e), "cmd": args}
    return {"rc": proc.returncode, "stdout": proc.stdout.rstrip("\r\n"),
            "stderr": proc.stderr.rstrip("\r\n"), "cmd": args}


def main() -> None:
    module = AnsibleModule(argument_spec={
        "stat": {"type": "list", "elements": "str", "default": []},
        "find": {"type": "list", "elements": "dict", "default": []},
        "slurp": {"type": "list", "elements": "str", "default": []},
        "commands": {"type": "list", "elements": "dict", "default": []},
    }, supports_check_mode=True)
    p = module.params
    for spec in p["find"]:
        if not spec.get("name") or not spec.get("path") or (spec.get("file_type") or "file") not in FILE_TYPES:
            module.fail_json(msg=f"superpod_state: a find entry needs name, path and a file_type of "
                                 f"{', '.join(FILE_TYPES)}: {spec}")
    for spec in p["commands"]:
        if not spec.get("name") or bool(spec.get("argv")) == bool(spec.get("shell")):
            module.fail_json(msg=f"superpod_state: a command needs a name and either argv or shell: {spec}")
    commands = {spec["name"]: command(spec) for spec in p["commands"]}
    failed = [f"{spec['name']} (rc {commands[spec['name']]['rc']}: {commands[spec['name']]['stderr']})"
              for spec in p["commands"] if spec.get("required") and commands[spec["name"]]["rc"] != 0]
    if failed:
        module.fail_json(msg=f"superpod_state: required command failed: {'; '.join(failed)}", commands=commands)
    found = {spec["name"]: listing(spec) for spec in p["find"]}
    read = [*p["slurp"], *(path for spec in p["find"] if spec.get("slurp") for path in found[spec["name"]])]
    module.exit_json(changed=False,
                     stat={path: path_status(path) for path in p["stat"]},
                     find=found,
                     slurp={path: content(path) for path in read},
                     commands=commands)


if __name__ == "__main__":
    main()
