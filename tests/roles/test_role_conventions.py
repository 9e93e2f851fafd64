"""Conventions every role keeps (users rely on them across roles): the standard layout with a
molecule scenario and a verify, every default prefixed with the role name and declared in
meta/argument_specs.yml, and one vars file per declared OS family, all with the same keys."""

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks/main.yml").is_file())
FAMILIES = ["Debian", "Ubuntu-22", "Ubuntu-24", "RedHat-9"]


def load(path: Path):
    return yaml.safe_load(path.read_text()) or {}


@pytest.mark.parametrize("role", ROLES)
def test_layout(role):
    base = ROOT / "roles" / role
    for sub in ["defaults/main.yml", "tasks/main.yml", "meta/main.yml", "meta/argument_specs.yml",
                "molecule/default/molecule.yml", "molecule/default/verify.yml"]:
        assert (base / sub).is_file(), f"{role}: missing {sub}"


@pytest.mark.parametrize("role", ROLES)
def test_defaults_are_declared_and_prefixed(role):
    base = ROOT / "roles" / role
    defaults = load(base / "defaults/main.yml")
    options = load(base / "meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert all(k.startswith(role + "_") for k in defaults), "defaults must carry the role prefix"
    missing = sorted(set(defaults) - set(options))
    assert not missing, f"{role}: defaults not in argument_specs: {missing}"


@pytest.mark.parametrize("role", ROLES)
def test_families_declare_the_same_keys(role):
    base = ROOT / "roles" / role / "vars"
    present = [f for f in FAMILIES if (base / f"{f}.yml").is_file()]
    if not present:
        pytest.skip(f"{role} has no OS family specifics")
    assert present == FAMILIES, f"{role}: family files {present}, want {FAMILIES}"
    keys = {f: set(load(base / f"{f}.yml")) for f in FAMILIES}
    assert all(k == keys["Debian"] for k in keys.values()), keys
