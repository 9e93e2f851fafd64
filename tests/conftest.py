from __future__ import annotations

from pathlib import Path

import pytest

from topology.layout.build import build
from topology.spec import PodSpec, load_stack_file, parse

ROOT = Path(__file__).resolve().parents[1]
STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in ROOT.glob("Pulumi.*.yaml"))
# [defaults] lines for the strategy the project's ansible.cfg runs with (mitogen_linear: one Python
# interpreter per host for the run instead of one per task): tests that write an ansible.cfg of
# their own run Ansible as superpod does, on a fifth to a third less CPU.
ANSIBLE_STRATEGY_LINES = ("strategy = mitogen_linear\n"
                          f"strategy_plugins = {ROOT / 'topology' / 'operate' / 'strategy_plugins'}\n")


def stack_spec(name: str) -> PodSpec:
    return load_stack_file(str(ROOT / f"Pulumi.{name}.yaml"))


_cache: dict = {}


def stack_layout(name: str):
    if name not in _cache:
        _cache[name] = build(stack_spec(name))
    return _cache[name]


def spec_with(base: str = "lab", **changes) -> PodSpec:
    """An example spec with fields replaced (nested dicts merge)."""
    data = stack_spec(base).model_dump(exclude_none=True)

    def merge(into, new):
        for k, v in new.items():
            if isinstance(v, dict) and isinstance(into.get(k), dict):
                merge(into[k], v)
            else:
                into[k] = v
    merge(data, changes)
    return parse(data)


@pytest.fixture(params=STACKS)
def example(request):
    return request.param, stack_layout(request.param)


def pytest_collection_modifyitems(items):
    """Hypothesis tests time out by the thread method: the signal method raises inside the test,
    hypothesis takes that for a failure and shrinks on with no limit left (a hang cost CI 25
    minutes); the thread method ends the worker, which xdist replaces and reports."""
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.timeout(method="thread"))


@pytest.fixture(autouse=True, scope="session")
def _record_key_outside_home(tmp_path_factory):
    """The key that signs `.runs/` records (topology/operate/record_key.py), made for the session:
    tests never create one in the user's ~/.config."""
    import os

    if not os.environ.get("SUPERPOD_RECORD_KEY_FILE"):
        os.environ["SUPERPOD_RECORD_KEY_FILE"] = str(tmp_path_factory.mktemp("record-key") / "record.key")
    yield
