"""Command line: ``superpod-fabric-telemetry [run|check-config|scrape] --config FILE``."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time

from prometheus_client import generate_latest
from pydantic import ValidationError

from .config import load_config
from .server import serve

log = logging.getLogger("fabric_telemetry")


def _run(config_path: str) -> int:
    from .collector import make_registry

    cfg = load_config(config_path)
    registry, _ = make_registry(cfg)
    server = serve(cfg, registry)
    log.info("serving metrics on %s:%d for %s (%s): %d NICs", cfg.listen.address, server.server_port, cfg.node,
             cfg.su or "no SU", len(cfg.nics))
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    log.info("stopping")
    server.shutdown()
    server.server_close()
    return 0


def _scrape(config_path: str, interval_s: float) -> int:
    """Two reads `interval_s` apart (so rates are shown), metrics of the second to stdout."""
    from .collector import make_registry

    cfg = load_config(config_path)
    registry, _ = make_registry(cfg)
    generate_latest(registry)
    time.sleep(interval_s)
    sys.stdout.write(generate_latest(registry).decode())
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="superpod-fabric-telemetry", description=__doc__)
    ap.add_argument("command", nargs="?", default="run", choices=["run", "check-config", "scrape"])
    ap.add_argument("-c", "--config", default="/etc/superpod-fabric-telemetry/exporter.yml")
    ap.add_argument("--interval", type=float, default=1.0, help="scrape: seconds between the two reads")
    ap.add_argument("--log-level", default="INFO")
    args = ap.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "check-config":
            cfg = load_config(args.config)
            rails = sum(1 for n in cfg.nics if n.kind == "rail")
            print(f"ok: {cfg.node}: {rails} rail NICs, {len(cfg.nics) - rails} storage NICs")
            return 0
        if args.command == "scrape":
            return _scrape(args.config, args.interval)
        return _run(args.config)
    except ValidationError as e:
        for err in e.errors():
            field = ".".join(str(p) for p in err["loc"]) or "config"
            print(f"error: {field}: {err['msg']}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as e:
        print(f"error: config: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
