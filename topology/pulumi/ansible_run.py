"""The optional Ansible run (`superpod:runAnsible: true`): `site.yml` through ansible-runner
after the inventory is written, again whenever the inventory or the roles change.

Its inputs are content digests (inventory files, roles, playbooks), so `pulumi preview` shows
an update exactly when a run is due. Delete does nothing: configuration on hosts is not undone.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

PROVIDER_VERSION = "1"
SKIPPED_DIRS = {"molecule", "__pycache__", ".pytest_cache"}  # tests of a role, not what site.yml runs
TRIGGERS = ("inventory_digest", "roles_digest", "playbook", "version")


def tree_digest(root: Path, paths: Iterable[str]) -> str:
    """sha256 over the relative names and contents of the files under `paths` (files or folders)."""
    h = hashlib.sha256()
    for top in sorted(paths):
        base = root / top
        if not base.exists():
            continue
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
        for f in files:
            rel = f.relative_to(root)
            if SKIPPED_DIRS & set(rel.parts):
                continue
            h.update(str(rel).encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def search_path() -> str:
    """PATH with this Python's bin folder (the project's virtualenv) first: the engine starts
    the provider process without it, and ansible-runner looks ansible-playbook up on PATH."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)])


def run_playbook(props: dict[str, Any]) -> dict[str, Any]:
    import ansible_runner  # the ansible extra; only needed when a run is due

    root = Path(props["root"])
    with tempfile.TemporaryDirectory(prefix="superpod-ansible-") as private:
        cmdline = []
        if props.get("vault_password"):
            pw = Path(private) / "vault-password"
            pw.touch(mode=0o600)
            pw.write_text(props["vault_password"], encoding="utf-8")
            cmdline = ["--vault-password-file", str(pw)]
        result = ansible_runner.run(
            private_data_dir=private,
            project_dir=str(root),
            playbook=str(root / props["playbook"]),
            inventory=str(root / props["inventory"]),
            cmdline=shlex.join(cmdline) or None,
            envvars={"PATH": search_path()},
            quiet=True,
        )
        # events live in the private folder: read them before it goes
        failed = sorted({e["event_data"].get("host", "?") for e in result.events
                         if e.get("event") in ("runner_on_failed", "runner_on_unreachable")})
    if result.rc != 0:
        raise RuntimeError(f"{props['playbook']} failed (status {result.status}, rc {result.rc}); failed hosts: "
                           f"{', '.join(failed) or 'none reported'}")
    return {"status": result.status, "rc": result.rc}


class AnsibleRunProvider(ResourceProvider):
    def _outs(self, props: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
        return {k: props[k] for k in (*TRIGGERS, "root", "inventory")} | run

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(f"ansible-{props['inventory_digest'][:12]}", self._outs(props, run_playbook(props)))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=any(olds.get(k) != news.get(k) for k in TRIGGERS))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(self._outs(news, run_playbook(news)))


class AnsibleRun(Resource, module="superpod", name="AnsibleRun"):
    """One applied run of the playbook. Outputs: status, rc and the digests it ran with."""

    status: pulumi.Output[str]
    rc: pulumi.Output[int]
    inventory_digest: pulumi.Output[str]
    roles_digest: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        root: Path,
        playbook: Path,
        inventory: Path,
        inventory_digest: str,
        vault_password: pulumi.Input[str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "root": str(root),
            "playbook": str(playbook),
            "inventory": str(inventory),
            "inventory_digest": inventory_digest,
            "roles_digest": tree_digest(root, [str(playbook), "roles", "playbooks"]),
            "version": PROVIDER_VERSION,
            "vault_password": pulumi.Output.secret(vault_password) if vault_password is not None else None,
            "status": None,
            "rc": None,
        }
        super().__init__(AnsibleRunProvider(), name, props, opts)

