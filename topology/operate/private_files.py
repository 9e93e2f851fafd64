"""Files and folders under `.runs/` only their owner may read: the records there decide what
runs on the pod as root, and a run's events carry the pod's state. Folders 0700, files 0600,
written atomically (a reader sees the old file or the new one)."""

from __future__ import annotations

import os
from pathlib import Path

from topology.render.files import write_atomic


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
    write_atomic(path, content, mode=0o600)
