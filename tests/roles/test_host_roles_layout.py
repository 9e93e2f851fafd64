"""Static checks of the host roles (hugepages, host_tuning) beyond the conventions every role
keeps (test_role_conventions.py): the kernel command line / bootloader differences between
families are real, not copies, and the BIOS vendor maps cover the documented vendors."""


import pytest

from tests.role_files import FAMILIES, ROOT, load

ROLES = ["hugepages", "host_tuning"]


@pytest.mark.parametrize("role", ROLES)
def test_bootloader_roles_have_handlers_and_templates(role):
    base = ROOT / "roles" / role
    assert (base / "handlers/main.yml").is_file(), f"{role}: missing handlers/main.yml"
    assert list((base / "templates").iterdir()), f"{role}: no templates"


@pytest.mark.parametrize("role", ROLES)
def test_families_differ_where_the_bootloader_does(role):
    base = ROOT / "roles" / role / "vars"
    data = {f: load(base / f"{f}.yml") for f in FAMILIES}
    key = f"{role}_family_bootloader_update_command"
    assert data["Debian"][key] == "update-grub"
    assert "grubby" in data["RedHat-9"][key]
    assert data["Debian"][f"{role}_family_packages"] != data["RedHat-9"][f"{role}_family_packages"]


def test_bios_vendor_maps_cover_the_documented_vendors():
    main = load(ROOT / "roles/host_tuning/defaults/main.yml")  # tunables: the inventory may override them
    maps = main["host_tuning_bios_vendor_attributes"]
    assert {"dell", "hpe", "supermicro"} <= set(maps)
    assert maps["hpe"]["MinProcIdlePower"] == "NoCStates"
    assert maps["dell"]["ProcCStates"] == "Disabled"
    assert set(main["host_tuning_bios_manufacturers"].values()) <= set(maps)


@pytest.mark.parametrize("role", ROLES)
def test_no_handler_flush_inside_the_role(role):
    """meta: flush_handlers inside a role runs every other role's pending handlers mid-play."""
    for path in (ROOT / "roles" / role / "tasks").glob("*.yml"):
        assert "flush_handlers" not in path.read_text(), path
