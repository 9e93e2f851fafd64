"""Static checks of the nvidia_driver role: every default is declared in the argument spec
and prefixed, the OS family files declare the same keys with real per-family differences,
every family offers all four kernel module kinds, and the modprobe template writes the
options under the module name each family really loads."""


import jinja2
import pytest

from tests.role_files import FAMILIES, ROOT, load

ROLE = ROOT / "roles" / "nvidia_driver"
KINDS = {"proprietary", "open", "proprietary-signed", "open-signed"}


def family(name: str) -> dict:
    return load(ROLE / "vars" / f"{name}.yml")


@pytest.mark.parametrize("name", FAMILIES)
def test_every_kernel_module_kind_is_offered(name):
    kernel = family(name)["nvidia_driver_family_kernel_packages"]
    assert set(kernel) == KINDS
    for kind, spec in kernel.items():
        assert {"pinned", "unpinned", "dkms"} <= set(spec), (name, kind)
    # The open kind must really install other packages than the proprietary one.
    assert kernel["open"]["pinned"] != kernel["proprietary"]["pinned"] or "stream" in kernel["open"]


def test_families_really_differ():
    deb, u22, u24, rhel = (family(f) for f in FAMILIES)
    assert deb["nvidia_driver_family_pkg_manager"] == "apt" and rhel["nvidia_driver_family_pkg_manager"] == "dnf"
    # Debian renames the module files; the options must name nvidia-current there.
    assert deb["nvidia_driver_family_module_options_name"] == "nvidia-current"
    assert u22["nvidia_driver_family_module_options_name"] == "nvidia"
    # Ubuntu's Secure Boot path is prebuilt signed modules, Debian's is DKMS + MOK.
    assert u22["nvidia_driver_family_kernel_packages"]["proprietary-signed"]["dkms"] is False
    assert deb["nvidia_driver_family_kernel_packages"]["proprietary-signed"]["dkms"] is True
    assert deb["nvidia_driver_family_secure_boot_mok_cert"]
    assert rhel["nvidia_driver_family_initramfs_command"][0] == "dracut"


def test_gpu_model_rules_use_catalog_keys():
    catalog = load(ROLE.parents[1] / "topology" / "data" / "catalog.yaml")
    rules = load(ROLE / "vars/main.yml")["nvidia_driver_gpu_model_rules"]
    known = set(catalog["gpus"]) | {"gb200"}
    assert set(rules) <= known, set(rules) - known
    assert rules["b200"]["kernel_modules"] == "open"


@pytest.mark.parametrize("name,module", [("Debian", "nvidia-current"), ("RedHat-9", "nvidia")])
def test_modprobe_template_blacklists_nouveau_and_sets_options(name, module):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(ROLE / "templates"), trim_blocks=True)
    env.filters["bool"] = bool  # Ansible's filter; the template only applies it to booleans
    text = env.get_template("modprobe.conf.j2").render(
        ansible_managed="managed",
        nvidia_driver_blacklist_nouveau=True,
        nvidia_driver_module_options={
            "NVreg_EnableStreamMemOPs": 1, "NVreg_RegistryDwords": '"PeerMappingOverride=1;"'},
        nvidia_driver_family_module_options_name=family(name)["nvidia_driver_family_module_options_name"],
    )
    lines = text.splitlines()
    assert "blacklist nouveau" in lines and "options nouveau modeset=0" in lines
    assert f'options {module} NVreg_EnableStreamMemOPs=1 NVreg_RegistryDwords="PeerMappingOverride=1;"' in lines
