"""Taking a node out and bringing it back: Slurm (scontrol) or Kubernetes (kubectl cordon),
and an alert to Alertmanager."""

from __future__ import annotations

import json
import logging
import subprocess
import urllib.request
from datetime import datetime, timezone

from .config import WatcherConfig

log = logging.getLogger("health_watcher")
REASON_PREFIX = "superpod-health:"  # marks a drain as ours: we never return a node someone else drained


class ActionError(RuntimeError):
    pass


def _run(argv: list[str], run) -> str:
    done = run(argv, capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()
        raise ActionError(f"{' '.join(argv[:3])} failed (exit {done.returncode}): {said}")
    return done.stdout


def drain(cfg: WatcherConfig, reason: str, run=subprocess.run) -> None:
    s, name = cfg.scheduler, cfg.scheduler.node_name or cfg.node
    if s.kind == "slurm":
        # scontrol takes each key=value as one argument: the reason may hold spaces, no quoting needed
        _run([s.scontrol, "update", f"nodename={name}", "state=drain", f"reason={reason}"], run)
    elif s.kind == "kubernetes":
        _run([s.kubectl, "cordon", name], run)
        _run([s.kubectl, "annotate", "--overwrite", "node", name, f"superpod.io/health={reason}"], run)
    elif s.kind == "command":
        _run([a.format(node=name, reason=reason) for a in s.drain_command], run)


def holds_our_drain(cfg: WatcherConfig, run=subprocess.run) -> bool | None:
    """Whether the scheduler still has this watcher's drain: in Slurm the node drained with our
    reason. False once someone else returned it (Slurm's health check resumes a node it drained over
    ours) or drained it again for their own reason (an operator): neither is ours to return.
    None where the scheduler does not say (kubernetes, command, none): the state file decides."""
    s, name = cfg.scheduler, cfg.scheduler.node_name or cfg.node
    if s.kind != "slurm":
        return None
    shown = _run([s.scontrol, "show", "node", name, "-o"], run)
    fields = dict(f.split("=", 1) for f in shown.split() if "=" in f)
    reason = shown.split(" Reason=", 1)[1].strip() if " Reason=" in shown else ""  # free text, the line's last field
    return "DRAIN" in fields.get("State", "").split("+") and reason.startswith(REASON_PREFIX)


def resume(cfg: WatcherConfig, run=subprocess.run) -> None:
    s, name = cfg.scheduler, cfg.scheduler.node_name or cfg.node
    if s.kind == "slurm":
        _run([s.scontrol, "update", f"nodename={name}", "state=resume"], run)
    elif s.kind == "kubernetes":
        _run([s.kubectl, "uncordon", name], run)
        _run([s.kubectl, "annotate", "node", name, "superpod.io/health-"], run)
    elif s.kind == "command":
        _run([a.format(node=name, reason="") for a in s.resume_command], run)


def alert(cfg: WatcherConfig, reason: str, firing: bool, since: float) -> None:
    """Alertmanager v2: a firing alert with startsAt; resolved by sending endsAt."""
    log.warning("%s %s: %s", "ALERT" if firing else "RESOLVED", cfg.node, reason)
    if not cfg.alert.url:
        return
    start = datetime.fromtimestamp(since, timezone.utc).isoformat()
    body = [{"labels": {"alertname": "SuperpodNodeUnhealthy", "node": cfg.node, "severity": "critical"},
             "annotations": {"summary": reason}, "startsAt": start,
             **({} if firing else {"endsAt": datetime.now(timezone.utc).isoformat()})}]
    req = urllib.request.Request(cfg.alert.url.rstrip("/") + "/api/v2/alerts", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=cfg.alert.timeout_s):
            pass
    except OSError as e:  # an alert that cannot be sent must not stop the drain
        log.error("alert to %s failed: %s", cfg.alert.url, e)
