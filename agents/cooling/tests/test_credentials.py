"""The credentials file (issue 20): errors name the reference and field, never the secret,
in the message or anywhere in the traceback; a file group or others can read is refused."""

from __future__ import annotations

import subprocess
import sys
import traceback

import pytest
import yaml
from cooling_agent.credentials import CredentialsError, CredentialStore

from .conftest import layout

SECRET = "hunter2-TOP-secret"


def load_error(tmp_path, text: str, mode: int = 0o600) -> str:
    f = tmp_path / "credentials.yml"
    f.write_text(text)
    f.chmod(mode)
    with pytest.raises(CredentialsError) as exc:
        CredentialStore.load(f)
    shown = "".join(traceback.format_exception(exc.value))  # what a crash would print
    assert SECRET not in shown
    return str(exc.value)


@pytest.mark.parametrize("text, expect", [
    (f"redfish: {{username: mon, password: [{SECRET}]}}\n", "redfish: password: Input should be a valid string"),
    (f"redfish: {{username: mon, passwd: {SECRET}}}\n", "redfish: passwd: Extra inputs are not permitted"),
    (f"redfish: {SECRET}\n", "redfish: entry: Input should be a valid dictionary"),
    (f"redfish: {{username: mon, password: '{SECRET}}}\n", "not valid YAML at line"),
    (f"redfish:\n  password: {SECRET}\n   username: x\n", "not valid YAML at line 3"),
])
def test_malformed_file_errors_name_the_field_not_the_secret(tmp_path, text, expect):
    assert expect in load_error(tmp_path, text)


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o660])
def test_group_or_world_readable_file_is_refused(tmp_path, mode):
    msg = load_error(tmp_path, f"default: {{community: {SECRET}}}\n", mode)
    assert f"mode {mode:04o}" in msg and "chmod 600" in msg


def test_private_file_is_accepted(tmp_path):
    f = tmp_path / "credentials.yml"
    f.write_text(f"default: {{community: {SECRET}}}\n")
    f.chmod(0o400)
    assert CredentialStore.load(f).get("default").community.get_secret_value() == SECRET


def test_agent_exits_2_with_a_field_error_and_no_secret(tmp_path):
    creds = tmp_path / "credentials.yml"
    creds.write_text(f"redfish: {{username: mon, password: [{SECRET}]}}\n")
    creds.chmod(0o600)
    cfg = tmp_path / "agent.yml"
    cfg.write_text(yaml.safe_dump(layout(credentials_file=str(creds), listen={"address": "127.0.0.1", "port": 0})))
    proc = subprocess.run([sys.executable, "-m", "cooling_agent", "run", "-c", str(cfg)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "error: credentials_file" in proc.stderr and "redfish: password:" in proc.stderr
    assert SECRET not in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr
