"""The key that signs the records `superpod apply` keeps in `.runs/` (each host's manifest, the
converged list), and the signatures. A record decides what a plain apply skips and what the
record check runs on a host as root, so one that was edited, copied from elsewhere or written
by anything but superpod is never trusted: it costs a full run, nothing else.

The key is kept outside `.runs/` (a folder copied between machines or readable by a CI job
must not carry it): `$SUPERPOD_RECORD_KEY_FILE`, else `$XDG_CONFIG_HOME/superpod/record.key`
(`~/.config/superpod/record.key`). It is made on first use (32 random bytes, 0600, its folder
0700). Each record `X` gets `X.hmac`: HMAC-SHA256 over a label naming the record (stack and
host, so one host's record cannot stand in for another's) and the record's bytes.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

KEY_ENV = "SUPERPOD_RECORD_KEY_FILE"
SUFFIX = ".hmac"
_DOMAIN = b"superpod-record-v1\0"


class UntrustedRecord(Exception):
    """A record that does not verify: the reason, for the operator."""


def key_path() -> Path:
    if os.environ.get(KEY_ENV):
        return Path(os.environ[KEY_ENV]).expanduser()
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return config / "superpod" / "record.key"


def _create(path: Path) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return  # another run made it first: use theirs
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, secrets.token_hex(32).encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)


def load_key() -> bytes:
    """The key, made on first use. One others can read or write is not a secret: refused."""
    path = key_path()
    if not path.exists():
        _create(path)
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o077:
        raise UntrustedRecord(f"record key {path}: must be a regular file only its owner can read "
                              f"(mode {stat.S_IMODE(st.st_mode):04o}; chmod 600 it, or delete it to make a new one)")
    key = path.read_bytes().strip()
    if len(key) < 32:
        raise UntrustedRecord(f"record key {path}: too short ({len(key)} bytes); delete it to make a new one")
    return key


def _mac(key: bytes, label: str, data: bytes) -> str:
    return hmac.new(key, _DOMAIN + label.encode() + b"\0" + data, hashlib.sha256).hexdigest()


def label(path: Path, depth: int) -> str:
    """A record's name for its signature: its last `depth` path parts (`lab/manifest/n1.json`)."""
    return "/".join(Path(path).parts[-depth:])


def sign(path: Path, name: str) -> None:
    """Writes `path`.hmac for the record as it is now (0600)."""
    from topology.operate.private_files import write_private

    write_private(Path(str(path) + SUFFIX), _mac(load_key(), name, Path(path).read_bytes()) + "\n")


def verified(path: Path, name: str) -> bytes:
    """The record's bytes if its signature holds; UntrustedRecord (with the reason) otherwise,
    FileNotFoundError when there is no record."""
    data = Path(path).read_bytes()
    try:
        mac = Path(str(path) + SUFFIX).read_text(encoding="ascii").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        raise UntrustedRecord(f"{path}: no signature ({SUFFIX}): not written by superpod apply here") from None
    if not hmac.compare_digest(mac, _mac(load_key(), name, data)):
        raise UntrustedRecord(f"{path}: signature does not verify (edited, copied from another "
                              f"control node, or signed with another key than {key_path()})")
    return data
