"""Collection for `superpod validate` without --from: playbooks/lldp_collect.yml over the
stack's inventory (ansible-runner, like apply), writing lldpctl JSON and port facts per host into
the run's folder, which validate then reads like any --from folder."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from topology.errors import SpecError
from topology.operate.runs import (
    OperateError,
    RunRequest,
    check_request,
    new_run_dir,
    runner_kwargs,
    scrub_recorded_env,
)


def collect(project_dir: Path, stack: str, overlays: tuple[Path, ...], runs_dir: Path | None,
            err: Console, devices: tuple[str, ...] = ()) -> Path:
    """The folder of lldpctl JSON and port facts, one pair per host that answered; `devices`
    (validate's --devices globs) limits the hosts asked, as ansible --limit patterns."""
    import ansible_runner

    req = RunRequest(project_dir=project_dir, stack=stack, kind="validate", overlays=overlays, runs_dir=runs_dir,
                     playbook=project_dir / "playbooks" / "lldp_collect.yml", limit=",".join(devices) or None)
    try:
        check_request(req)
    except OperateError as e:
        field, _, rule = str(e).partition(": ")
        raise SpecError(field, rule) from None
    run_dir = new_run_dir(req.runs_root, req.kind)
    dest = run_dir / "lldp"
    dest.mkdir()
    kwargs = runner_kwargs(req, run_dir) | {"extravars": {"superpod_validate_dir": str(dest)}}
    try:
        runner = ansible_runner.run(**kwargs)
    finally:
        scrub_recorded_env(run_dir / "artifacts" / "run")
    got = sorted(dest.glob("*.json"))
    err.print(f"collected LLDP from {len([p for p in got if not p.name.endswith('.ports.json')])} hosts "
              f"(ansible-runner: {runner.status}) into {dest}", highlight=False)
    if not got:
        raise SpecError("--stack", f"no host answered the LLDP collection (see {run_dir}/artifacts/run/stdout)")
    return dest
