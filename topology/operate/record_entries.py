"""A run's events as record entries (topology/operate/manifest.py keeps the record): per host,
each file a template, copy or file task wrote or checked, each unit, the files a module of ours
reports as managed, and what the run read (commands a role declares a read, stat, slurp, find,
superpod_state's reads of each, modules, units' state, facts), or `unverifiable` where the quick
check cannot replay it."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from topology.operate.declared import is_declared_read

PATH_MODULES = {"ansible.builtin.template", "ansible.builtin.copy", "ansible.builtin.file",
                "template", "copy", "file"}
UNIT_MODULES = {"ansible.builtin.systemd_service", "ansible.builtin.systemd", "systemd_service", "systemd"}
# ours: they report each file they keep as `managed` (superpod_files: library/, through its action)
SET_MODULES = {"rail_network_files", "superpod_files"}
PATH_STATES = ("file", "directory", "absent")
# ours: a role's reads in one call (library/superpod_state.py), recorded as the reads it stands for
STATE_MODULES = {"superpod_state"}
# Tasks that run on the controller only and read nothing of the host (facts: the `facts` entry)
CONTROLLER_ONLY = {"set_fact", "assert", "debug", "fail", "include_tasks", "import_tasks", "include_role",
                   "import_role", "include_vars", "meta", "validate_argument_spec", "add_host", "group_by",
                   "set_stats", "gather_facts", "setup"}
COMMAND_MODULES = {"command", "shell"}
PROBE_ARGS = ("argv", "_raw_params", "_uses_shell", "chdir", "executable", "stdin", "stdin_add_newline",
              "strip_empty_ends")
FIND_ARGS = ("paths", "patterns", "excludes", "file_type", "recurse", "hidden", "contains", "follow")
FIND_DEFAULTS = {"use_regex": (False, None), "age_stamp": ("mtime", None), "get_checksum": (False, None),
                 "depth": (None,), "age": (None,), "size": (None,), "read_whole_file": (False, None),
                 "encoding": (None,), "limit": (None,), "checksum_algorithm": ("sha1", None),
                 "mode": (None,), "exact_mode": (True, None)}
PACKAGE_MODULES = {"package", "apt", "dnf", "yum", "dpkg_selections"}
PACKAGE_QUERIES = {"dpkg-query", "rpm"}  # site.yml's installed-packages query (filter superpod_package_query)
MODPROBE_MODULES = {"community.general.modprobe", "modprobe"}
# node_check's module: a check of the node, not state a role keeps. Its verdict is taken anew by
# the record check (quick_drift.yml runs the role from today's tree where the record holds this)
CHECKS = {"superpod_node_check"}
PIP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # a distribution name, nothing else (no version, path, URL)
REMOTE_READS = {"uri", "community.general.redfish_info", "community.general.redfish_config"}
UNIT_ACTIVE = {"started": True, "restarted": True, "reloaded": True, "stopped": False}


def _results(res: dict) -> Iterator[dict]:
    """A task's result, or each item's for a loop."""
    items = res.get("results")
    yield from (items if isinstance(items, list) else [res])


_FILE_ATTRS = ("mode", "owner", "group")


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()


def _module_args(res: dict) -> dict:
    """The arguments the module ran with, as it echoes them back."""
    return (res.get("invocation") or {}).get("module_args") or {}


def _task_path(task_path: str, project_dir: Path | None) -> str:
    """Where the task is, relative to the project when it lies there (the check finds it again in
    the tree of its day: topology/operate/trusted_record.py)."""
    path, _, line = task_path.rpartition(":")
    if project_dir and path:
        try:
            return f"{Path(path).resolve().relative_to(Path(project_dir).resolve())}:{line}"
        except ValueError:
            pass
    return task_path


def _probe(res: dict, task: str, task_path: str) -> dict | None:
    """A declared read's command, as the check replays it, with what it answered and the task it
    came from (the check runs it only while that task still reads exactly this)."""
    args = _module_args(res)
    kept = {k: args[k] for k in PROBE_ARGS if args.get(k) not in (None, "", [])}
    if not (kept.get("argv") or kept.get("_raw_params")) or not isinstance(res.get("rc"), int):
        return None
    return {"probe": task, "args": kept, "rc": res["rc"], "stdout_sha1": _sha1(str(res.get("stdout") or "")),
            "task_path": task_path}


def _account(short: str, res: dict) -> dict | None:
    """A user or group as the module left it."""
    if not res.get("name") or res.get("state") not in ("present", "absent"):
        return None
    kind = f"{short}_account"  # not `group`: a file's entry has a group too
    if res["state"] == "absent":
        return {kind: res["name"], "present": False}
    keep = ("gid",) if short == "group" else ("uid", "group", "home", "shell")
    return {kind: res["name"], "present": True, **{k: res[k] for k in keep if res.get(k) not in (None, "")}}


def _mount(_: str, res: dict) -> dict | None:
    args = _module_args(res)
    path, state = res.get("name") or args.get("path"), args.get("state")
    if not path or state not in ("mounted", "present", "absent", "unmounted"):
        return None
    return {"mount": path, "state": state, **{k: res[k] for k in ("src", "fstype", "opts") if res.get(k)}}


def _alternative(_: str, res: dict) -> dict | None:
    args = _module_args(res)
    if not args.get("name") or not args.get("path") or args.get("state") not in ("present", "selected", "auto"):
        return None
    return {"alternative": args["name"], "path": args["path"], "selected": args["state"] == "selected"}


def _pip(_: str, res: dict) -> dict | None:
    names = res.get("name") or []
    if res.get("requirements") or res.get("state") not in ("present", "latest", "forcereinstall") \
            or not res.get("virtualenv") or not all(PIP_NAME.fullmatch(str(n)) for n in names) or not names:
        return None
    return {"pip": sorted(str(n) for n in names), "virtualenv": res["virtualenv"]}


_RECORDERS = {"user": _account, "group": _account, "ansible.posix.mount": _mount,
              "community.general.alternatives": _alternative, "pip": _pip}


def _find(res: dict, task: str) -> dict | None:
    args = _module_args(res)
    if any(args.get(k) not in FIND_DEFAULTS.get(k, (None,)) for k in args if k not in FIND_ARGS):
        return None  # options the check does not replay
    kept = {k: args[k] for k in FIND_ARGS if args.get(k) not in (None, "", [])}
    return {"find": task, "args": kept, "matched": sorted(f["path"] for f in res.get("files") or [] if f.get("path"))}


def _stat(action: str, res: dict) -> dict | None:
    if action == "slurp":
        path = res.get("source") or _module_args(res).get("src")
        if path and "content" not in res and str(res.get("msg", "")).startswith("File not found"):
            return {"path": path, "state": "absent"}  # a read that found nothing (failed_when: false)
        if not path or res.get("encoding") != "base64":
            return None
        return {"path": path, "state": "file",
                "checksum": hashlib.sha1(base64.b64decode(res.get("content") or "")).hexdigest()}
    st = res.get("stat") or {}
    path = _module_args(res).get("path")
    if not path:
        return None
    if not st.get("exists"):
        return {"path": path, "state": "absent"}
    state = "directory" if st.get("isdir") else "file" if st.get("isreg") else None
    if state is None:
        return {"path": path, "state": "exists"}
    entry = {"path": path, "state": state}
    if state == "file" and st.get("checksum"):
        entry["checksum"] = st["checksum"]
    return entry


def state_command_args(spec: dict) -> dict:
    """A superpod_state command as the check replays it: the command and shell modules' arguments
    (a shell command runs as `executable -c script`, as the shell module runs it)."""
    if spec.get("argv"):
        argv = spec["argv"]  # one expression that makes the whole list stays the task's text
        return {"argv": argv if isinstance(argv, str) else [str(a) for a in argv]}
    return {"_raw_params": spec.get("shell"), "_uses_shell": True, "executable": spec.get("executable") or "/bin/sh"}


def _state(res: dict, task: str, task_path: str, declared: bool) -> Iterator[dict]:
    """superpod_state's reads (library/superpod_state.py), as the stat, slurp, find and declared
    command tasks they stand for are recorded; its commands only where the task is a declared read."""
    args = _module_args(res)
    for path, st in (res.get("stat") or {}).items():
        yield _stat("stat", {"stat": st, "invocation": {"module_args": {"path": path}}}) \
            or {"unverifiable": "superpod_state", "task": task}
    for path, content in (res.get("slurp") or {}).items():
        yield ({"path": path, "state": "absent"} if content is None else
               {"path": path, "state": "file", "checksum": hashlib.sha1(base64.b64decode(content)).hexdigest()})
    for spec in args.get("find") or []:
        matched = (res.get("find") or {}).get(spec.get("name"))
        if matched is None:
            yield {"unverifiable": "superpod_state", "task": task}
            continue
        kept = {"paths": [spec["path"]], "patterns": spec.get("patterns") or ["*"],
                "file_type": spec.get("file_type") or "file"}
        yield {"find": f"{task} [{spec['name']}]", "args": kept, "matched": sorted(matched)}
    for spec in args.get("commands") or []:
        ran = (res.get("commands") or {}).get(spec.get("name"))
        if not declared or not isinstance(ran, dict) or not isinstance(ran.get("rc"), int):
            yield {"unverifiable": "superpod_state", "task": task}
            continue
        yield {"probe": f"{task} [{spec['name']}]", "args": state_command_args(spec), "rc": ran["rc"],
               "stdout_sha1": _sha1(str(ran.get("stdout") or "")), "task_path": task_path,
               "state_command": spec["name"]}


def _short(action: str) -> str:
    return action.removeprefix("ansible.builtin.").removeprefix("ansible.legacy.")


def _entries(action: str, res: dict, data: dict | None = None, project_dir: Path | None = None) -> Iterator[dict]:
    """A result's entries: one for a file or unit task; a module of ours that writes several
    files reports each as `managed` (roles/rail_network/library/rail_network_files.py); the
    observations (module docstring); an `unverifiable` entry for what cannot be checked."""
    data = data or {}
    task = str(data.get("task") or "")
    if not isinstance(res, dict) or res.get("skipped") or res.get("failed"):
        return
    short = _short(action)
    if short in CONTROLLER_ONLY:
        return
    if res.get("_ansible_delegated_vars"):
        if short in REMOTE_READS:  # another system's state (a BMC), read through the controller
            yield {"unverifiable": short, "task": task}
        return  # the controller's own build cache
    if "censored" in res or res.get("_ansible_no_log"):
        yield {"unverifiable": "no_log", "task": task}
        return
    if short in CHECKS:
        yield {"node_check": short}
        return
    if short in COMMAND_MODULES:
        if is_declared_read(data.get("task_path")):
            probe = _probe(res, task, _task_path(str(data.get("task_path")), project_dir))
            yield probe if probe else {"unverifiable": short, "task": task}
        return  # an action that ran: what it acts on is read by the role's probes
    if short in STATE_MODULES:
        yield from _state(res, task, _task_path(str(data.get("task_path")), project_dir),
                          is_declared_read(data.get("task_path")))
    elif short in PACKAGE_MODULES:
        yield {"packages": short}  # covered when the installed-packages query is in the record
    elif short in ("stat", "slurp"):
        entry = _stat(short, res)
        yield entry if entry else {"unverifiable": short, "task": task}
    elif short == "find":
        entry = _find(res, task)
        yield entry if entry else {"unverifiable": short, "task": task}
    elif short in _RECORDERS:
        entry = _RECORDERS[short](short, res)
        yield entry if entry else {"unverifiable": short, "task": task}
    elif short == "unarchive":  # the tree it unpacked: that it is there (its contents are the archive's)
        for path, state in ((res.get("dest"), "directory"),
                            (_module_args(res).get("creates"), "exists")):
            if path:
                yield {"path": path, "state": state}
    elif short == "deb822_repository":
        if res.get("dest") and _module_args(res).get("state") == "absent":
            yield {"path": res["dest"], "state": "absent"}
        elif res.get("dest") and isinstance(res.get("repo"), str):
            yield {"path": res["dest"], "state": "file", "checksum": _sha1(res["repo"])}
        else:
            yield {"unverifiable": short, "task": task}
    elif action in MODPROBE_MODULES:
        if res.get("name") and res.get("state") in ("present", "absent"):
            yield {"kmod": res["name"], "loaded": res["state"] == "present"}
    elif action in SET_MODULES:
        for e in res.get("managed") or []:
            if isinstance(e, dict) and e.get("path") and e.get("state") in PATH_STATES:
                yield {k: e[k] for k in ("path", "state", "checksum", *_FILE_ATTRS) if e.get(k)}
    elif action in UNIT_MODULES:
        if isinstance(res.get("enabled"), bool) and res.get("name"):
            yield {"unit": res["name"], "enabled": res["enabled"]}
        if res.get("name") and res.get("state") in UNIT_ACTIVE:
            yield {"unit_active": res["name"], "active": UNIT_ACTIVE[res["state"]]}
    elif action in PATH_MODULES:
        path, state = res.get("dest") or res.get("path"), res.get("state")
        if path and state in PATH_STATES:
            entry = {"path": path, "state": state}
            if state == "file" and res.get("checksum"):
                entry["checksum"] = res["checksum"]
            if state != "absent":
                entry |= {k: res[k] for k in _FILE_ATTRS if res.get(k)}
            yield entry
    else:
        yield {"unverifiable": short, "task": task}


def entry_key(entry: dict) -> str:
    """The key an entry is merged under: a later run's entry for the same thing replaces it."""
    if "pip" in entry:
        return f"pip:{entry['virtualenv']}:{','.join(entry['pip'])}"
    if "alternative" in entry:
        return f"alternative:{entry['alternative']}:{entry['path']}"
    for kind in ("unit", "unit_active", "kmod", "packages", "user_account", "group_account", "mount", "node_check"):
        if kind in entry:
            return f"{kind}:{entry[kind]}"
    if "unverifiable" in entry:
        return f"unverifiable:{entry['unverifiable']}:{entry['task']}"
    if "probe" in entry or "find" in entry:
        what = "probe" if "probe" in entry else "find"
        return f"{what}:{_sha1(json.dumps(entry['args'], sort_keys=True))}"
    if "facts" in entry:
        return "facts"
    return f"path:{entry['path']}"


def _with_package_coverage(entries: dict[str, dict]) -> dict[str, dict]:
    """Package modules' state is the installed-packages query's output: a record with the
    query replays it; one without it cannot check what those modules saw."""
    if not any(k.startswith("packages:") for k in entries):
        return entries
    queried = any(Path(str((e["args"].get("argv") or [""])[0])).name in PACKAGE_QUERIES
                  for e in entries.values() if "probe" in e)
    out = {k: e for k, e in entries.items() if not k.startswith("packages:")}
    if not queried:
        for k in entries:
            if k.startswith("packages:"):
                entry = {"unverifiable": k.removeprefix("packages:"), "task": "(no installed-packages query)"}
                out[entry_key(entry)] = entry
    return out


def entries_from_events(events: Iterable[dict], project_dir: Path | None = None) -> dict[str, dict[str, dict]]:
    """host -> {key: entry} from a run's events, later results over earlier ones; task paths
    relative to project_dir when given."""
    out: dict[str, dict[str, dict]] = {}
    for event in events:
        if event.get("event") != "runner_on_ok":
            continue
        data = event.get("event_data") or {}
        action = data.get("resolved_action") or data.get("task_action") or ""
        res = data.get("res") or {}
        delegated = res.get("_ansible_delegated_vars")
        if "censored" in res or res.get("_ansible_no_log"):  # a loop's items may not say so
            res = {"censored": True, "_ansible_delegated_vars": delegated}
        for item in _results(res):
            if delegated and isinstance(item, dict):
                item = {**item, "_ansible_delegated_vars": delegated}
            for entry in _entries(action, item, data, project_dir):
                out.setdefault(data.get("host", "?"), {})[entry_key(entry)] = entry
    return {host: _with_package_coverage(entries) for host, entries in out.items()}
