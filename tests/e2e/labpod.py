"""The lab pod on containers: one Debian 12 systemd container per planned host, and an
inventory overlay that points the planned hosts at them (the generated inventory is not
touched). Used by the end-to-end test and by bench/bench_apply.py."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from tests.e2e import fake_gpus

ROOT = Path(__file__).resolve().parents[2]
SUPERPOD = [sys.executable, "-m", "topology.cli"]
# Wall time of each timed e2e step (seconds); the session fixture writes it to build/e2e-timings.json.
TIMINGS: dict[str, float] = {}

# What the roles need to converge in a container without GPUs, rail NICs, BMC or bootloader.
CONTAINER_SWITCHES = {
    "ansible_python_interpreter": "/usr/bin/python3",
    # node_check reads the GPUs through an nvidia-smi stand-in answering in the real node's format
    # (tests/e2e/fake_gpus.py): the lab checks 8 GPUs per node, and the drift corpus breaks them
    "node_check_require_gpu": True,
    "node_check_nvidia_smi": fake_gpus.SMI_PATH,
    "node_check_require_rail_links": False,
    "rail_network_require_links": False,
    "host_network_require_links": False,  # no bond members or storage NICs in the containers
    "host_tuning_bios_enabled": False,
    "host_tuning_bootloader_update_command": "/usr/local/sbin/molecule-update-grub",
    "hugepages_bootloader_update_command": "/usr/local/sbin/molecule-update-grub",
    # no NVIDIA repository from the containers: each role's documented stand-in (docs/<role>.md)
    "nvidia_driver_fabricmanager": False,
    "nvidia_driver_branch": "535",  # Debian 12 ships only the 535 driver; the role's default is 580
    "cuda_toolkit_source": "distro",
    "cuda_toolkit_lib_subdirs": ["lib"],
    "cuda_toolkit_versions": [{"version": "14", "packages": ["llvm-14-runtime", "libclang1-14"],
                               "package_version": "1:14.0.6-12", "prefix": "/usr/lib/llvm-14"}],
    "dcgm_exporter_hostengine_install": "none",
    "dcgm_exporter_require_binary": False,
    "gpu_operator_render_only": True,
    "fabric_telemetry_require_nics": False,  # no rail NICs in the containers: the exporter reports them absent
    "fabric_telemetry_listen_address": "127.0.0.1",  # the planned in-band address is not on the containers
}


def ensure_image() -> str:
    """The molecule base image tag (built when missing)."""
    return subprocess.run([str(ROOT / "scripts/ensure-image.sh")], check=True, capture_output=True,
                          text=True).stdout.strip()


def plan(stack: str) -> Path:
    # --allow-moves: the lab's containers are made from each plan, so a build/<stack> left by older
    # code that placed gear elsewhere is no installed pod to protect (topology/layout/growth.py)
    subprocess.run([*SUPERPOD, "plan", "--stack", stack, "--json", "--allow-moves"], cwd=ROOT, check=True,
                   capture_output=True)
    return ROOT / "inventories" / stack


def planned_hosts(inventory_dir: Path, groups: tuple[str, ...]) -> list[str]:
    data = yaml.safe_load((inventory_dir / "hosts.yml").read_text())
    children = data["all"]["children"]
    return sorted({h for g in groups for h in (children.get(g) or {}).get("hosts") or {}})


def planned_gpu_counts(inventory_dir: Path, hosts: list[str]) -> dict[str, int]:
    """superpod_gpu_count of each host, from the generated inventory (0 where not planned)."""
    counts: dict[str, int] = {}

    def walk(node: dict) -> None:
        for name, hv in ((node or {}).get("hosts") or {}).items():
            if name in hosts and "superpod_gpu_count" in (hv or {}):
                counts[name] = int(hv["superpod_gpu_count"])
        for child in ((node or {}).get("children") or {}).values():
            walk(child)

    walk(yaml.safe_load((inventory_dir / "hosts.yml").read_text())["all"])
    return {h: counts.get(h, 0) for h in hosts}


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], check=check, capture_output=True, text=True)


def wait_booted(name: str) -> None:
    """Waits for a container's systemd to finish booting (2 minutes at most)."""
    deadline = time.monotonic() + 120
    state = ""
    while time.monotonic() < deadline:
        state = docker("exec", name, "systemctl", "is-system-running", "--wait", check=False).stdout.strip()
        if state in ("running", "degraded"):
            return
        if docker("inspect", "-f", "{{.State.Running}}", name, check=False).stdout.strip() != "true":
            # Each systemd container takes inotify instances: the host's default of 128 stops at ~24 nodes
            raise RuntimeError(f"{name}: the container exited while booting; with many nodes, raise the host's "
                               "fs.inotify.max_user_instances (sysctl, default 128)")
        time.sleep(1)
    raise RuntimeError(f"{name}: systemd did not finish booting (state {state!r})")



class LabPod:
    def __init__(self, stack: str = "lab", groups: tuple[str, ...] = ("gpu_nodes",), tag: str = "e2e"):
        self.stack = stack
        self.groups = groups
        self.session = f"superpod-{tag}-{os.getpid()}"
        self.inventory_dir = plan(stack)
        self.hosts = planned_hosts(self.inventory_dir, groups)
        self.gpu_counts = planned_gpu_counts(self.inventory_dir, self.hosts)
        self.containers = {h: f"{self.session}-{h}" for h in self.hosts}
        self.extra: dict[str, str] = {}  # add_host(): planned hosts outside the groups

    @classmethod
    def unplanned(cls, hosts: list[str], session: str) -> LabPod:
        """Node containers named `hosts` without a plan (bench/bench_scale.py): no planned GPUs."""
        pod = cls.__new__(cls)
        pod.stack, pod.groups, pod.inventory_dir, pod.session = None, (), None, session
        pod.hosts, pod.gpu_counts = list(hosts), dict.fromkeys(hosts, 0)
        pod.containers = {h: f"{session}-{h}" for h in hosts}
        pod.extra = {}
        return pod

    # ---- containers -------------------------------------------------------------------
    def start(self, image: str) -> None:
        self.remove_orphans()
        for host, name in self.containers.items():
            self._run_container(host, name, image)
        with ThreadPoolExecutor(len(self.containers)) as pool:
            list(pool.map(wait_booted, self.containers.values()))
        for host in self.hosts:
            self.install_gpu_stand_in(host)

    def install_gpu_stand_in(self, host: str) -> None:
        """The nvidia-smi stand-in and its healthy state: the node's planned GPUs, as the real
        H100 node reported its own (tests/e2e/fake_gpus.py)."""
        name = self.containers[host]
        docker("cp", str(ROOT / "tests/e2e/stand_ins/nvidia-smi"), f"{name}:{fake_gpus.SMI_PATH}")
        self.sh(host, f"mkdir -p {Path(fake_gpus.STATE_PATH).parent}")
        self.write_gpus(host, fake_gpus.healthy(self.gpu_counts[host]))

    def write_gpus(self, host: str, gpus: list[dict[str, str]]) -> None:
        subprocess.run(["docker", "exec", "-i", self.containers[host], "sh", "-c", f"cat > {fake_gpus.STATE_PATH}"],
                       input=fake_gpus.state_json(gpus), text=True, check=True, capture_output=True)

    def _run_container(self, host: str, name: str, image: str) -> None:
        """Same flags as the molecule scenarios: systemd as PID 1 with SYS_ADMIN and the cgroup mount."""
        docker("run", "-d", "--name", name, "--hostname", host, "--label", f"superpod-e2e={self.session}",
               "--cap-add", "SYS_ADMIN", "--cgroupns", "host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw",
               "--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp", image, "/sbin/init")

    def add_host(self, host: str, image: str) -> str:
        """One more planned host outside the pod's groups (the Slurm controller, a management node),
        started and reached like the others, but not in .hosts: the runs over the groups leave it
        out. Returns its container; remove_host(host) takes it away."""
        name = f"{self.session}-{host}"
        self._run_container(host, name, image)
        wait_booted(name)
        self.extra[host] = name
        if getattr(self, "connection", None) == "ssh":
            self._authorize(host)
            with self.known_hosts.open("a") as f:
                f.write(self._host_key_lines(host))
        return name

    def remove_host(self, host: str) -> None:
        docker("rm", "-f", "-v", self.extra.pop(host), check=False)

    def container(self, host: str) -> str:
        return self.containers.get(host) or self.extra[host]

    @staticmethod
    def remove_orphans() -> None:
        """Containers of runs whose process is gone (a killed test or bench) would pile up."""
        listing = docker("ps", "-a", "--filter", "label=superpod-e2e", "--format",
                         '{{.ID}} {{.Label "superpod-e2e"}}', check=False).stdout.split("\n")
        orphans = [cid for cid, _, session in (line.partition(" ") for line in listing if line)
                   if not Path(f"/proc/{session.rsplit('-', 1)[-1]}").exists()]
        if orphans:
            docker("rm", "-f", "-v", *orphans, check=False)

    def remove(self) -> None:
        ids = docker("ps", "-aq", "--filter", f"label=superpod-e2e={self.session}", check=False).stdout.split()
        if ids:
            docker("rm", "-f", "-v", *ids, check=False)

    def restart(self, host: str) -> None:
        """Start a stopped (killed) node again and wait for its boot."""
        docker("start", self.containers[host])
        wait_booted(self.containers[host])
        if getattr(self, "connection", None) == "ssh":  # its address may have changed
            self.enable_ssh(self.ssh_key.parent)
            self.write_overlay(self.overlay, "ssh")

    def sh(self, host: str, script: str, check: bool = True) -> subprocess.CompletedProcess:
        return docker("exec", self.container(host), "sh", "-c", script, check=check)

    def ip(self, host: str) -> str:
        return docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                      self.container(host)).stdout.strip()

    # ---- SSH, as real nodes are reached ----------------------------------------------------
    def enable_ssh(self, keydir: Path) -> None:
        """A key made for this session, authorized for root in every node, and the nodes' host
        keys in a known_hosts file of this session (host key checking stays on)."""
        self.ssh_key = keydir / "id_ed25519"
        if not self.ssh_key.exists():
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", self.session, "-f", str(self.ssh_key)],
                           check=True)
        for host in self.hosts:
            self._authorize(host)
        self.known_hosts = keydir / "known_hosts"
        self.known_hosts.write_text("".join(self._host_key_lines(h) for h in self.hosts))

    def _authorize(self, host: str) -> None:
        pub = self.ssh_key.with_suffix(".pub").read_text().strip()
        self.sh(host, f"install -d -m 700 /root/.ssh && echo '{pub}' > /root/.ssh/authorized_keys"
                      " && systemctl start ssh.service")

    def _host_key_lines(self, host: str) -> str:
        pubkey = self.sh(host, "cat /etc/ssh/ssh_host_ed25519_key.pub").stdout.split()
        return f"{self.ip(host)} {pubkey[0]} {pubkey[1]}\n"

    # ---- inventory overlay ---------------------------------------------------------------
    def write_overlay(self, path: Path, connection: str = "ssh") -> Path:
        """Planned hosts -> containers, over SSH (enable_ssh first) or docker exec (`docker`)."""
        self.overlay = path
        self.connection = connection
        path.write_text("# e2e overlay: planned hosts -> containers\n"
                        + yaml.safe_dump({"all": {"hosts": self.overlay_hosts(self.hosts)}}))
        return path

    def overlay_hosts(self, hosts) -> dict[str, dict]:
        """Each host's overlay variables: how to reach its container, and the container switches."""
        return {h: {**self._connection_vars(h, self.connection), **copy.deepcopy(CONTAINER_SWITCHES)} for h in hosts}

    def _connection_vars(self, host: str, connection: str) -> dict:
        if connection == "docker":
            return {"ansible_connection": "community.docker.docker_api", "ansible_host": self.container(host)}
        # ansible.cfg's ssh_args (pipelining, ControlPersist) apply as on a real pod
        return {"ansible_connection": "ssh", "ansible_host": self.ip(host), "ansible_user": "root",
                "ansible_ssh_private_key_file": str(self.ssh_key),
                "ansible_ssh_common_args": f"-o UserKnownHostsFile={self.known_hosts}"}


def setup_floor(pod: LabPod, facts_dir: Path, limit: str = "gpu_nodes") -> float:
    """Seconds for `ansible -m setup` on the pod's hosts through the same inventory, overlay,
    ansible.cfg and connection as superpod: one fact round trip, what no run can beat. Ansible's
    own floor: the builtin linear strategy, whatever ansible.cfg's strategy for the runs is."""
    env = os.environ | {"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(facts_dir),
                        "ANSIBLE_NOCOLOR": "1", "ANSIBLE_STRATEGY": "linear"}
    ansible = Path(sys.executable).parent / "ansible"
    t0 = time.monotonic()
    proc = subprocess.run([str(ansible), "-i", str(pod.inventory_dir), "-i", str(pod.overlay), limit, "-m", "setup",
                           "-o"], cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.monotonic() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"ansible -m setup exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return elapsed


def superpod(*args: str, timeout: int = 2700) -> subprocess.CompletedProcess:
    env = os.environ | {"NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run([*SUPERPOD, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)


def last_run(runs_dir: Path, stack: str, kind: str) -> Path:
    """The newest run of exactly that kind (`drift` is not `...-quick-drift`)."""
    return sorted(p for p in (runs_dir / stack).glob(f"*-{kind}") if p.name.partition("Z-")[2] == kind)[-1]


def drift_json(proc: subprocess.CompletedProcess) -> dict:
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise AssertionError(f"no JSON from drift (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}") from e
