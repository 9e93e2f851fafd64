"""The drift corpus (issue 33): many kinds of hand-made drift, injected all at once into the
shared lab pod (tests/e2e/conftest.py), spread over its nodes so each verdict is attributable;
then ONE plain `drift` and ONE `drift --full`, and per case: both report the host not clean,
both name the item, and the host's verdict and named items are the same in both (the plain path
never calls clean what the full check would not); then ONE plain `apply`, after which the
role-owned items check clean (one drift of those hosts and roles).

Expectations come from this table and the plan (the inventory's GPU count, the roles' task
names), never from the output under test. What a container cannot hold (the node's own kernel:
runtime sysctls, loaded modules, HugePages pools, /proc/cmdline; rail NICs, LLDP, ConnectX
firmware; switches) is listed in docs/operations.md ("The drift corpus") with the stand-in used
or the test that covers it elsewhere.

Cost: everything is injected before one check of each kind, so the corpus adds five superpod
runs to the e2e job (apply to converge if needed, drift, drift --full, apply, the scoped drift
after it); build/e2e-timings.json has their seconds (`corpus_*`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tests.e2e import fake_gpus
from tests.e2e.labpod import TIMINGS, LabPod, drift_json
from tests.e2e.test_apply_drift_e2e import timed

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(2700)]

GPU_HOST, FILE_HOST, UNIT_HOST, PACKAGE_HOST = "su01-node01", "su01-node02", "su01-node03", "su01-node04"


@dataclass(frozen=True)
class Case:
    kind: str
    host: str
    inject: str | Callable[[LabPod], None]  # a shell script in the node, or a change to its GPUs
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


REPORT_INSTALL = "Report the packages a run would install (check mode, from the package read)"

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
    # ---- files
    Case("file content", FILE_HOST, "sed -i 's/= 0/= 1/' /etc/sysctl.d/60-superpod-host-tuning.conf",
         frozenset({("host_tuning", "Persist the tuning sysctls")})),
    Case("file mode", FILE_HOST, "chmod 0600 /etc/nccl.conf", frozenset({("nccl", "Write the NCCL configuration")})),
    Case("file owner", FILE_HOST, "chown nobody /etc/security/limits.d/90-superpod-memlock.conf",
         frozenset({("hugepages", "Set the PAM locked-memory limits")})),
    Case("managed file deleted", FILE_HOST, "rm /etc/superpod-fabric-telemetry/exporter.yml",
         frozenset({("fabric_telemetry",
                     "Render the exporter configuration (NICs and their layout labels from the inventory)")})),
    Case("directory mode", FILE_HOST, "chmod 0700 /etc/superpod-fabric-telemetry",
         frozenset({("fabric_telemetry", "Create the configuration directory")})),
    # ---- units and the kernel command line
    Case("unit stopped", UNIT_HOST, "systemctl stop superpod-fabric-telemetry.service",
         frozenset({("fabric_telemetry", "Enable and start the exporter")})),
    Case("unit disabled", UNIT_HOST, "systemctl disable --quiet superpod-cpu-governor.service",
         frozenset({("host_tuning", "Enable the governor unit at boot")})),
    Case("unit masked", UNIT_HOST, "systemctl mask --quiet nvidia-persistenced.service",
         frozenset({("nvidia_driver", "Enable the persistence daemon at boot")})),
    Case("kernel command line", UNIT_HOST,
         "sed -i 's/iommu=pt/iommu=pt debug/' /etc/default/grub.d/60-superpod-host-tuning.cfg",
         frozenset({("host_tuning", "Write the kernel command line drop-in")}),
         stand_in="the bootloader's drop-in: /proc/cmdline in a container is the host's"),
    # ---- packages
    Case("package removed", PACKAGE_HOST, "apt-get remove -qq -y linux-cpupower >/dev/null",
         frozenset({("host_tuning", REPORT_INSTALL)})),
    Case("package unheld", PACKAGE_HOST, "apt-mark unhold nvidia-smi >/dev/null",
         frozenset({("nvidia_driver", "Hold them (dpkg), those not held yet")})),
]


def names_in(report: dict, host: str) -> set[tuple[str, str]]:
    return {(c["role"], c["task"]) for c in report["hosts"][host].get("changes", [])}


def problems_in(report: dict, host: str) -> str:
    return "\n".join(p.get("message", "") for p in report["hosts"][host].get("problems", []))


def converge(pod: LabPod) -> None:
    """Plain applies until every node is skipped as converged: the drift below must go through
    the record check (the plain path), not a full run forced by an older record."""
    n = len(pod.hosts)
    for attempt in range(3):
        proc = timed(f"corpus_converge_{attempt}_s", pod, "apply")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        if f"{n} hosts: {n} skipped" in proc.stdout:
            return
    raise AssertionError(f"the pod did not settle into a skipped no-op apply:\n{proc.stdout}")


def test_the_drift_corpus_plain_equals_full_and_apply_fixes_the_roles(lab_pod):
    pod = lab_pod
    converge(pod)
    clean = drift_json(timed("corpus_clean_drift_s", pod, "drift", "--json"))
    assert clean["record_clean_hosts"] == pod.hosts, json.dumps(clean, indent=1)  # the plain path is the record's

    try:
        for case in CASES:
            case.inject(pod) if callable(case.inject) else pod.sh(case.host, case.inject)
        plain_proc = timed("corpus_plain_drift_s", pod, "drift", "--json")
        full_proc = timed("corpus_full_drift_s", pod, "drift", "--json", "--full")
        plain, full = drift_json(plain_proc), drift_json(full_proc)
        dump = json.dumps({"plain": plain, "full": full}, indent=1)

        gpus = planned_gpus(pod)
        lost = sum(1 for v in GPU_FAULTS.values() if v is None)
        drifted = sorted({c.host for c in CASES})
        assert plain["record_clean_hosts"] == sorted(set(pod.hosts) - set(drifted)), dump
        for host in pod.hosts:  # plain == full, host by host
            assert plain["hosts"][host]["status"] == full["hosts"][host]["status"], (host, dump)
            assert names_in(plain, host) == names_in(full, host), (host, dump)
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
        assert (plain_proc.returncode, full_proc.returncode) == (1, 1), dump
        assert plain["problem_hosts"] == full["problem_hosts"] == [], dump

        # ONE plain apply: the roles put back what they own; node_check still fails on the broken GPUs
        fix = timed("corpus_apply_s", pod, "apply")
        assert fix.returncode == 1, fix.stdout + fix.stderr
        owned = [c for c in CASES if c.role_owned]
        hosts = sorted({c.host for c in owned})
        roles = sorted({role for c in owned for role, _ in c.tasks})
        after = drift_json(timed("corpus_drift_after_apply_s", pod, "drift", "--json", "--limit", ",".join(hosts),
                                 "--tags", ",".join(roles)))
        assert after["exit_code"] == 0 and after["drifted_hosts"] == [], json.dumps(after, indent=1)
        assert {h: v["status"] for h, v in after["hosts"].items()} == dict.fromkeys(hosts, "clean")
    finally:
        # the GPUs repaired (as a field engineer would): the pod is whole for the labs after this one
        pod.write_gpus(GPU_HOST, fake_gpus.healthy(pod.gpu_counts[GPU_HOST]))
    TIMINGS["corpus_cases"] = len(CASES)
