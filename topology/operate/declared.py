"""Which tasks a role declares to be reads: `check_mode: false` (it runs even in a drift
check) and `changed_when: false` (it changes nothing). Found from an event's task_path
(`file:line`, where the task's mapping starts) in the task file itself, so the record of a run
(topology/operate/manifest.py) can replay exactly those commands and no other."""

from __future__ import annotations

from functools import lru_cache

import yaml

_FALSE = {"false", "no", "off"}


def _is_false(node: yaml.Node | None) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag.endswith(":bool") and node.value.lower() in _FALSE


@lru_cache(maxsize=256)
def _reads_in(path: str) -> frozenset[int]:
    """The 1-based lines where a declared read's mapping starts in a task file."""
    try:
        with open(path, encoding="utf-8") as f:
            root = yaml.compose(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return frozenset()
    lines: set[int] = set()
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            keys = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
            if _is_false(keys.get("check_mode")) and _is_false(keys.get("changed_when")):
                lines.add(node.start_mark.line + 1)
            stack.extend(v for _, v in node.value)  # blocks' tasks
    return frozenset(lines)


def is_declared_read(task_path: str | None) -> bool:
    """True for a task at `file:line` that says check_mode: false and changed_when: false."""
    path, _, line = (task_path or "").rpartition(":")
    return bool(path) and line.isdigit() and int(line) in _reads_in(path)
