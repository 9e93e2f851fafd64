"""Reading a user's YAML (spec, stack file) so that no input can crash or exhaust the reader.

The file is capped in size and must be UTF-8; libyaml (the C loader) parses it; nesting is
checked on the event stream before anything recursive sees the document (libyaml's composer
recurses per level and crashes the interpreter some 100,000 levels down), aliases are refused
(a few nested ones expand to billions of values); a key given twice in one mapping is an
error, not a silent "last one wins".
"""

from __future__ import annotations

import yaml

from topology.errors import SpecError

MAX_BYTES = 1 << 20  # a pod spec is a few kB; a Pulumi stack file with secrets stays far below
MAX_DEPTH = 32  # a spec nests 4 deep

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class StrictLoader(_Loader):  # type: ignore[misc, valid-type]
    """Safe loader that refuses duplicate keys."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:
                continue  # an unhashable key: SafeConstructor reports it below
            if first is not key_node:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first at line {first.start_mark.line + 1})",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep)


StrictLoader.add_constructor("tag:yaml.org,2002:map", StrictLoader.construct_yaml_map)


def read_text(path: str, field: str) -> str:
    """The file's text, or a SpecError naming `field` (too big, unreadable, not UTF-8)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise SpecError(field, f"cannot read {path}: {e.strerror or e}") from None
    if len(data) > MAX_BYTES:
        raise SpecError(field, f"{path} is larger than {MAX_BYTES // 1024} KiB (a spec is a few kB)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecError(field, f"{path} is not UTF-8 text (byte {e.start}: {data[e.start:e.start + 1]!r})") from None


def _where(e: yaml.YAMLError) -> str:
    mark = getattr(e, "problem_mark", None)
    return f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""


def loads(text: str, source: str) -> object:
    """Parses one YAML document; every problem becomes SpecError(source, ...)."""
    try:
        depth = 0
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    line = event.start_mark.line + 1 if event.start_mark else "?"
                    raise SpecError(source, f"YAML nested deeper than {MAX_DEPTH} levels (line {line})")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            elif isinstance(event, yaml.AliasEvent):  # "billion laughs": aliases multiply what validation walks
                line = event.start_mark.line + 1 if event.start_mark else "?"
                raise SpecError(source, f"YAML aliases (*name) are not allowed (line {line}); write the value out")
        loader = StrictLoader(text)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as e:
        problem = getattr(e, "problem", None) or str(e)
        if "nesting depth" in problem:  # libyaml's own limit (PyYAML 6.0.4) can trip before our event count
            mark = getattr(e, "problem_mark", None)
            line = mark.line + 1 if mark is not None else "?"
            raise SpecError(source, f"YAML nested deeper than {MAX_DEPTH} levels (line {line})") from None
        raise SpecError(source, f"malformed YAML{_where(e)}: {problem}") from None
    except (RecursionError, MemoryError):
        raise SpecError(source, "YAML too large or too deeply nested") from None


def load_file(path: str, field: str | None = None) -> object:
    return loads(read_text(path, field or path), field or path)
