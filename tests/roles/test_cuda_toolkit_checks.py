"""cuda_toolkit's two request checks are one assert (one task per host instead of two): a bad
request still stops with a message that names the variable and the rule it breaks, and only the
rules it breaks. The distro's toolkit version comes from the role's vars/Debian.yml (the plan)."""

from __future__ import annotations

import pytest

from tests.role_files import ROOT, load
from tests.roles.playbook import run_play

ROLE = ROOT / "roles/cuda_toolkit"
DISTRO = load(ROLE / "vars/Debian.yml")["cuda_toolkit_family_distro"]["version"]
DEBIAN = {"distribution": "Debian", "distribution_major_version": "12", "os_family": "Debian"}
VERSIONS = "cuda_toolkit_versions must list at least one version, each MAJOR.MINOR"
DISTRO_ONLY = f"cuda_toolkit_source=distro: Debian 12 ships toolkit {DISTRO} only"

# host -> (its request, the rules whose message it must get)
CASES = {
    "no-version": ({"cuda_toolkit_source": "nvidia_repo", "cuda_toolkit_versions": []}, ["versions"]),
    "three-part": ({"cuda_toolkit_source": "nvidia_repo", "cuda_toolkit_versions": [{"version": "12.4.1"}]},
                   ["versions"]),
    "default-not-listed": ({"cuda_toolkit_source": "nvidia_repo", "cuda_toolkit_versions": [{"version": "12.4"}],
                            "cuda_toolkit_default_version": "12.6"}, ["versions"]),
    "distro-other-version": ({"cuda_toolkit_source": "distro", "cuda_toolkit_versions": [{"version": "12.4"}]},
                             ["distro"]),
    "both": ({"cuda_toolkit_source": "distro", "cuda_toolkit_versions": [{"version": "12"}, {"version": "12"}]},
             ["versions", "distro"]),
    "distro-fine": ({"cuda_toolkit_source": "distro", "cuda_toolkit_versions": [{"version": DISTRO}]}, []),
    "repo-fine": ({"cuda_toolkit_source": "nvidia_repo",
                   "cuda_toolkit_versions": [{"version": "12.4"}, {"version": "12.6"}]}, []),
}


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    tasks = load(ROLE / "tasks/main.yml")
    # the role's own family-vars load and its check, nothing after them
    wanted = [t for t in tasks if "ansible.builtin.include_vars" in t or "ansible.builtin.assert" in t]
    assert len(wanted) == 2
    defaults = load(ROLE / "defaults/main.yml")
    hosts = {host: dict(defaults, **request, test_facts=DEBIAN, role_path=str(ROLE))
             for host, (request, _) in CASES.items()}
    return run_play(tmp_path_factory.mktemp("cuda-checks"), wanted, hosts)


@pytest.mark.parametrize("host", CASES)
def test_a_bad_request_names_the_rule_it_breaks(checked, host):
    broken = CASES[host][1]
    failed = [r for r in checked[host] if r.get("failed")]
    if not broken:
        assert not failed, failed
        return
    [result] = failed
    assert (VERSIONS in result["msg"]) == ("versions" in broken), result["msg"]
    assert (DISTRO_ONLY in result["msg"]) == ("distro" in broken), result["msg"]
