"""Which tasks a role declares to be reads: `check_mode: false` (it runs even in a drift
check) and `changed_when: false` (it changes nothing). Found from an event's task_path
(`file:line`, where the task's mapping starts) in the task file itself, so the record of a run
(topology/operate/manifest.py) can replay exactly those commands and no other."""

from __future__ import annotations

import os
from functools import lru_cache

import yaml

_FALSE = {"false", "no", "off"}


def _is_false(node: yaml.Node | None) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag.endswith(":bool") and node.value.lower() in _FALSE


def _construct(node: yaml.Node):
    return yaml.SafeLoader("").construct_object(node, deep=True)


def _reads_in(path: str) -> dict[int, yaml.Node]:
    """The declared reads' mapping nodes in a task file, by the 1-based line where each starts
    (read again when the file changed: the check asks about the tree as it is now)."""
    try:
        st = os.stat(path)
    except OSError:
        return {}
    return _reads_at(path, st.st_mtime_ns, st.st_size, st.st_ino)


@lru_cache(maxsize=256)
def _reads_at(path: str, _mtime_ns: int, _size: int, _ino: int) -> dict[int, yaml.Node]:
    try:
        with open(path, encoding="utf-8") as f:
            root = yaml.compose(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return {}
    lines: dict[int, yaml.Node] = {}
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            keys = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
            if _is_false(keys.get("check_mode")) and _is_false(keys.get("changed_when")):
                lines[node.start_mark.line + 1] = node
            stack.extend(v for _, v in node.value)  # blocks' tasks
    return lines


def is_declared_read(task_path: str | None) -> bool:
    """True for a task at `file:line` that says check_mode: false and changed_when: false."""
    path, _, line = (task_path or "").rpartition(":")
    return bool(path) and line.isdigit() and int(line) in _reads_in(path)


def declared_read(task_path: str | None) -> dict | None:
    """The task at `file:line` as the file says it now, if it is a declared read; else None."""
    path, _, line = (task_path or "").rpartition(":")
    node = _reads_in(path).get(int(line)) if path and line.isdigit() else None
    return _construct(node) if node is not None else None
