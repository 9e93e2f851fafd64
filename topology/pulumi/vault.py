"""The BMC credentials for Ansible: `group_vars/all/vault.yml`, ansible-vault encrypted.

The generated 00_generated.yml sets `superpod_bmc_username: "{{ vault_bmc_username }}"` (and
the password alike); this file defines those vault variables. Username, password and the vault
password come from Pulumi secrets: they are secret inputs (encrypted in the state by the
stack's secrets provider), the file holds only vault ciphertext, and the one output derived
from them (an HMAC that tells an update is due) is a secret too.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

from topology.pulumi.files import remove_file, write_file

PROVIDER_VERSION = "1"
SECRET_INPUTS = ("username", "password", "vault_password")


def fingerprint(props: dict[str, Any]) -> str:
    """Changes when a credential or the vault password changes; keyed, so it is no hash of the
    password anyone could test guesses against without the vault password."""
    msg = json.dumps([props["username"], props["password"], props["version"]]).encode()
    return hmac.new(props["vault_password"].encode(), msg, hashlib.sha256).hexdigest()


def vault_text(pod: str, username: str, password: str, vault_password: str) -> str:
    """The encrypted file's text: ansible-vault 1.1 AES256, what `ansible-vault create` writes."""
    from ansible.parsing.vault import VaultLib, VaultSecret  # the ansible extra; only needed at apply time

    head = f"# BMC credentials of pod {pod}, from the Pulumi stack's secrets; written by `pulumi up`\n"
    body = yaml.safe_dump({"vault_bmc_username": username, "vault_bmc_password": password}, sort_keys=False)
    plain = head + body
    lib = VaultLib([("default", VaultSecret(vault_password.encode()))])
    return lib.encrypt(plain).decode("ascii")


class VaultFileProvider(ResourceProvider):
    def _write(self, props: dict[str, Any]) -> list[str]:
        text = vault_text(props["pod"], props["username"], props["password"], props["vault_password"])
        return write_file(Path(props["root"]), props["path"], text)

    def _outs(self, props: dict[str, Any], created: list[str]) -> dict[str, Any]:
        return {
            "root": props["root"],
            "path": props["path"],
            "fingerprint": fingerprint(props),
            "created_dirs": created,
            "version": props["version"],
        }

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(props["path"], self._outs(props, self._write(props)))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        moved = [k for k in ("root", "path") if olds.get(k) != news.get(k)]
        if moved:
            return DiffResult(changes=True, replaces=moved)
        return DiffResult(changes=olds.get("fingerprint") != fingerprint(news))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        created = self._write(news)
        return UpdateResult(self._outs(news, sorted(set(olds.get("created_dirs") or []) | set(created))))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        remove_file(Path(props["root"]), props["path"], props.get("created_dirs"))


class VaultFile(Resource, module="superpod", name="VaultFile"):
    """group_vars/all/vault.yml of the inventory. Outputs: path, fingerprint (secret)."""

    path: pulumi.Output[str]
    fingerprint: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        root: str,
        path: str,
        pod: str,
        username: pulumi.Input[str],
        password: pulumi.Input[str],
        vault_password: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "root": root,
            "path": path,
            "pod": pod,
            # secret whatever the caller passed: the state encrypts them
            "username": pulumi.Output.secret(username),
            "password": pulumi.Output.secret(password),
            "vault_password": pulumi.Output.secret(vault_password),
            "version": PROVIDER_VERSION,
            "fingerprint": None,
            "created_dirs": None,
        }
        secret_outs = pulumi.ResourceOptions(additional_secret_outputs=[*SECRET_INPUTS, "fingerprint"])
        super().__init__(VaultFileProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret_outs))
