"""build/<stack>/slurm/: slurm.conf, gres.conf, topology.conf and cgroup.conf from the plan.

The roles write the same files on the pod from the inventory's `superpod_slurm` (roles/slurm
templates); the site settings below are the slurm role's defaults (a test renders the role's
templates with them and compares byte for byte), so the plan shows what a default apply writes.
"""

from __future__ import annotations

from pathlib import Path

from topology.layout.model import Layout
from topology.render.files import GENERATED
from topology.render.slurm_plan import SlurmPlan, slurm_plan

# The slurm role's defaults (roles/slurm/defaults/main.yml), as slurm.conf keys.
SITE = {
    "AuthType": "auth/munge",
    "CredType": "cred/munge",
    "SlurmUser": "slurm",
    "SlurmctldPort": "6817",
    "SlurmdPort": "6818",
    "StateSaveLocation": "/var/spool/slurmctld",
    "SlurmdSpoolDir": "/var/spool/slurmd",
    "SlurmctldPidFile": "/run/slurmctld.pid",
    "SlurmdPidFile": "/run/slurmd.pid",
    "SlurmctldLogFile": "/var/log/slurm/slurmctld.log",
    "SlurmdLogFile": "/var/log/slurm/slurmd.log",
    "ProctrackType": "proctrack/cgroup",
    "TaskPlugin": "task/cgroup,task/affinity",
    "TaskProlog": "/etc/slurm/taskprolog.sh",
    "SelectType": "select/cons_tres",
    "SelectTypeParameters": "CR_Core_Memory",
    "MpiDefault": "none",
    "HealthCheckProgram": "/usr/local/sbin/superpod-slurm-healthcheck",
    "HealthCheckInterval": "300",
    "HealthCheckNodeState": "ANY",
    "ReturnToService": "2",
}
CGROUP = {
    "CgroupPlugin": "autodetect",
    "ConstrainCores": "yes",
    "ConstrainDevices": "yes",
    "ConstrainRAMSpace": "yes",
    "ConstrainSwapSpace": "yes",
}


def _header(what: str, plan: SlurmPlan) -> str:
    return f"# {what} of cluster {plan.cluster_name}: {GENERATED}\n"


def slurm_conf(plan: SlurmPlan, site: dict[str, str] = SITE) -> str:
    lines = [_header("slurm.conf", plan).rstrip("\n"), f"ClusterName={plan.cluster_name}"]
    lines += [f"SlurmctldHost={c.name}({c.address})" if c.address else f"SlurmctldHost={c.name}"
              for c in plan.controllers]
    lines += [f"{key}={value}" for key, value in site.items()]
    lines += ["GresTypes=gpu", "TopologyPlugin=topology/tree", "#",
              "# GPU nodes: one line per rack; Features = SU, rack, fabric (and spine block on three tiers)"]
    hardware = (f"Sockets={plan.sockets} CoresPerSocket={plan.cores_per_socket} ThreadsPerCore={plan.threads_per_core}"
                f" RealMemory={plan.real_memory_mb} Gres=gpu:{plan.gpu_type}:{plan.gpu_count}")
    for g in plan.node_groups:
        addr = f" NodeAddr={','.join(g.addresses)}" if all(g.addresses) else ""  # else: the names resolve
        lines.append(f"NodeName={g.names}{addr} {hardware}"
                     f" Features={','.join(g.features)} State=UNKNOWN")
    lines.append(f"PartitionName={plan.partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def gres_conf(plan: SlurmPlan) -> str:
    lines = [_header("gres.conf", plan).rstrip("\n"),
             "# Each GPU's device file with the cores of its NUMA node (catalog: host.gpu_numa)", "AutoDetect=off"]
    lines += [f"Name=gpu Type={plan.gpu_type} File={g.file} Cores={g.cores}" for g in plan.gres]
    return "\n".join(lines) + "\n"


def topology_conf(plan: SlurmPlan) -> str:
    lines = [_header("topology.conf", plan).rstrip("\n"),
             "# Lowest level: one switch per SU (every node of a rail-optimized SU reaches each of its rail leaves)"]
    for s in plan.switches:
        if s.nodes:
            lines.append(f"# {s.name}: {', '.join(s.leaves)}")
            lines.append(f"SwitchName={s.name} Nodes={s.nodes}")
        else:
            lines.append(f"SwitchName={s.name} Switches={s.switches}")
    return "\n".join(lines) + "\n"


def cgroup_conf(plan: SlurmPlan, cgroup: dict[str, str] = CGROUP) -> str:
    lines = [_header("cgroup.conf", plan).rstrip("\n")] + [f"{k}={v}" for k, v in cgroup.items()]
    return "\n".join(lines) + "\n"


def render_slurm(layout: Layout, out_dir: Path, plan: SlurmPlan | None = None) -> dict[Path, str]:
    """The four files under <out>/slurm/ (from `plan` when the caller built it already)."""
    plan = plan or slurm_plan(layout)
    base = Path(out_dir) / "slurm"
    return {
        base / "slurm.conf": slurm_conf(plan),
        base / "gres.conf": gres_conf(plan),
        base / "topology.conf": topology_conf(plan),
        base / "cgroup.conf": cgroup_conf(plan),
    }
