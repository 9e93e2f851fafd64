"""A live Nautobot for the publish tests: the one named by NAUTOBOT_URL + NAUTOBOT_TOKEN_FILE, or
one started here by scripts/nautobot-lab.sh (migrations cached per Nautobot version). The fixture
gives the URL, the token file, and how many requests the server runs at once (its uWSGI processes;
NAUTOBOT_WORKERS for a server of yours): the tests publish with that many concurrent requests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def nautobot_server():
    url, token_file = os.environ.get("NAUTOBOT_URL"), os.environ.get("NAUTOBOT_TOKEN_FILE")
    if url and token_file:
        yield url, Path(token_file), int(os.environ.get("NAUTOBOT_WORKERS", "4"))
        return
    run_dir = Path(os.environ.get("NAUTOBOT_LAB_DIR", "/tmp/superpod-nautobot-lab"))
    env = {**os.environ, "NAUTOBOT_LAB_DIR": str(run_dir)}
    started = subprocess.run([ROOT / "scripts" / "nautobot-lab.sh", "start"], env=env, capture_output=True,
                             text=True, timeout=1800)
    assert started.returncode == 0, started.stderr[-3000:]
    try:
        processes = int((run_dir / "processes").read_text())
        yield started.stdout.strip().splitlines()[-1], run_dir / "token", processes
    finally:
        subprocess.run([ROOT / "scripts" / "nautobot-lab.sh", "stop"], env=env, capture_output=True, timeout=300)
