"""Role arguments that hold secrets carry `no_log: true` in their argument spec, so Ansible's own
argument validation masks their values wherever they would appear in a result (a failing check
that quotes a value, a verbose log). Judged by ansible-core's validate_argument_spec: a secret
also given as an invalid choice elsewhere must come back masked."""

from __future__ import annotations

import pytest

from tests.role_files import ROOT, load
from tests.roles.playbook import run_play

SECRET = "pdu-community-s3cret"
# role -> (its secret-holding option and a value with the secret inside, an option with choices)
CASES = {"cooling_monitor": ("cooling_monitor_credentials", {"pdus": {"community": SECRET}},
                             "cooling_monitor_log_level")}


@pytest.mark.parametrize("role", sorted(CASES))
def test_secret_options_are_masked_by_ansible(tmp_path, role):
    secret_opt, value, choice_opt = CASES[role]
    spec = load(ROOT / f"roles/{role}/meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert spec[secret_opt].get("no_log") is True, f"{role}: {secret_opt} needs no_log: true"
    task = {"name": "validate", "ansible.builtin.validate_argument_spec": {
        "argument_spec": spec, "provided_arguments": {secret_opt: value, choice_opt: SECRET}},
        "ignore_errors": True}
    result = run_play(tmp_path, [task], {"node": {}})["node"][-1]
    assert result.get("failed"), result
    assert SECRET not in str(result) and "********" in str(result["argument_errors"])
