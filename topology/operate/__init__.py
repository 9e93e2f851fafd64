"""Day-two operations: run site.yml over a stack's inventory through ansible-runner
(`superpod apply`) and report configuration drift from a check-mode run (`superpod drift`).

Modules, one job each:
- `runs`: run directories, inventory sources and the ansible-runner call;
- `events`: what a run's events say (per-host tallies, failures, changed tasks and diffs);
- `drift`: a drift report from a check-mode run, its exit code and what `--fix` re-applies;
- `progress`: the live progress display (rich), fed by ansible-runner's event handler;
- `report`: the summary and drift reports for people (rich) and machines (JSON).
"""
