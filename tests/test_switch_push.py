"""`superpod apply` / `superpod drift` cover the switches: two containers stand in for lab leaves,
reached over SSH at their planned OOB management addresses (a docker network with the lab's OOB
subnet), with become, through the generated inventory and site.yml, as a user runs them.

su01-leaf-rail0 is a Cumulus leaf (a stand-in `nv`), su01-leaf-rail1 a SONiC leaf (stand-in
`config reload`, `sonic-cfggen -d --print-data` and FRR's reload; an inventory overlay says
switch_os sonic and points at the lab's SONiC rendering, as `superpod plan` writes it for a
spec with compute_fabric.switch_os: sonic). The stand-ins are in tests/switch_standins/; NVUE's
and SONiC's own checks of the files are not emulated (the files are checked by
tests/test_switches*.py). Asserted: the rendered configuration lands whole (SONiC keeps the
tables the plan does not own), a second apply changes nothing, drift is clean, hand edits on both
switches are found by drift with their diffs and left alone, a SONiC push the switch refuses puts
the previous files back, a change of frr.conf alone is applied by FRR's reload, and a ConfigDB
change the config updater can make goes through `config apply-patch` (no reload).
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import spec_with
from tests.e2e.labpod import ROOT, docker, drift_json, last_run, plan, superpod, wait_booted
from topology.layout.build import build
from topology.operate.events import host_problems, host_tallies, load_events
from topology.render.files import write_all
from topology.render.switches import render_switch_configs

pytestmark = pytest.mark.timeout(1500)  # up to 480 s waiting for the base image; six runs, slow at high load

CUMULUS, SONIC = "su01-leaf-rail0", "su01-leaf-rail1"
STANDINS = ROOT / "tests" / "switch_standins"
SESSION = f"sw-push-{os.getpid()}"  # containers and network of this run


def _docker_ready() -> bool:
    return shutil.which("docker") is not None and docker("info", check=False).returncode == 0


def _base_image() -> str | None:
    """The base image tag; in the suite, scripts/molecule.sh may still be building it (its
    debootstrap takes minutes on a clean machine): wait for it rather than build it twice."""
    deadline = time.monotonic() + 480
    while True:
        proc = subprocess.run([str(ROOT / "scripts/ensure-image.sh"), "--no-build"], capture_output=True, text=True)
        if proc.returncode == 0:
            return proc.stdout.strip()
        if time.monotonic() > deadline:
            return None
        time.sleep(5)


class Switches:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.containers = {h: f"{SESSION}-{h}" for h in (CUMULUS, SONIC)}
        self.runs_dir = tmp / "runs"
        self.overlay = tmp / "switches.yml"

    def sh(self, host: str, script: str) -> str:
        return docker("exec", self.containers[host], "sh", "-c", script).stdout

    def read(self, host: str, path: str) -> str:
        return self.sh(host, f"cat {path}")

    def superpod(self, command: str, *extra: str, limit: str = f"{CUMULUS},{SONIC}") -> subprocess.CompletedProcess:
        return superpod(command, "--stack", "lab", "-i", str(self.overlay), "--runs-dir", str(self.runs_dir),
                        "--limit", limit, "--no-progress", *extra, timeout=600)

    def tallies(self, kind: str):
        return host_tallies(load_events(last_run(self.runs_dir, "lab", kind) / "artifacts/run/job_events"))

    def write_overlay(self, sonic_dir: Path) -> None:
        hosts = {h: dict(self.connection[h]) for h in self.containers}
        hosts[SONIC] |= {"superpod_switch_os": "sonic", "switch_fabric_config_dir": str(sonic_dir),
                         "switch_fabric_sonic_frr_reload": ["/usr/local/bin/frr-reload", "/etc/sonic/frr/frr.conf"]}
        self.overlay.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))


@pytest.fixture(scope="module")
def switches(tmp_path_factory):
    if not _docker_ready():
        pytest.skip("docker is not available")
    image = _base_image()
    if image is None:
        pytest.skip("the base image is not built (scripts/ensure-image.sh)")
    tmp = tmp_path_factory.mktemp("switches")
    sw = Switches(tmp)
    inventory = plan("lab")  # inventories/lab and build/lab/switches/, as `superpod plan` writes them
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())["all"]["children"]["ethernet_switches"]["hosts"]
    assert CUMULUS in hosts and SONIC in hosts
    sw.sonic_dir = tmp / "sonic" / "switches" / SONIC
    write_all(render_switch_configs(build(spec_with("lab", compute_fabric={"switch_os": "sonic"})), tmp / "sonic"))
    sw.cumulus_dir = ROOT / "build" / "lab" / "switches" / CUMULUS
    planned = {CUMULUS: yaml.safe_load((sw.cumulus_dir / "startup.yaml").read_text())[0]["set"]["interface"]["eth0"]
               ["ipv4"]["address"]}
    oob = {h: ipaddress.ip_interface(next(iter(a))) for h, a in planned.items()}
    oob[SONIC] = ipaddress.ip_interface(next(k.split("|")[1] for k in json.loads(
        (sw.sonic_dir / "config_db.json").read_text())["MGMT_INTERFACE"]))
    keydir = tmp / "ssh"
    keydir.mkdir()
    network = SESSION
    try:
        # the lab's OOB subnet as a docker network: each switch at its planned address, so the
        # management guard sees Ansible reach it where the plan puts eth0 (no force)
        made = docker("network", "create", "--subnet", str(oob[CUMULUS].network), network, check=False)
        on_oob = made.returncode == 0
        for host, name in sw.containers.items():
            net = ["--network", network, "--ip", str(oob[host].ip)] if on_oob else []
            docker("run", "-d", "--name", name, "--hostname", host, *net, "--cap-add", "SYS_ADMIN",
                   "--cgroupns", "host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "--tmpfs", "/run",
                   "--tmpfs", "/run/lock", "--tmpfs", "/tmp", image, "/sbin/init")
        for name in sw.containers.values():
            wait_booted(name)
        key = keydir / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", SESSION, "-f", str(key)], check=True)
        pub = key.with_suffix(".pub").read_text().strip()
        known, sw.connection = [], {}
        for host, name in sw.containers.items():
            for tool in ("nv", "config", "sonic-cfggen", "frr-reload", "sonic-init", "vtysh"):
                docker("cp", str(STANDINS / tool), f"{name}:/usr/local/bin/{tool}")
            sw.sh(host, f"install -d -m 700 /root/.ssh && echo '{pub}' > /root/.ssh/authorized_keys"
                        " && systemctl start ssh.service")
            address = str(oob[host].ip) if on_oob else docker(
                "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", name).stdout.strip()
            host_key = sw.read(host, "/etc/ssh/ssh_host_ed25519_key.pub").split()
            known.append(f"{address} {host_key[0]} {host_key[1]}\n")
            sw.connection[host] = {"ansible_user": "root", "ansible_ssh_private_key_file": str(key),
                                   "ansible_ssh_common_args": f"-o UserKnownHostsFile={keydir / 'known_hosts'}",
                                   "ansible_python_interpreter": "/usr/bin/python3"}
            if not on_oob:  # the subnet is taken on this machine: the container's own address, guard forced
                sw.connection[host] |= {"ansible_host": address, "switch_fabric_force": True}
        (keydir / "known_hosts").write_text("".join(known))
        sw.sh(SONIC, "/usr/local/bin/sonic-init")
        sw.write_overlay(sw.sonic_dir)
        yield sw
    finally:
        docker("rm", "-f", "-v", *sw.containers.values(), check=False)
        docker("network", "rm", network, check=False)


MERGED = ("DEVICE_METADATA", "PORT", "QUEUE")  # roles/switch_fabric: switch_fabric_sonic_merged_tables


def holds_plan(running: dict, planned: dict) -> bool:
    """The planned tables are the running ones; in the merged tables each planned row's fields are
    in the running row, which may hold the switch's own fields besides."""
    for table, rows in planned.items():
        if table in MERGED:
            if set(running[table]) != set(rows) or any(
                {k: running[table][r].get(k) for k in fields} != fields for r, fields in rows.items()
            ):
                return False
        elif running[table] != rows:
            return False
    return True


def test_switch_push_idempotence_drift_and_rollback(switches):
    sw = switches
    t0 = time.monotonic()
    # 1. the rendered configuration lands, whole
    proc = sw.superpod("apply")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert all(t.changed > 0 and t.failed == 0 for t in sw.tallies("apply").values()), proc.stdout
    assert sw.read(CUMULUS, "/var/lib/fake-nvue/applied.yaml") == (sw.cumulus_dir / "startup.yaml").read_text()
    planned_db = json.loads((sw.sonic_dir / "config_db.json").read_text())
    running_db = json.loads(sw.read(SONIC, "/var/lib/fake-sonic/configdb.json"))
    assert holds_plan(running_db, planned_db)
    assert running_db["FEATURE"] == {"bgp": {"state": "enabled"}}  # a table the plan does not own stays
    # the switch's own fields stay in the rows the push merges (sonic-init's values)
    assert {k: running_db["DEVICE_METADATA"]["localhost"][k] for k in ("hwsku", "platform", "mac")} == {
        "hwsku": "ACS-SN5400", "platform": "x86_64-nvidia_sn5400-r0", "mac": "1c:34:da:00:00:01"}
    assert running_db["PORT"]["Ethernet0"]["fec"] == "rs"
    assert json.loads(sw.read(SONIC, "/etc/sonic/config_db.json")) == running_db  # it boots into what runs
    assert sw.read(SONIC, "/var/lib/fake-sonic/frr-running.conf") == (sw.sonic_dir / "frr.conf").read_text()
    assert sw.read(SONIC, "/var/lib/fake-sonic/calls").split("\n")[:-1] == ["config reload"]
    assert sw.sh(SONIC, "ls /etc/sonic /etc/sonic/frr | grep -c '~$' || true").strip() == "0"  # no backups left

    # 2. a second apply of every task changes nothing; 3. drift is clean, and so is a plain apply:
    # both switches converged with these inputs, and their record (the running configuration
    # read again, the files) checks clean, so neither gets the check or apply run
    proc = sw.superpod("apply", "--full")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {h: t.changed for h, t in sw.tallies("apply").items()} == {CUMULUS: 0, SONIC: 0}, proc.stdout
    proc = sw.superpod("drift", "--json", "--full")
    report = drift_json(proc)
    assert proc.returncode == 0 and report["drifted_hosts"] == [], json.dumps(report, indent=1)
    proc = sw.superpod("drift", "--json")
    report = drift_json(proc)
    assert proc.returncode == 0 and report["record_clean_hosts"] == [CUMULUS, SONIC], json.dumps(report, indent=1)
    proc = sw.superpod("apply")
    assert proc.returncode == 0 and "2 hosts: 2 skipped, changed=0" in proc.stdout, proc.stdout + proc.stderr

    # 4. hand edits on the switches: drift names them with their diffs and changes nothing (the
    # record check sees the running configuration read differently, so both get the check run)
    sw.sh(CUMULUS, "sed -i 's/hostname: su01-leaf-rail0/hostname: edited-by-hand/' /var/lib/fake-nvue/applied.yaml")
    sw.sh(SONIC, """python3 -c 'import json; p="/var/lib/fake-sonic/configdb.json"; d=json.load(open(p));
d["INTERFACE"]["Ethernet0|192.0.2.1/31"] = {}; json.dump(d, open(p, "w"))'""")
    sw.sh(SONIC, "echo 'ip route 198.51.100.0/24 blackhole' >> /etc/sonic/frr/frr.conf")
    proc = sw.superpod("drift", "--json")
    report = drift_json(proc)
    assert proc.returncode == 1 and report["drifted_hosts"] == [CUMULUS, SONIC], json.dumps(report, indent=1)
    assert report["record_clean_hosts"] == []
    changes = {h: {c["task"]: c["diff"] for c in report["hosts"][h]["changes"]} for h in (CUMULUS, SONIC)}
    assert set(changes[CUMULUS]) == {"Compare the plan with the running configuration"}
    assert "edited-by-hand" in changes[CUMULUS]["Compare the plan with the running configuration"]
    assert set(changes[SONIC]) == {"Compare the planned tables with the running ConfigDB",
                                   "Compare the planned FRR configuration with the running one"}
    assert "Ethernet0|192.0.2.1/31" in changes[SONIC]["Compare the planned tables with the running ConfigDB"]
    assert "-ip route 198.51.100.0/24 blackhole" in changes[SONIC][
        "Compare the planned FRR configuration with the running one"]
    assert "edited-by-hand" in sw.read(CUMULUS, "/var/lib/fake-nvue/applied.yaml")  # check mode left them
    assert "Ethernet0|192.0.2.1/31" in sw.read(SONIC, "/var/lib/fake-sonic/configdb.json")

    # 5. a SONiC push the switch refuses: the previous files are back, nothing half-applied
    before = {p: sw.read(SONIC, p) for p in ("/etc/sonic/config_db.json", "/etc/sonic/frr/frr.conf")}
    refused = sw.tmp / "refused" / SONIC
    shutil.copytree(sw.sonic_dir, refused)
    db = json.loads((refused / "config_db.json").read_text())
    db["DEVICE_METADATA"]["localhost"]["hostname"] = "refuse-me"
    (refused / "config_db.json").write_text(json.dumps(db))
    sw.write_overlay(refused)
    proc = sw.superpod("apply", limit=SONIC)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    problems = host_problems(load_events(last_run(sw.runs_dir, "lab", "apply") / "artifacts/run/job_events"))
    assert {p.host for p in problems} == {SONIC}, problems  # the refused load (rescued) and the report
    assert any("SONiC refused the planned configuration" in p.message for p in problems), problems
    assert {p: sw.read(SONIC, p) for p in before} == before
    assert sw.sh(SONIC, "ls /etc/sonic /etc/sonic/frr | grep -c '~$' || true").strip() == "0"

    # 6. the plan again repairs both: the rollback reloaded ConfigDB as planned, so on the SONiC
    # leaf only the hand-edited frr.conf differs, which FRR's reload applies (no config reload)
    sw.write_overlay(sw.sonic_dir)
    proc = sw.superpod("apply")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sw.read(CUMULUS, "/var/lib/fake-nvue/applied.yaml") == (sw.cumulus_dir / "startup.yaml").read_text()
    assert holds_plan(json.loads(sw.read(SONIC, "/var/lib/fake-sonic/configdb.json")), planned_db)
    assert sw.read(SONIC, "/var/lib/fake-sonic/frr-running.conf") == (sw.sonic_dir / "frr.conf").read_text()
    assert sw.read(SONIC, "/var/lib/fake-sonic/calls").split("\n")[-2] == "frr-reload"

    # 7. a ConfigDB change the config updater can make goes in place (config apply-patch, no reload)
    sw.sh(SONIC, """python3 -c 'import json; p="/var/lib/fake-sonic/configdb.json"; d=json.load(open(p));
port=sorted(d["PORT"])[0]; d["PORT"][port]["mtu"]="1500"; d["INTERFACE"]["Ethernet0|192.0.2.1/31"]={};
json.dump(d, open(p, "w"))'""")
    proc = sw.superpod("apply", limit=SONIC)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    running_db = json.loads(sw.read(SONIC, "/var/lib/fake-sonic/configdb.json"))
    assert holds_plan(running_db, planned_db)  # the plan's rows, the switch's own fields (fec) kept
    assert running_db["PORT"]["Ethernet0"]["fec"] == "rs"
    assert json.loads(sw.read(SONIC, "/etc/sonic/config_db.json")) == running_db
    assert sw.read(SONIC, "/var/lib/fake-sonic/calls").split("\n")[-2] == "config apply-patch"
    print(f"switch push test: {time.monotonic() - t0:.0f} s for 7 superpod runs")
