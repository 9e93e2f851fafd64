"""Command line: ``superpod-health-watcher [run|check-config|once] --config FILE``."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from pydantic import ValidationError

from .config import load_config

log = logging.getLogger("health_watcher")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="superpod-health-watcher", description=__doc__)
    ap.add_argument("command", nargs="?", default="run", choices=["run", "check-config", "once"])
    ap.add_argument("-c", "--config", default="/etc/superpod-health-watcher/watcher.yml")
    ap.add_argument("--log-level", default="INFO")
    args = ap.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        cfg = load_config(args.config)
    except (OSError, ValidationError) as e:
        print(f"error: {args.config}: {e}", file=sys.stderr)
        return 2
    if args.command == "check-config":
        print(f"ok: {cfg.node}, {len(cfg.rails)} rails, scheduler {cfg.scheduler.kind}")
        return 0
    from .watcher import Watcher

    w = Watcher(cfg)
    if args.command == "once":
        print(w.step() or "no action")
        return 0
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    w.run_forever(stop)
    return 0
