"""Files and folders under `.runs/` only their owner may read: the records there decide what
runs on the pod as root, and a run's events carry the pod's state. Folders 0700, files 0600,
written atomically (a reader sees the old file or the new one)."""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

from topology.render.files import fsync_dir


def private_dir(path: Path) -> Path:
    """Creates `path` (and missing parents) 0700; an existing one is made 0700."""
    path = Path(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def write_private(path: Path, content: str) -> None:
    """Writes `path` 0600 in a private folder; no reader ever sees it half-written."""
    path = Path(path)
    private_dir(path.parent)
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex[:12]}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o600)
            f.write(content.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)
