"""FRR's own parser as the judge of a rendered frr.conf (Debian's `frr` package, no daemons).

Two reads of each file by `vtysh`:
- `vtysh -C -f FILE`: the dry run `frr-reload.py` makes before it applies a file; it refuses
  an unknown command or a bad value, naming the line.
- `vtysh -m -f FILE`: the same parse, echoing the file with the context ends vtysh inserts.
  vtysh takes a line that its node does not know in an enclosing node (a `router bgp` line
  inside `address-family` closes the address family), so `-C` alone passes a misplaced line;
  an `exit` or `end` vtysh inserts before the file's last line says where that happened.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

INSERTED = {"exit", "end"}  # the context ends `vtysh -m` writes


def vtysh() -> str | None:
    return shutil.which("vtysh")


def complaints(conf: str, workdir: Path, name: str = "frr.conf") -> list[str]:
    """What FRR's parser says against one frr.conf; [] when it takes the file as written."""
    path = workdir / name
    path.write_text(conf)
    # --config_dir: an empty vtysh.conf of our own, not the host's (unreadable unless root)
    base = ["vtysh", "--config_dir", str(workdir), "-f", str(path)]
    out: list[str] = []
    dry = subprocess.run([*base, "-C"], capture_output=True, text=True, check=False)
    if dry.returncode:
        out += [f"vtysh -C (exit {dry.returncode}): {line}" for line in _errors(dry)]
    marked = subprocess.run([*base, "-m"], capture_output=True, text=True, check=False)
    out += _misplaced(conf, marked.stdout)
    return out


def _errors(run: subprocess.CompletedProcess) -> list[str]:
    lines = [ln.strip() for ln in (run.stderr + run.stdout).splitlines() if "%" in ln and "vtysh.conf" not in ln]
    return lines or [(run.stderr or run.stdout).strip()]


def _misplaced(conf: str, marked: str) -> list[str]:
    """Lines vtysh read in an enclosing node: an inserted context end stands before each."""
    written = [ln.rstrip() for ln in conf.splitlines()]
    echoed = [ln.rstrip() for ln in marked.replace("\r", "").splitlines()]
    out, i = [], 0
    for line in echoed:
        if i < len(written) and line == written[i]:
            i += 1
        elif line.strip() in INSERTED and i < len(written) and written[i].startswith(" "):
            # an indented line read outside its block (a top-level line may end a block itself)
            out.append(f"vtysh -m: line {i + 1} ({written[i].strip()!r}) is not valid in its block: FRR read it "
                       "in an enclosing node")
    return out


def check_all(confs: Mapping[str, str], workers: int = 2) -> dict[str, list[str]]:
    """name -> complaints, for every file FRR does not take as written (parallel vtysh runs)."""
    with tempfile.TemporaryDirectory(prefix="frrcheck-") as tmp:
        root = Path(tmp)

        def one(item: tuple[int, tuple[str, str]]) -> tuple[str, list[str]]:
            k, (name, conf) = item
            work = root / str(k)
            work.mkdir()
            (work / "vtysh.conf").write_text("")
            return name, complaints(conf, work)

        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(one, enumerate(confs.items())))
    return {name: errs for name, errs in results if errs}
