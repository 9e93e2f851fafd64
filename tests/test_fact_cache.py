"""The per-stack fact cache is the one runs share: ansible-runner would point each run at an
empty cache in its own artifacts, so a second apply within the cache's hour gathered facts
again. Real runs of `superpod apply` on localhost with ansible.cfg's fact settings."""

from __future__ import annotations

import json
import os

from typer.testing import CliRunner

from tests.e2e.labpod import last_run
from topology.cli import app
from topology.operate.events import load_events

runner = CliRunner()


def _project(tmp_path):
    project = tmp_path / "project"
    (project / "inventories" / "lab").mkdir(parents=True)
    (project / "inventories" / "lab" / "hosts.yml").write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
        "      ansible_python_interpreter: '{{ ansible_playbook_python }}'\n")
    (project / "ansible.cfg").write_text("[defaults]\ngathering = smart\nfact_caching = jsonfile\n"
                                         "fact_caching_timeout = 3600\n")
    (project / "site.yml").write_text("- hosts: all\n  gather_facts: true\n  gather_subset: [min]\n  tasks:\n"
                                      "    - ansible.builtin.debug: {msg: \"{{ ansible_facts.distribution }}\"}\n")
    return project


def _gathered(run_dir) -> bool:
    events = load_events(run_dir / "artifacts" / "run" / "job_events")
    return any(e.get("event") == "runner_on_ok" and e["event_data"].get("task_action") in
               ("gather_facts", "ansible.builtin.gather_facts") for e in events)


def test_a_second_apply_reuses_the_stacks_fact_cache(tmp_path):
    project = _project(tmp_path)
    # --full: every task both times (a converged, unchanged host would otherwise be skipped whole)
    args = ["apply", "--stack", "lab", "--project-dir", str(project), "--no-progress", "--full"]
    env = {**os.environ, "COLUMNS": "200"}
    assert runner.invoke(app, args, env=env).exit_code == 0
    cached = list((project / ".runs" / "lab" / "facts").iterdir())
    assert [p.name.endswith("localhost") for p in cached] == [True]
    assert json.loads(cached[0].read_text())  # the facts, where the next run looks for them
    first = last_run(project / ".runs", "lab", "apply")
    assert _gathered(first)
    assert runner.invoke(app, args, env=env).exit_code == 0
    second = last_run(project / ".runs", "lab", "apply")
    assert second != first and not _gathered(second)
