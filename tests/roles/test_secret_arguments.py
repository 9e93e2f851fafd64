"""Role arguments that hold secrets carry `no_log: true` in their argument spec (the declaration
ansible-doc and ansible-lint read), and every task that writes them has `no_log: true`.
Observed with ansible-core here: validate_argument_spec itself does NOT mask a no_log option's
value in its own error messages (a secret given as an invalid choice elsewhere comes back in
clear), so the role never passes a secret where a validation message could quote it; the test
records that behaviour so a change in ansible-core is noticed."""

from __future__ import annotations

import pytest
import yaml

from tests.role_files import ROOT, load
from tests.roles.playbook import run_play

SECRET = "pdu-community-s3cret"
# role -> its secret-holding options
SECRETS = {"cooling_monitor": ["cooling_monitor_credentials"], "host_tuning": ["host_tuning_bmc_password"]}


@pytest.mark.parametrize("role", sorted(SECRETS))
def test_secret_options_declare_no_log(role):
    spec = load(ROOT / f"roles/{role}/meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    for option in SECRETS[role]:
        assert spec[option].get("no_log") is True, f"{role}: {option} needs no_log: true"


def test_tasks_that_template_the_credentials_hide_them():
    for path in (ROOT / "roles/cooling_monitor/tasks").glob("*.yml"):
        for task in yaml.safe_load(path.read_text()) or []:
            src = str((task.get("ansible.builtin.template") or {}).get("src", ""))
            if "credentials" in src:
                assert task.get("no_log") is True, (path.name, task["name"])


def test_validate_argument_spec_does_not_mask_by_itself(tmp_path):
    spec = load(ROOT / "roles/cooling_monitor/meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    task = {"name": "validate", "ansible.builtin.validate_argument_spec": {
        "argument_spec": spec, "provided_arguments": {"cooling_monitor_credentials": {"pdus": {"community": SECRET}},
                                                      "cooling_monitor_log_level": SECRET}},
        "ignore_errors": True}
    result = run_play(tmp_path, [task], {"node": {}})["node"][-1]
    assert result.get("failed") and SECRET in " ".join(result["argument_errors"])
