"""The drift corpus (issue 33): many kinds of hand-made drift, injected all at once into the
shared lab pod (tests/e2e/conftest.py), spread over its nodes so each verdict is attributable;
then ONE `drift --quick`, ONE plain `drift` and ONE `drift --fix --full`. Per case: plain and
full both report the host not clean, both name the item, and the host's verdict and named items
are the same in both (the plain path never calls clean what the full check would not); the fix
(the full check's drifted hosts, their drifted roles only) puts back what the roles own, after
which those hosts and roles check clean (one drift of them).

This is also where the older apply/drift test's hand-made drift lives (moved here, so the e2e job
checks the pod once for both): su01-node02 carries exactly its four changes, so there the quick
check must name exactly its changes, and the plain and the full check exactly its tasks, with the
diffs a person acts on; su01-node03 is left untouched: the plain drift must find it clean by its
record (the plain path checks only the others) and the full check must find it clean (the
no-false-drift proof); su01-node01 carries the GPU faults and a runtime sysctl, and the full
check names nothing else there either.

Expectations come from this table and the plan (the inventory's GPU count, the roles' task
names), never from the output under test. What a container cannot hold (the node's own kernel:
loaded modules, HugePages pools, /proc/cmdline; rail NICs, LLDP, ConnectX firmware) is listed in
docs/operations.md ("The drift corpus") with the stand-in used or the test that covers it
elsewhere; the lab pushes to no switch, so a switch's running configuration edited and a switch
re-plan are held to the same plain == full property in tests/test_switch_drift_plain_path.py.

Cost: everything is injected before one check of each kind: the corpus adds five superpod runs
to the e2e job (a plain apply that skips every converged node, drift --quick, drift, drift --fix
--full, and the scoped drift after it); build/e2e-timings.json has their seconds (`corpus_*`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tests.e2e import fake_gpus
from tests.e2e.labpod import CONTAINER_SWITCHES, TIMINGS, LabPod, drift_json
from tests.e2e.test_apply_drift_e2e import tallies_of, timed

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(2700)]

# su01-node02 holds exactly the older apply/drift test's four changes; the other kinds go to
# su01-node04 (each names its own task, so one node is enough to attribute them); su01-node03 is
# left alone: a plain drift must skip it by its record and the full check must find it clean.
GPU_HOST, HAND_HOST, MANY_HOST = "su01-node01", "su01-node02", "su01-node04"


@dataclass(frozen=True)
class Case:
    kind: str
    host: str
    inject: str | Callable[[LabPod], None]  # a shell script in the node, or a change made from outside it
    tasks: frozenset[tuple[str, str]] = frozenset()  # (role, task) the check run must name
    node_check: tuple[str, ...] = ()  # what node_check's drift must name (plan_mismatches)
    role_owned: bool = True  # apply puts it back
    stand_in: str = ""  # why it is made this way in a container


def gpus_with(pod: LabPod, host: str, **changes: dict[str, str] | None) -> list[dict[str, str]]:
    """The host's planned GPUs (healthy, as the real node reported itself) with `changes`
    applied per GPU index: a dict of fields, or None for a GPU that fell off the bus."""
    out = []
    for gpu in fake_gpus.healthy(pod.gpu_counts[host]):
        change = changes.get(f"gpu{gpu['index']}", {})
        if change is not None:
            out.append({**gpu, **change})
    return out


# The GPU faults, one GPU each, all on one node (node_check names each GPU).
GPU_FAULTS = {
    "gpu3": None,  # fell off the bus
    "gpu0": {"persistence_mode": "Disabled"},
    "gpu1": {"ecc.mode.current": "Disabled"},
    "gpu2": {"mig.mode.current": "Enabled"},
    "gpu5": {"pcie.link.gen.current": "4"},  # trained at Gen4 of its Gen5
    "gpu6": {"pcie.link.width.current": "8"},  # trained at x8 of its x16
    "gpu4": {"fabric.state": "In Progress", "fabric.status": "N/A"},  # not registered with the NVLink fabric
    "gpu7": {"remapped_rows.pending": "Yes"},  # a row remap waiting for a GPU reset
}


def bus_id(index: int) -> str:
    """The planned GPU's PCI address as the stand-in reports it (node_check names GPUs by it)."""
    return fake_gpus.healthy(index + 1)[index]["pci.bus_id"]


def break_gpus(pod: LabPod) -> None:
    pod.write_gpus(GPU_HOST, gpus_with(pod, GPU_HOST, **GPU_FAULTS))


def planned_gpus(pod: LabPod) -> int:
    return pod.gpu_counts[GPU_HOST]


# A container's /proc/sys is read-only and its kernel is the machine's: a sysctl changed for real
# would change the host every lab runs on. The stand-in is a node whose kernel sysctl files are
# writable: in the node's own mount namespace, regular files bind-mounted over the sysctl
# host_tuning sets and over the file its writability check reads. The role's own read (`sysctl -n`)
# and write (`sysctl -w`) go through them; nothing outside the container changes.
KERNEL = "/run/superpod-corpus-kernel"
SYSCTL_FILES = ("/proc/sys/kernel/numa_balancing", "/proc/sys/kernel/hostname")


def change_runtime_sysctl(pod: LabPod) -> None:
    pod.sh(GPU_HOST, f"mkdir -p {KERNEL} && echo 1 > {KERNEL}/numa_balancing && hostname > {KERNEL}/hostname"
                     + "".join(f" && mount --bind {KERNEL}/{f.rsplit('/', 1)[1]} {f}" for f in SYSCTL_FILES))
    assert pod.sh(GPU_HOST, "sysctl -n kernel.numa_balancing").stdout.strip() == "1"  # the planned value is 0


def restore_kernel(pod: LabPod) -> None:
    pod.sh(GPU_HOST, "; ".join(f"umount {f}" for f in SYSCTL_FILES) + f"; rm -rf {KERNEL}", check=False)


REPORT_INSTALL = "Report the packages a run would install (check mode, from the package read)"

# A package upgraded in place, above the plan's pin: the lab's toolkit stand-in pins its Debian
# packages (labpod.CONTAINER_SWITCHES, cuda_toolkit_versions), and Debian 12 carries only that
# build, so the higher build is the pinned one repacked with a higher version (same files), put
# in with dpkg past the hold and held again, as an upgrade by hand leaves it. The fix must take it
# back down to the pin (apt refuses a downgrade and a held change unless the role allows both).
TOOLKIT = CONTAINER_SWITCHES["cuda_toolkit_versions"][0]
UPGRADED_PACKAGE, PINNED_VERSION = TOOLKIT["packages"][-1], TOOLKIT["package_version"]
UPGRADED_VERSION = f"{PINNED_VERSION}+corpus1"


def upgrade_package(pod: LabPod) -> None:
    pkg, pin = UPGRADED_PACKAGE, PINNED_VERSION
    download = f"apt-get download -qq '{pkg}={pin}'"
    pod.sh(MANY_HOST, f"set -e; rm -rf /tmp/corpus-upgrade; mkdir /tmp/corpus-upgrade; cd /tmp/corpus-upgrade; "
                      f"{download} || (apt-get update -qq && {download}); "
                      f"dpkg-deb -R {pkg}_*.deb tree; "
                      f"sed -i 's/^Version: .*/Version: {UPGRADED_VERSION}/' tree/DEBIAN/control; "
                      "dpkg-deb -b tree upgraded.deb >/dev/null; dpkg --force-hold -i upgraded.deb >/dev/null; "
                      f"apt-mark hold {pkg} >/dev/null; cd /; rm -rf /tmp/corpus-upgrade")
    assert installed_version(pod, pkg) == UPGRADED_VERSION


def installed_version(pod: LabPod, pkg: str) -> str:
    return pod.sh(MANY_HOST, f"dpkg-query -W -f '${{Version}}' {pkg}").stdout.strip()

CASES = [
    # ---- GPUs (node_check, through the nvidia-smi stand-in; hardware: apply cannot fix them)
    Case("GPU lost", GPU_HOST, break_gpus, node_check=("gpu count (expected {gpus}, actual {gpus_left}",),
         role_owned=False),
    Case("persistence mode off", GPU_HOST, "true",
         node_check=("persistence mode (expected Enabled on all, actual Disabled on GPU 0)",), role_owned=False),
    Case("ECC off", GPU_HOST, "true", node_check=("ECC mode (expected Enabled on all, actual Disabled on GPU 1)",),
         role_owned=False),
    Case("MIG on", GPU_HOST, "true", node_check=("MIG mode (expected Disabled on all, actual Enabled on GPU 2)",),
         role_owned=False),
    Case("PCIe link trained down (generation)", GPU_HOST, "true",
         node_check=("PCIe link generation (", "trained below its capability on GPU 5"), role_owned=False),
    Case("PCIe link trained down (width)", GPU_HOST, "true",
         node_check=("PCIe link width (", "trained below its capability on GPU 6"), role_owned=False),
    Case("GPU not registered with the NVLink fabric", GPU_HOST, "true",
         node_check=("gpu fabric (expected Completed/Success on all (NVSwitch node), "
                     f"actual In Progress/n/a on {bus_id(4)}",),
         role_owned=False),
    Case("GPU row remap pending", GPU_HOST, "true",
         node_check=(f"gpu row remap (expected none pending, none failed, actual pending on {bus_id(7)}",),
         role_owned=False),
    # ---- the running kernel
    Case("runtime sysctl (file intact)", GPU_HOST, change_runtime_sysctl,
         frozenset({("host_tuning", "Show the sysctls that differ from the running kernel (check mode)")}),
         stand_in="sysctl files bind-mounted in the node (the container's /proc/sys is the host's, read-only)"),
    # ---- the older apply/drift test's four changes (exactly these on su01-node02)
    Case("file content", HAND_HOST, "sed -i 's/= 0/= 1/' /etc/sysctl.d/60-superpod-host-tuning.conf",
         frozenset({("host_tuning", "Persist the tuning sysctls")})),  # a sysctl changed while debugging
    Case("managed file deleted", HAND_HOST, "rm /etc/security/limits.d/90-superpod-memlock.conf",
         frozenset({("hugepages", "Set the PAM locked-memory limits")})),
    Case("unit disabled", HAND_HOST, "systemctl disable --quiet superpod-cpu-governor.service",
         frozenset({("host_tuning", "Enable the governor unit at boot")})),
    Case("kernel command line", HAND_HOST,
         "sed -i 's/iommu=pt/iommu=pt debug/' /etc/default/grub.d/60-superpod-host-tuning.cfg",
         frozenset({("host_tuning", "Write the kernel command line drop-in")}),
         stand_in="the bootloader's drop-in: /proc/cmdline in a container is the host's"),
    # ---- files, directories, accounts, mounts (su01-node04)
    Case("file mode", MANY_HOST, "chmod 0600 /etc/nccl.conf", frozenset({("nccl", "Write the NCCL configuration")})),
    Case("file owner", MANY_HOST, "chown nobody /etc/security/limits.d/90-superpod-memlock.conf",
         frozenset({("hugepages", "Set the PAM locked-memory limits")})),
    Case("file group", MANY_HOST, "chgrp nogroup /etc/sysctl.d/60-superpod-hugepages.conf",
         frozenset({("hugepages", "Persist the HugePages sysctls")})),
    Case("rendered configuration deleted", MANY_HOST, "rm /etc/superpod-fabric-telemetry/exporter.yml",
         frozenset({("fabric_telemetry",
                     "Render the exporter configuration (NICs and their layout labels from the inventory)")})),
    Case("directory mode", MANY_HOST, "chmod 0700 /etc/superpod-fabric-telemetry",
         frozenset({("fabric_telemetry", "Create the configuration directory")})),
    Case("directory owner", MANY_HOST, "chown nobody /etc/systemd/system.conf.d",
         frozenset({("hugepages", "Set the PAM locked-memory limits")})),  # one superpod_files task: files named
    Case("group removed", MANY_HOST, "groupdel hugetlb", frozenset({("hugepages", "Create the HugePages group")})),
    Case("mount removed", MANY_HOST, "umount /dev/hugepages1G",
         frozenset({("hugepages", "Mount hugetlbfs (and persist it in fstab)")})),
    # ---- units
    Case("unit stopped", MANY_HOST, "systemctl stop superpod-fabric-telemetry.service",
         frozenset({("fabric_telemetry", "Enable and start the exporter")})),
    Case("unit masked", MANY_HOST, "systemctl mask --quiet nvidia-persistenced.service",
         frozenset({("nvidia_driver", "Enable the persistence daemon at boot")})),
    Case("unit drop-in deleted", MANY_HOST,
         "rm /etc/systemd/system/nvidia-persistenced.service.d/50-superpod-persistence-mode.conf",
         frozenset({("nvidia_driver", "Run the persistence daemon with persistence mode on")})),
    # ---- packages
    Case("package removed", MANY_HOST, "apt-get remove -qq -y linux-cpupower >/dev/null",
         frozenset({("host_tuning", REPORT_INSTALL)})),
    Case("package unheld", MANY_HOST, "apt-mark unhold nvidia-smi >/dev/null",
         frozenset({("nvidia_driver", "Hold them (dpkg), those not held yet")})),
    Case("package upgraded (above its pin)", MANY_HOST, upgrade_package, frozenset({("cuda_toolkit", REPORT_INSTALL)}),
         stand_in="the pinned build repacked with a higher version (Debian 12 carries one build of it)"),
]

# Tasks that follow from a drifted kernel command line file: the effective command line (all
# grub.d drop-ins together) differs from the one each role last handed to the bootloader, so
# both roles would regenerate it and record the new one. (The regeneration is a command task:
# skipped in check mode; the record is a file both roles would rewrite, and drift shows it.)
CMDLINE_CONSEQUENCES = {
    ("host_tuning", "Record the command line handed to the bootloader"),
    ("hugepages", "Record the command line handed to the bootloader"),
}
# Where the full check must name exactly the cases' tasks (and these consequences; node_check's one
# mismatch task on the GPU node): nothing else
# drifted there (and nothing at all on the nodes left alone). su01-node04's many changes restart
# units and re-execute systemd through the roles' handlers, so there the cases' tasks are a subset
# (and plain must still equal full).
EXACT = {GPU_HOST: {("node_check", "Fail on mismatches")}, HAND_HOST: CMDLINE_CONSEQUENCES}
# What `drift --quick` must name on the older test's nodes: (host, path or unit, kind) against the
# last apply's record; and what the roles read: the effective command line they compute from every
# grub.d drop-in together.
QUICK_DRIFT = {
    (HAND_HOST, "/etc/sysctl.d/60-superpod-host-tuning.conf", "content"),
    (HAND_HOST, "/etc/security/limits.d/90-superpod-memlock.conf", "missing"),
    (HAND_HOST, "superpod-cpu-governor.service", "enabled"),
    (HAND_HOST, "/etc/default/grub.d/60-superpod-host-tuning.cfg", "content"),
    (HAND_HOST, "Compute the effective kernel command line", "output"),
}


def names_in(report: dict, host: str) -> set[tuple[str, str]]:
    return {(c["role"], c["task"]) for c in report["hosts"][host].get("changes", [])}


def problems_in(report: dict, host: str) -> str:
    return "\n".join(p.get("message", "") for p in report["hosts"][host].get("problems", []))


def untouched(pod: LabPod) -> list[str]:
    return sorted(set(pod.hosts) - {c.host for c in CASES})


def expected_names(host: str) -> set[tuple[str, str]]:
    return {t for c in CASES if c.host == host for t in c.tasks} | EXACT.get(host, set())


def converge(pod: LabPod) -> None:
    """Plain applies until every node is skipped as converged: the drift below must go through
    the record check (the plain path), not a full run forced by an older record. After
    test_apply_drift_e2e.py (which proved the pod converged and clean by its record) this is one
    record check."""
    n = len(pod.hosts)
    for attempt in range(3):
        proc = timed(f"corpus_converge_{attempt}_s", pod, "apply")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        if f"{n} hosts: {n} skipped" in proc.stdout:
            return
    raise AssertionError(f"the pod did not settle into a skipped no-op apply:\n{proc.stdout}")


def check_quick(pod: LabPod) -> None:
    """drift --quick (the record alone, one task per host; node_check runs again where it ran)."""
    proc = timed("corpus_quick_drift_s", pod, "drift", "--quick", "--json")
    report = drift_json(proc)
    dump = json.dumps(report, indent=1)
    # node_check's mismatches are drift here too (its failed record-check task read as drift, named)
    assert proc.returncode == 1 and report["problem_hosts"] == [], dump
    assert report["drifted_hosts"] == sorted({c.host for c in CASES}), dump
    found = {(h, d["what"], d["kind"]) for h, v in report["hosts"].items() for d in v["drift"] if h == HAND_HOST}
    assert found == QUICK_DRIFT, dump
    assert {h: report["hosts"][h]["status"] for h in untouched(pod)} == dict.fromkeys(untouched(pod), "clean"), dump


def test_the_drift_corpus_plain_equals_full_and_the_fix_restores_the_roles(lab_pod):
    pod = lab_pod
    converge(pod)
    try:
        for case in CASES:
            case.inject(pod) if callable(case.inject) else pod.sh(case.host, case.inject)
        check_quick(pod)
        # the plain drift: the record check skips the untouched node and sends the others to the check run
        plain_proc = timed("corpus_plain_drift_s", pod, "drift", "--json")
        # --full: the check runs on every node whatever its record says, then the fix
        full_proc = timed("corpus_full_drift_and_fix_s", pod, "drift", "--json", "--fix", "--full")
        plain, full = drift_json(plain_proc), drift_json(full_proc)
        dump = json.dumps({"plain": plain, "full": full}, indent=1)

        gpus = planned_gpus(pod)
        lost = sum(1 for v in GPU_FAULTS.values() if v is None)
        drifted = sorted({c.host for c in CASES})  # node_check's mismatches are drift too
        fixable = sorted({c.host for c in CASES if c.tasks})  # what a role owns; apply cannot add a GPU
        left_alone = untouched(pod)
        assert left_alone and plain["record_clean_hosts"] == left_alone, dump
        assert {h: full["hosts"][h]["status"] for h in left_alone} == dict.fromkeys(left_alone, "clean"), dump
        assert plain["drifted_hosts"] == full["drifted_hosts"] == drifted, dump
        assert plain["problem_hosts"] == full["problem_hosts"] == [], dump
        for host in pod.hosts:  # plain == full, host by host
            assert plain["hosts"][host]["status"] == full["hosts"][host]["status"], (host, dump)
            assert names_in(plain, host) == names_in(full, host), (host, dump)
            if host in EXACT or host in left_alone:  # nothing beyond what was done there (no false drift)
                assert names_in(full, host) == expected_names(host), (host, dump)
        for case in CASES:
            for report, label in ((plain, "plain"), (full, "full")):
                verdict = report["hosts"][case.host]
                assert verdict["status"] != "clean", f"{case.kind}: {label} drift calls {case.host} clean"
                missing = case.tasks - names_in(report, case.host)
                assert not missing, f"{case.kind}: {label} drift does not name {sorted(missing)}\n{dump}"
                for fragment in case.node_check:
                    text = fragment.format(gpus=gpus, gpus_left=gpus - lost)
                    named = "\n".join(verdict["plan_mismatches"])  # drift naming each mismatch, not an error
                    assert text in named, f"{case.kind}: {label} drift lacks {text!r}\n{dump}"
        # node_check's mismatches are drift (exit 1, the host "drift", every later role checked), not an error
        assert (plain_proc.returncode, plain["exit_code"], full["exit_code"]) == (1, 1, 1), dump
        # diffs a person can act on: the sysctl line and the kernel parameter
        by_hand = {c["task"]: c["diff"] for c in full["hosts"][HAND_HOST]["changes"]}
        assert "-kernel.numa_balancing = 1" in by_hand["Persist the tuning sysctls"]
        assert "+kernel.numa_balancing = 0" in by_hand["Persist the tuning sysctls"]
        assert "iommu=pt debug" in by_hand["Write the kernel command line drop-in"]
        # a task that writes several files (superpod_files) names each that drifted, and only those
        files = {(h, c["task"]): c.get("files") for h in (HAND_HOST, MANY_HOST) for c in full["hosts"][h]["changes"]}
        assert files[(HAND_HOST, "Write the kernel command line drop-in")] == [
            "/etc/default/grub.d/60-superpod-host-tuning.cfg"], dump
        assert files[(MANY_HOST, "Set the PAM locked-memory limits")] == [
            "/etc/security/limits.d/90-superpod-memlock.conf", "/etc/systemd/system.conf.d"], dump

        # the fix: the drifted hosts, their drifted roles (node_check is not one: it owns nothing)
        owned = [c for c in CASES if c.role_owned]
        hosts = sorted({c.host for c in owned})
        roles = sorted({role for c in owned for role, _ in c.tasks})
        assert full["fix"] == {"limit": fixable, "tags": roles}, dump
        assert full["fix_exit_code"] == 0 and full_proc.returncode == 0, full_proc.stdout + full_proc.stderr
        assert sorted(tallies_of(pod, "fix")) == fixable  # only the hosts with role-owned drift were touched
        assert pod.sh(HAND_HOST, "systemctl is-enabled superpod-cpu-governor.service").stdout.strip() == "enabled"
        assert "kernel.numa_balancing = 0" in pod.sh(HAND_HOST, "cat /etc/sysctl.d/60-superpod-host-tuning.conf").stdout
        pod.sh(HAND_HOST, "test -s /etc/security/limits.d/90-superpod-memlock.conf")
        assert pod.sh(GPU_HOST, "sysctl -n kernel.numa_balancing").stdout.strip() == "0"  # written through the role
        # back down to the plan's pin, and held again
        assert installed_version(pod, UPGRADED_PACKAGE) == PINNED_VERSION
        assert UPGRADED_PACKAGE in pod.sh(MANY_HOST, "apt-mark showhold").stdout.split()
        # the fixed hosts and roles check clean (the fix touched nothing else: a whole-pod check
        # would only repeat the one above)
        after = drift_json(timed("corpus_drift_after_fix_s", pod, "drift", "--json", "--limit", ",".join(hosts),
                                 "--tags", ",".join(roles)))
        assert after["exit_code"] == 0 and after["drifted_hosts"] == [] and after["problem_hosts"] == [], \
            json.dumps(after, indent=1)
        assert {h: v["status"] for h, v in after["hosts"].items()} == dict.fromkeys(hosts, "clean")
    finally:
        # the GPUs repaired (as a field engineer would) and the kernel stand-in gone: the pod is
        # whole for the labs after this one
        pod.write_gpus(GPU_HOST, fake_gpus.healthy(pod.gpu_counts[GPU_HOST]))
        restore_kernel(pod)
    TIMINGS["corpus_cases"] = len(CASES)
