"""A slurmctld of Debian's slurm-wlm reading the plan's files (with its own munged), for tests.

Only the lines that bind the files to the pod's controller are changed to run here: the
controller host (localhost), SlurmUser (this user), spool/state/log/pid paths (a temporary
folder), ports (free ones) and the munge socket (AuthInfo). Node, partition, GRES and topology
lines reach slurmctld exactly as the plan wrote them.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

SLURMCTLD = shutil.which("slurmctld")
MUNGED = shutil.which("munged") or (os.path.exists("/usr/sbin/munged") and "/usr/sbin/munged")
SCONTROL = shutil.which("scontrol")
MISSING = None if SLURMCTLD and MUNGED and SCONTROL else "slurmctld, munged, scontrol (Debian slurm-wlm, munge) missing"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def local_conf(text: str, run: Path) -> str:
    """The plan's slurm.conf with the controller's site lines pointed at `run`."""
    local = {
        "SlurmUser": getpass.getuser(),
        "StateSaveLocation": str(run / "state"),
        "SlurmdSpoolDir": str(run / "spool"),
        "SlurmctldPidFile": str(run / "slurmctld.pid"),
        "SlurmdPidFile": str(run / "slurmd.pid"),
        "SlurmctldLogFile": str(run / "slurmctld.log"),
        "SlurmdLogFile": str(run / "slurmd.log"),
        "SlurmctldPort": str(_free_port()),
        "SlurmdPort": str(_free_port()),
    }
    lines, host_done = [], False
    for line in text.splitlines():
        key = line.split("=", 1)[0]
        if key == "SlurmctldHost":
            if not host_done:
                lines += ["SlurmctldHost=localhost", f"AuthInfo=socket={run / 'munge.sock'}"]
                host_done = True
            continue
        lines.append(f"{key}={local[key]}" if key in local else line)
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def slurmctld(conf_dir: Path, run: Path) -> Iterator[callable]:
    """Start munged and slurmctld on the files in `conf_dir`; yields scontrol(*args) -> stdout."""
    run.mkdir(parents=True, exist_ok=True)
    for sub in ("state", "spool"):
        (run / sub).mkdir(exist_ok=True)
    for f in conf_dir.iterdir():
        shutil.copy(f, run / f.name)
    conf = run / "slurm.conf"
    conf.write_text(local_conf((conf_dir / "slurm.conf").read_text(), run))
    key = run / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    env = dict(os.environ, SLURM_CONF=str(conf))
    subprocess.run([MUNGED, f"--key-file={key}", f"--socket={run / 'munge.sock'}", f"--pid-file={run / 'munged.pid'}",
                    f"--log-file={run / 'munged.log'}", f"--seed-file={run / 'munge.seed'}", "--force"], check=True)
    ctld = subprocess.Popen([SLURMCTLD, "-D", "-i", "-f", str(conf)], env=env, stdout=open(run / "ctld.out", "w"),
                            stderr=subprocess.STDOUT)

    def scontrol(*args: str, check: bool = True) -> str:
        return subprocess.run([SCONTROL, *args], env=env, capture_output=True, text=True, check=check).stdout

    try:
        deadline = time.monotonic() + 30
        while "UP" not in scontrol("ping", check=False):
            if ctld.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"slurmctld did not come up:\n{(run / 'ctld.out').read_text()[-3000:]}")
            time.sleep(0.2)
        yield scontrol
    finally:
        ctld.terminate()
        ctld.wait(timeout=30)
        pid = (run / "munged.pid").read_text().strip() if (run / "munged.pid").exists() else ""
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), 15)
