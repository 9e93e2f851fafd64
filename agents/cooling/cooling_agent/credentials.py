"""Credentials from a YAML file and/or the environment; secrets never reach logs.

File shape (mode 0600 or stricter, owned by the agent's user; a file group or others may
read is refused)::

    default:                 # a reference name, used as community_ref / credentials_ref
      community: public
    snmpv3-ops:
      username: monitor
      auth_protocol: sha     # md5 | sha | sha256 | sha512
      auth_key: ...
      priv_protocol: aes     # des | aes | aes256
      priv_key: ...
    redfish:
      username: telemetry
      password: ...

Environment: SUPERPOD_COOLING_<REF>_<FIELD> (ref upper-cased, non-alphanumerics as
``_``) overrides or supplies a field, e.g. ``SUPERPOD_COOLING_DEFAULT_COMMUNITY``.

Errors name the reference and field, never a value: pydantic's ``input_value`` and YAML's
context snippet (both echo the secret) are dropped, and the original exception with them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError

from .textfile import read_regular_file, yaml_problem

ENV_PREFIX = "SUPERPOD_COOLING_"
FIELDS = ("community", "username", "password", "auth_protocol", "auth_key", "priv_protocol", "priv_key")


class CredentialsError(ValueError):
    """A credentials file the agent refuses; the message never carries a secret."""


class Credential(BaseModel):
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)
    community: SecretStr | None = None
    username: str | None = None
    password: SecretStr | None = None
    auth_protocol: str | None = None
    auth_key: SecretStr | None = None
    priv_protocol: str | None = None
    priv_key: SecretStr | None = None

    def __repr__(self) -> str:  # belt and braces: only say which fields are set
        return f"Credential({', '.join(k for k in FIELDS if getattr(self, k) is not None)})"

    __str__ = __repr__


def field_errors(exc: ValidationError) -> str:
    """``field: rule`` for each error, without the offending input."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'entry'}: {e['msg']}"
                     for e in exc.errors(include_input=False, include_url=False))


def _read_private_yaml(path: Path):
    text, mode = read_regular_file(path, "credentials_file", CredentialsError)
    if mode & 0o077:
        raise CredentialsError(f"credentials_file {path}: mode {mode:04o} lets group or others read secrets; "
                               "chmod 600 (owner: the agent's user)")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CredentialsError(f"credentials_file {path}: {yaml_problem(exc)}") from None


def _env_key(ref: str, field: str) -> str:
    return ENV_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", ref).upper() + "_" + field.upper()


class CredentialStore:
    def __init__(self, entries: dict[str, Credential] | None = None, environ: dict[str, str] | None = None):
        self._entries = dict(entries or {})
        self._environ = os.environ if environ is None else environ

    @classmethod
    def load(cls, path: str | Path | None, environ: dict[str, str] | None = None) -> CredentialStore:
        entries: dict[str, Credential] = {}
        if path:  # named in the config: it must be there (a typo would silently drop every secret)
            raw = _read_private_yaml(Path(path))
            if not isinstance(raw, dict):
                raise CredentialsError(f"credentials_file {path}: expected a mapping of reference name to credential")
            for ref, body in raw.items():
                try:
                    entries[str(ref)] = Credential.model_validate(body or {})
                except ValidationError as exc:
                    raise CredentialsError(f"credentials_file {path}: {ref}: {field_errors(exc)}") from None
        return cls(entries, environ)

    def get(self, ref: str | None) -> Credential:
        ref = ref or "default"
        base = self._entries.get(ref, Credential())
        update = {f: self._environ[_env_key(ref, f)] for f in FIELDS if _env_key(ref, f) in self._environ}
        if update:
            base = Credential.model_validate({**base.model_dump(exclude_none=True), **update})
        return base

    def __repr__(self) -> str:
        return f"CredentialStore(refs={sorted(self._entries)})"
