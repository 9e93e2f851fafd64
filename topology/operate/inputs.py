"""What a run of site.yml is made of, as one digest: the playbook, the roles and plugins, the
inventory (with the plan's generated files and the operator's overrides) and the Ansible and
superpod versions. Two runs with the same digest are told the same thing; a host a full apply
converged with this digest needs that run again only if the host itself changed since
(topology/operate/converged.py decides that)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

from topology.operate.runs import RunRequest

# What site.yml reads beside it, in the project and beside the playbook (not molecule's scenarios
# or tests: they change no run)
_PLAYBOOK_SIBLINGS = ("roles", "filter_plugins", "action_plugins", "library", "module_utils", "group_vars", "host_vars")
_PROJECT_FILES = ("ansible.cfg", "topology/operate/strategy_plugins", "agents")  # agents: roles build their wheels
# Not inputs: tests and scenarios, and what runs leave behind (byte code, the agents' wheel builds,
# which a run writes into agents/ itself: a digest that counted them would change under every run)
_NOT_INPUTS = {"__pycache__", "molecule", "tests", ".git", "build", "dist", ".pytest_cache", ".hypothesis",
               ".ruff_cache", ".cache", ".venv"}
# Files of the plan (build/<stack>/) that roles read on the controller (lookups, copy src)
PLAN_READS = ("switches",)
_VERSIONED = ("ansible-core", "ansible", "ansible-runner", "mitogen", "superpod")


def _files(root: Path) -> Iterator[Path]:
    """Regular files under root (root itself when it is one), links followed, in a stable order."""
    if root.is_file():
        yield root
        return
    if not root.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if d not in _NOT_INPUTS and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            if not name.endswith((".pyc", ".pyo", ".retry")):
                yield Path(dirpath) / name


def _file_sha256(path: Path) -> bytes:
    file_hash = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            file_hash.update(block)
    return file_hash.digest()


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "-"


def plan_reads(stack: str) -> list[str]:
    """The plan's folders roles read on the controller, relative to the project."""
    return [f"build/{stack}/{p}" for p in PLAN_READS]


def sources(req: RunRequest) -> list[Path]:
    """The files and folders the digest covers, in order."""
    project = req.project_dir.resolve()
    playbook_dir = req.playbook_path.parent
    roots = [req.playbook_path, *(project / p for p in _PROJECT_FILES), *(project / p for p in _PLAYBOOK_SIBLINGS)]
    if playbook_dir != project:
        roots += [playbook_dir / p for p in _PLAYBOOK_SIBLINGS]
    # the plan's files a role reads on the controller: switch_fabric pushes build/<stack>/switches/
    # (a re-plan that changes only a switch's configuration is a new run for that switch)
    roots += [req.inventory_dir, *(p.resolve() for p in req.overlays), *(project / p for p in plan_reads(req.stack))]
    return list(dict.fromkeys(roots))


def digest(req: RunRequest, environ: dict[str, str] | None = None) -> str:
    """SHA-256 over every input file's path and content, the ANSIBLE_* settings of the
    environment (a different strategy or config is a different run) and the tool versions."""
    h = hashlib.sha256()
    for root in sources(req):
        h.update(f"root {root}\n".encode())
        for path in _files(root):
            h.update(f"file {path.relative_to(root) if path != root else '.'}\n".encode())
            h.update(_file_sha256(path))
    env = os.environ if environ is None else environ
    for name in sorted(k for k in env if k.startswith("ANSIBLE_")):
        h.update(f"env {name}={env[name]}\n".encode())
    for dist in _VERSIONED:
        h.update(f"version {dist}={_version(dist)}\n".encode())
    return h.hexdigest()
