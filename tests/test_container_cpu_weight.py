"""scripts/container-cpu-weight.sh against a real cgroup v1 cpu cgroup (the kernel is the judge).

The script gives the containers' cgroup (/docker on a cgroup v1, cgroupfs-driver dockerd) the
weight of several busy processes; here it runs on a fresh child cgroup of the cpu hierarchy, so
the kernel's own cpu.shares file says what it set. Needs root and cgroup v1: skipped elsewhere.
"""

import os
import subprocess
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "container-cpu-weight.sh"
CPU_V1 = Path("/sys/fs/cgroup/cpu")

pytestmark = pytest.mark.skipif(
    not (CPU_V1 / "cpu.shares").exists() or not os.access(CPU_V1, os.W_OK),
    reason="needs a writable cgroup v1 cpu hierarchy (root)",
)


@pytest.fixture
def cgroup():
    path = CPU_V1 / f"superpod-test-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    yield path
    path.rmdir()


def weigh(cgroup: Path, shares: str | None = None) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "SUPERPOD_CONTAINER_CPU_CGROUP": str(cgroup)}
    if shares is not None:
        env["SUPERPOD_CONTAINER_CPU_SHARES"] = shares
    return subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True, check=True)


def test_raises_a_new_cgroup_to_eight_processes_weight(cgroup):
    assert (cgroup / "cpu.shares").read_text().strip() == "1024"  # the kernel's default
    run = weigh(cgroup)
    assert (cgroup / "cpu.shares").read_text().strip() == "8192"
    assert "1024 -> 8192" in run.stdout


def test_never_lowers_and_zero_leaves_it(cgroup):
    (cgroup / "cpu.shares").write_text("16384")
    assert weigh(cgroup).stdout == ""
    assert (cgroup / "cpu.shares").read_text().strip() == "16384"
    (cgroup / "cpu.shares").write_text("2048")
    assert weigh(cgroup, shares="0").stdout == ""
    assert (cgroup / "cpu.shares").read_text().strip() == "2048"


def test_no_cgroup_is_said_and_not_an_error(cgroup):
    run = weigh(cgroup / "absent")
    assert "keep one process's CPU share" in run.stdout
