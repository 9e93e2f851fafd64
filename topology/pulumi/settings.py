"""The stack's configuration, read once: the pod spec (`superpod:pod`), where files go, the
BMC credentials and vault password (Pulumi secrets), and whether to run Ansible."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pulumi
from pulumi.runtime import get_config, get_config_secret_keys_env, is_config_secret

from topology.errors import SpecError, SpecErrors
from topology.spec import PodSpec, parse

NS = "superpod"
SECRET_KEYS = ("bmcUsername", "bmcPassword", "vaultPassword")


@dataclass(frozen=True)
class Settings:
    stack: str
    root: Path  # the project folder: relative paths below are relative to it
    pod: dict  # superpod:pod as written (the providers parse it again)
    spec: PodSpec
    out_dir: Path  # default build/<stack>, as `superpod plan --stack <stack>`
    inventory_dir: Path  # default inventories/<stack>
    bmc_username: pulumi.Output | None
    bmc_password: pulumi.Output | None
    vault_password: pulumi.Output | None
    run_ansible: bool
    playbook: Path


def _fail(field: str, rule: str) -> NoReturn:
    raise pulumi.RunError(f"{NS}:{field}: {rule}")


def _secret(config: pulumi.Config, key: str) -> pulumi.Output | None:
    if get_config(f"{NS}:{key}") is None:  # config.get() on a secret would warn
        return None
    full = f"{NS}:{key}"
    if not (is_config_secret(full) or full in get_config_secret_keys_env()):
        _fail(key, f"must be a secret: pulumi config set --secret {NS}:{key} ... (it is stored in plain text now)")
    return config.require_secret(key)


def _vault_password(config: pulumi.Config, root: Path) -> pulumi.Output | None:
    secret = _secret(config, "vaultPassword")
    path = config.get("vaultPasswordFile")
    if secret is not None and path:
        _fail("vaultPasswordFile", "set either vaultPassword or vaultPasswordFile, not both")
    if path:
        file = root / Path(path).expanduser()
        if not file.is_file():
            _fail("vaultPasswordFile", f"no such file {file}")
        # what ansible does with --vault-password-file: the file's text, stripped
        return pulumi.Output.secret(file.read_text(encoding="utf-8").strip())
    return secret


def read_settings(config: pulumi.Config, stack: str, root: Path | None = None) -> Settings:
    root = Path(root or Path.cwd()).resolve()
    pod = config.require_object("pod")
    try:
        spec = parse(pod)
    except SpecErrors as e:
        raise pulumi.RunError("\n".join(f"{NS}:pod.{err.field}: {err.rule}" for err in e.errors)) from None
    except SpecError as e:
        raise pulumi.RunError(f"{NS}:pod.{e.field}: {e.rule}") from None
    username, password = _secret(config, "bmcUsername"), _secret(config, "bmcPassword")
    if (username is None) != (password is None):
        _fail("bmcPassword" if password is None else "bmcUsername", "BMC username and password go together: set both")
    vault_password = _vault_password(config, root)
    if password is not None and vault_password is None:
        _fail("vaultPassword", "required with BMC credentials: they are written ansible-vault encrypted "
              f"(pulumi config set --secret {NS}:vaultPassword ..., or {NS}:vaultPasswordFile PATH)")
    return Settings(
        stack=stack,
        root=root,
        pod=pod,
        spec=spec,
        out_dir=Path(config.get("artifactDir") or f"build/{stack}"),
        inventory_dir=Path(config.get("inventoryDir") or f"inventories/{stack}"),
        bmc_username=username,
        bmc_password=password,
        vault_password=vault_password,
        run_ansible=config.get_bool("runAnsible") or False,
        playbook=Path(config.get("playbook") or "site.yml"),
    )
