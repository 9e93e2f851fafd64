"""The `superpod` command: plan, diff and schema; apply and drift drive Ansible (topology/operate)."""

from __future__ import annotations

import json
import re
import sys
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from topology.errors import SpecError, SpecErrors, plain
from topology.gc_tuning import collector_paused

if TYPE_CHECKING:
    from topology.spec import PodSpec

# The layout, the spec's models and the catalog are imported by the commands that plan: `apply`
# and `drift` start without them (about half a second of CPU on every run).

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="GPU SuperPOD infrastructure as code: a pod spec becomes fabric, cabling, "
    "addresses, racks and an Ansible inventory.",
)
# Output that is not a terminal (a log, a pipe) is never wrapped: a path or a work-list line
# split at 80 columns cannot be copied or grepped.
console = Console(soft_wrap=not sys.stdout.isatty())
err = Console(stderr=True, soft_wrap=True)


def show_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        console.print(f"superpod {version('superpod')}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", callback=show_version, is_eager=True,
                                          help="print the version and exit")] = False,
) -> None:
    """GPU SuperPOD infrastructure as code: a pod spec becomes fabric, cabling, addresses, racks and an
    Ansible inventory."""

StackOpt = Annotated[Optional[str], typer.Option("--stack", "-s", help="read Pulumi.<stack>.yaml")]  # noqa: UP045
SpecOpt = Annotated[Optional[Path], typer.Option("--spec", help="a bare spec file (the value of superpod:pod)")]  # noqa: UP045
ProjectOpt = Annotated[Path, typer.Option("--project-dir", "-C", help="where Pulumi.<stack>.yaml files live")]
CatalogOpt = Annotated[Optional[list[Path]], typer.Option(  # noqa: UP045
    "--catalog", help="a catalog file layered over the packaged one: adds or overrides node, switch and other "
    "models (repeatable; a stack may name one as superpod:catalog)")]
AllowMovesOpt = Annotated[bool, typer.Option("--allow-moves", help="write a plan that moves gear the last plan "
                                             "placed (rack, unit, cable, address): nothing is installed yet")]


MAX_ERRORS_SHOWN = 50  # a spec with 50,000 stray keys needs the first few named, not a minute of output


def fail(errors: list[SpecError] | SpecError) -> None:
    # Text, not markup: field and rule quote the user's input, which may hold [brackets] or escapes
    errors = errors if isinstance(errors, list) else [errors]
    if wants_json():  # a script reading stdout gets the errors there too, not an empty stream
        console.print_json(data={"ok": False, "errors": [{"field": e.field, "rule": e.rule} for e in errors]})
    for e in errors[:MAX_ERRORS_SHOWN]:
        err.print(Text.assemble(("error:", "bold red"), " ", (plain(e.field), "bold"), f": {plain(e.rule)}"))
    if len(errors) > MAX_ERRORS_SHOWN:
        err.print(Text.assemble(("error:", "bold red"), f" ... and {len(errors) - MAX_ERRORS_SHOWN} more errors"))
    raise typer.Exit(2)


# Set by each command that takes --json, so that fail() answers in the same form.
JSON_ERRORS: ContextVar[bool] = ContextVar("json_errors", default=False)


def wants_json() -> bool:
    return JSON_ERRORS.get()


def spec_file_problem(path: Path) -> str | None:
    """Why `path` cannot be read as a spec file, or None. Checked before opening: a FIFO would block."""
    if not path.exists():
        return f"no such file {path}"
    if path.is_dir():
        return f"{path} is a directory, not a spec file"
    if not path.is_file():
        return f"{path} is not a regular file (a FIFO, socket or device)"
    return None


STACK_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")  # the rule of pod names: a stack names folders


def check_stack_name(stack: str) -> None:
    if not STACK_NAME.fullmatch(stack):
        fail(SpecError("--stack", "must be lowercase letters, digits and '-' (at most 63, not starting with '-')"))


# Set by each command that takes --catalog: the overlays load() layers before reading a spec.
CATALOGS: ContextVar[tuple[Path, ...]] = ContextVar("catalogs", default=())


def stack_catalogs(stack_file: Path) -> list[Path]:
    """The catalog overlays a stack file names (`config: superpod:catalog: FILE or [FILE, ...]`),
    relative to the stack file's folder."""
    from topology.spec import strict_yaml

    data = strict_yaml.load_file(str(stack_file))
    config = data.get("config") if isinstance(data, dict) else None
    named = config.get("superpod:catalog") if isinstance(config, dict) else None  # the spec's own check names a bad one
    if named is None:
        return []
    names = named if isinstance(named, list) else [named]
    if not all(isinstance(n, str) and n for n in names):
        raise SpecError(f"{stack_file}: config.superpod:catalog", "must be a file name or a list of file names")
    return [stack_file.parent / n for n in names]


def use_catalogs(stack_file: Path | None) -> None:
    """Layers the stack's and --catalog's overlays over the packaged catalog (catalog.use_overlays)
    and checks them now, so a bad overlay is named before the spec is read against it."""
    from topology import catalog

    paths = [*(stack_catalogs(stack_file) if stack_file else []), *CATALOGS.get()]
    for path in paths:
        problem = spec_file_problem(path)
        if problem:
            raise SpecError("--catalog", problem.replace("spec file", "catalog file"))
    catalog.use_overlays(paths)
    catalog.load()


def load(stack: str | None, spec: Path | None, project_dir: Path) -> tuple[str, PodSpec]:
    from topology.spec import load_spec_file, load_stack_file

    if bool(stack) == bool(spec):
        fail(SpecError("--stack/--spec", "give exactly one of --stack NAME or --spec FILE"))
    try:
        if stack:
            check_stack_name(stack)
            path = project_dir / f"Pulumi.{stack}.yaml"
            if not path.is_file():
                fail(SpecError("--stack", f"no stack file {path}"))
            use_catalogs(path)
            return stack, load_stack_file(str(path))
        problem = spec_file_problem(spec)
        if problem:
            fail(SpecError("--spec", problem))
        use_catalogs(None)
        parsed = load_spec_file(str(spec))
        return parsed.name, parsed
    except SpecErrors as e:
        fail(e.errors)
    except SpecError as e:
        fail(e)


def layout_of(pod: PodSpec):
    from topology.layout.build import build

    try:
        with collector_paused():  # a plan leaves no cycles worth the collector's walks (gc_tuning.py)
            return build(pod)
    except SpecError as e:
        fail(e)


class Progress:
    """Where long work is, on stderr, only when stderr is a terminal: an 8k-GPU plan takes half a
    minute, and a silent half minute looks like a hang; a log or a pipe gets nothing."""

    def __init__(self, console: Console) -> None:
        self.live = Live(console=console, transient=True) if console.is_terminal else None

    def __enter__(self) -> Progress:
        if self.live:
            self.live.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.live:
            self.live.stop()

    def step(self, text: str) -> None:
        if self.live:  # drawn now: the step that follows may hold the interpreter for seconds
            self.live.update(Spinner("dots", text=text), refresh=True)


def write_plan(stack: str | None, spec: Path | None, project_dir: Path, out: Path | None, report: bool,
               allow_moves: bool = False) -> dict:
    """Builds the layout and writes its artifacts (and the report): what a plan wrote, for its summary."""
    from topology.layout.growth import check_growth
    from topology.render.artifacts import iter_artifact_pieces
    from topology.render.files import publish
    from topology.render.inventory import OVERRIDES

    name, pod = load(stack, spec, project_dir)
    out_dir = out or project_dir / "build" / name
    inventory_dir = (out / "inventory") if out else project_dir / "inventories" / name
    count = [0]
    with Progress(err) as progress:
        progress.step(f"{name}: building the layout")
        layout = layout_of(pod)
        if not allow_moves:  # gear the last plan placed stays where it is (topology/layout/growth.py)
            try:
                check_growth(out_dir / "layout.json", layout)
            except SpecError as e:
                fail(e)

        def files():  # rendered one at a time, in pieces, as publish writes them: never all in memory
            for item in iter_artifact_pieces(layout, out_dir, inventory_dir):
                count[0] += 1
                if count[0] % 64 == 1:
                    progress.step(f"{name}: rendering and writing files ({count[0]} so far)")
                yield item
            if report:
                from topology.render.report import render_report

                progress.step(f"{name}: rendering the report")
                for item in render_report(layout, out_dir).items():
                    count[0] += 1
                    yield item

        try:  # the whole set or nothing: a kill, full disk or read-only folder leaves the old set
            with collector_paused():
                changed = publish(files(), out_dir, inventory_dir, seeds=[inventory_dir / OVERRIDES])
        except SpecError as e:  # a renderer's refusal (a switch OS's platform lacks what the plan needs)
            fail(e)
        except OSError as e:
            where = e.filename or out_dir
            field = "--out" if out else str(inventory_dir if Path(where).is_relative_to(inventory_dir) else out_dir)
            fail(SpecError(field, f"cannot write {where}: {e.strerror or e}"))
    return {"layout": layout, "out": out_dir, "inventory": inventory_dir, "changed": len(changed), "files": count[0]}


@app.command()
def plan(
    stack: StackOpt = None,
    spec: SpecOpt = None,
    project_dir: ProjectOpt = Path("."),
    out: Annotated[Optional[Path], typer.Option(help="artifact folder (default build/<name>/)")] = None,  # noqa: UP045
    json_summary: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
    report: Annotated[bool, typer.Option("--report", help="also write the HTML report (<out>/report/)")] = False,
    allow_moves: AllowMovesOpt = False,
    catalog: CatalogOpt = None,
) -> None:
    """Build the layout and write devices.csv, cabling.csv, ipplan.csv, asns.csv, racks.csv,
    layout.json and the Ansible inventory (inventories/<stack>/, or <out>/inventory/)."""
    JSON_ERRORS.set(json_summary)
    CATALOGS.set(tuple(catalog or ()))
    from topology.render.summary import summary, summary_tables

    wrote = write_plan(stack, spec, project_dir, out, report, allow_moves)
    layout, out_dir, inventory_dir = wrote["layout"], wrote["out"], wrote["inventory"]
    if json_summary:
        extra = {"report": str(out_dir / "report" / "index.html")} if report else {}
        print(json.dumps(summary(layout) | {"out": str(out_dir), "inventory": str(inventory_dir)} | extra, indent=1))
        return
    for table in summary_tables(layout):
        console.print(table)
    console.print(
        f"wrote {wrote['changed']} of {wrote['files']} files ({wrote['files'] - wrote['changed']} unchanged): "
        f"{out_dir}/ and {inventory_dir}/",
        highlight=False,
    )


@app.command("report")
def report_cmd(
    stack: StackOpt = None,
    spec: SpecOpt = None,
    project_dir: ProjectOpt = Path("."),
    out: Annotated[Optional[Path], typer.Option(help="artifact folder (default build/<name>/)")] = None,  # noqa: UP045
    json_out: Annotated[bool, typer.Option("--json", help="the plan's summary and the report's path as JSON")] = False,
    allow_moves: AllowMovesOpt = False,
    catalog: CatalogOpt = None,
) -> None:
    """Write the pod's HTML report (build/<name>/report/index.html: overview, fabric, floor plan,
    power and cooling, rack elevations, cable schedules, BOM). It is written with the plan's
    artifacts, as `plan --report` does, so report, bom.csv and labels.csv always agree."""
    plan(stack=stack, spec=spec, project_dir=project_dir, out=out, json_summary=json_out, report=True,
         allow_moves=allow_moves, catalog=catalog)
    if not json_out:
        name = stack or load(stack, spec, project_dir)[0]
        console.print(f"report: {(out or project_dir / 'build' / name) / 'report' / 'index.html'}", highlight=False)


def _load_either(ref: str, project_dir: Path) -> PodSpec:
    from topology.spec import load_spec_or_stack_file

    path = Path(ref)
    if not path.is_file():
        return load(ref, None, project_dir)[1]
    try:  # a stack file or a bare spec, told apart by structure (a comment cannot mislead it)
        use_catalogs(path)  # a bare spec names no catalog: only --catalog's then
        return load_spec_or_stack_file(str(path))
    except SpecErrors as e:
        fail(e.errors)
    except SpecError as e:
        fail(e)


NautobotOpt = Annotated[Optional[str], typer.Option("--nautobot", help="Nautobot URL, e.g. https://nautobot.example")]  # noqa: UP045
TokenFileOpt = Annotated[Optional[Path], typer.Option("--token-file", help="file holding the API token (mode 0600)")]  # noqa: UP045


def _publish_call(run, layout, url, token_file, **kw) -> int:
    """Runs a Nautobot command; bad input and server errors become `error:` lines (exit 2)."""
    from topology.publish.nautobot import NautobotError

    if token_file is None:
        fail(SpecError("--token-file", "required with --nautobot (a file holding the API token, mode 0600)"))
    try:
        return run(layout, url, token_file, console=console, **kw)
    except SpecError as e:
        fail(e)
    except NautobotError as e:
        fail(SpecError("--nautobot", str(e)))


@app.command()
def publish(
    stack: StackOpt = None,
    spec: SpecOpt = None,
    project_dir: ProjectOpt = Path("."),
    nautobot: Annotated[str, typer.Option("--nautobot", help="Nautobot URL")] = "",
    token_file: TokenFileOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="print what would change, write nothing")] = False,
    prune: Annotated[bool, typer.Option("--prune", help="delete objects we made that the plan dropped")] = False,
    limit: Annotated[int, typer.Option(help="changes listed per object type (0: all)")] = 0,
    workers: Annotated[int, typer.Option(help="concurrent bulk requests (interfaces, cables, addresses)")] = 4,
    timeout: Annotated[float, typer.Option(help="seconds a request may take (connect, read, write each)",
                                           min=1, max=3600)] = 300.0,
    json_out: Annotated[bool, typer.Option("--json", help="counts and every change as JSON on stdout")] = False,
    catalog: CatalogOpt = None,
) -> None:
    """Publish the plan into Nautobot: locations, rack groups, racks, device types and roles, devices
    at their units, interfaces, cables, namespace, prefixes, addresses, ASNs, SU/rail tags. Idempotent;
    deletes only objects tagged `superpod`, and only with --prune."""
    from topology.publish.commands import publish_plan

    JSON_ERRORS.set(json_out)
    CATALOGS.set(tuple(catalog or ()))
    if not nautobot:
        fail(SpecError("--nautobot", "required: the Nautobot URL"))
    layout = layout_of(load(stack, spec, project_dir)[1])
    raise typer.Exit(_publish_call(publish_plan, layout, nautobot, token_file, dry_run=dry_run, prune=prune,
                                   limit=limit, workers=workers, timeout=timeout, as_json=json_out))


@app.command()
def diff(
    old: Annotated[str, typer.Argument(help="stack name or spec/stack file")],
    new: Annotated[Optional[str], typer.Argument(help="stack name or spec/stack file")] = None,  # noqa: UP045
    project_dir: ProjectOpt = Path("."),
    limit: Annotated[int, typer.Option(help="lines shown per list (0: all)")] = 20,
    nautobot: NautobotOpt = None,
    token_file: TokenFileOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="every change as JSON on stdout (no --limit)")] = False,
    catalog: CatalogOpt = None,
) -> None:
    """List devices, cables and addresses added, removed or changed from OLD to NEW (or, with
    --nautobot, between the plan of OLD and what Nautobot holds). Exits 0 when they are the same,
    1 when they differ."""
    from topology.render.diff import diff_layouts

    JSON_ERRORS.set(json_out)
    CATALOGS.set(tuple(catalog or ()))
    if nautobot:
        if new is not None:
            fail(SpecError("NEW", "give one stack with --nautobot: its plan is compared with Nautobot"))
        from topology.publish.commands import nautobot_diff

        raise typer.Exit(_publish_call(nautobot_diff, layout_of(_load_either(old, project_dir)), nautobot,
                                       token_file, limit=limit, as_json=json_out))
    if new is None:
        fail(SpecError("NEW", "missing: give OLD and NEW, or one stack with --nautobot URL"))
    changes = diff_layouts(layout_of(_load_either(old, project_dir)), layout_of(_load_either(new, project_dir)))
    if json_out:
        same = not any(changes.values())
        print(json.dumps({"ok": True, "same": same, "changes": {
            what: {"added": c.added, "removed": c.removed, "changed": c.changed} for what, c in changes.items()}},
            indent=1))
        raise typer.Exit(0 if same else 1)
    any_change = False
    for what, c in changes.items():
        console.print(f"[bold]{what}[/]: +{len(c.added)} -{len(c.removed)} ~{len(c.changed)}")
        for sign, items in (("+", c.added), ("-", c.removed), ("~", c.changed)):
            shown = items if limit == 0 else items[:limit]
            for item in shown:
                console.print(f"  {sign} {item}", highlight=False)
            if len(items) > len(shown):
                console.print(f"  {sign} … {len(items) - len(shown)} more", highlight=False)
        any_change |= bool(c)
    raise typer.Exit(1 if any_change else 0)


@app.command()
def schema(
    out: Annotated[Optional[Path], typer.Option(help="write to a file instead of stdout")] = None,  # noqa: UP045
    catalog: CatalogOpt = None,
) -> None:
    """Print the JSON Schema of the pod spec (the value of superpod:pod); each model field lists
    the catalog's models (with --catalog's)."""
    CATALOGS.set(tuple(catalog or ()))
    try:
        use_catalogs(None)
    except SpecErrors as e:
        fail(e.errors)
    except SpecError as e:
        fail(e)
    from topology.spec import json_schema

    text = json.dumps(json_schema(), indent=2) + "\n"
    if out:
        from topology.render.files import write_atomic

        write_atomic(out, text)
    else:
        sys.stdout.write(text)


# ---- day two: apply and drift (topology/operate) -------------------------------------------
OverlayOpt = Annotated[
    Optional[list[Path]],  # noqa: UP045
    typer.Option("--inventory-overlay", "-i", help="extra inventory source after inventories/<stack> "
                 "(file or folder; repeatable): connection settings, jump hosts, site switches"),
]
LimitOpt = Annotated[Optional[str], typer.Option("--limit", "-l", help="ansible --limit (hosts, groups, @retry-file)")]  # noqa: UP045
TagsOpt = Annotated[Optional[str], typer.Option("--tags", "-t", help="ansible --tags (roles are tagged by name)")]  # noqa: UP045
RunsOpt = Annotated[Optional[Path], typer.Option("--runs-dir", help="where runs are kept (.runs/)")]  # noqa: UP045
VaultOpt = Annotated[Optional[Path], typer.Option("--vault-password-file", help="ansible-vault password file")]  # noqa: UP045
ForksOpt = Annotated[Optional[int], typer.Option("--forks", help="parallel hosts (default from ansible.cfg)")]  # noqa: UP045
PlaybookOpt = Annotated[Optional[Path], typer.Option("--playbook", help="instead of <project-dir>/site.yml")]  # noqa: UP045
FullOpt = Annotated[bool, typer.Option("--full", help="run every task on every host: no host is skipped as "
                                        "converged by an earlier full apply")]
FullAfterOpt = Annotated[float, typer.Option("--full-after", min=0, help="hours after which a host's last full "
                                             "apply no longer lets it be skipped (0: never skip)")]
ProgressOpt = Annotated[Optional[bool], typer.Option("--progress/--no-progress", help="live progress (tty: on)")]  # noqa: UP045


OperateStackOpt = Annotated[Optional[str], typer.Option("--stack", "-s",  # noqa: UP045
                                                       help="inventories/<stack> (from superpod plan)")]
OperateSpecOpt = Annotated[Optional[Path], typer.Option("--spec", help="the spec file planned with `plan --spec`")]  # noqa: UP045
PlanOutOpt = Annotated[Optional[Path], typer.Option("--out", help="the folder `plan --out DIR` wrote: its "  # noqa: UP045
                                                    "inventory/ is run (default inventories/<stack>)")]


def planned(stack: str | None, spec: Path | None, project_dir: Path, out: Path | None) -> tuple[str, Path | None]:
    """The stack name and inventory a plan wrote: `--stack S` or `--spec FILE` (its name), from
    inventories/<name>/ or, with `--out DIR`, DIR/inventory/ -- where `plan` put them."""
    if bool(stack) == bool(spec):
        fail(SpecError("--stack/--spec", "give exactly one of --stack NAME or --spec FILE"))
    name = stack or load(None, spec, project_dir)[0]
    return name, (out / "inventory") if out else None


def _run_request(stack, project_dir, overlays, limit, tags, runs_dir, vault, forks, kind, playbook, fresh_facts=False,
                 inventory=None):
    from topology.operate.runs import RunRequest

    return RunRequest(project_dir=project_dir, stack=stack, kind=kind, overlays=tuple(overlays or ()), limit=limit,
                      tags=tags, runs_dir=runs_dir, vault_password_file=vault, forks=forks, fresh_facts=fresh_facts,
                      playbook=playbook, inventory=inventory)


def _operate(call) -> None:
    from topology.operate.runs import OperateError

    try:
        code = call()
    except OperateError as e:
        field, _, rule = str(e).partition(": ")
        fail(SpecError(field, rule))
    raise typer.Exit(code)


@app.command()
def apply(
    stack: OperateStackOpt = None,
    spec: OperateSpecOpt = None,
    out: PlanOutOpt = None,
    project_dir: ProjectOpt = Path("."),
    inventory_overlay: OverlayOpt = None,
    limit: LimitOpt = None,
    tags: TagsOpt = None,
    runs_dir: RunsOpt = None,
    vault_password_file: VaultOpt = None,
    forks: ForksOpt = None,
    fresh_facts: Annotated[bool, typer.Option("--fresh-facts", help="gather facts even when cached")] = False,
    playbook: PlaybookOpt = None,
    progress: ProgressOpt = None,
    full: FullOpt = False,
    full_after: FullAfterOpt = 24.0,
    canary: Annotated[Optional[str], typer.Option("--canary", help="an Ethernet switch pushed and health-gated "  # noqa: UP045
                                                  "alone before the rollout's batches")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="per-host results as JSON on stdout "
                                           "(progress and tables go to stderr)")] = False,
) -> None:
    """Run site.yml over inventories/<stack> (ansible-runner): live progress, a per-host summary,
    run artifacts in .runs/<stack>/. Exit 0 all ok, 1 a host failed or was unreachable, 2 error.
    A host a full apply converged with the same playbook, roles and inventory within --full-after
    hours is skipped when its record (files, units, sysctls, modules, packages) checks clean now.
    Switches go in the plan's rollout batches with a health gate after each push; the first
    failure stops the run and names the switches changed and those left untouched."""
    from datetime import timedelta

    from topology.operate import commands

    JSON_ERRORS.set(json_out)
    stack, inventory = planned(stack, spec, project_dir, out)
    req = _run_request(stack, project_dir, inventory_overlay, limit, tags, runs_dir, vault_password_file, forks,
                       "apply", playbook, fresh_facts, inventory)
    _operate(lambda: commands.apply(req, console, progress, full=full or not full_after,
                                    full_after=timedelta(hours=full_after), canary=canary, as_json=json_out))


@app.command()
def drift(
    stack: OperateStackOpt = None,
    spec: OperateSpecOpt = None,
    out: PlanOutOpt = None,
    project_dir: ProjectOpt = Path("."),
    inventory_overlay: OverlayOpt = None,
    limit: LimitOpt = None,
    tags: TagsOpt = None,
    runs_dir: RunsOpt = None,
    vault_password_file: VaultOpt = None,
    forks: ForksOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="the report as JSON on stdout")] = False,
    fix: Annotated[bool, typer.Option("--fix", help="re-apply to the drifted hosts (drifted roles only)")] = False,
    quick: Annotated[bool, typer.Option("--quick", help="compare each host with the record of its last apply "
                                        "(files, units): one task per host, seconds; not the full check")] = False,
    playbook: PlaybookOpt = None,
    progress: ProgressOpt = None,
    full: FullOpt = False,
    full_after: FullAfterOpt = 24.0,
) -> None:
    """Run site.yml in check+diff mode and report, per host, each task that would change and its
    diff. Exit 0 clean, 1 drift, 2 errors (failed/unreachable host). --fix re-applies. --quick:
    what changed since the last apply (the files and units it managed), in seconds. Without
    --full, a host a full apply converged with the same inputs within --full-after hours is
    checked against its record first, and gets the check run only when that shows a change."""
    from datetime import timedelta

    from topology.operate import commands

    JSON_ERRORS.set(json_out)
    stack, inventory = planned(stack, spec, project_dir, out)
    req = _run_request(stack, project_dir, inventory_overlay, limit, tags, runs_dir, vault_password_file, forks,
                       "drift", playbook, inventory=inventory)
    if quick:
        if fix or tags:
            fail(SpecError("--quick", "compares whole hosts with their record: not with --fix or --tags "
                                      "(run `superpod drift --fix` for a fix)"))
        _operate(lambda: commands.quick_drift(req, console, as_json=json_out, progress=progress))
    _operate(lambda: commands.drift(req, console, as_json=json_out, fix=fix, progress=progress,
                                    full=full or not full_after, full_after=timedelta(hours=full_after)))


# ---- before a push: the switch OS's own rules (topology/render/switches/nvue_model.py) ----------
@app.command("check-nvue")
def check_nvue(
    stack: StackOpt = None,
    spec: SpecOpt = None,
    project_dir: ProjectOpt = Path("."),
    plan_dir: Annotated[Optional[Path], typer.Option(help="the plan's folder (default build/<name>/)")] = None,  # noqa: UP045
) -> None:
    """Check every NVUE startup.yaml of the plan (switches/*/startup.yaml, as `plan` wrote them)
    against NVIDIA's NVUE object model for the spec's switch_software.cumulus_release, refusing
    keys the model does not have. Exit 0 all accepted, 1 a file refused, 2 errors."""
    from topology.render.switches import SUBDIR
    from topology.render.switches.nvue_model import NvueModelUnavailable, check_plan_files

    name, pod = load(stack, spec, project_dir)
    release = pod.switch_software.cumulus_release
    folder = (plan_dir or project_dir / "build" / name) / SUBDIR
    if not folder.is_dir():
        fail(SpecError("--plan-dir", f"no {folder}: run `superpod plan` first"))
    try:
        results = check_plan_files(folder, release)
    except NvueModelUnavailable as e:
        fail(SpecError("nvueschema", f"{e}: pip install 'superpod[nvue]'"))
    if not results:
        fail(SpecError("--plan-dir", f"no startup.yaml under {folder} (no switch runs Cumulus)"))
    bad = {f: errs for f, errs in results.items() if errs}
    for f, errs in bad.items():
        for e in errs:
            err.print(Text.assemble((f, "bold"), f": {e}"))
    console.print(f"Cumulus Linux {release} NVUE model: {len(results) - len(bad)} of {len(results)} "
                  f"startup.yaml accepted", highlight=False)
    raise typer.Exit(1 if bad else 0)


# ---- bring-up: acceptance of nodes, rails and SUs (topology/operate/accept) ------------------
@app.command()
def accept(
    stack: Annotated[str, typer.Option("--stack", "-s", help="inventories/<stack> (from superpod plan)")],
    project_dir: ProjectOpt = Path("."),
    inventory_overlay: OverlayOpt = None,
    limit: LimitOpt = None,
    runs_dir: RunsOpt = None,
    vault_password_file: VaultOpt = None,
    forks: ForksOpt = None,
    plan_dir: Annotated[Optional[Path], typer.Option(help="where labels.csv is (default build/<stack>/)")] = None,  # noqa: UP045
    dcgm_level: Annotated[int, typer.Option("--dcgm-level", min=2, max=3, help="dcgmi diag -r: 2, or 3 (long)")] = 2,
    nodes_only: Annotated[bool, typer.Option("--nodes-only", help="per-node checks only: no rail or SU runs")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="the verdicts as JSON on stdout")] = False,
    playbook: Annotated[Optional[Path], typer.Option("--playbook", help="instead of playbooks/accept.yml")] = None,  # noqa: UP045
) -> None:
    """Measure each node (node_check, GPU health, dcgmi diag, nvbandwidth, all_reduce over NVLink),
    each rail (ib_write_bw between nodes under one rail leaf) and each SU and the pod (all_reduce
    over MPI) against the plan's figures; a table per scope and a work list naming node, GPU or
    NIC and cable. Results in .runs/<stack>/accept/. Exit 0 all pass, 1 a check failed, 2 error."""
    from topology.operate.accept.run import accept as run_accept

    JSON_ERRORS.set(json_out)
    req = _run_request(stack, project_dir, inventory_overlay, limit, None, runs_dir, vault_password_file, forks,
                       "accept", playbook or project_dir / "playbooks" / "accept.yml")
    try:
        code = run_accept(req, console, as_json=json_out, dcgm_level=dcgm_level, rails=not nodes_only,
                          plan_dir=plan_dir)
    except SpecErrors as e:  # the stack file's acceptance overrides
        fail(e.errors)
    except SpecError as e:
        fail(e)
    raise typer.Exit(code)


# ---- bring-up: validate the cabling against the plan (topology/operate/validate) ---------------
@app.command()
def validate(
    stack: Annotated[str, typer.Option("--stack", "-s", help="the stack planned with `superpod plan`")],
    from_dir: Annotated[Optional[Path], typer.Option("--from", help="folder of lldpctl JSON / ibnetdiscover "  # noqa: UP045
                                                     "files (default: collect now through Ansible)")] = None,
    project_dir: ProjectOpt = Path("."),
    plan_dir: Annotated[Optional[Path], typer.Option(help="where cabling.csv is (default build/<stack>/)")] = None,  # noqa: UP045
    fabric: Annotated[Optional[list[str]], typer.Option("--fabric", help="fabrics to check (repeatable; "  # noqa: UP045
                                                        "default compute, storage, inband)")] = None,
    devices: Annotated[Optional[str], typer.Option("--devices", help="only cables whose both ends match "  # noqa: UP045
                                                   "these globs (comma-separated, e.g. 'su01-*')")] = None,
    inventory_overlay: OverlayOpt = None,
    runs_dir: RunsOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="the report as JSON on stdout")] = False,
    limit_rows: Annotated[int, typer.Option(help="table rows shown (0: all)")] = 50,
) -> None:
    """Compare the cabling the devices see (LLDP, ibnetdiscover) with cabling.csv: correct, missing,
    miswired, swapped, wrong speed, unplanned, not heard from; and a work list per rack.
    Exit 0 all correct, 1 mismatches, 2 errors."""
    JSON_ERRORS.set(json_out)
    from topology.operate import validate as v

    try:
        globs = tuple(g.strip() for g in devices.split(",") if g.strip()) if devices else ()
        if from_dir is None:
            from topology.operate.lldp_collect import collect

            from_dir = collect(project_dir, stack, tuple(inventory_overlay or ()), runs_dir, err, globs)
        fabrics = tuple(fabric) if fabric else v.DEFAULT_FABRICS
        result, tasks, _ = v.validate(plan_dir or project_dir / "build" / stack, from_dir, fabrics, globs)
    except SpecError as e:
        fail(e)
    if json_out:
        print(json.dumps(v.to_json(stack, result, tasks), indent=1))
    else:
        v.print_report(console, stack, result, tasks, limit_rows)
    raise typer.Exit(v.exit_code(result))


if __name__ == "__main__":
    app()
