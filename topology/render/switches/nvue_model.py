"""A rendered NVUE startup.yaml checked against NVIDIA's NVUE object model.

The judge is `nvueschema` (MIT, PyPI): Pydantic models generated from NVIDIA's NVUE OpenAPI
spec, one module per Cumulus Linux release. Its models ignore keys they do not have, so a
misspelt or moved key would pass; `unknown_keys` walks the config against the model's own
fields and refuses every key the model does not declare. Errors name the path in NVUE's
terms (`interface.swp1.qos.pfc-watchdog.state: ...`), the way `nv set` would spell it.
"""

from __future__ import annotations

import functools
import importlib
import types
import typing
from collections.abc import Iterator
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError

from topology.spec import NVUE_MODEL_RELEASES

NEWEST_RELEASE = NVUE_MODEL_RELEASES[-1]

# A startup.yaml is a list of operations; `nv config replace` takes a header and `set`.
_OPERATIONS = ("header", "set")


class NvueModelUnavailable(RuntimeError):
    """nvueschema is not installed (pip install 'superpod[test]')."""


@functools.cache
def root_model(release: str) -> type[BaseModel]:
    if release not in NVUE_MODEL_RELEASES:
        raise ValueError(f"Cumulus Linux {release} is not a release the NVUE models cover "
                         f"({', '.join(NVUE_MODEL_RELEASES)})")
    try:
        module = importlib.import_module(f"nvueschema.models.v{release.replace('.', '_')}")
    except ImportError as e:
        raise NvueModelUnavailable(f"NVUE models for Cumulus Linux {release}: {e}") from e
    return module.NvueConfig


def check_startup(doc: object, release: str = NEWEST_RELEASE) -> list[str]:
    """Every problem of one parsed startup.yaml as `path: message`; [] when the model accepts it."""
    if not isinstance(doc, list) or not doc:
        return ["(file): a startup.yaml is a list of operations (- set: ...)"]
    errors: list[str] = []
    model = root_model(release)
    for i, op in enumerate(doc):
        if not isinstance(op, dict) or len(op) != 1 or next(iter(op)) not in _OPERATIONS:
            errors.append(f"[{i}]: each item is one of {', '.join(_OPERATIONS)}")
            continue
        (kind, body), = op.items()
        if kind == "header":
            errors += _check(model.model_fields["header"].annotation, body, "header")
        else:
            errors += _check(model, body, "")
    return errors


def check_set(body: dict, release: str = NEWEST_RELEASE) -> list[str]:
    """The `set` body alone (the object tree `nv config replace` applies)."""
    return _check(root_model(release), body, "")


def _check(annotation, body: object, prefix: str) -> list[str]:
    errors = [f"{_join(prefix, p)}: unknown key (the NVUE model has no such field)"
              for p in unknown_keys(annotation, body)]
    model = _model_of(annotation)
    if model is not None and isinstance(body, dict):
        try:
            model.model_validate(body)
        except ValidationError as e:
            # a union (an address or 'auto') fails once per member at the same path: one line each
            by_path: dict[str, list[str]] = {}
            for err in e.errors():
                by_path.setdefault(_join(prefix, _data_path(body, err["loc"])), []).append(
                    f"{err['msg']} [input_value={err['input']!r}]")
            errors += [f"{path}: {' | '.join(dict.fromkeys(msgs))}" for path, msgs in by_path.items()]
    return errors


def unknown_keys(annotation, value: object, path: str = "") -> Iterator[str]:
    """Paths of keys in `value` the model (`annotation`) does not declare. Keys under a
    free-form mapping (Dict[str, Any]: the model says nothing of them) are not judged."""
    if not isinstance(value, dict):
        return
    shapes = _mapping_shapes(annotation)
    if not shapes or any(s is typing.Any for s in shapes):
        return
    models = [s for s in shapes if isinstance(s, type) and issubclass(s, BaseModel)]
    entries = [s[1] for s in shapes if isinstance(s, tuple)]
    for key, child in value.items():
        here = _join(path, str(key))
        if entries:  # a collection keyed by name (interface, vrf, neighbor ...)
            yield from unknown_keys(entries[0], child, here)
            continue
        field = next((f for m in models if (f := _fields(m).get(str(key))) is not None), None)
        if field is None:
            yield here
        else:
            yield from unknown_keys(field, child, here)


def _mapping_shapes(annotation) -> list:
    """What a mapping at this annotation can be: model classes, ("dict", value type), or Any."""
    origin = typing.get_origin(annotation)
    if annotation is typing.Any:
        return [typing.Any]
    if origin is typing.Annotated:
        return _mapping_shapes(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [s for arg in typing.get_args(annotation) for s in _mapping_shapes(arg)]
    if origin is dict:
        args = typing.get_args(annotation)
        return [("dict", args[1] if len(args) == 2 else typing.Any)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


def _model_of(annotation) -> type[BaseModel] | None:
    models = [s for s in _mapping_shapes(annotation) if isinstance(s, type) and issubclass(s, BaseModel)]
    return models[0] if models else None


@functools.cache
def _fields(model: type[BaseModel]) -> dict[str, object]:
    """NVUE key (the field's alias) -> its annotation."""
    return {(f.alias or name): f.annotation for name, f in model.model_fields.items()}


def _data_path(body: dict, loc: tuple) -> str:
    """Pydantic's error location with its union-member tags left out: only the keys the data has."""
    parts, node = [], body
    for step in loc:
        if isinstance(node, dict) and str(step) in {str(k) for k in node}:
            key = next(k for k in node if str(k) == str(step))
            parts.append(str(key))
            node = node[key]
    return ".".join(parts)


def _join(prefix: str, path: str) -> str:
    return ".".join(p for p in (prefix, path) if p) or "(root)"


def check_plan_files(switches_dir: Path, release: str) -> dict[str, list[str]]:
    """Every `<device>/startup.yaml` under a plan's switches/ folder (what `apply` pushes):
    file (relative) -> its problems; files the model accepts map to []."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out: dict[str, list[str]] = {}
    for path in sorted(Path(switches_dir).glob("*/startup.yaml")):
        try:
            doc = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 (a safe loader)
        except yaml.YAMLError as e:
            out[str(path.relative_to(switches_dir))] = [f"(file): not YAML: {e}"]
            continue
        out[str(path.relative_to(switches_dir))] = check_startup(doc, release)
    return out
