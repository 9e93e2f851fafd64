"""What the record check may run on a host, decided on the controller from today's tree.

A host's record (topology/operate/manifest.py) holds the commands its roles declared as reads,
with the arguments they ran with. The record is data, never code: a command in it runs again only
when
- the record's signature holds (topology/operate/record_key.py: written by `superpod apply` on
  this control node, unchanged since), and
- the task it names (`task_path`, relative to the project) is, in the role files as they are
  now, a declared read (check_mode: false, changed_when: false) of the same module (command or
  shell, or the same named command of a superpod_state task; any of its commands where the task
  writes them as one expression, whose value the signed run decided), and the recorded arguments are an
  instance of the task's: each literal part of the task's text exactly, each `{{ ... }}` any value
  (the value came from the signed run; the variables behind it are inputs of that run,
  topology/operate/inputs.py).
Anything else and the host is not checked by its record: it runs in full, and the reason says why.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from topology.operate.declared import declared_read
from topology.operate.manifest import load_verified
from topology.operate.private_files import write_private
from topology.operate.record_entries import state_command_args
from topology.operate.record_key import UntrustedRecord

_SHELL = {"shell", "ansible.builtin.shell", "ansible.legacy.shell"}
_COMMAND = {"command", "ansible.builtin.command", "ansible.legacy.command"}
_STATE = {"superpod_state", "ansible.legacy.superpod_state"}  # library/superpod_state.py: its named commands
_TEMPLATE = re.compile(r"{{.*?}}|{%.*?%}|{#.*?#}", re.DOTALL)
_BLOCK_OPENERS = {"if", "for", "macro", "call", "filter", "with", "block"}  # (a one-line set closes nothing)
_DEFAULT_TRUE = ("stdin_add_newline", "strip_empty_ends")  # the modules' defaults, echoed back
_TEXT_ARGS = ("_raw_params", "chdir", "executable", "stdin")


def _instance_of(template, value) -> bool:
    """True when `value` is what `template` can render to: its literal text exactly, each Jinja
    expression anything."""
    if isinstance(template, bool) or isinstance(value, bool):
        return str(template).lower() == str(value).lower()
    pattern, text, at, depth = "", str(template), 0, 0
    for tag in _TEMPLATE.finditer(text):
        literal = re.escape(text[at:tag.start()])
        # text inside an {% if %} or {% for %} block is there 0 or n times
        pattern += (f"(?:{literal})*" if depth and literal else literal) + ".*"
        at = tag.end()
        word = tag.group()[2:].strip(" -+").split(" ")[0] if tag.group().startswith("{%") else ""
        depth += 1 if word in _BLOCK_OPENERS else -1 if word.startswith("end") and depth else 0
        if tag.group().startswith(("{%", "{#")) and text.startswith("\n", at):
            pattern += "\n?"  # Ansible renders with trim_blocks: the newline after a block tag goes
            at += 1
    pattern += re.escape(text[at:])
    return re.fullmatch(pattern, str(value), re.DOTALL) is not None


def _state_commands_one_expression(task: dict) -> bool:
    """A superpod_state task whose commands are one expression: any recorded command of it is the
    run's value, as an argv of one expression is."""
    state = next((task[k] for k in task if k in _STATE), None)
    specs = state.get("commands") if isinstance(state, dict) else None
    return isinstance(specs, str) and _TEMPLATE.fullmatch(specs.strip()) is not None


def _task_args(task: dict, state_command: str | None = None) -> tuple[bool, dict] | None:
    """(shell?, arguments) of a command or shell task as its file writes them, or of the named
    command of a superpod_state task (record_entries.state_command_args); None for others."""
    if state_command is not None:
        state = next((task[k] for k in task if k in _STATE), None)
        specs = (state or {}).get("commands") if isinstance(state, dict) else None
        spec = next((c for c in specs or [] if isinstance(c, dict) and c.get("name") == state_command), None)
        if spec is None:
            return None
        args = state_command_args(spec)
        return bool(args.pop("_uses_shell", False)), args
    module = next((k for k in task if k in _SHELL | _COMMAND), None)
    if module is None:
        return None
    raw = task[module]
    args = dict(raw) if isinstance(raw, dict) else {"_raw_params": raw} if raw is not None else {}
    if isinstance(task.get("args"), dict):
        args |= task["args"]
    if "cmd" in args:
        args["_raw_params"] = args.pop("cmd")
    return module in _SHELL, args


def _args_differ(recorded: dict, shell: bool, task_args: dict) -> str | None:
    """What differs between a recorded read's arguments and its task's; None when nothing does."""
    for key, value in recorded.items():
        if key == "_uses_shell":
            if bool(value) != shell:
                return f"_uses_shell {value!r}, the task is a {'shell' if shell else 'command'} task"
        elif key in _DEFAULT_TRUE:
            if not _instance_of(task_args.get(key, True), value):
                return f"{key} {value!r}, the task says {task_args.get(key, True)!r}"
        elif key == "argv":
            want = task_args.get("argv")
            if isinstance(want, str) and _TEMPLATE.fullmatch(want.strip()):
                continue  # one expression that makes the whole list
            if not isinstance(want, list) or not isinstance(value, list) or len(want) != len(value) \
                    or not all(_instance_of(w, v) for w, v in zip(want, value, strict=True)):
                return f"argv {value!r}, the task says {want!r}"
        elif key in _TEXT_ARGS:
            if key not in task_args or not _instance_of(task_args[key], value):
                return f"{key} {value!r}, the task says {task_args.get(key)!r}"
        else:
            return f"argument {key!r} the check does not replay"
    if shell and not recorded.get("_uses_shell"):
        return "the task is a shell task, the record's read is not"
    return None


def refusal(entry: dict, project_dir: Path, playbook_dir: Path | None = None) -> str | None:
    """Why a recorded read must not run now; None when its task in today's tree still reads it.
    Its task must lie in the project or beside the playbook (where the inputs digest looks)."""
    where = str(entry.get("task_path") or "")
    path, _, line = where.rpartition(":")
    if not path or not line.isdigit():
        return f"read {entry.get('probe')!r}: the record names no task for it"
    root = Path(project_dir).resolve()
    file = (root / path).resolve()
    roots = [root, *([Path(playbook_dir).resolve()] if playbook_dir else [])]
    if not any(file.is_relative_to(r) for r in roots):
        return f"read {entry.get('probe')!r}: its task {where} is outside the project {root}"
    task = declared_read(f"{file}:{line}")
    if task is None:
        return f"read {entry.get('probe')!r}: no declared read at {where} in today's role files"
    if "state_command" in entry and _state_commands_one_expression(task):
        return None
    parsed = _task_args(task, entry.get("state_command"))
    if parsed is None:
        state = f" nor a superpod_state task with the command {entry['state_command']!r}" \
            if "state_command" in entry else ""
        return f"read {entry.get('probe')!r}: the task at {where} is not a command or shell task{state}"
    differs = _args_differ(entry.get("args") or {}, *parsed)
    return f"read {entry.get('probe')!r}: arguments differ from the task at {where}: {differs}" if differs else None


def vetted(record: Path, project_dir: Path, playbook_dir: Path | None = None) -> list[dict]:
    """The record's entries, every read in it checked against today's tree; UntrustedRecord with
    the reason when the record does not verify or a read in it may not run."""
    entries = load_verified(record)
    if not entries:
        raise UntrustedRecord(f"{record}: no record of this host")
    for entry in entries:
        if "probe" in entry:
            why = refusal(entry, project_dir, playbook_dir)
            if why:
                raise UntrustedRecord(why)
    return entries


def write_vetted(manifest_dir: Path, hosts: list[str], project_dir: Path, out_dir: Path,
                 playbook_dir: Path | None = None) -> dict[str, str]:
    """Writes each host's vetted record into out_dir (what quick_drift.yml hands the check);
    a host whose record is refused gets one entry saying why (the check fails on it). Returns
    host -> reason for the refused ones."""
    refused = {}
    for host in hosts:
        try:
            entries = vetted(Path(manifest_dir) / f"{host}.json", project_dir, playbook_dir)
        except (UntrustedRecord, ValueError) as e:
            refused[host] = str(e)
            entries = [{"refused": str(e)}]
        write_private(Path(out_dir) / f"{host}.json", json.dumps(entries) + "\n")
    return refused
