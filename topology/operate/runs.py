"""One ansible-playbook run of site.yml over a stack's inventory, through ansible-runner.

Each run gets its own directory, `.runs/<stack>/<UTC time>-<kind>/`, which is ansible-runner's
private_data_dir: artifacts/<ident>/ keeps the events (job_events/), stdout and the command.
Nothing secret is passed in (no extravars, no passwords; the vault password is a file path).
ansible-runner records the environment it hands ansible-playbook in artifacts/*/command before
the run starts, so that environment is reduced first: names that may carry secrets (tokens,
passphrases, cloud keys of the operator's shell) are not passed at all -- secrets reach Ansible
through vault files -- and a kill -9 mid-run leaves nothing secret on disk. Once the run ends
the record is reduced further, to values of names that cannot carry secrets.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from topology.operate.private_files import private_dir

# Environment names kept with their values in the recorded command; every other value
# (tokens, passphrases, cloud keys the operator's shell may hold) is replaced.
_ENV_KEEP_PREFIXES = ("ANSIBLE_", "LC_", "PYTHON", "VIRTUAL_ENV")
_ENV_KEEP = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "SHELL", "TERM", "PWD", "TZ"}
_ENV_SECRETISH = ("PASS", "SECRET", "TOKEN", "KEY", "CREDENTIAL", "AUTH")
# ...except names that hold a path, a socket or a switch, never the secret itself
_ENV_NOT_SECRET_SUFFIXES = ("_FILE", "_FILES", "_PATH", "_SOCK", "_CHECKING", "_LIST")
STACK_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")  # the pod-name rule: a stack names folders
_YAML_SUFFIXES = (".yml", ".yaml", ".json")


class OperateError(Exception):
    """A run could not start: missing inventory, playbook or overlay (exit 2)."""


@dataclass(frozen=True)
class RunRequest:
    """What to run: site.yml of `project_dir` over inventories/<stack> plus overlays."""

    project_dir: Path
    stack: str
    kind: str = "apply"  # apply | drift | fix: names the run directory
    check: bool = False  # --check --diff (drift)
    overlays: tuple[Path, ...] = ()
    limit: str | None = None
    tags: str | None = None
    forks: int | None = None
    vault_password_file: Path | None = None
    fresh_facts: bool = False  # gather facts even when the cache has them
    runs_dir: Path | None = None  # default <project_dir>/.runs
    playbook: Path | None = None  # default <project_dir>/site.yml
    env: tuple[tuple[str, str], ...] = ()  # more settings for ansible-playbook's environment (no secrets)
    extra_vars_file: Path | None = None  # -e @FILE: what superpod computed for the playbook (accept), no secrets
    inventory: Path | None = None  # default <project_dir>/inventories/<stack>; `plan --out DIR` writes DIR/inventory

    @property
    def runs_root(self) -> Path:
        return (self.runs_dir or self.project_dir / ".runs").resolve() / self.stack

    @property
    def inventory_dir(self) -> Path:
        return (self.inventory or self.project_dir / "inventories" / self.stack).resolve()

    @property
    def playbook_path(self) -> Path:
        return (self.playbook or self.project_dir / "site.yml").resolve()


@dataclass
class RunOutcome:
    run_dir: Path
    rc: int
    status: str  # ansible-runner's: successful | failed | timeout | canceled
    events: list[dict] = field(default_factory=list)

    @property
    def artifact_dir(self) -> Path:
        return self.run_dir / "artifacts" / "run"

    @property
    def stdout_path(self) -> Path:
        return self.artifact_dir / "stdout"


def check_request(req: RunRequest) -> None:
    """Fails before anything runs when an input is missing or unreadable, naming it."""
    if not STACK_NAME.fullmatch(req.stack):
        raise OperateError("--stack: must be lowercase letters, digits and '-' (at most 63, not starting with '-')")
    if not (req.inventory_dir / "hosts.yml").is_file():
        raise OperateError(
            f"--stack: no inventory {req.inventory_dir}/hosts.yml; run `superpod plan --stack {req.stack}` first"
            if req.inventory is None else
            f"--out: no inventory {req.inventory_dir}/hosts.yml; run `superpod plan --spec ... --out "
            f"{req.inventory_dir.parent}` first"
        )
    if not req.playbook_path.is_file():
        raise OperateError(f"--playbook: no playbook {req.playbook_path}")
    for overlay in req.overlays:
        if not overlay.exists():
            raise OperateError(f"--inventory-overlay: no such file or directory {overlay}")
    # Ansible skips an inventory source it cannot parse with a warning; say which and why instead
    check_inventory_source(req.inventory_dir, "--stack")
    for overlay in req.overlays:
        check_inventory_source(overlay, "--inventory-overlay")
    if req.vault_password_file and not req.vault_password_file.is_file():
        raise OperateError(f"--vault-password-file: no such file {req.vault_password_file}")


def check_inventory_source(source: Path, field: str) -> None:
    """The YAML/JSON files of an inventory source (a file or a folder) parse: UTF-8 and well
    formed (checked on libyaml's event stream, which builds nothing, so big inventories are quick)."""
    import yaml

    files = [source] if source.is_file() else sorted(
        p for p in source.rglob("*") if p.is_file() and not any(part.startswith(".") for part in p.parts[-2:])
    )
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for path in files:
        if source.is_dir() and path.suffix not in _YAML_SUFFIXES:
            continue  # other files in a folder (INI sources, notes) are Ansible's to judge
        try:
            for _ in yaml.parse(path.read_bytes().decode("utf-8"), Loader=loader):
                pass
        except UnicodeDecodeError as e:
            raise OperateError(f"{field}: {path} is not UTF-8 text (byte {e.start})") from None
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            if path.suffix in _YAML_SUFFIXES or source.is_dir():
                raise OperateError(f"{field}: {path} is not valid YAML{where}: {getattr(e, 'problem', e)}") from None
        except OSError as e:
            raise OperateError(f"{field}: cannot read {path}: {e.strerror}") from None


def new_run_dir(runs_root: Path, kind: str) -> Path:
    """A fresh directory per run, sortable by time; never reused."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    private_dir(runs_root.parent)  # .runs/ and .runs/<stack>/: the pod's state and the records, owner only
    private_dir(runs_root)
    path = runs_root / f"{stamp}-{kind}"
    path.mkdir(mode=0o700, exist_ok=False)
    return path


def runner_kwargs(req: RunRequest, run_dir: Path) -> dict:
    """The ansible-runner arguments for a request (separate, so tests can inspect them)."""
    project_dir = req.project_dir.resolve()
    cmdline = []
    if req.check:
        cmdline += ["--check", "--diff"]
    if req.vault_password_file:
        cmdline += ["--vault-password-file", str(req.vault_password_file.resolve())]
    if req.extra_vars_file:
        cmdline += ["-e", f"@{req.extra_vars_file.resolve()}"]
    facts_dir = req.runs_root / "facts"  # one fact cache per stack, next to its runs
    envvars = {
        "ANSIBLE_CONFIG": str(project_dir / "ansible.cfg"),
        "ANSIBLE_ROLES_PATH": str(project_dir / "roles"),
        # (a cache shared by stacks would mix hosts)
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(facts_dir),
        # ansible-runner turns host key checking off unless told; keep the operator's choice (default on)
        "ANSIBLE_HOST_KEY_CHECKING": os.environ.get("ANSIBLE_HOST_KEY_CHECKING", "True"),
        "ANSIBLE_NOCOLOR": "1",
        # a source Ansible cannot parse fails the run instead of being skipped with a warning
        "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "True",
        # ansible-playbook from the same environment as superpod, even when it is not activated
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    if req.fresh_facts:
        envvars["ANSIBLE_GATHERING"] = "implicit"
    envvars.update(req.env)
    kwargs = {
        "private_data_dir": str(run_dir),
        "project_dir": str(project_dir),
        "playbook": str(req.playbook_path),
        "inventory": [str(req.inventory_dir), *(str(p.resolve()) for p in req.overlays)],
        "envvars": envvars,
        "ident": "run",
        "quiet": True,
        "suppress_env_files": True,  # no env/ files with environment values in the run dir
        # ansible-runner points the fact cache into each run's artifacts (over envvars): a
        # fresh, empty cache every run. An absolute path here is where it keeps it instead.
        "fact_cache": str(facts_dir.resolve()),
    }
    if cmdline:
        kwargs["cmdline"] = " ".join(cmdline)
    if req.limit:
        kwargs["limit"] = req.limit
    if req.tags:
        kwargs["tags"] = req.tags
    if req.forks:
        kwargs["forks"] = req.forks
    return kwargs


def scrub_recorded_env(artifact_dir: Path) -> None:
    """ansible-runner writes the whole process environment into artifacts/<ident>/command;
    keep the values of harmless names only."""
    command_file = artifact_dir / "command"
    if not command_file.is_file():
        return
    recorded = json.loads(command_file.read_text(encoding="utf-8"))
    env = recorded.get("env") or {}
    recorded["env"] = {k: (v if _env_value_kept(k) else "<not recorded>") for k, v in sorted(env.items())}
    command_file.write_text(json.dumps(recorded, indent=1), encoding="utf-8")


def _env_value_kept(name: str) -> bool:
    if any(s in name.upper() for s in _ENV_SECRETISH):
        return False
    return name in _ENV_KEEP or name.startswith(_ENV_KEEP_PREFIXES)


def may_carry_secret(name: str) -> bool:
    upper = name.upper()
    return any(s in upper for s in _ENV_SECRETISH) and not upper.endswith(_ENV_NOT_SECRET_SUFFIXES)


def reduced_env(env: dict[str, str], ours: dict[str, str]) -> dict[str, str]:
    """The environment ansible-playbook gets (and ansible-runner records): the operator's
    without names that may carry secrets, plus the settings superpod sets itself."""
    return {k: v for k, v in env.items() if k in ours or not may_carry_secret(k)}


def run_playbook(req: RunRequest, on_event: Callable[[dict], None] | None = None) -> RunOutcome:
    """Runs site.yml; returns when ansible-playbook has exited. Failing or unreachable hosts
    do not stop the others (no any_errors_fatal, no max_fail_percentage here), except in
    site.yml's switch plays, where a failed switch ends an apply (the rollout, docs/switches.md)."""
    import ansible_runner

    check_request(req)
    run_dir = new_run_dir(req.runs_root, req.kind)
    events: list[dict] = []

    def handle(event: dict) -> bool:
        events.append(event)
        if on_event:
            on_event(event)
        return True  # keep ansible-runner writing job_events/ too

    kwargs = runner_kwargs(req, run_dir)
    umask = os.umask(0o077)  # the run's events, artifacts and fact cache: 0600, as the records
    try:
        runner = ansible_runner.interface.init_runner(**kwargs, event_handler=handle)
        # reduced before Runner.run() writes artifacts/run/command, not after the run
        runner.config.env = reduced_env(runner.config.env, kwargs["envvars"])
        runner.run()
    finally:
        os.umask(umask)
        scrub_recorded_env(run_dir / "artifacts" / "run")
    return RunOutcome(run_dir=run_dir, rc=int(runner.rc if runner.rc is not None else 1),
                      status=str(runner.status), events=events)
