"""Reading a role's files in static tests: the repository root, the OS families every role
declares vars for, and YAML loading that treats an empty file as empty."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = ["Debian", "Ubuntu-22", "Ubuntu-24", "RedHat-9"]


def load(path: Path):
    return yaml.safe_load(path.read_text()) or {}
