"""Static checks of the host roles (hugepages, host_tuning): every default is declared in
meta/argument_specs.yml, every OS family file declares the same keys, and the kernel command
line / bootloader differences between families are real, not copies."""

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLES = ["hugepages", "host_tuning"]
FAMILIES = ["Debian", "Ubuntu-22", "Ubuntu-24", "RedHat-9"]


def load(path: Path):
    return yaml.safe_load(path.read_text()) or {}


@pytest.mark.parametrize("role", ROLES)
def test_layout(role):
    base = ROOT / "roles" / role
    for sub in ["defaults/main.yml", "tasks/main.yml", "handlers/main.yml", "meta/main.yml",
                "meta/argument_specs.yml", "molecule/default/molecule.yml",
                "molecule/default/verify.yml"]:
        assert (base / sub).is_file(), f"{role}: missing {sub}"
    assert list((base / "templates").iterdir()), f"{role}: no templates"


@pytest.mark.parametrize("role", ROLES)
def test_defaults_are_declared_and_prefixed(role):
    base = ROOT / "roles" / role
    defaults = load(base / "defaults/main.yml")
    options = load(base / "meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert all(k.startswith(role + "_") for k in defaults), "defaults must carry the role prefix"
    missing = sorted(set(defaults) - set(options))
    assert not missing, f"{role}: defaults not in argument_specs: {missing}"


@pytest.mark.parametrize("role", ROLES)
def test_families_declare_the_same_keys_with_real_differences(role):
    base = ROOT / "roles" / role / "vars"
    data = {f: load(base / f"{f}.yml") for f in FAMILIES}
    keys = {f: set(d) for f, d in data.items()}
    assert all(k == keys["Debian"] for k in keys.values()), keys
    key = f"{role}_family_bootloader_update_command"
    assert data["Debian"][key] == "update-grub"
    assert "grubby" in data["RedHat-9"][key]
    assert data["Debian"][f"{role}_family_packages"] != data["RedHat-9"][f"{role}_family_packages"]


def test_bios_vendor_maps_cover_the_documented_vendors():
    main = load(ROOT / "roles/host_tuning/vars/main.yml")
    maps = main["host_tuning_bios_vendor_attributes"]
    assert {"dell", "hpe", "supermicro"} <= set(maps)
    assert maps["hpe"]["MinProcIdlePower"] == "NoCStates"
    assert maps["dell"]["ProcCStates"] == "Disabled"
    assert set(main["host_tuning_bios_manufacturers"].values()) <= set(maps)
