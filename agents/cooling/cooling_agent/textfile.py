"""Reading the agent's own files (config, credentials) with limits: never blocks on a FIFO,
never reads more than a config file can need, errors name the file and the rule."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import yaml

MAX_FILE_BYTES = 1 << 20  # a credentials or config file is a few KiB


def read_regular_file(path: Path, what: str, error: type[ValueError]) -> tuple[str, int]:
    """The text of a regular file and its mode. Opened without blocking and checked on the
    open descriptor: a FIFO (which would block start-up forever), a device or a folder is refused.
    Errors read "<what> <path>: <rule>" (``what`` may be empty)."""
    name = f"{what} {path}".strip()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise error(f"{name}: no such file") from None
    except OSError as exc:
        raise error(f"{name}: cannot open: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{name}: not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            raise error(f"{name}: larger than {MAX_FILE_BYTES} bytes")
        data = os.read(fd, MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8"), stat.S_IMODE(st.st_mode)
    except UnicodeDecodeError:
        raise error(f"{name}: not UTF-8") from None


def yaml_problem(exc: yaml.YAMLError) -> str:
    """Where and what, without YAML's context snippet (it would echo a secret)."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    return f"not valid YAML{where}: {getattr(exc, 'problem', None) or 'syntax error'}"
